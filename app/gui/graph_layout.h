// Graphviz `dot` layout of a drawn graph, as a pure function that may run on a worker thread. The app draws
// everything itself; Graphviz only places boxes and routes edges. dot gets no edge labels (they made a
// 960-node graph 6x slower) and no text: node sizes come from the app's own font metrics.
#pragma once

#include <QPointF>
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <vector>

namespace fx::app {

struct LayoutInput {
  std::vector<QSizeF> node_sizes;                 // in scene units (1 unit = 1 point)
  std::vector<std::pair<int, int>> edges;          // indices into node_sizes
  std::vector<std::vector<int>> clusters;          // member node indices; a node belongs to at most one
  std::vector<double> cluster_title_widths;        // per cluster (or none): the least width its title needs
  bool fast = false;                               // cheaper network-simplex limits for very large graphs
};

struct LayoutResult {
  bool ok = false;
  QString error;
  QRectF bounds;
  std::vector<QPointF> node_centres;
  std::vector<std::vector<QPointF>> edge_points;   // per edge: start, then cubic triples (c1, c2, end)
  std::vector<QPointF> edge_arrow_tips;            // where the arrowhead points (the end point when absent)
  std::vector<QRectF> cluster_rects;
  double seconds = 0.0;
  int dot_runs = 0;                                // scoped layouts: dot runs made (the rest came from the cache)
  std::vector<int> fresh_levels;                   // scoped layouts: levels laid out anew (DrawnGraph::levels)
};

// Runs dot. Thread-safe: every Graphviz call is made under one process-wide mutex, because Graphviz keeps
// global state (kgraphviewer does the same).
LayoutResult layout_with_dot(const LayoutInput& input);

// Space left above a cluster's members for the label the app draws there.
inline constexpr double kClusterLabelHeight = 22.0;

}  // namespace fx::app
