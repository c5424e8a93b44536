// Recognising scaled dot-product attention in a graph, walking back from the matmul of the probabilities by V.
#include "core/fusion/attention.h"

#include <algorithm>

#include "core/fusion/library_epilogue.h"

namespace fx {
namespace {

// cuDNN's fused attention: head dims that are multiples of 8, at most 128 (cudnn-frontend,
// include/cudnn_frontend/node/sdpa_support_surface.h: "hidden_dim should be multiple of 8"; 128 is the limit
// every architecture and cuDNN 9 version it lists supports, larger ones only on some).
constexpr std::int64_t kHeadDimMultiple = 8;
constexpr std::int64_t kMaxHeadDim = 128;

// The head dims kernels/contraction/flash_attention_tf32.cu is instantiated for (its flash_attention_tf32 switch).
bool tf32_flash_head_dim(std::int64_t d) { return d == 32 || d == 64 || d == 128; }

FusionDecision no(std::string message) { return FusionDecision::no(Reason::attention_unsupported, std::move(message)); }

// Why n's value cannot stay inside the kernel that computes `next` from it: it is a graph output or has another
// reader; nullopt when `next` is its only reader.
std::optional<FusionDecision> escapes(const Graph& g, NodeId n, NodeId next) {
  const ValueId v = g.value_of(n);
  if (g.is_output(v)) {
    return no(node_label(g, n) + " is a graph output: in fused attention it never leaves the kernel");
  }
  for (NodeId c : g.consumers(v)) {
    if (c != next) {
      return no(node_label(g, n) + " is also read by " + node_label(g, c) +
                ": in fused attention the scores never leave the kernel, so no other op can read them");
    }
  }
  return std::nullopt;
}

std::optional<double> scale_of(const Graph& g, NodeId n) {
  if (auto s = scalar_multiplier(g, n)) return s;
  const Node& node = g.node(n);
  if (node.op_id() == OpId::div && node.inputs.size() == 2 && !node.inputs[0].is_scalar() && node.inputs[1].is_scalar() &&
      node.inputs[1].scalar != 0) {
    return 1.0 / node.inputs[1].scalar;
  }
  return std::nullopt;
}

// The operand of `n` that is not a scalar (for a scale), or the chain's operand of a mask add: the one computed by
// a matmul or a scale.
ValueId tensor_operand(const Node& n) { return n.inputs[0].is_scalar() ? n.inputs[1].value : n.inputs[0].value; }

bool on_chain(const Graph& g, ValueId v) {
  const auto p = g.producer(v);
  return p && (g.node(*p).op_id() == OpId::matmul || scale_of(g, *p));
}

// Walks back from the softmax's input over an optional additive mask and an optional scale to the scores
// matmul, filling those fields of p; a refusal when something else stands there.
std::optional<FusionDecision> walk_to_scores(const Graph& g, AttentionPattern& p) {
  NodeId next = p.softmax;
  auto producer = g.producer(g.node(p.softmax).inputs[0].value);
  auto step = [&](NodeId n) -> std::optional<FusionDecision> {
    if (auto e = escapes(g, n, next)) return e;
    next = n;
    return std::nullopt;
  };
  if (producer && g.node(*producer).op_id() == OpId::add && !g.node(*producer).inputs[0].is_scalar() &&
      !g.node(*producer).inputs[1].is_scalar()) {
    const Node& add = g.node(*producer);
    const bool first = on_chain(g, add.inputs[0].value);
    p.mask_node = *producer;
    p.mask = first ? add.inputs[1].value : add.inputs[0].value;
    if (auto e = step(*producer)) return e;
    producer = g.producer(first ? add.inputs[0].value : add.inputs[1].value);
  }
  if (producer && scale_of(g, *producer)) {
    p.scale_node = *producer;
    p.scale = *scale_of(g, *producer);
    if (auto e = step(*producer)) return e;
    producer = g.producer(tensor_operand(g.node(*producer)));
  }
  if (!producer || g.node(*producer).op_id() != OpId::matmul) {
    const std::string what =
        producer ? node_label(g, *producer) : g.value_name(g.node(next).inputs[0].value) + " (an input)";
    return no(what + " comes before " + node_label(g, next) +
              ": fused attention takes, between the two matrix products, a scalar scale, then an additive mask, then "
              "the softmax");
  }
  p.scores = *producer;
  return step(*producer);
}

// Q, K (as the kernel reads it) and V, from the scores matmul and the context matmul.
std::optional<FusionDecision> operands(const Graph& g, AttentionPattern& p, bool fold_k_transpose) {
  const Node& scores = g.node(p.scores);
  if (scores.attrs.get_bool("transpose_a")) return no(node_label(g, p.scores) + " reads Q transposed");
  p.q = scores.inputs[0].value;
  p.k = scores.inputs[1].value;
  p.k_is_transposed = !scores.attrs.get_bool("transpose_b");
  const auto t = g.producer(p.k);
  if (p.k_is_transposed && fold_k_transpose && t && folds_into_operand(g, {}, *t, p.scores)) {
    p.k_transpose = *t;
    p.k = g.node(*t).inputs[0].value;
    p.k_is_transposed = false;
  }
  p.v = g.node(p.context).inputs[1].value;
  return std::nullopt;
}

// Shapes: Q [.., Tq, D], K [.., Tkv, D], V [.., Tkv, Dv] with the same leading dims, rank 3 or 4; the mask
// broadcasts to the scores over the leading dims only.
std::optional<FusionDecision> shapes(const Graph& g, AttentionPattern& p) {
  const Shape& q = g.value_type(p.q).shape;
  Shape k = g.value_type(p.k).shape;
  const Shape& v = g.value_type(p.v).shape;
  if (q.size() < 3 || q.size() > 4 || k.size() != q.size() || v.size() != q.size()) {
    return no("Q " + shape_to_string(q) + ", K and V must be [B, H, T, D] or [B, T, D] tensors of one rank");
  }
  const std::size_t r = q.size();
  if (p.k_is_transposed) std::swap(k[r - 1], k[r - 2]);
  if (!std::equal(q.begin(), q.end() - 2, k.begin()) || !std::equal(q.begin(), q.end() - 2, v.begin())) {
    return no("Q " + shape_to_string(q) + ", K " + shape_to_string(k) + " and V " + shape_to_string(v) +
              " differ in their leading dims: fused attention takes one batch and head count for all three");
  }
  p.batch = q[0];
  p.heads = r == 4 ? q[1] : 1;
  p.seq_q = q[r - 2];
  p.head_dim = q[r - 1];
  p.seq_kv = k[r - 2];
  p.value_dim = v[r - 1];
  if (!p.mask) return std::nullopt;
  const Shape& m = g.value_type(*p.mask).shape;
  Shape padded(r > m.size() ? r - m.size() : 0, 1);
  padded.insert(padded.end(), m.begin(), m.end());
  const bool rows = padded.size() == r && padded[r - 2] == p.seq_q && padded[r - 1] == p.seq_kv;
  bool lead = rows;
  for (std::size_t i = 0; lead && i + 2 < r; ++i) lead = padded[i] == 1 || padded[i] == q[i];
  if (!lead) {
    return no("the mask " + shape_to_string(m) + " is not a [" + std::to_string(p.seq_q) + ", " +
              std::to_string(p.seq_kv) +
              "] matrix broadcast over batch and heads: fused attention adds one mask value per score");
  }
  return std::nullopt;
}

std::vector<NodeId> sorted_by_topo(const Graph& g, std::vector<NodeId> nodes) {
  std::sort(nodes.begin(), nodes.end(), [&](NodeId a, NodeId b) { return g.topo_position(a) < g.topo_position(b); });
  return nodes;
}

}  // namespace

AttentionMatch match_attention(const Graph& g, NodeId context, bool fold_k_transpose) {
  const Node& ctx = g.node(context);
  if (ctx.op_id() != OpId::matmul) return no(node_label(g, context) + " is not a matmul");
  AttentionPattern p;
  p.context = context;
  const auto sm = g.producer(ctx.inputs[0].value);
  if (!sm || g.node(*sm).op_id() != OpId::softmax) {
    return no(node_label(g, context) + "'s left operand is not a softmax");
  }
  p.softmax = *sm;
  if (ctx.attrs.get_bool("transpose_a") || ctx.attrs.get_bool("transpose_b")) {
    return no(node_label(g, context) + " reads an operand transposed: fused attention reads P and V as they are");
  }
  const std::size_t rank = g.node(*sm).type.shape.size();
  if (normalize_axis(g.node(*sm).attrs.get_int("axis"), rank) != static_cast<int>(rank) - 1) {
    return no(node_label(g, *sm) + " normalises over axis " + std::to_string(g.node(*sm).attrs.get_int("axis")) +
              ", not the last: attention's softmax runs over the keys");
  }
  if (auto e = escapes(g, *sm, context)) return *e;
  if (auto e = walk_to_scores(g, p)) return *e;
  if (auto e = operands(g, p, fold_k_transpose)) return *e;
  if (auto e = shapes(g, p)) return *e;
  p.dtype = g.value_type(p.q).dtype;
  for (ValueId v : {p.k, p.v, g.value_of(context)}) {
    if (g.value_type(v).dtype != p.dtype) {
      return no(g.value_name(v) + " is " + std::string(dtype_name(g.value_type(v).dtype)) + " and Q " +
                std::string(dtype_name(p.dtype)) + ": fused attention reads and writes one dtype");
    }
  }
  std::vector<NodeId> nodes = {p.scores, p.softmax, p.context};
  for (const auto& n : {p.k_transpose, p.scale_node, p.mask_node}) {
    if (n) nodes.push_back(*n);
  }
  p.nodes = sorted_by_topo(g, std::move(nodes));
  return p;
}

AttentionKernel attention_kernel(const AttentionPattern& p) {
  return p.dtype == DType::f32 ? AttentionKernel::tf32_flash : AttentionKernel::cudnn_flash;
}

std::string attention_kernel_name(AttentionKernel k) {
  return k == AttentionKernel::tf32_flash ? "the TF32 flash attention kernel" : "cuDNN's fused flash attention";
}

std::string attention_kernel_prefix(AttentionKernel k) {
  return k == AttentionKernel::tf32_flash ? "fx_flash_" : "cudnn_";
}

FusionDecision fused_attention_supports(const AttentionPattern& p) {
  if (attention_kernel(p) == AttentionKernel::tf32_flash) {
    if (p.head_dim != p.value_dim || !tf32_flash_head_dim(p.head_dim)) {
      return no("the head dims are " + std::to_string(p.head_dim) + " (Q.K) and " + std::to_string(p.value_dim) +
                " (V): the TF32 flash attention kernel is built for one head dim of 32, 64 or 128");
    }
    return FusionDecision::yes("the TF32 flash attention kernel runs it as one kernel (TF32 tensor cores, as the "
                               "chain's f32 matmuls; the softmax in f32)");
  }
  if (p.dtype != DType::f16 && p.dtype != DType::bf16) {
    return no("Q, K and V are " + std::string(dtype_name(p.dtype)) + ": fused attention takes f16, bf16 or f32");
  }
  if (p.k_is_transposed) {
    // cuDNN is never asked about this layout: its engine query does not refuse it cleanly (docs/engine.md).
    return no("K is read as a stored K^T ([.., " + std::to_string(p.head_dim) + ", " + std::to_string(p.seq_kv) +
              "], the keys contiguous): cuDNN's fused attention reads K with its head dim contiguous; a transpose "
              "of K in the attention group is folded, one in another kernel is not");
  }
  for (const auto& [what, d] : {std::pair{"head dim", p.head_dim}, std::pair{"value head dim", p.value_dim}}) {
    if (d % kHeadDimMultiple != 0 || d > kMaxHeadDim) {
      return no(std::string("the ") + what + " is " + std::to_string(d) + ": cuDNN's fused flash attention takes " +
                "multiples of " + std::to_string(kHeadDimMultiple) + " up to " + std::to_string(kMaxHeadDim));
    }
  }
  return FusionDecision::yes("cuDNN's fused flash attention runs it as one kernel");
}

namespace {

// The chain ending at c, matched as `nodes` hold it: with K's transpose when the group holds it.
AttentionMatch match_in(const Graph& g, std::span<const NodeId> nodes, NodeId c) {
  AttentionMatch m = match_attention(g, c, true);
  const auto* p = std::get_if<AttentionPattern>(&m);
  if (p && p->k_transpose && std::find(nodes.begin(), nodes.end(), *p->k_transpose) == nodes.end()) {
    return match_attention(g, c, false);
  }
  return m;
}

bool ends_chain(const Graph& g, NodeId n) {
  if (g.node(n).op_id() != OpId::matmul) return false;
  const auto p = g.producer(g.node(n).inputs[0].value);
  return p && g.node(*p).op_id() == OpId::softmax;
}

}  // namespace

std::optional<AttentionPattern> attention_group(const Graph& g, std::span<const NodeId> nodes) {
  for (NodeId c : nodes) {
    if (!ends_chain(g, c)) continue;
    const AttentionMatch m = match_in(g, nodes, c);
    const auto* p = std::get_if<AttentionPattern>(&m);
    if (!p || !fused_attention_supports(*p).fuse) continue;
    std::vector<NodeId> mine(nodes.begin(), nodes.end());
    std::vector<NodeId> chain = p->nodes;
    std::sort(mine.begin(), mine.end());
    std::sort(chain.begin(), chain.end());
    if (mine == chain) return *p;
  }
  return std::nullopt;
}

std::optional<FusionDecision> attention_group_refusal(const Graph& g, std::span<const NodeId> nodes) {
  for (NodeId c : nodes) {
    if (!ends_chain(g, c)) continue;
    const AttentionMatch m = match_in(g, nodes, c);
    if (const auto* refused = std::get_if<FusionDecision>(&m)) return *refused;
    const AttentionPattern& p = std::get<AttentionPattern>(m);
    if (FusionDecision d = fused_attention_supports(p); !d.fuse) return d;
    // The work outside the chain, named by an op that is not a view where there is one (a reshape moves nothing).
    std::optional<NodeId> extra;
    for (NodeId n : nodes) {
      if (std::find(p.nodes.begin(), p.nodes.end(), n) != p.nodes.end()) continue;
      if (!extra || (g.node(*extra).def->view && !g.node(n).def->view)) extra = n;
    }
    if (extra) {
      return no(node_label(g, *extra) + " would share the kernel of the attention ending at " + node_label(g, c) +
                ": " + attention_kernel_name(attention_kernel(p)) +
                " computes the chain alone (no work before or after it)");
    }
    for (NodeId n : p.nodes) {
      if (std::find(nodes.begin(), nodes.end(), n) == nodes.end()) {
        return no(node_label(g, n) + " of the attention ending at " + node_label(g, c) +
                  " is not in the group: the chain runs as one kernel or not at all");
      }
    }
  }
  return std::nullopt;
}

std::string attention_explanation(const Graph& g, const AttentionPattern& p, std::int64_t bytes_before,
                                  std::int64_t bytes_after) {
  const Shape scores = g.node(p.scores).type.shape;
  const std::int64_t saved = bytes_before - bytes_after;
  const double times = static_cast<double>(saved) / static_cast<double>(std::max<std::int64_t>(1, p.score_bytes()));
  const int rounded = static_cast<int>(times + 0.5);
  const std::string kernel = attention_kernel(p) == AttentionKernel::tf32_flash ? "TF32 flash attention kernel"
                                                                                 : "cuDNN flash attention";
  std::string text = "fused attention (" + kernel + ", one kernel): the " + shape_to_string(scores) + " " +
                     std::string(dtype_name(p.dtype)) + " score matrix (" +
                     format_bytes(static_cast<double>(p.score_bytes())) + ") never reaches HBM";
  if (saved > 0) {
    text += "; as separate kernels the chain moves " + std::to_string(rounded) +
            " such matrices through HBM, written and read back (" + format_bytes(static_cast<double>(bytes_before)) +
            " in all), while one kernel reads Q, K, V" +
            (p.mask ? ", the mask" : "") + " and writes the output (" + format_bytes(static_cast<double>(bytes_after)) +
            "): " + format_bytes(static_cast<double>(saved)) + " less traffic";
  }
  return text;
}

std::string attention_group_explanation(const Graph& g, const CostModel& model, std::span<const NodeId> nodes,
                                        const GroupCost& cost) {
  const auto chain = attention_group(g, nodes);
  if (!chain) return {};
  std::int64_t apart = 0;
  for (NodeId n : chain->nodes) apart += model.single(g, n).bytes_moved();
  return attention_explanation(g, *chain, apart, cost.bytes_moved());
}

}  // namespace fx
