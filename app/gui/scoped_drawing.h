// The drawing of a large graph by hierarchy: collapsed scopes are one box each, expanded scopes are frames whose
// contents dot lays out on their own (see scoped_layout.h). Only what is visible is built, measured and laid out,
// so the cost follows what is on screen, not the graph's size.
#pragma once

#include <memory>
#include <vector>

#include "app/gui/graph_drawing.h"
#include "app/gui/scope_tree.h"

namespace fx::app {

// Items per scope before it is split into runs, and the items a large graph opens with: dot lays out a few
// hundred boxes in a fraction of a second.
inline constexpr std::size_t kMaxItemsPerScope = 400;
// Graphs above this many nodes are drawn by scope; smaller ones are drawn whole, as one layout.
inline constexpr int kScopedViewNodes = 400;

// What a scope tree is built over: the activation inputs (boxes of their own, so that they too are bounded by
// the hierarchy), then graph nodes in the node views or kernels (the plan's groups, then any node outside every
// group) in the collapsed view. unit_of_node maps every graph node to its unit; an input's unit has no nodes.
struct ScopeUnits {
  bool kernels = false;
  std::vector<int> unit_of_node;
  std::vector<int> unit_of_input;               // by ValueId of a graph input; -1 for weights and constants
  std::vector<std::vector<NodeId>> nodes_of_unit;
  std::vector<ValueId> input_of_unit;           // the input a unit draws, or -1
};
ScopeUnits scope_units(const Graph& g, const std::vector<GroupInfo>& groups, ViewMode mode);

// The hierarchy of a view: name scopes of the nodes (of a kernel: the deepest scope all its nodes share).
std::shared_ptr<const ScopeTree> build_scope_tree(const Graph& g, const ScopeUnits& units);

// The drawing of the visible part: one box per unit shown and per collapsed scope, a frame per expanded scope
// other than the root, edges between what is shown, laid out level by level.
DrawnGraph build_scoped_drawing(const Graph& g, const std::vector<GroupInfo>& groups, ViewMode mode,
                                std::shared_ptr<const ScopeTree> tree, const ScopeUnits& units,
                                const std::vector<bool>& expanded);

// The frame colour of an expanded scope, and the fill of a collapsed one.
QColor scope_frame_color();
QColor scope_box_color();

}  // namespace fx::app
