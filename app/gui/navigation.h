// Navigation aids for large graphs: a minimap (the whole picture small, with the rectangle the view shows; click
// or drag in it to move there) floating in the view's corner, and breadcrumbs naming the scope of the selection.
#pragma once

#include <QImage>
#include <QLabel>
#include <QPointer>
#include <QWidget>
#include <vector>

class QGraphicsView;

namespace fx::app {

class Minimap : public QWidget {
  Q_OBJECT
 public:
  // Floats over `view`'s bottom-right corner and follows its scrolling, zoom and scene.
  explicit Minimap(QGraphicsView* view);

  // The scene rectangle the view shows, and where the minimap draws it (widget coordinates).
  QRectF visible_scene_rect() const;
  QRectF viewport_marker() const;
  // Scene point <-> minimap point, through the same fit the picture uses.
  QPointF to_minimap(QPointF scene_point) const;
  QPointF to_scene(QPointF minimap_point) const;
  // Draws the picture again (after a new layout); the viewport rectangle follows on its own.
  void refresh();

  static constexpr int kMaxSide = 200;

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void place();
  QRectF picture_rect() const;  // where the scene's picture sits inside the widget
  void centre_view_at(QPointF minimap_point);

  QPointer<QGraphicsView> view_;
  QImage picture_;
  QRectF pictured_scene_;  // the scene rectangle the picture shows
};

// "graph › l3 › attn": each piece a link to that scope.
class Breadcrumbs : public QLabel {
  Q_OBJECT
 public:
  explicit Breadcrumbs(QWidget* parent = nullptr);
  // Root first; names[i] for scopes[i].
  void show_chain(const std::vector<int>& scopes, const QStringList& names);
  const std::vector<int>& chain() const { return chain_; }

 signals:
  void scope_clicked(int scope);

 private:
  std::vector<int> chain_;
};

}  // namespace fx::app
