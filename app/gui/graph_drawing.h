// What the graph view draws, before layout: boxes with their text and size, edges with their tensor labels,
// and fusion groups as clusters (or, collapsed, one box per group). Built on the GUI thread from the graph
// and the current groups; a plain value handed to the layout worker and then to the scene.
#pragma once

#include <QColor>
#include <QSizeF>
#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

#include "app/gui/graph_layout.h"
#include "core/graph/graph.h"

namespace fx::app {

// A fusion group as the view needs it; filled from the engine's plan.
struct GroupInfo {
  QString id;              // the engine's stable group id, "g:mul"
  QString kernel;          // the name its kernel runs under, "fx_g_mul" (core's group_kernel_name); "" if not launched
  QString kind;            // "single", "vertical", "epilogue", "horizontal", "vertical+epilogue"...
  std::vector<NodeId> nodes;
  QString summary;         // one line: predicted bytes and time, or what a view reads
  bool view = false;       // a view (core/analysis/views.h): no kernel, nothing predicted or measured for it
};

enum class ViewMode { unfused, fused, collapsed };

struct DrawnNode {
  enum class Kind { input, op, group, scope } kind = Kind::op;
  ValueId value = -1;               // input: the graph input; op: the node's value
  NodeId node = -1;                 // op only
  int group = -1;                   // index into DrawnGraph::groups when drawn inside or as a group
  int scope = -1;                   // scope only: the collapsed scope in DrawnGraph::scopes
  QString title;                    // op name, or "g3 vertical"
  QString name;                     // node name
  QString type;                     // "f32[8192, 8192]"
  QStringList extra;                // weights and constants read, one line each
  QString kernel_line;              // a box that is a kernel of its own: "predicted 48 MiB, 18.0 µs" (the
                                    // measured time and bytes take its place once a run is shown)
  QColor fill;
  bool is_output = false;
  QString tooltip;
  QSizeF size;
};

struct DrawnEdge {
  int from = -1, to = -1;           // indices into DrawnGraph::nodes
  ValueId value = -1;               // the tensor carried (the first one when collapsed edges merge)
  NodeId consumer = -1;             // the consuming graph node (for "why not fused?" on an edge)
  QString label;                    // "256 MiB", or "on chip"
  // Inside a fused group: the tensor stays in registers or shared memory and is never written to HBM.
  bool on_chip = false;
  QString tooltip;                  // the tensor and what happens to it, in a sentence
};

struct DrawnCluster {
  int group = -1;                   // index into DrawnGraph::groups
  QString label;
  QColor color;
  std::vector<int> members;         // indices into DrawnGraph::nodes
  double title_width = 0;           // what the label needs, so that dot makes the box at least that wide
  int scope = -1;                   // an expanded scope's frame (group is then -1)
};

class ScopeTree;

// One expanded scope of a scoped drawing, laid out by dot on its own: its boxes, the frames of its expanded
// child scopes (as boxes of their laid-out size) and the edges between them. See scoped_drawing.h.
struct ScopeLevel {
  int scope = 0;                              // in DrawnGraph::scopes
  int frame = -1;                             // its frame in DrawnGraph::clusters; -1 for the root
  std::vector<int> nodes;                     // drawn nodes directly inside
  std::vector<int> children;                  // expanded child scopes: indices into DrawnGraph::levels
  std::vector<int> edges;                     // drawn edges laid out here
  std::vector<std::pair<int, int>> ends;      // per edge: its ends among nodes, then children (local indices)
  std::vector<int> clusters;                  // fusion-group clusters whose members all lie here
};

struct DrawnGraph {
  ViewMode mode = ViewMode::unfused;
  std::vector<GroupInfo> groups;
  std::vector<DrawnNode> nodes;
  std::vector<DrawnEdge> edges;
  std::vector<DrawnCluster> clusters;
  std::vector<int> node_of_graph_node;  // graph NodeId -> drawn node index
  bool left_to_right = false;           // laid out left to right (View > Left-to-right layout)
  // A scoped drawing: the hierarchy and its expanded levels, children before parents (the root last). Empty
  // levels: one flat layout of everything.
  std::shared_ptr<const ScopeTree> scopes;
  std::vector<ScopeLevel> levels;
};

// Fill colour of a fusion kind (the first kind of a combination decides).
QColor fusion_kind_color(const QString& kind);

// Builds the drawing. Groups of one node are not drawn as clusters. Sizes come from the app's fonts.
DrawnGraph build_drawing(const Graph& graph, const std::vector<GroupInfo>& groups, ViewMode mode);

// What dot lays out: the boxes' sizes, the edges, the clusters with their titles' widths.
LayoutInput layout_input(const DrawnGraph& drawing);

// Tool tip for a graph node: op, tensor bytes, FLOPs, group.
QString node_tooltip(const Graph& graph, NodeId node, const GroupInfo* group);

// The boxes build_drawing makes, for the scoped drawing to make the same ones. Sizes are left to measure_node.
DrawnNode drawn_op_node(const Graph& g, NodeId id, int group, const GroupInfo* info, ViewMode mode);
DrawnNode drawn_input_node(const Graph& g, ValueId v);
DrawnNode drawn_group_node(const Graph& g, const GroupInfo& info, int group);
QSizeF measure_node(const DrawnNode& n);
QString edge_label(const Graph& g, ValueId v);

}  // namespace fx::app

#include <QFont>
namespace fx::app {
// Fonts shared by the size computation and the painting, so boxes always fit their text.
const QFont& title_font();
const QFont& body_font();
const QFont& edge_font();
const QFont& cluster_font();  // a group's title on its cluster
// The projector zoom (View > Larger text, Ctrl+=): scales every font of the graph; boxes are measured again on
// the next drawing. 1 is the normal size.
void set_text_scale(double scale);
double text_scale();
// The width a cluster needs for a line of cluster_font() text, with its margins.
double cluster_line_width(const QString& text);
}  // namespace fx::app
