#include "app/gui/exports.h"

#include <QBuffer>
#include <QImage>
#include <QPainter>
#include <QSaveFile>
#include <QSvgGenerator>

#include "app/gui/graph_scene.h"
#include "app/gui/graph_drawing.h"
#include "core/export/dot.h"
#include "core/fusion/plan_dot.h"

namespace fx::app {
namespace {

constexpr double kMaxPngSide = 8000.0;

QString commit(QSaveFile& file, const QString& path) {
  if (!file.commit()) return QObject::tr("Could not write %1: %2").arg(path, file.errorString());
  return {};
}

}  // namespace

std::string plan_to_dot(const FusionEngine& engine) {
  // The same clusters as `fusion-cli dot --plan`, so both exports of one plan read alike.
  DotOptions options;
  options.clusters = plan_clusters(engine.graph(), engine.plan());
  return to_dot(engine.graph(), options);
}

QString export_scene_svg(GraphScene& scene, const QString& path) {
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return QObject::tr("Could not write %1: %2").arg(path, file.errorString());
  const QRectF source = scene.sceneRect();
  QSvgGenerator svg;
  svg.setOutputDevice(&file);
  svg.setSize(source.size().toSize());
  svg.setViewBox(QRectF(QPointF(0, 0), source.size()));
  svg.setTitle(QStringLiteral("Fusion Explorer graph"));
  {
    QPainter painter(&svg);
    painter.fillRect(QRectF(QPointF(0, 0), source.size()), scene.backgroundBrush().color());
    scene.render(&painter, QRectF(QPointF(0, 0), source.size()), source);
  }
  return commit(file, path);
}

QString export_scene_png(GraphScene& scene, const QString& path) {
  const QRectF source = scene.sceneRect();
  const double scale = std::min(2.0, kMaxPngSide / std::max(source.width(), source.height()));
  QImage image((source.size() * scale).toSize(), QImage::Format_ARGB32_Premultiplied);
  image.fill(scene.backgroundBrush().color());
  {
    QPainter painter(&image);
    painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
    scene.render(&painter, QRectF(QPointF(0, 0), image.size()), source);
  }
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly) || !image.save(&file, "PNG"))
    return QObject::tr("Could not write %1: %2").arg(path, file.errorString());
  return commit(file, path);
}

}  // namespace fx::app
