#include "app/gui/graph_scene.h"

#include <algorithm>
#include <map>
#include <set>

namespace fx::app {

GraphScene::GraphScene(QObject* parent) : QGraphicsScene(parent) {
  // A static scene of a few thousand items: BSP indexing keeps hit tests and exposure cheap.
  setItemIndexMethod(QGraphicsScene::BspTreeIndex);
}

void GraphScene::clear_drawing() {
  clear();
  nodes_.clear();
  edges_.clear();
  clusters_.clear();
  drawing_.reset();
}

void GraphScene::show_drawing(std::shared_ptr<const DrawnGraph> drawing, const LayoutResult& layout) {
  clear_drawing();
  drawing_ = std::move(drawing);
  const DrawnGraph& d = *drawing_;
  for (std::size_t i = 0; i < d.clusters.size() && i < layout.cluster_rects.size(); ++i) {
    auto* item = new ClusterItem(d.clusters[i], layout.cluster_rects[i]);
    addItem(item);
    addItem(item->title_item());
    clusters_.push_back(item);
  }
  for (std::size_t i = 0; i < d.nodes.size(); ++i) {
    auto* item = new NodeItem(d.nodes[i], static_cast<int>(i));
    item->setPos(layout.node_centres[i]);
    addItem(item);
    nodes_.push_back(item);
  }
  std::vector<QRectF> titles;
  for (const ClusterItem* c : clusters_) titles.push_back(c->title_rect());
  for (std::size_t i = 0; i < d.edges.size(); ++i) {
    auto* item = new EdgeItem(d.edges[i], static_cast<int>(i), layout.edge_points[i], layout.edge_arrow_tips[i]);
    item->place_label_outside(titles);
    addItem(item);
    edges_.push_back(item);
  }
  setSceneRect(layout.bounds.adjusted(-40, -40, 40, 40));
}

NodeItem* GraphScene::item_for(NodeId node) const {
  if (!drawing_ || node < 0 || node >= static_cast<NodeId>(drawing_->node_of_graph_node.size())) return nullptr;
  const int drawn = drawing_->node_of_graph_node[static_cast<std::size_t>(node)];
  return drawn >= 0 ? nodes_[static_cast<std::size_t>(drawn)] : nullptr;
}

std::vector<NodeId> GraphScene::selected_graph_nodes() const {
  std::vector<NodeId> out;
  if (!drawing_) return out;
  for (QGraphicsItem* item : selectedItems()) {
    if (item->type() != NodeItem::Type) continue;
    const DrawnNode& n = static_cast<NodeItem*>(item)->node();
    if (n.kind == DrawnNode::Kind::group) {
      const auto& nodes = drawing_->groups[static_cast<std::size_t>(n.group)].nodes;
      out.insert(out.end(), nodes.begin(), nodes.end());
    } else if (n.kind == DrawnNode::Kind::op) {
      out.push_back(n.node);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<NodeId> GraphScene::find_nodes(const QString& text) const {
  std::vector<NodeId> out;
  if (!drawing_ || text.isEmpty()) return out;
  for (const NodeItem* item : nodes_) {
    const DrawnNode& n = item->node();
    if (n.kind == DrawnNode::Kind::op && n.name.contains(text, Qt::CaseInsensitive)) out.push_back(n.node);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void GraphScene::highlight(const std::vector<NodeId>& nodes) {
  std::set<NodeItem*> on;
  for (NodeId n : nodes)
    if (NodeItem* item = item_for(n)) on.insert(item);
  for (NodeItem* item : nodes_) item->set_highlighted(on.count(item) != 0);
}

void GraphScene::mark_rejected(const std::vector<RejectedEdge>& rejected) {
  std::map<std::pair<int, int>, QString> by_drawn_pair;
  for (const RejectedEdge& r : rejected) {
    const NodeItem* from = item_for(r.producer);
    const NodeItem* to = item_for(r.consumer);
    // A collapsed scope's box stands for many pairs, fused and not: one refusal does not make its edge red.
    const auto shown = [](const NodeItem* item) { return item != nullptr && item->node().kind != DrawnNode::Kind::scope; };
    if (shown(from) && shown(to)) by_drawn_pair[{from->index(), to->index()}] = r.reason;
  }
  for (EdgeItem* item : edges_) {
    auto it = by_drawn_pair.find({item->edge().from, item->edge().to});
    item->set_rejected(it == by_drawn_pair.end() ? QString() : it->second);
  }
}

void GraphScene::set_measured(const std::vector<QString>& per_group) {
  auto text_of = [&](int group) {
    return group >= 0 && group < static_cast<int>(per_group.size()) ? per_group[static_cast<std::size_t>(group)] : QString();
  };
  std::vector<QRectF> titles;
  for (ClusterItem* c : clusters_) {
    c->set_measured(text_of(c->cluster().group));
    titles.push_back(c->title_rect());
  }
  for (EdgeItem* e : edges_) e->place_label_outside(titles);  // a title may now take two lines
  for (NodeItem* n : nodes_) {
    const DrawnNode& d = n->node();
    n->set_measured(d.kernel_line.isEmpty() ? QString() : text_of(d.group));
  }
}

}  // namespace fx::app
