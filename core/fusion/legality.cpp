#include "core/fusion/legality.h"

#include <algorithm>

#include "core/fusion/attention.h"
#include "core/fusion/chained_reduction.h"
#include "core/fusion/library_epilogue.h"

namespace fx {
namespace {

// Axes a reduction reduces, normalised and sorted.
std::vector<int> reduced_axes(const Graph& g, NodeId r) {
  const Node& node = g.node(r);
  const std::size_t rank = g.value_type(node.inputs[0].value).shape.size();
  std::vector<int> axes;
  if (node.op_id() == OpId::rmsnorm) {
    axes.push_back(static_cast<int>(rank) - 1);
  } else if (node.op_id() == OpId::layernorm) {
    const int a = normalize_axis(node.attrs.get_int("axis"), rank).value_or(static_cast<int>(rank) - 1);
    for (int i = a; i < static_cast<int>(rank); ++i) axes.push_back(i);
  } else {
    for (std::int64_t a : node.attrs.get_ints("axis")) {
      if (auto n = normalize_axis(a, rank)) axes.push_back(*n);
    }
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

class GroupView {
 public:
  GroupView(const Graph& g, std::span<const NodeId> nodes) : g_(g), nodes_(nodes) {
    index_.reserve(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) index_.emplace_back(nodes[i], i);
    std::sort(index_.begin(), index_.end());
  }
  // Groups are small (64 nodes by default): a sorted vector beats a hash map here.
  std::optional<std::size_t> index_of(NodeId n) const {
    auto it = std::lower_bound(index_.begin(), index_.end(), std::make_pair(n, std::size_t{0}));
    if (it == index_.end() || it->first != n) return std::nullopt;
    return it->second;
  }
  bool contains(NodeId n) const { return index_of(n).has_value(); }
  // Nodes of the group whose values reach `root` through edges inside the group (root included).
  std::vector<bool> upstream_of(NodeId root) const {
    std::vector<bool> up(nodes_.size(), false);
    for (std::size_t i = nodes_.size(); i-- > 0;) {
      if (nodes_[i] == root) {
        up[i] = true;
        continue;
      }
      for (NodeId k : g_.consumers(g_.value_of(nodes_[i]))) {
        const auto at = index_of(k);
        if (at && up[*at]) up[i] = true;
      }
    }
    return up;
  }
  // Nodes of the group that depend on `root` through edges inside the group (root included).
  std::vector<bool> downstream_of(NodeId root) const {
    std::vector<bool> down(nodes_.size(), false);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i] == root) {
        down[i] = true;
        continue;
      }
      for (NodeId p : g_.producers(nodes_[i])) {
        const auto at = index_of(p);
        if (at && down[*at]) down[i] = true;
      }
    }
    return down;
  }

 private:
  const Graph& g_;
  std::span<const NodeId> nodes_;
  std::vector<std::pair<NodeId, std::size_t>> index_;
};

// Several contractions in one kernel: only a horizontal GEMM, matmuls sharing their left operand with right
// operands of one shape, which become one matmul on concatenated weights. The executor runs that as one
// strided-batched cuBLASLt call with no epilogue, so nothing else may join it.
std::optional<FusionDecision> check_horizontal_gemm(const Graph& g, std::span<const NodeId> nodes,
                                                    const std::vector<NodeId>& contractions) {
  const Node& first = g.node(contractions[0]);
  for (NodeId k : contractions) {
    const Node& node = g.node(k);
    const bool same = node.op_id() == OpId::matmul && first.op_id() == OpId::matmul && node.inputs[0] == first.inputs[0] &&
                      node.attrs == first.attrs && g.value_type(node.inputs[1].value).shape.size() == 2 &&
                      g.value_type(node.inputs[1].value).shape == g.value_type(first.inputs[1].value).shape;
    if (!same) {
      return FusionDecision::no(Reason::two_contractions,
                                node_label(g, contractions[0]) + " and " + node_label(g, k) +
                                    " would share one kernel: a kernel holds one contraction (only matmuls "
                                    "sharing their left operand, with weights of one shape and nothing else, "
                                    "merge into one GEMM on concatenated weights)");
    }
  }
  const GroupView view(g, nodes);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeId n = nodes[i];
    if (g.node(n).op_class() == OpClass::contraction) continue;
    const bool after = std::any_of(contractions.begin(), contractions.end(),
                                   [&](NodeId k) -> bool { return view.downstream_of(k)[i]; });
    if (!after) {
      return FusionDecision::no(Reason::contraction_prologue, node_label(g, n) + " is work before an operand of " +
                                                                  node_label(g, contractions[0]) +
                                                                  ": GEMM libraries read operands from memory");
    }
    return FusionDecision::no(Reason::epilogue_not_expressible,
                              node_label(g, n) + " follows the horizontal GEMM of " + node_label(g, contractions[0]) +
                                  ": one GEMM on concatenated weights runs as a strided-batched cuBLASLt call "
                                  "without an epilogue (no part's bias, residual or activation); it would run as a "
                                  "second kernel that reads and writes the GEMMs' outputs again");
  }
  return std::nullopt;
}

