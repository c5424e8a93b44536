// Before | After: the unfused graph and the fused plan in two panes that move together (zoom, scroll and
// selection follow each other), the view an instructor puts on a projector. Each pane has its own scene and
// layout worker; the window fills them with drawings and marks as it does its single view.
#pragma once

#include <QWidget>
#include <memory>
#include <vector>

#include "app/gui/graph_drawing.h"
#include "app/gui/graph_layout.h"

class QLabel;

namespace fx::app {

class GraphScene;
class GraphView;
class LayoutRunner;

class SideBySideView : public QWidget {
  Q_OBJECT
 public:
  enum Pane { before = 0, after = 1 };
  explicit SideBySideView(QWidget* parent = nullptr);
  ~SideBySideView() override;
  // Lays out both drawings (on worker threads); ready() follows once both are shown.
  void show_drawings(std::shared_ptr<const DrawnGraph> before_drawing, std::shared_ptr<const DrawnGraph> after_drawing);
  void clear();
  GraphScene* scene(Pane p) const { return scenes_[p]; }
  GraphView* view(Pane p) const { return views_[p]; }
  bool busy() const;
  void set_titles(const QString& before_title, const QString& after_title);

 signals:
  void ready();
  void failed(const QString& message);

 private:
  void on_finished(Pane p, std::shared_ptr<const DrawnGraph> drawing, const LayoutResult& result);
  void follow_zoom(Pane from);
  void follow_scroll(Pane from);
  void follow_selection(Pane from);

  GraphScene* scenes_[2];
  GraphView* views_[2];
  LayoutRunner* runners_[2];
  QLabel* titles_[2];
  bool shown_[2] = {false, false};
  bool following_ = false;  // a change made to follow the other pane does not echo back
};

}  // namespace fx::app
