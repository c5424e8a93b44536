#include "app/gui/exports.h"

#include <QBuffer>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>

#include "app/gui/graph_scene.h"
#include "app/gui/graph_drawing.h"
#include "core/export/dot.h"
#include "core/fusion/plan_dot.h"
#include "core/graph/graph_io.h"

namespace fx::app {
namespace {

constexpr double kMaxPngSide = 8000.0;

}  // namespace

QString write_file_atomic(const QString& path, const QByteArray& bytes) {
  auto written = write_text_file_atomic(path.toStdString(), std::string_view(bytes.constData(), bytes.size()));
  if (!written) return QString::fromStdString(format_diagnostics(written.errors(), path.toStdString()));
  return {};
}

std::string plan_to_dot(const FusionEngine& engine) {
  // The same clusters as `fusion-cli dot --plan`, so both exports of one plan read alike.
  DotOptions options;
  options.clusters = plan_clusters(engine.graph(), engine.plan());
  return to_dot(engine.graph(), options);
}

QString export_scene_svg(GraphScene& scene, const QString& path) {
  QBuffer buffer;
  buffer.open(QIODevice::WriteOnly);
  const QRectF source = scene.sceneRect();
  QSvgGenerator svg;
  svg.setOutputDevice(&buffer);
  svg.setSize(source.size().toSize());
  svg.setViewBox(QRectF(QPointF(0, 0), source.size()));
  svg.setTitle(QStringLiteral("Fusion Explorer graph"));
  {
    QPainter painter(&svg);
    painter.fillRect(QRectF(QPointF(0, 0), source.size()), scene.backgroundBrush().color());
    scene.render(&painter, QRectF(QPointF(0, 0), source.size()), source);
  }
  return write_file_atomic(path, buffer.data());
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
  QBuffer buffer;
  buffer.open(QIODevice::WriteOnly);
  if (!image.save(&buffer, "PNG")) return QObject::tr("Could not encode %1 as PNG").arg(path);
  return write_file_atomic(path, buffer.data());
}

}  // namespace fx::app
