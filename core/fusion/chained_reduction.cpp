#include "core/fusion/chained_reduction.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

#include "core/fusion/legality.h"

namespace fx {
namespace {

using Extent = std::pair<std::int64_t, std::int64_t>;  // rows, row length

FusionDecision refuse(Reason r, std::string message) { return FusionDecision::no(r, std::move(message)); }

// The inner and outer extents when the group's reductions are one reduction (or siblings of one extent) and a
// reduction over the remaining axes of its result: inner rows = outer rows x outer row length.
std::optional<std::pair<Extent, Extent>> chain_extents(const Graph& g, std::span<const NodeId> nodes) {
  std::vector<Extent> extents;
  for (NodeId n : nodes) {
    if (g.node(n).op_class() != OpClass::reduction) continue;
    const auto e = row_extent(g, n);
    if (!e) return std::nullopt;
    if (std::find(extents.begin(), extents.end(), *e) == extents.end()) extents.push_back(*e);
  }
  if (extents.size() != 2) return std::nullopt;
  auto [inner, outer] = extents[0].first > extents[1].first ? std::pair{extents[0], extents[1]}
                                                            : std::pair{extents[1], extents[0]};
  if (inner.first != outer.first * outer.second || inner.second < 2 || outer.second < 2) return std::nullopt;
  return std::pair{inner, outer};
}

class ChainPlanner {
 public:
  ChainPlanner(const Graph& g, std::span<const NodeId> nodes, Extent inner, Extent outer)
      : g_(g), nodes_(nodes), inner_(inner), outer_(outer) {
    plan_.rows = outer.first;
    plan_.segments = outer.second;
    plan_.inner = inner.second;
  }

  ChainVerdict run() {
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (auto refused = place(nodes_[i])) return *refused;
    }
    if (auto refused = check_stores()) return *refused;
    if (auto refused = check_on_chip()) return *refused;
    return plan_;
  }

 private:
  std::optional<ChainLevel> in_group_level(ValueId v) const {
    const auto p = g_.producer(v);
    if (!p) return std::nullopt;
    const auto it = level_.find(*p);
    return it == level_.end() ? std::nullopt : std::optional(it->second);
  }
  bool in_group(NodeId n) const { return std::find(nodes_.begin(), nodes_.end(), n) != nodes_.end(); }

  std::optional<FusionDecision> place(NodeId n) {
    const Node& node = g_.node(n);
    if (node.op_class() == OpClass::reduction) return place_reduction(n);
    if (node.def->random) {
      return refuse(Reason::random_op, node_label(g_, n) +
                                           " draws random numbers; inside a chained reduction kernel the "
                                           "element order is the reductions', not the Philox counter's");
    }
    if (node.op_class() != OpClass::elementwise) {
      return refuse(Reason::reduction_axis, node_label(g_, n) +
                                                " changes which elements form a segment of the chained "
                                                "reductions");
    }
    const std::int64_t count = node.type.numel();
    const std::int64_t segments = plan_.rows * plan_.segments;
    const std::optional<ChainLevel> at_level = count == segments * plan_.inner ? ChainLevel::element
                                               : count == segments            ? ChainLevel::segment
                                               : count == plan_.rows          ? std::optional(ChainLevel::row)
                                                                              : std::nullopt;
    if (!at_level) {
      return refuse(Reason::shape_mismatch, node_label(g_, n) + " iterates over " + shape_to_string(node.type.shape) +
                                                ", neither the elements, the " + std::to_string(segments) +
                                                " segments nor the " + std::to_string(plan_.rows) +
                                                " rows of the chained reductions");
    }
    for (const Operand& o : node.inputs) {
      if (o.is_scalar()) continue;
      const auto at = in_group_level(o.value);
      if (at && *at != *at_level) return reads_across_levels(n, o.value, *at, *at_level);
    }
    return set(n, *at_level);
  }

