#include "app/gui/lessons.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include "app/gui/samples.h"
#include "core/graph/graph_io.h"

namespace fx::app {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

std::optional<QByteArray> read_all(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return std::nullopt;
  return f.readAll();
}

// The bundled report, or why it is not shown: a learner must never see numbers measured on another graph.
void attach_run(OpenedLesson& out, const QString& lesson_path, const Graph& graph, const DeviceDescription& device) {
  const BundledRun& bundled = *out.lesson.run;
  const QString path = QFileInfo(lesson_path).dir().filePath(qs(bundled.file));
  const auto bytes = read_all(path);
  if (!bytes) {
    out.run_note = QObject::tr("The bundled run report %1 is missing.").arg(path);
    return;
  }
  auto report = read_run_report(bytes->toStdString());
  if (!report) {
    out.run_note = QObject::tr("The bundled run report %1 does not read: %2")
                       .arg(path, qs(format_diagnostics(report.errors())));
    return;
  }
  if (std::string why = lesson_run_mismatch(*report, graph, device); !why.empty()) {
    out.run_note = QObject::tr("The bundled run report is not shown: %1.").arg(qs(why));
    return;
  }
  out.run = LessonRun{std::move(*report), bundled.measured_on};
}

}  // namespace

QString lessons_dir() {
  QStringList candidates;
  const QString env = qEnvironmentVariable("FX_LESSONS_DIR");
  if (!env.isEmpty()) candidates << env;
  const QString app = QCoreApplication::applicationDirPath();
  candidates << app + QStringLiteral("/../share/fusion-explorer/lessons") << QStringLiteral(FX_SOURCE_DIR "/lessons")
             << app + QStringLiteral("/../../../lessons");
  for (const QString& dir : candidates)
    if (QFileInfo(dir).isDir()) return QDir(dir).canonicalPath();
  return {};
}

std::vector<LessonFile> find_lessons() {
  std::vector<LessonFile> out;
  const QString dir = lessons_dir();
  if (dir.isEmpty()) return out;
  for (const QFileInfo& f : QDir(dir).entryInfoList({QStringLiteral("*.json")}, QDir::Files, QDir::Name)) {
    const auto bytes = read_all(f.absoluteFilePath());
    if (!bytes) continue;
    auto lesson = read_lesson(bytes->toStdString(), f.completeBaseName().toStdString());
    if (lesson) out.push_back({f.absoluteFilePath(), std::move(*lesson)});
  }
  return out;
}

std::optional<OpenedLesson> open_lesson_file(const QString& path, QString* error) {
  const auto bytes = read_all(path);
  if (!bytes) {
    *error = QObject::tr("Cannot read the lesson %1.").arg(path);
    return std::nullopt;
  }
  auto lesson = read_lesson(bytes->toStdString(), QFileInfo(path).completeBaseName().toStdString());
  if (!lesson) {
    *error = qs(format_diagnostics(lesson.errors(), path.toStdString()));
    return std::nullopt;
  }
  OpenedLesson out{std::move(*lesson), {}, std::nullopt, {}};
  out.graph_path = QDir(samples_dir()).filePath(qs(out.lesson.graph) + QStringLiteral(".json"));
  auto graph = load_graph_file(out.graph_path.toStdString());
  const auto device = out.lesson.device.empty() ? std::optional(DeviceDescription::default_device())
                                                : DeviceDescription::preset(out.lesson.device);
  if (!graph || !device) {
    *error = !device ? QObject::tr("The lesson names an unknown device \"%1\".").arg(qs(out.lesson.device))
                     : QObject::tr("The lesson's sample graph %1 does not open.").arg(out.graph_path);
    return std::nullopt;
  }
  if (out.lesson.run) attach_run(out, path, *graph, *device);
  return out;
}

}  // namespace fx::app
