// Graphviz DOT text for a graph, optionally with fusion groups drawn as clusters. A pure function: the
// same graph and options always give the same text.
#pragma once

#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace fx {

struct DotCluster {
  std::string id;      // "g3"
  std::string label;   // "g3 vertical: mul+add+relu"
  std::string color;   // fill colour, "#rrggbb"
  std::vector<NodeId> nodes;
};

struct DotOptions {
  bool edge_labels = true;            // tensor sizes on edges (slow for dot on very large graphs)
  std::vector<DotCluster> clusters;   // fusion groups; nodes in none are drawn alone
};

// Fill colour of an op class, shared by DOT export and the GUI so both read the same.
const char* op_class_color(OpClass c);

std::string to_dot(const Graph& graph, const DotOptions& options = {});

}  // namespace fx
