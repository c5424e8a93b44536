#include "app/gui/graph_view.h"

#include <QDragEnterEvent>
#include <QMimeData>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>

namespace fx::app {
namespace {
constexpr double kMinZoom = 0.01;
constexpr double kMaxZoom = 8.0;
constexpr double kReadableZoom = 0.75;
}  // namespace

GraphView::GraphView(QWidget* parent) : QGraphicsView(parent) {
  setDragMode(QGraphicsView::ScrollHandDrag);
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setResizeAnchor(QGraphicsView::AnchorViewCenter);
  // Items paint their own bounds exactly; a smart update of small regions is cheapest for panning.
  setViewportUpdateMode(QGraphicsView::SmartViewportUpdate);
  setOptimizationFlags(QGraphicsView::DontSavePainterState | QGraphicsView::DontAdjustForAntialiasing);
  setAcceptDrops(true);
  setRubberBandSelectionMode(Qt::IntersectsItemShape);
}

void GraphView::zoom_by(double factor) {
  const double target = std::clamp(zoom() * factor, kMinZoom, kMaxZoom);
  const double f = target / zoom();
  scale(f, f);
  emit zoom_changed(zoom());
}

void GraphView::fit() {
  if (scene() == nullptr) return;
  fitInView(scene()->sceneRect(), Qt::KeepAspectRatio);
  if (zoom() > 1.0) resetTransform();  // never magnify small graphs
  emit zoom_changed(zoom());
}

void GraphView::initial_view(QPointF top) {
  fit();
  if (scene() == nullptr || zoom() >= kReadableZoom) return;
  // A tall graph fitted whole is unreadable boxes: show its top at a zoom where the text reads, and let the
  // user pan down or press Fit (Netron opens large models the same way).
  resetTransform();
  scale(kReadableZoom, kReadableZoom);
  centerOn(top.x(), top.y() - 30 + viewport()->height() / (2 * kReadableZoom));
  emit zoom_changed(zoom());
}

void GraphView::actual_size() {
  resetTransform();
  emit zoom_changed(zoom());
}

void GraphView::centre_on_item(QGraphicsItem* item) {
  if (item == nullptr) return;
  if (zoom() < 0.6) zoom_by(0.8 / zoom());
  centerOn(item);
}

void GraphView::wheelEvent(QWheelEvent* event) {
  // Wheel zooms (as in Netron); Shift/Alt-wheel scrolls.
  if (event->modifiers() & (Qt::ShiftModifier | Qt::AltModifier)) {
    QGraphicsView::wheelEvent(event);
    return;
  }
  const double steps = event->angleDelta().y() / 120.0;
  if (steps != 0) zoom_by(std::pow(1.15, steps));
  event->accept();
}

void GraphView::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Plus || event->key() == Qt::Key_Equal) {
    zoom_by(1.25);
  } else if (event->key() == Qt::Key_Minus) {
    zoom_by(0.8);
  } else {
    QGraphicsView::keyPressEvent(event);
  }
}

void GraphView::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void GraphView::dragMoveEvent(QDragMoveEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void GraphView::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  if (!paths.isEmpty()) emit files_dropped(paths);
  event->acceptProposedAction();
}

}  // namespace fx::app