std::optional<FusionDecision> check_contractions(const Graph& g, std::span<const NodeId> nodes,
                                                 const std::vector<NodeId>& contractions) {
  if (contractions.size() > 1) return check_horizontal_gemm(g, nodes, contractions);
  const NodeId c = contractions[0];
  const std::int64_t out = g.node(c).type.numel();
  const GroupView view(g, nodes);
  const std::vector<bool> down = view.downstream_of(c);
  const std::vector<bool> up = view.upstream_of(c);
  std::optional<NodeId> view_after;  // a reshape after the contraction
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeId n = nodes[i];
    if (n == c) continue;
    const Node& node = g.node(n);
    // A sibling (a node that shares an input with the contraction, neither before nor after it in the group).
    if (!down[i] && !up[i]) {
      return FusionDecision::no(Reason::contraction_prologue,
                                node_label(g, n) + " is neither before nor after " + node_label(g, c) +
                                    " in the group: a GEMM or convolution library call computes the contraction "
                                    "and what its epilogue applies to the output, nothing beside it, so " +
                                    g.node(n).name + " runs as a kernel of its own");
    }
    // The roles decide the sentence: a reduction before the contraction is one of its operands' producers.
    if (node.op_class() == OpClass::reduction && !down[i]) {
      return FusionDecision::no(Reason::contraction_prologue,
                                node_label(g, c) + " reads the output of " + node_label(g, n) +
                                    " as an operand: GEMM and convolution libraries read operands from memory, "
                                    "so the reduction's rows are written first and " +
                                    g.node(c).name + " runs as its own kernel");
    }
    if (node.op_class() == OpClass::reduction) {
      return FusionDecision::no(Reason::reduction_axis,
                                node_label(g, c) + "'s output tiles must be written before " + node_label(g, n) +
                                    " can read whole rows of them: the rows cross the contraction's tiles");
    }
    if (!down[i] && folds_into_operand(g, nodes, n, c)) continue;  // read by the library with a transpose flag
    if (!down[i]) {
      // Name the work, not a reshape (a view) that stands first among it.
      NodeId work = n;
      for (std::size_t j = i; j < nodes.size(); ++j) {
        const Node& k = g.node(nodes[j]);
        if (nodes[j] != c && up[j] && !k.def->view && !folds_into_operand(g, nodes, nodes[j], c)) {
          work = nodes[j];
          break;
        }
      }
      const bool layout = g.node(work).op_class() == OpClass::layout;
      return FusionDecision::no(Reason::contraction_prologue,
                                node_label(g, work) + " is work before an operand of " + node_label(g, c) +
                                    ": GEMM and convolution libraries read operands from memory, so it runs "
                                    "as its own kernel" +
                                    (layout ? " (a layout op there is better expressed as operand strides)" : ""));
    }
    if (node.def->random) {
      return FusionDecision::no(Reason::random_op, node_label(g, n) +
                                                       " draws random numbers; a GEMM epilogue has "
                                                       "no Philox generator keyed by element index");
    }
    // A reshape moves no element, so a layout op that does (a transpose after it) is the one to name.
    if (node.op_class() == OpClass::layout && node.def->view) {
      if (!view_after) view_after = n;
      continue;
    }
    if (node.op_class() == OpClass::layout) {
      return FusionDecision::no(Reason::layout_epilogue,
                                node_label(g, n) + " moves elements after " + node_label(g, c) +
                                    ": a library call stores each output tile where the contraction computed it, "
                                    "it cannot remap indices");
    }
    if (node.type.numel() != out) {
      return FusionDecision::no(Reason::shape_mismatch,
                                node_label(g, n) + " iterates over " + shape_to_string(node.type.shape) +
                                    ", not over the output " + shape_to_string(g.node(c).type.shape) + " of " +
                                    node_label(g, c));
    }
  }
  if (view_after) {
    return FusionDecision::no(Reason::layout_epilogue,
                              node_label(g, *view_after) + " gives the output of " + node_label(g, c) +
                                  " another shape: a library call applies its epilogue to the output in its own "
                                  "shape, so what follows the reshape runs as a kernel of its own (the reshape "
                                  "itself moves no byte)");
  }
  // Legal for a hand-written kernel, but the executor runs a contraction as a library call: only what the
  // library's epilogue applies stays in the same kernel.
  if (const LibraryEpilogue lib = library_epilogue(g, nodes, c); !lib.expressible()) {
    return FusionDecision::no(Reason::epilogue_not_expressible, lib.message);
  }
  return std::nullopt;
}

