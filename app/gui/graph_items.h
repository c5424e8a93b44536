// The graph view's items: a box per drawn node, an edge with its arrow and tensor-size label, a cluster box
// per fusion group. They paint themselves (less detail when zoomed far out, so large graphs pan smoothly).
#pragma once

#include <QGraphicsItem>
#include <QPainterPath>

#include <vector>

#include "app/gui/graph_drawing.h"
#include "app/gui/graph_layout.h"

namespace fx::app {

// Colours that follow the light/dark palette; the boxes keep their light fills with dark text in both.
struct SceneColors {
  QColor background{"#fafafa"}, edge{"#555555"}, edge_label{"#333333"}, cluster_text{"#222222"};
  QColor selection{"#1565c0"}, highlight{"#ef6c00"}, rejected{"#c62828"};
  static SceneColors light();
  static SceneColors dark();
};
const SceneColors& scene_colors();
void set_scene_colors(const SceneColors& colors);

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  NodeItem(const DrawnNode& node, int index);
  int type() const override { return Type; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  int index() const { return index_; }
  const DrawnNode& node() const { return node_; }
  void set_highlighted(bool on);
  bool is_highlighted() const { return highlighted_; }
  void set_measured(const QString& text);

 private:
  DrawnNode node_;
  int index_;
  bool highlighted_ = false;
  QString measured_;  // drawn in place of node_.kernel_line
};

class EdgeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 2 };
  EdgeItem(const DrawnEdge& edge, int index, const std::vector<QPointF>& points, QPointF arrow_tip);
  int type() const override { return Type; }
  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

  int index() const { return index_; }
  const DrawnEdge& edge() const { return edge_; }
  void set_rejected(const QString& reason);  // "" clears
  bool rejected() const { return !rejected_.isEmpty(); }
  // Slides the size label along the edge until it overlaps none of `keep_out` (the groups' title bands), so
  // an edge entering a group from above does not write over the group's title. Stays at the middle when no
  // free place is found.
  void place_label_outside(const std::vector<QRectF>& keep_out);
  QRectF label_rect() const;

 private:
  QRectF label_rect_at(QPointF pos) const;
  void update_bounds();

  DrawnEdge edge_;
  int index_;
  QPainterPath path_;
  QPolygonF arrow_;
  QPointF label_pos_;
  QRectF bounds_;
  QString rejected_;
};

class ClusterTitleItem;

// A fusion group's box. Its title (and measured time) is a separate item, ClusterTitleItem, stacked above the
// edges: an edge entering the group from above crosses the title band.
class ClusterItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };
  ClusterItem(const DrawnCluster& cluster, const QRectF& rect);
  int type() const override { return Type; }
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  QRectF title_rect() const;  // the band at the top that holds the group's title and measured time
  QRectF box() const { return rect_; }
  QRectF laid_out_box() const { return base_rect_; }  // as dot placed it, before the title widened it
  // The item that draws the title: not a child (children stack with their parent, under the edges); whoever
  // adds this item to a scene adds that one too, and the scene owns both.
  ClusterTitleItem* title_item() const { return title_; }
  void paint_title(QPainter* painter) const;

  const DrawnCluster& cluster() const { return cluster_; }
  void set_measured(const QString& text);

 private:
  void fit_title();  // widens rect_ for the title; the measured text beside it or under it
  static constexpr double kClusterSecondLine = 13.0;  // the measured text's line under the title

  DrawnCluster cluster_;
  QRectF base_rect_;  // as dot placed it
  QRectF rect_;
  QString measured_;
  QString shown_measured_;  // measured_, shortened to the box's width on a second line
  bool two_lines_ = false;
  ClusterTitleItem* title_ = nullptr;
};

// A group's title band, above the edges and under the boxes. Its text has a halo of the group's fill, so an
// edge that crosses the band on its way into the group passes behind the letters instead of through them.
class ClusterTitleItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 4 };
  explicit ClusterTitleItem(const ClusterItem& cluster);
  int type() const override { return Type; }
  QRectF boundingRect() const override { return bounds_; }
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;
  void refresh();  // the cluster's title band moved or changed

 private:
  const ClusterItem& cluster_;
  QRectF bounds_;
};

}  // namespace fx::app
