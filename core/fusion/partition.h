// The engine's working state: a partition of the nodes into group slots that can be merged in place, with
// a maintained topological order of the groups (for the bounded cycle check) and the evaluation of a
// proposed merge (legality, cycle, cost, strategy). Internal to core/fusion; the public view is plan.h.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <string>
#include <vector>

#include "core/analysis/bounded_reach.h"
#include "core/cost/cost_model.h"
#include "core/fusion/attention.h"
#include "core/fusion/engine.h"
#include "core/fusion/plan.h"

namespace fx {

class Partition {
 public:
  Partition(const Graph& g, const CostModel& model, const Plan& plan);

  const Graph& graph() const { return g_; }
  int slot_count() const { return static_cast<int>(nodes_.size()); }
  bool alive(int s) const { return !nodes_[static_cast<std::size_t>(s)].empty(); }
  int group_of(NodeId n) const { return group_of_[static_cast<std::size_t>(n)]; }
  const std::vector<NodeId>& nodes(int s) const { return nodes_[static_cast<std::size_t>(s)]; }
  const std::vector<NodeId>& recomputed(int s) const { return recomputed_[static_cast<std::size_t>(s)]; }
  int version(int s) const { return version_[static_cast<std::size_t>(s)]; }
  int position(int s) const { return position_[static_cast<std::size_t>(s)]; }
  int first_pos(int s) const { return topo_pos_[static_cast<std::size_t>(nodes(s).front())]; }
  std::string group_id(int s) const { return "g:" + g_.node(nodes(s).front()).name; }
  const GroupCost& cost(int s) const { return cost_[static_cast<std::size_t>(s)]; }
  // A view op alone (core/analysis/views.h): no kernel, no cost.
  bool is_view(int s) const;

  // Calls visit(b) for each group b that depends on group s.
  void for_each_successor(int s, const std::function<void(int)>& visit) const;
  // Pairs (a, b), a before b, along edges and between consecutive consumer groups of a shared value, and for each
  // attention chain the groups of its two matmuls (the candidate then merges every group of the chain), in a
  // deterministic order. With `only` >= 0, just the pairs that involve that group.
  std::vector<std::pair<int, int>> pairs(int only = -1) const;

  // The id a candidate for (a, b) gets, without evaluating it; finds the pair with that id.
  std::string pair_id(int a, int b) const { return pair_id(a, b, has_edge(a, b)); }
  std::string pair_id(int a, int b, bool edge) const { return candidate_id(pair_kind(a, b, edge), a, b); }
  FusionKind pair_kind(int a, int b, bool edge) const;
  std::optional<std::pair<int, int>> find_pair(std::string_view id) const;

  // How much of a candidate evaluate fills in. The verdict (fuse or not, reason, strategy, times, bytes) is
  // the same either way; `verdict` leaves out the id, group ids and message text, most of the cost, for
  // auto-fuse's queue, which spells out only what it accepts and logs.
  enum class Detail : std::uint8_t { verdict, full };
  // Evaluates merging groups a and b (a positioned before b) under the options and user rejections.
  Candidate evaluate(int a, int b, const EngineOptions& options, const std::set<std::string>& rejected,
                     Detail detail = Detail::full);
  // Applies an evaluated, fusible candidate (an attention candidate merges every group its nodes are in).
  void apply(const Candidate& c);

  std::vector<GroupSpec> specs() const;

 private:
  // The attention chain whose scores matmul is in a and whose context matmul is in b, if any.
  const AttentionPattern* attention_between(int a, int b) const;
  // evaluate() for an attention pair: the chain's groups merged into one fused attention kernel.
  Candidate evaluate_attention(Candidate c, int a, int b, const AttentionPattern& chain, const EngineOptions& options,
                               const std::set<std::string>& rejected, Detail detail);
  // What weigh_recompute settles for a candidate whose producer has consumers outside the pair.
  struct RecomputeChoice {
    std::string how;  // the clause for the message
    int kernels_before = 2, kernels_after = 1;
    bool intermediate_written = true;  // false once every consumer recomputes the producer
  };
  GroupCost cost_now(int s) const;
  GroupCost cost_merged(int a, int b) { return cost_union({a, b}); }
  GroupCost cost_union(const std::vector<int>& slots);
  // Costs of `consumers` each recomputing `producer`; producer_after: the producer as it is then left (zero
  // when no one reads its result any more: it is not launched).
  GroupCost cost_recompute(int producer, const std::vector<int>& consumers, GroupCost& producer_after);
  std::vector<int> consumer_groups(int producer) const;
  std::vector<NodeId> sorted_nodes(const std::vector<int>& slots) const;
  RecomputeChoice weigh_recompute(Candidate& c, int a, int b, const EngineOptions& options, GroupCost& before,
                                  GroupCost& after, Detail detail);
  std::vector<int> cycle_path(int a, int b);
  void merge(int a, int b);
  void recompute_into(int producer, int consumer);
  int slot_of(const std::string& group_id) const { return group_of(*g_.find_node(group_id.substr(2))); }
  std::string candidate_id(FusionKind kind, int a, int b) const;
  bool has_edge(int a, int b) const;
  bool recomputes(int s, NodeId n) const;

  const Graph& g_;
  const CostModel& model_;
  std::vector<int> topo_pos_;
  std::vector<int> group_of_;
  std::vector<std::vector<NodeId>> nodes_, recomputed_;
  std::vector<std::vector<int>> recomputed_in_;  // per node: groups that recompute it
  std::vector<int> version_, position_, order_;  // order_[position] = slot, -1 for a dead slot
  std::vector<GroupCost> cost_;
  std::vector<AttentionPattern> attention_;  // every attention chain of the graph (attention.h), in node order
  std::vector<int> chain_of_;                // per node: the index in attention_ of the chain holding it, or -1
  BoundedReach reach_;
  std::vector<char> later_;  // merge's scratch: the slots that depend on the merged producer
};

}  // namespace fx
