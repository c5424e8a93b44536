// A fusion plan: a partition of the graph's nodes into groups, each group one kernel. The unfused plan has
// one group per node. Plans are values; the engine (engine.h) makes new ones as the user decides.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost/cost_model.h"
#include "core/graph/graph.h"

namespace fx {

// How a group was formed; a group lists every kind that applies (e.g. epilogue + horizontal).
//   vertical:   producer -> consumer among elementwise and layout ops (index remapping for layout)
//   horizontal: parts with no edge between them that share an input (sin/cos of x; Q,K,V GEMMs)
//   epilogue:   a reduction or contraction with elementwise work after it or before it (row prologue)
//   attention:  matmul(Q, K^T) -> scale -> mask -> softmax -> matmul(., V) as one fused attention call (attention.h)
enum class FusionKind : std::uint8_t { single, vertical, horizontal, epilogue, attention };
std::string_view to_string(FusionKind k);
std::optional<FusionKind> parse_fusion_kind(std::string_view name);

struct Group {
  std::string id;                    // "g:" + name of its first node in topological order; stable
  std::vector<NodeId> nodes;         // in topological order
  std::vector<NodeId> recomputed;    // producers owned by other groups, recomputed here instead of read
  std::vector<FusionKind> kinds;     // sorted, derived from the group's structure
  OpClass op_class = OpClass::elementwise;  // combined class of its nodes (max)
  GroupIo io;                        // values read from and written to memory
  GroupCost cost;
  // A view op alone (core/analysis/views.h): not launched, its output is the buffer of `view_of`. A view op
  // alone that must still copy says why in `copy_reason` (and is launched).
  ValueId view_of = -1;
  std::string copy_reason;
  // True when nothing this group computes is read from memory: every consumer recomputes it, so it is not
  // launched.
  bool eliminated() const { return io.outputs.empty(); }
  bool is_view() const { return view_of >= 0; }
  bool launched() const { return !eliminated() && !is_view(); }
  bool operator==(const Group& o) const {
    return id == o.id && nodes == o.nodes && recomputed == o.recomputed && kinds == o.kinds;
  }
};

// What a plan is built from: node sets, each with the producers it recomputes.
struct GroupSpec {
  std::vector<NodeId> nodes;
  std::vector<NodeId> recomputed;
};

class Plan {
 public:
  Plan() = default;
  static Plan unfused(const Graph& g, const CostModel& model);
  // Builds a plan from a partition (every node in exactly one spec) whose group graph is acyclic; it
  // asserts both (callers check legality first: see legality.h and fused_graph_io.h).
  static Plan from_groups(const Graph& g, const CostModel& model, std::vector<GroupSpec> specs);

  // Groups in a topological order of the group graph; ties by the topological index of the first node.
  const std::vector<Group>& groups() const { return groups_; }
  int group_of(NodeId n) const { return group_of_[static_cast<std::size_t>(n)]; }  // index into groups()
  const Group& group_of_node(NodeId n) const { return groups_[static_cast<std::size_t>(group_of(n))]; }
  const Group* find(std::string_view id) const;
  std::span<const int> group_index() const { return group_of_; }

  int kernel_count() const;          // groups that are launched (not eliminated, not views)
  int view_count() const;            // groups that are views: no kernel
  double predicted_time_s() const;   // sum over groups
  std::int64_t bytes_moved() const;  // read plus written, over groups
  std::vector<GroupSpec> specs() const;

  bool operator==(const Plan& o) const { return groups_ == o.groups_; }

 private:
  std::vector<Group> groups_;
  std::vector<int> group_of_;
};

// The values a node set reads and writes, given which group each node belongs to and which groups recompute
// which producers. Shared by Plan and the engine's what-if evaluation.
GroupIo group_io(const Graph& g, std::span<const NodeId> nodes, std::span<const NodeId> recomputed,
                 std::span<const int> group_of_node, int self,
                 const std::vector<std::vector<NodeId>>& recomputed_by_group);

// Whether the groups of a partition can be ordered (no cycle between groups).
bool group_graph_is_acyclic(const Graph& g, const std::vector<GroupSpec>& specs);

// Kinds from structure: single (one node), horizontal (more than one connected part), vertical (an internal
// edge between elementwise/layout nodes), epilogue (an internal edge touching a reduction or contraction);
// attention alone for a group that is one fused attention chain (attention.h).
std::vector<FusionKind> derive_kinds(const Graph& g, std::span<const NodeId> nodes);

}  // namespace fx

namespace fx {
// A content hash of the plan's grouping (which nodes share a kernel, which are recomputed where), independent
// of the order groups are listed in: a run report carries it so a viewer can tell whether it measured the plan
// on screen (core/graph/content_hash.h).
std::string plan_content_hash(const Graph& g, const Plan& plan);
}  // namespace fx