  std::optional<FusionDecision> place_reduction(NodeId n) {
    const Node& node = g_.node(n);
    const bool inner = row_extent(g_, n) == inner_;
    if (node.def->reduction != ReductionKind::statistic) {
      return refuse(Reason::reduction_followed_by_reduction,
                    node_label(g_, n) +
                        " is not a sum, mean, max or min: only those chain into one kernel with a "
                        "reduction over the remaining axes");
    }
    const ValueId in = node.inputs[0].value;
    const auto at = in_group_level(in);
    const ChainLevel want = inner ? ChainLevel::element : ChainLevel::segment;
    if (at && *at != want) return reads_across_levels(n, in, *at, want);
    if (!inner && !at) {
      return refuse(Reason::reduction_followed_by_reduction,
                    node_label(g_, n) + " reduces " + g_.value_name(in) +
                        ", which the kernel does not compute: only "
                        "a reduction of the inner reductions' results chains into their kernel");
    }
    return set(n, inner ? ChainLevel::segment : ChainLevel::row);
  }

  std::optional<FusionDecision> set(NodeId n, ChainLevel level) {
    level_[n] = level;
    plan_.level.push_back(level);
    return std::nullopt;
  }

  FusionDecision reads_across_levels(NodeId n, ValueId v, ChainLevel have, ChainLevel want) const {
    static const char* const kWords[] = {"per-element", "per-segment", "per-row"};
    return refuse(Reason::reduction_followed_by_reduction,
                  node_label(g_, n) + " reads the " + kWords[static_cast<int>(have)] + " value " + g_.value_name(v) +
                      " where the chained kernel computes " + kWords[static_cast<int>(want)] +
                      " values: a value is only read at the level it is computed (a second pass over the elements "
                      "would read the input again)");
  }

  // Every value read outside the group is stored per segment or per row; an element-level value would need its
  // own pass over memory.
  std::optional<FusionDecision> check_stores() const {
    for (NodeId n : nodes_) {
      const ValueId v = g_.value_of(n);
      const auto& cons = g_.consumers(v);
      const bool stored = g_.is_output(v) || std::any_of(cons.begin(), cons.end(), [&](NodeId c) { return !in_group(c); });
      if (stored && level_.at(n) == ChainLevel::element) {
        return refuse(Reason::reduction_followed_by_reduction,
                      node_label(g_, n) +
                          " is stored per element, but the chained reduction kernel keeps elements in "
                          "registers only: it stores per-segment and per-row values");
      }
    }
    return std::nullopt;
  }

  std::optional<FusionDecision> check_on_chip() {
    for (NodeId n : nodes_) {
      if (level_.at(n) != ChainLevel::segment) continue;
      const auto& cons = g_.consumers(g_.value_of(n));
      const bool read_by_outer = std::any_of(cons.begin(), cons.end(), [&](NodeId c) {
        return in_group(c) && g_.node(c).op_class() == OpClass::reduction;
      });
      if (!read_by_outer) continue;
      plan_.staged.push_back(n);
      plan_.shared_bytes += plan_.segments * (dtype_size(g_.node(n).type.dtype) > 4 ? 8 : 4);
    }
    if (plan_.shared_bytes > kChainSharedBytes) {
      return refuse(Reason::reduction_followed_by_reduction,
                    "the outer reduction's rows of " + std::to_string(plan_.segments) + " per-segment values take " +
                        std::to_string(plan_.shared_bytes) + " bytes of shared memory per block, over " +
                        std::to_string(kChainSharedBytes) + ": the row does not fit on chip")
          .with("shared_bytes", static_cast<double>(plan_.shared_bytes));
    }
    if (plan_.rows < kChainMinRows) {
      return refuse(Reason::reduction_followed_by_reduction,
                    "only " + std::to_string(plan_.rows) + " outer rows: one block per row would stream " +
                        std::to_string(plan_.segments * plan_.inner) + " elements each while most SMs idle (fused " +
                        "from " + std::to_string(kChainMinRows) + " rows)")
          .with("rows", static_cast<double>(plan_.rows));
    }
    return std::nullopt;
  }

  const Graph& g_;
  std::span<const NodeId> nodes_;
  Extent inner_, outer_;
  ChainedReduction plan_;
  std::map<NodeId, ChainLevel> level_;
};

}  // namespace

ChainVerdict plan_chained_reduction(const Graph& g, std::span<const NodeId> nodes) {
  const auto extents = chain_extents(g, nodes);
  if (!extents) return std::monostate{};
  return ChainPlanner(g, nodes, extents->first, extents->second).run();
}

}  // namespace fx
