// Pan (drag), zoom (wheel, around the cursor), fit to window, 1:1, and centring on a node.
#pragma once

#include <QGraphicsView>

namespace fx::app {

class GraphView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit GraphView(QWidget* parent = nullptr);
  void zoom_by(double factor);
  void fit();
  // Fit, but never so small that text is unreadable: then show the graph from `top` (its first box) down.
  void initial_view(QPointF top);
  void actual_size();
  void centre_on_item(QGraphicsItem* item);
  double zoom() const { return transform().m11(); }

 signals:
  void zoom_changed(double zoom);
  void files_dropped(const QStringList& paths);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dragMoveEvent(QDragMoveEvent* event) override;
  void dropEvent(QDropEvent* event) override;
};

}  // namespace fx::app
