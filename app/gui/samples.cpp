#include "app/gui/samples.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <nlohmann/json.hpp>

namespace fx::app {

QString samples_dir() {
  QStringList candidates;
  const QString env = qEnvironmentVariable("FX_SAMPLES_DIR");
  if (!env.isEmpty()) candidates << env;
  const QString app = QCoreApplication::applicationDirPath();
  candidates << app + QStringLiteral("/../share/fusion-explorer/sample_graphs")
             << QStringLiteral(FX_SOURCE_DIR "/sample_graphs") << app + QStringLiteral("/../../../sample_graphs");
  for (const QString& dir : candidates)
    if (QFileInfo(dir).isDir()) return QDir(dir).canonicalPath();
  return {};
}

std::vector<SampleInfo> find_samples() {
  std::vector<SampleInfo> out;
  const QString dir = samples_dir();
  if (dir.isEmpty()) return out;
  for (const QFileInfo& f : QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
    QFile file(f.absoluteFilePath());
    if (!file.open(QIODevice::ReadOnly)) continue;
    const auto doc = nlohmann::json::parse(file.readAll().toStdString(), nullptr, false);
    SampleInfo s{f.completeBaseName(), f.absoluteFilePath(), {}};
    if (doc.is_object()) {
      if (auto it = doc.find("name"); it != doc.end() && it->is_string()) s.name = QString::fromStdString(*it);
      if (auto it = doc.find("description"); it != doc.end() && it->is_string())
        s.description = QString::fromStdString(*it);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace fx::app
