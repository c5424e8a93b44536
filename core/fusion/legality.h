// Can a set of nodes run as one kernel? The structural rules (op classes, iteration spaces, row extents of
// reductions, one contraction per kernel, register pressure, size), each failure with its reason code.
// Cycles and profitability are the engine's business: they depend on the rest of the plan.
#pragma once

#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/fusion/decision.h"
#include "core/fusion/plan.h"
#include "core/graph/graph.h"

namespace fx {

struct EngineOptions {
  int max_fusion_size = 64;        // nodes per group, as TorchInductor's max_fusion_size
  int register_budget = 128;       // estimated live 32-bit values per thread (the hardware allows 255)
  std::set<FusionKind> disabled_kinds;
  bool allow_recompute = true;     // rematerialise cheap producers in their consumers where that wins
  bool operator==(const EngineOptions&) const = default;
};

// `nodes` in topological order. A one-node group is always legal.
FusionDecision check_group(const Graph& g, std::span<const NodeId> nodes, const EngineOptions& options);

// Rows and row length a reduction works on, when it reduces trailing axes (a row-wise kernel); nullopt
// when it reduces a leading or middle axis.
std::optional<std::pair<std::int64_t, std::int64_t>> row_extent(const Graph& g, NodeId reduction);

// Per node of `nodes` (topological order): true when it is computed only inside a branch of a concat of the group
// (every reader is that concat or another such node, and it is no graph output). The kernel loops over the
// concat's output and computes each branch where its slice is written, so such a node is never stored.
std::vector<bool> concat_branch_nodes(const Graph& g, std::span<const NodeId> nodes);
// For a decision's message: "; 3 of the 3 inputs of cat (concat) are computed inside the kernel, ..." for each
// concat of the group with such inputs, or "".
std::string concat_note(const Graph& g, std::span<const NodeId> nodes);

// Largest number of values a thread holds at once while computing the group: in-group values still
// awaiting a consumer, plus the group's inputs, 64-bit types counting twice.
int estimate_live_values(const Graph& g, std::span<const NodeId> nodes);

}  // namespace fx