// A reshape inside a row-wise kernel: it keeps the flat index, so the kernel stores its input's registers at
// the same place. Taken only of an element-level value computed in the group (not of an input: the kernel
// reads inputs in the rows' shape) and when nothing in the group reads it (work after it would index the new
// shape against the rows). The executor's rule: stored_reshape in kernels/codegen/row_codegen.cpp.
bool stored_row_reshape(const Graph& g, std::span<const NodeId> nodes, NodeId n, std::int64_t elements) {
  const Node& node = g.node(n);
  const auto in_group = [&](NodeId k) { return std::find(nodes.begin(), nodes.end(), k) != nodes.end(); };
  const auto producer = g.producer(node.inputs[0].value);
  if (!producer || !in_group(*producer) || node.type.numel() != elements) return false;
  const Node& p = g.node(*producer);
  if (p.op_class() == OpClass::reduction && p.type.numel() != elements) return false;  // a per-row statistic
  const auto& cons = g.consumers(g.value_of(n));
  return std::none_of(cons.begin(), cons.end(), in_group);
}

std::optional<FusionDecision> check_reductions(const Graph& g, std::span<const NodeId> nodes,
                                               const std::vector<NodeId>& reductions) {
  const GroupView view(g, nodes);
  const NodeId r0 = reductions[0];
  const auto extent = row_extent(g, r0);
  const bool one_extent = std::all_of(reductions.begin(), reductions.end(),
                                      [&](NodeId r) { return row_extent(g, r) == extent; });
  if (extent && !one_extent) {  // a reduction over the remaining axes of another: one chained kernel, or why not
    const ChainVerdict chain = plan_chained_reduction(g, nodes);
    if (std::holds_alternative<ChainedReduction>(chain)) return std::nullopt;
    if (const auto* refused = std::get_if<FusionDecision>(&chain)) return *refused;
  }
  for (NodeId r : reductions) {
    const auto e = row_extent(g, r);
    if (!e) {
      return FusionDecision::no(Reason::reduction_axis,
                                node_label(g, r) + " reduces a leading axis of " +
                                    shape_to_string(g.value_type(g.node(r).inputs[0].value).shape) +
                                    ": a row-wise kernel would need whole columns, which cross its tiles");
    }
    if (e == extent) continue;
    const std::vector<bool> down = view.downstream_of(r0);
    const bool follows = down[static_cast<std::size_t>(std::find(nodes.begin(), nodes.end(), r) - nodes.begin())];
    const std::string rows = std::to_string(extent->first) + " rows of " + std::to_string(extent->second) +
                             " vs " + std::to_string(e->first) + " rows of " + std::to_string(e->second);
    if (follows) {
      return FusionDecision::no(Reason::reduction_followed_by_reduction,
                                node_label(g, r) + " reduces the result of " + node_label(g, r0) +
                                    " over another extent (" + rows + "); one row-wise kernel cannot do both");
    }
    return FusionDecision::no(Reason::reduction_axis, node_label(g, r0) + " and " + node_label(g, r) +
                                                          " reduce rows of different extents (" + rows + ")");
  }
  const std::int64_t rows = extent->first, cols = extent->second;
  for (NodeId n : nodes) {
    const Node& node = g.node(n);
    if (node.op_class() == OpClass::reduction) continue;
    if (node.def->random) {
      return FusionDecision::no(Reason::random_op, node_label(g, n) +
                                                       " draws random numbers; inside a row-wise reduction kernel the "
                                                       "element order is the reduction's, not the Philox counter's");
    }
    if (node.op_id() == OpId::reshape && stored_row_reshape(g, nodes, n, rows * cols)) continue;
    if (node.op_class() == OpClass::layout) {
      // A reshape that keeps the rows' last dim regroups no row: say what keeps it out instead.
      const Shape& in = g.value_type(node.inputs[0].value).shape;
      const bool same_rows = node.op_id() == OpId::reshape && !in.empty() && !node.type.shape.empty() &&
                             in.back() == cols && node.type.shape.back() == cols;
      if (same_rows) {
        return FusionDecision::no(Reason::reduction_axis,
                                  node_label(g, n) + " gives an input of the row-wise kernel of " + node_label(g, r0) +
                                      " another shape: that kernel reads its inputs in its rows' shape, and a "
                                      "reshape joins it only as a stored output of work computed in it (alone, the "
                                      "reshape is a view and moves no byte)");
      }
      return FusionDecision::no(
          Reason::reduction_axis,
          node_label(g, n) + " changes which elements form a row of " + node_label(g, r0) +
              (node.op_id() == OpId::reshape ? " (a reshape joins a row-wise kernel only as a stored "
                                               "output of work computed in it)"
                                             : ""));
    }
    const std::int64_t numel = node.type.numel();
    const bool full_row = numel == rows * cols && !node.type.shape.empty() &&
                          (cols % node.type.shape.back() == 0);
    if (!full_row && numel != rows) {
      return FusionDecision::no(Reason::shape_mismatch, node_label(g, n) + " iterates over " +
                                                            shape_to_string(node.type.shape) + ", neither the " +
                                                            std::to_string(rows) + " x " + std::to_string(cols) +
                                                            " rows of " + node_label(g, r0) + " nor one value per row");
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::pair<std::int64_t, std::int64_t>> row_extent(const Graph& g, NodeId r) {
  const Shape& in = g.value_type(g.node(r).inputs[0].value).shape;
  const bool softmax = g.node(r).op_id() == OpId::softmax;
  if (softmax) {
    const auto a = normalize_axis(g.node(r).attrs.get_int("axis"), in.size());
    if (!a || *a != static_cast<int>(in.size()) - 1) return std::nullopt;
  }
  const std::vector<int> axes = softmax ? std::vector<int>{static_cast<int>(in.size()) - 1}
                                : reduced_axes(g, r);
  if (axes.empty() || axes.back() != static_cast<int>(in.size()) - 1) return std::nullopt;
  for (std::size_t i = 1; i < axes.size(); ++i) {
    if (axes[i] != axes[i - 1] + 1) return std::nullopt;
  }
  std::int64_t rows = 1, cols = 1;
  for (std::size_t i = 0; i < in.size(); ++i) (static_cast<int>(i) < axes.front() ? rows : cols) *= in[i];
  return std::make_pair(rows, cols);
}

int estimate_live_values(const Graph& g, std::span<const NodeId> nodes) {
  const GroupView view(g, nodes);
  std::vector<int> pending(nodes.size(), 0);  // per position in `nodes`: in-group consumers not yet computed
  std::vector<ValueId> inputs;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (NodeId c : g.consumers(g.value_of(nodes[i]))) pending[i] += view.contains(c);
    for (const Operand& o : g.node(nodes[i]).inputs) {  // duplicates go with the sort below
      if (o.is_scalar()) continue;
      auto p = g.producer(o.value);
      if (!p || !view.contains(*p)) inputs.push_back(o.value);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  auto width = [&](ValueId v) { return dtype_size(g.value_type(v).dtype) > 4 ? 2 : 1; };
  int held_inputs = 0;
  for (ValueId v : inputs) held_inputs += width(v);
  int live = 0, peak = 0;
  for (NodeId n : nodes) {
    live += width(g.value_of(n));
    peak = std::max(peak, live);
    for (NodeId p : g.producers(n)) {
      const auto at = view.index_of(p);
      if (at && --pending[*at] == 0) live -= width(g.value_of(p));
    }
  }
  return peak + held_inputs;
}

// Nodes of the group computed only inside a branch of a concat of the group: every consumer is in the group and is
// that concat or another such node, and the value is no graph output. The kernel loops over the concat's output
// and computes each branch where its slice is written (Inductor's pointwise cat), so these nodes iterate over
// their own shapes and are never stored. The codegen's rule: concat contexts in kernels/codegen/elementwise_emitter.h.
std::vector<bool> concat_branch_nodes(const Graph& g, std::span<const NodeId> nodes) {
  std::vector<bool> branch(nodes.size(), false);
  if (std::none_of(nodes.begin(), nodes.end(), [&](NodeId n) { return g.node(n).op_id() == OpId::concat; })) {
    return branch;
  }
  const GroupView view(g, nodes);
  for (std::size_t i = nodes.size(); i-- > 0;) {
    const ValueId v = g.value_of(nodes[i]);
    const auto& cons = g.consumers(v);
    if (g.is_output(v) || cons.empty()) continue;
    branch[i] = std::all_of(cons.begin(), cons.end(), [&](NodeId c) {
      const auto at = view.index_of(c);
      return at && (g.node(c).op_id() == OpId::concat || branch[*at]);
    });
  }
  return branch;
}

std::string concat_note(const Graph& g, std::span<const NodeId> nodes) {
  const auto is_concat = [&](NodeId n) { return g.node(n).op_id() == OpId::concat; };
  if (std::none_of(nodes.begin(), nodes.end(), is_concat)) return {};
  const std::vector<bool> branch = concat_branch_nodes(g, nodes);
  const GroupView view(g, nodes);
  std::string note;
  for (NodeId n : nodes) {
    if (!is_concat(n)) continue;
    int computed = 0;
    for (const Operand& o : g.node(n).inputs) {
      const auto p = o.is_scalar() ? std::nullopt : g.producer(o.value);
      computed += p && view.contains(*p) && branch[*view.index_of(*p)];
    }
    if (computed == 0) continue;
    note += "; " + std::to_string(computed) + " of the " + std::to_string(g.node(n).inputs.size()) + " inputs of " +
            node_label(g, n) +
            " are computed inside the kernel, each written straight into its slice "
            "of the output (never stored on its own)";
  }
  return note;
}

namespace {

// A node that computes a concat branch but is also read outside the group: the kernel would have to store it
// over its own iteration space as well as the concat's.
std::optional<FusionDecision> branch_read_elsewhere(const Graph& g, std::span<const NodeId> nodes, NodeId n) {
  const GroupView view(g, nodes);
  const ValueId v = g.value_of(n);
  const auto& cons = g.consumers(v);
  const auto concat = std::find_if(cons.begin(), cons.end(), [&](NodeId c) {
    return view.contains(c) && g.node(c).op_id() == OpId::concat;
  });
  if (concat == cons.end()) return std::nullopt;
  const auto outside = std::find_if(cons.begin(), cons.end(), [&](NodeId c) { return !view.contains(c); });
  const std::string reader = outside != cons.end() ? node_label(g, *outside) + " reads it outside the kernel"
                             : g.is_output(v)      ? "it is a graph output"
                                                   : "another op of the kernel reads it at its own shape";
  return FusionDecision::no(Reason::shape_mismatch, node_label(g, n) + " feeds " + node_label(g, *concat) + " but " +
                                                        reader + ": the kernel loops over the concat's output " +
                                                        shape_to_string(g.node(*concat).type.shape) + " and computes " +
                                                        g.node(n).name +
                                                        " only inside its slice, so it cannot also store " +
                                                        shape_to_string(g.node(n).type.shape) + " for other readers");
}

}  // namespace

// An elementwise kernel loops over one iteration space: its nodes share one element count. A reshape read only
// inside the group is exempt: the kernel never iterates over it, it reads the reshape's input at the flat index
// a consumer asks for (the reshape of a GEMM output before a split into heads, in gpt2_block_hf, is then no
// copy of its own). The codegen's rule: reshape contexts in kernels/codegen/elementwise_emitter.h. So are the
// branches of a concat (concat_branch_nodes).
std::optional<FusionDecision> check_iteration_space(const Graph& g, std::span<const NodeId> nodes) {
  const GroupView view(g, nodes);
  const std::vector<bool> branch = concat_branch_nodes(g, nodes);
  auto exempt = [&](NodeId n) {
    if (branch[*view.index_of(n)]) return true;
    const ValueId v = g.value_of(n);
    const auto& cons = g.consumers(v);
    return g.node(n).op_id() == OpId::reshape && !g.is_output(v) && !cons.empty() &&
           std::all_of(cons.begin(), cons.end(), [&](NodeId c) { return view.contains(c); });
  };
  const auto first = std::find_if_not(nodes.begin(), nodes.end(), exempt);
  if (first == nodes.end()) return std::nullopt;
  const std::int64_t numel = g.node(*first).type.numel();
  for (NodeId n : nodes) {
    if (g.node(n).type.numel() == numel || exempt(n)) continue;
    if (auto refused = branch_read_elsewhere(g, nodes, n)) return refused;
    if (auto refused = branch_read_elsewhere(g, nodes, *first)) return refused;
    return FusionDecision::no(Reason::shape_mismatch,
                              node_label(g, *first) + " iterates over " + shape_to_string(g.node(*first).type.shape) +
                                  " but " + node_label(g, n) + " over " + shape_to_string(g.node(n).type.shape) +
                                  ": one elementwise kernel needs one iteration space");
  }
  return std::nullopt;
}

FusionDecision check_group(const Graph& g, std::span<const NodeId> nodes, const EngineOptions& options) {
  if (nodes.size() <= 1) return FusionDecision::yes("a single op");
  if (static_cast<int>(nodes.size()) > options.max_fusion_size) {
    return FusionDecision::no(Reason::max_fusion_size, std::to_string(nodes.size()) + " nodes exceed the limit of " +
                                                           std::to_string(options.max_fusion_size) + " per kernel")
        .with("nodes", static_cast<double>(nodes.size()))
        .with("limit", options.max_fusion_size);
  }
  std::vector<NodeId> contractions, reductions;
  for (NodeId n : nodes) {
    const OpClass c = g.node(n).op_class();
    if (c == OpClass::opaque) {
      return FusionDecision::no(Reason::opaque_op, node_label(g, n) +
                                                       " is opaque (a library call, a window op or a custom op): it "
                                                       "always runs as its own kernel");
    }
    if (c == OpClass::contraction) contractions.push_back(n);
    if (c == OpClass::reduction) reductions.push_back(n);
  }
  // Scaled dot-product attention: two matmuls and a softmax as one fused attention kernel (attention.h).
  if (contractions.size() == 2) {
    if (const auto chain = attention_group(g, nodes)) {
      return FusionDecision::yes("one fused attention kernel (" + attention_kernel_name(attention_kernel(*chain)) +
                                 ") computes these " + std::to_string(nodes.size()) + " ops");
    }
  }
  std::optional<FusionDecision> verdict;
  if (contractions.size() == 2) verdict = attention_group_refusal(g, nodes);
  if (verdict) return *verdict;
  if (!contractions.empty()) {
    verdict = check_contractions(g, nodes, contractions);
  } else if (!reductions.empty()) {
    verdict = check_reductions(g, nodes, reductions);
  } else {
    verdict = check_iteration_space(g, nodes);
  }
  if (verdict) return *verdict;
  const int live = estimate_live_values(g, nodes);
  if (live > options.register_budget) {
    return FusionDecision::no(Reason::register_pressure,
                              "about " + std::to_string(live) + " values live per thread, over the budget of " +
                                  std::to_string(options.register_budget) + ": the kernel would spill registers")
        .with("live_values", live)
        .with("register_budget", options.register_budget);
  }
  return FusionDecision::yes("one kernel can compute these " + std::to_string(nodes.size()) + " ops")
      .with("live_values", live);
}

}  // namespace fx
