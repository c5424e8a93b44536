// The graph as a QGraphicsScene: built from a drawing and its layout; answers "which items show this graph
// node" and carries the transient marks (candidate highlight, rejected edges, measured numbers).
#pragma once

#include <QGraphicsScene>
#include <memory>
#include <vector>

#include "app/gui/graph_drawing.h"
#include "app/gui/graph_items.h"
#include "app/gui/graph_layout.h"

namespace fx::app {

struct RejectedEdge {
  NodeId producer = -1, consumer = -1;
  QString reason;    // the engine's reason code, e.g. "OPAQUE_OP"
  QString sentence;  // the engine's message for people
};

class GraphScene : public QGraphicsScene {
  Q_OBJECT
 public:
  explicit GraphScene(QObject* parent = nullptr);

  void show_drawing(std::shared_ptr<const DrawnGraph> drawing, const LayoutResult& layout);
  void clear_drawing();
  const DrawnGraph* drawing() const { return drawing_.get(); }

  const std::vector<NodeItem*>& node_items() const { return nodes_; }
  const std::vector<EdgeItem*>& edge_items() const { return edges_; }
  const std::vector<ClusterItem*>& cluster_items() const { return clusters_; }
  NodeItem* item_for(NodeId node) const;

  // Graph nodes behind the current selection (a selected group box stands for all its nodes).
  std::vector<NodeId> selected_graph_nodes() const;
  // Graph nodes whose name contains text (case-insensitive), in node order.
  std::vector<NodeId> find_nodes(const QString& text) const;

  void highlight(const std::vector<NodeId>& nodes);
  // A why-not answer on the graph: the nodes of the pair and the path between them highlighted, and the edge
  // where the engine refuses (producer, consumer) drawn thick; (-1, -1) for none.
  void highlight_answer(const std::vector<NodeId>& nodes, std::pair<NodeId, NodeId> blocking);
  void mark_rejected(const std::vector<RejectedEdge>& edges);
  // Measured text per group index (into DrawnGraph::groups), painted on clusters or collapsed boxes.
  // `mismatch` (optional, per group): a sentence where the run's numbers differ from the prediction.
  void set_measured(const std::vector<QString>& per_group, const std::vector<QString>& mismatch = {});

 private:
  std::shared_ptr<const DrawnGraph> drawing_;
  std::vector<NodeItem*> nodes_;
  std::vector<EdgeItem*> edges_;
  std::vector<ClusterItem*> clusters_;
};

}  // namespace fx::app
