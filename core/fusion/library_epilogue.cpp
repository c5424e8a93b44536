#include "core/fusion/library_epilogue.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>
#include <variant>

namespace fx {
namespace {

// The tail label of an add of a per-column [N] vector: the one add cuBLASLt applies.
constexpr std::string_view kBiasAdd = "add(bias)";
// The tail label of an add of a tensor of the output's shape and dtype, read as cuBLASLt's C with beta = 1.
constexpr std::string_view kResidualAdd = "add(residual)";

bool contains(std::span<const NodeId> nodes, NodeId n) { return std::find(nodes.begin(), nodes.end(), n) != nodes.end(); }

// A value the group must store: a graph output or read by a node outside the group.
bool stored(const Graph& g, std::span<const NodeId> nodes, ValueId v) {
  if (g.is_output(v)) return true;
  const auto& cons = g.consumers(v);
  return std::any_of(cons.begin(), cons.end(), [&](NodeId k) { return !contains(nodes, k); });
}

// The executor's chain_successor: v's only consumer, in the group, elementwise, of v's shape and dtype,
// when v itself is not stored (a stored value leaves the library call as it is).
std::optional<NodeId> chain_successor(const Graph& g, std::span<const NodeId> nodes, ValueId v) {
  if (stored(g, nodes, v)) return std::nullopt;
  const auto& cons = g.consumers(v);
  if (cons.size() != 1 || !contains(nodes, cons[0])) return std::nullopt;
  const Node& next = g.node(cons[0]);
  if (next.op_class() != OpClass::elementwise || next.type != g.value_type(v)) return std::nullopt;
  return cons[0];
}

// How an add of a tensor `t` read from memory to a value of type `out` is labelled: a per-column bias vector, a
// residual of the output's shape and dtype, or a broadcast neither library adds.
std::string_view memory_add_label(const TensorType& out, const TensorType& t) {
  const std::int64_t cols = out.shape.empty() ? 1 : out.shape.back();
  // The format gives an add's operands one dtype (op_infer), so the dtype tests only restate it.
  if (t.dtype == out.dtype && t.numel() == cols && !t.shape.empty() && t.shape.back() == cols) return kBiasAdd;
  if (t == out) return kResidualAdd;
  return "add(broadcast)";
}

// The operand of a binary node that is not v, when it is a tensor read from memory (not computed in the group).
std::optional<ValueId> other_operand(const Graph& g, std::span<const NodeId> nodes, const Node& node, ValueId v) {
  if (node.inputs.size() != 2) return std::nullopt;
  const Operand& o = node.inputs[0].value == v ? node.inputs[1] : node.inputs[0];
  if (o.is_scalar() || o.value == v) return std::nullopt;
  if (auto p = g.producer(o.value); p && contains(nodes, *p)) return std::nullopt;
  return o.value;
}

// Why op ends the epilogue `t` has taken so far; none if it can join.
EpilogueStop stop_reason(TailOp op, const CublasLtTail& t) {
  const bool activation = t.activation != EpilogueActivation::none;
  switch (op) {
    case TailOp::alpha:
      return t.residual || t.bias || activation ? EpilogueStop::scale_after_epilogue : EpilogueStop::none;
    case TailOp::residual:
      if (activation) return EpilogueStop::residual_after_activation;
      return t.residual ? EpilogueStop::second_residual : EpilogueStop::none;
    case TailOp::bias:
      if (activation) return EpilogueStop::activation_then_bias;
      return t.bias ? EpilogueStop::second_bias : EpilogueStop::none;
    case TailOp::relu:
    case TailOp::gelu_tanh: return activation ? EpilogueStop::second_activation : EpilogueStop::none;
    case TailOp::gelu_erf: return EpilogueStop::erf_gelu;
    case TailOp::broadcast_add: return EpilogueStop::broadcast_add;
    case TailOp::self_add: return EpilogueStop::self_add;
    case TailOp::computed_add: return EpilogueStop::computed_add;
    case TailOp::other: return EpilogueStop::unsupported_op;
  }
  return EpilogueStop::unsupported_op;
}

std::string explain(EpilogueStop stop, const std::string& op) {
  switch (stop) {
    case EpilogueStop::none: return {};
    case EpilogueStop::erf_gelu:
      return "`gelu` is erf-based; cuBLASLt's GELU epilogue is the tanh approximation, exact only for `gelu_tanh`";
    case EpilogueStop::broadcast_add:
      return "`add` of a tensor broadcast to the output; cuBLASLt adds a per-column [N] bias vector or, as its C "
             "input, a full tensor of the output's shape, not a broadcast one";
    case EpilogueStop::self_add:
      return "`add` adds the value to itself; cuBLASLt's C input must be another tensor already in memory";
    case EpilogueStop::computed_add:
      return "`add` reads a value computed in the same group; cuBLASLt reads its C input and bias from memory "
             "before the call";
    case EpilogueStop::residual_after_activation:
      return "the residual add comes after the activation; cuBLASLt adds C (beta = 1) before the bias and activation";
    case EpilogueStop::second_residual: return "a second residual add; cuBLASLt has one C input";
    case EpilogueStop::activation_then_bias:
      return "the bias comes after the activation; cuBLASLt adds the bias before it";
    case EpilogueStop::second_bias: return "a second bias add; cuBLASLt takes one bias vector";
    case EpilogueStop::second_activation: return "cuBLASLt applies one activation per epilogue";
    case EpilogueStop::scale_after_epilogue:
      return "a multiplication by a scalar after the residual, bias or activation; cuBLASLt's alpha scales the "
             "product before them";
    case EpilogueStop::unsupported_op: break;
  }
  return "cuBLASLt has no `" + op + "` epilogue";
}

bool is_channel_bias(const Shape& s, std::int64_t k) { return s == Shape{k, 1, 1} || s == Shape{1, k, 1, 1}; }

bool foldable_batchnorm(const Graph& g, const Node& n, ValueId v) {
  const std::int64_t axis = n.attrs.get_int("axis");
  return n.inputs[0].value == v && (axis == 1 || axis == -3) &&
         std::all_of(n.inputs.begin() + 1, n.inputs.end(), [&](const Operand& o) { return !o.is_scalar() && g.is_input(o.value); });
}

// cuDNN's fused conv + bias + activation (kernels/executor/contraction_plan.cpp, conv_call): per-channel bias
// adds (at most two terms, the conv's own bias included), one inference batchnorm folded into the weights,
// then relu, which ends the call; f32 only.
TailFit fit_cudnn_conv(const Graph& g, std::span<const NodeId> nodes, NodeId c, const std::vector<NodeId>& chain) {
  const Node& conv = g.node(c);
  if (conv.type.dtype != DType::f32) {
    return {0, "cuDNN's fused conv + bias + activation is used for f32 only (verified on the GPU); a " +
                   std::string(dtype_name(conv.type.dtype)) + " convolution has no fused epilogue"};
  }
  const std::int64_t k = g.value_type(conv.inputs[1].value).shape[0];
  int bias_terms = conv.inputs.size() > 2 ? 1 : 0;
  bool folded = false;
  ValueId v = g.value_of(c);
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const Node& n = g.node(chain[i]);
    const EpilogueOp op = n.def->epilogue;
    if (op == EpilogueOp::add) {
      const auto other = other_operand(g, nodes, n, v);
      if (other && g.value_type(*other) == g.value_type(v)) return {i, conv_residual_refusal()};
    }
    if (op == EpilogueOp::add && !folded && bias_terms < 2) {
      const auto other = other_operand(g, nodes, n, v);
      if (!other || !is_channel_bias(g.value_type(*other).shape, k)) {
        return {i, "`add` of a tensor that is not a per-channel [K,1,1] bias"};
      }
      ++bias_terms;
    } else if (op == EpilogueOp::batchnorm && !folded && foldable_batchnorm(g, n, v)) {
      folded = true;
    } else if (op == EpilogueOp::relu) {
      if (i + 1 < chain.size()) return {i + 1, "cuDNN's fused call ends with its activation"};
      return {chain.size(), ""};
    } else {
      return {i, "`" + n.op + "` has no place in cuDNN's fused conv + bias + activation"};
    }
    v = g.value_of(chain[i]);
  }
  return {chain.size(), ""};
}

}  // namespace

TailOp classify_tail(std::string_view label) {
  static constexpr std::pair<std::string_view, TailOp> kLabels[] = {
      {"mul_scalar", TailOp::alpha},           {kBiasAdd, TailOp::bias},
      {"bias_add", TailOp::bias},              {kResidualAdd, TailOp::residual},
      {"add(broadcast)", TailOp::broadcast_add}, {"add(itself)", TailOp::self_add},
      {"add(computed)", TailOp::computed_add}};
  for (const auto& [name, op] : kLabels) {
    if (label == name) return op;
  }
  const auto id = find_op_id(label);
  switch (id ? op_def(*id).epilogue : EpilogueOp::none) {
    case EpilogueOp::relu: return TailOp::relu;
    case EpilogueOp::gelu_tanh: return TailOp::gelu_tanh;
    case EpilogueOp::gelu_erf: return TailOp::gelu_erf;
    case EpilogueOp::add:  // an add not labelled by its operand: nothing says cuBLASLt can take it
    case EpilogueOp::batchnorm:
    case EpilogueOp::none: return TailOp::other;
  }
  return TailOp::other;
}

std::string_view epilogue_stop_name(EpilogueStop s) {
  switch (s) {
    case EpilogueStop::none: return "none";
    case EpilogueStop::erf_gelu: return "erf_gelu";
    case EpilogueStop::broadcast_add: return "broadcast_add";
    case EpilogueStop::self_add: return "self_add";
    case EpilogueStop::computed_add: return "computed_add";
    case EpilogueStop::residual_after_activation: return "residual_after_activation";
    case EpilogueStop::second_residual: return "second_residual";
    case EpilogueStop::activation_then_bias: return "activation_then_bias";
    case EpilogueStop::second_bias: return "second_bias";
    case EpilogueStop::second_activation: return "second_activation";
    case EpilogueStop::scale_after_epilogue: return "scale_after_epilogue";
    case EpilogueStop::unsupported_op: return "unsupported_op";
  }
  return "?";
}

CublasLtTail cublaslt_tail(std::span<const std::string> tail) {
  CublasLtTail t;
  for (; t.absorbed < tail.size(); ++t.absorbed) {
    const std::string& op = tail[t.absorbed];
    const TailOp kind = classify_tail(op);
    t.stop = stop_reason(kind, t);
    if (t.stop != EpilogueStop::none) {
      t.why_not = explain(t.stop, op);
      break;
    }
    switch (kind) {
      case TailOp::alpha: break;  // cuBLASLt's alpha: the caller multiplies the scalars
      case TailOp::residual: t.residual = true; break;
      case TailOp::bias: t.bias = true; break;
      default: t.activation = kind == TailOp::relu ? EpilogueActivation::relu : EpilogueActivation::gelu_tanh;
    }
  }
  return t;
}

MatmulTailOp matmul_tail_op(const Graph& g, std::span<const NodeId> nodes, NodeId n, ValueId v) {
  const Node& node = g.node(n);
  if (const auto s = scalar_multiplier(g, n)) return {"mul_scalar", std::nullopt, *s};
  if (node.op_id() != OpId::add) return {node.op, std::nullopt};
  if (node.inputs[0].is_scalar() || node.inputs[1].is_scalar()) return {"add_scalar", std::nullopt};
  const Operand& o = node.inputs[0].value == v ? node.inputs[1] : node.inputs[0];
  if (o.value == v) return {"add(itself)", std::nullopt};
  if (const auto p = g.producer(o.value); p && contains(nodes, *p)) return {"add(computed)", std::nullopt};
  const std::string_view label = memory_add_label(g.value_type(v), g.value_type(o.value));
  return {std::string(label), label == "add(broadcast)" ? std::nullopt : std::optional<ValueId>(o.value)};
}

std::string conv_residual_refusal() {
  return "a residual `add` stays a kernel of its own: cuDNN 9.14 adds one in the convolution's call only through "
         "its legacy fused call, NCHW, which measured slower than the convolution on its channels-last kernels with "
         "the add apart, or for channels-last TF32 through an engine it compiles at run time, seconds per problem "
         "(docs/benchmarks.md, \"New fusion families\")";
}

std::optional<CudnnPointwise> cudnn_pointwise(std::string_view label) {
  switch (classify_tail(label)) {
    case TailOp::alpha: return CudnnPointwise::mul_scalar;
    case TailOp::bias: return CudnnPointwise::add_bias;
    case TailOp::residual: return CudnnPointwise::add_tensor;
    case TailOp::relu: return CudnnPointwise::relu;
    case TailOp::gelu_tanh: return CudnnPointwise::gelu_tanh;
    case TailOp::gelu_erf: return CudnnPointwise::gelu_erf;
    case TailOp::broadcast_add:
    case TailOp::self_add:
    case TailOp::computed_add: return std::nullopt;
    case TailOp::other: break;
  }
  switch (find_op_id(label).value_or(OpId::custom)) {
    case OpId::sigmoid: return CudnnPointwise::sigmoid;
    case OpId::tanh: return CudnnPointwise::tanh;
    case OpId::silu: return CudnnPointwise::silu;
    default: return std::nullopt;
  }
}

namespace {

// Why the matmul itself keeps cuDNN's graph from running it; "" when it does not.
std::string cudnn_matmul_refusal(const Graph& g, std::span<const NodeId> nodes, NodeId mm) {
  const Node& node = g.node(mm);
  const TensorType& a = g.value_type(node.inputs[0].value);
  const TensorType& b = g.value_type(node.inputs[1].value);
  if (node.type.dtype != DType::f16 && node.type.dtype != DType::bf16) {
    return "cuDNN's matmul graph is used for f16 and bf16 only (its run-time fusion engines' documented cases)";
  }
  const bool folded = std::any_of(nodes.begin(), nodes.end(), [&](NodeId n) { return folds_into_operand(g, nodes, n, mm); });
  if (node.attrs.get_bool("transpose_a") || node.attrs.get_bool("transpose_b") || folded) {
    return "cuDNN's matmul graph is built here for operands as stored, not transposed";
  }
  if (b.shape.size() != 2 || a.shape.size() < 2) return "cuDNN's matmul graph is built here for one [K, N] weight";
  const std::int64_t k = b.shape[0], n = b.shape[1], m = a.numel() / k;
  if (m % 8 != 0 || n % 8 != 0 || k % 8 != 0) {
    return "cuDNN's matmul graph is built here for M, N and K that are multiples of 8 (16-byte rows)";
  }
  return {};
}

// The step node `n` is, reading values by `index` (the product and earlier steps), or why the graph has none.
std::variant<CudnnTailStep, std::string> cudnn_step(const Graph& g, NodeId n, const std::map<ValueId, int>& index) {
  const Node& node = g.node(n);
  const auto ref = [&](const Operand& o) -> std::optional<int> {
    if (o.is_scalar()) return std::nullopt;
    const auto it = index.find(o.value);
    return it == index.end() ? std::nullopt : std::optional<int>(it->second);
  };
  const std::string reads_none = "`" + node.op + "` reads no value computed after the matmul";
  CudnnTailStep step;
  step.node = n;
  if (const auto k = scalar_multiplier(g, n)) {
    const auto in = ref(node.inputs[0].is_scalar() ? node.inputs[1] : node.inputs[0]);
    if (!in) return reads_none;
    step.op = CudnnPointwise::mul_scalar, step.input = *in, step.scalar = *k;
    return step;
  }
  const OpId op = node.op_id();
  if ((op == OpId::add || op == OpId::mul) && node.inputs.size() == 2) {
    const auto r0 = ref(node.inputs[0]), r1 = ref(node.inputs[1]);
    if (!r0 && !r1) return reads_none;
    if (r0 && r1) {
      step.op = op == OpId::add ? CudnnPointwise::add_value : CudnnPointwise::mul_value;
      step.input = *r0, step.other = *r1;
      return step;
    }
    const Operand& o = r0 ? node.inputs[1] : node.inputs[0];
    step.input = r0 ? *r0 : *r1;
    if (o.is_scalar()) {  // a multiply by a scalar was scalar_multiplier's
      step.op = CudnnPointwise::add_scalar, step.scalar = o.scalar;
      return step;
    }
    // The same shapes as an add's: a per-column [N] vector (a bias, LayerScale's gamma) or the output's shape.
    const std::string_view label = memory_add_label(node.type, g.value_type(o.value));
    if (label == "add(broadcast)") {
      return "`" + node.op + "` of a tensor broadcast to the output; the graph reads a per-column [N] vector or a " +
             "tensor of the output's shape";
    }
    const bool add = op == OpId::add;
    if (!add && label != kBiasAdd) {
      return std::string(
          "`mul` of a tensor of the output's shape (SwiGLU's gate) is not taken into the graph: with "
          "it, the two GEMMs as cuDNN graphs ran no faster than one strided-batched cuBLASLt GEMM "
          "and one kernel for silu * u (docs/benchmarks.md, \"New fusion families\")");
    }
    step.op =
        label == kBiasAdd ? (add ? CudnnPointwise::add_bias : CudnnPointwise::mul_bias) : CudnnPointwise::add_tensor;
    step.operand = o.value;
    return step;
  }
  // An op's name is never a tail label ("mul_scalar", "add(bias)"), so this is one of the unary steps.
  const auto unary = node.inputs.size() == 1 ? cudnn_pointwise(node.op) : std::nullopt;
  if (!unary) return "cuDNN's matmul graph has no step for `" + node.op + "`";
  const auto in = ref(node.inputs[0]);
  if (!in) return reads_none;
  step.op = *unary, step.input = *in;
  return step;
}

}  // namespace

CudnnMatmulTail cudnn_matmul_tail(const Graph& g, std::span<const NodeId> nodes, NodeId mm) {
  CudnnMatmulTail t;
  std::vector<NodeId> after;
  for (NodeId n : nodes) {
    if (n != mm && !folds_into_operand(g, nodes, n, mm)) after.push_back(n);
  }
  std::sort(after.begin(), after.end(), [&](NodeId x, NodeId y) { return g.topo_position(x) < g.topo_position(y); });
  const auto refuse = [&](std::size_t at, std::string why) {
    if (at < after.size()) t.stop = after[at];
    t.why_not = std::move(why);
    return t;
  };
  if (std::string why = cudnn_matmul_refusal(g, nodes, mm); !why.empty()) return refuse(0, std::move(why));
  const TensorType& out = g.node(mm).type;
  std::map<ValueId, int> index = {{g.value_of(mm), 0}};
  for (std::size_t i = 0; i < after.size(); ++i) {
    const Node& node = g.node(after[i]);
    if (node.op_class() != OpClass::elementwise || node.type != out) {
      return refuse(i, "`" + node.op + "` does not compute elementwise values of the matmul's " +
                           shape_to_string(out.shape) + " " + std::string(dtype_name(out.dtype)) + " output");
    }
    auto step = cudnn_step(g, after[i], index);
    if (auto* why = std::get_if<std::string>(&step)) return refuse(i, std::move(*why));
    t.steps.push_back(std::get<CudnnTailStep>(step));
    index[g.value_of(after[i])] = static_cast<int>(i) + 1;
  }
  // The graph writes one output: Y, the last step's result (or the product when nothing follows it). Every other
  // value stays on chip, so it must be read by a later step and by nothing outside.
  const std::string y = after.empty() ? std::string() : g.value_name(g.value_of(after.back()));
  for (std::size_t i = 0; i < after.size(); ++i) {
    const ValueId v = i == 0 ? g.value_of(mm) : g.value_of(after[i - 1]);
    if (stored(g, nodes, v)) {
      return refuse(i, g.value_name(v) + " is stored for use outside the kernel; the graph writes one output, " + y);
    }
    if (g.consumers(v).empty()) {
      return refuse(i - 1, g.value_name(v) + " is read by nothing: the graph writes one output, " + y +
                               ", and keeps every other value on chip for the steps that read it");
    }
  }
  return t;
}

TailFit fit_cublaslt_epilogue(std::span<const std::string> tail) {
  CublasLtTail t = cublaslt_tail(tail);
  return {t.absorbed, std::move(t.why_not)};
}

bool folds_into_operand(const Graph& g, std::span<const NodeId> nodes, NodeId n, NodeId c) {
  const Node& t = g.node(n);
  const Node& mm = g.node(c);
  if (t.op_id() != OpId::transpose || mm.op_id() != OpId::matmul) return false;
  const auto perm = t.attrs.get_ints("perm");
  const std::size_t rank = perm.size();
  if (rank < 2) return false;
  for (std::size_t d = 0; d < rank; ++d) {
    const std::size_t want = d + 2 < rank ? d : (d + 2 == rank ? rank - 1 : rank - 2);
    if (normalize_axis(perm[d], rank) != static_cast<int>(want)) return false;
  }
  const ValueId v = g.value_of(n);
  const auto& cons = g.consumers(v);
  const bool only_mm = !g.is_output(v) && cons.size() == 1 && cons[0] == c;
  const bool one_operand = (mm.inputs[0].value == v) != (mm.inputs[1].value == v);
  const auto p = g.producer(t.inputs[0].value);
  return only_mm && one_operand && !(p && contains(nodes, *p));
}

std::optional<double> scalar_multiplier(const Graph& g, NodeId n) {
  const Node& node = g.node(n);
  if (node.op_id() != OpId::mul || node.inputs.size() != 2 || node.inputs[0].is_scalar() == node.inputs[1].is_scalar()) {
    return std::nullopt;
  }
  return (node.inputs[0].is_scalar() ? node.inputs[0] : node.inputs[1]).scalar;
}

std::string library_call_summary(const Graph& g, std::span<const NodeId> nodes) {
  std::optional<NodeId> c;
  for (NodeId n : nodes) {
    if (g.node(n).op_class() != OpClass::contraction) continue;
    if (c) return {};  // several contractions: a horizontal GEMM or an attention chain
    c = n;
  }
  if (!c) return {};
  const LibraryEpilogue lib = library_epilogue(g, nodes, *c);
  if (lib.library.empty() || !lib.expressible()) return {};
  const std::size_t k = lib.absorbed.size();
  return node_label(g, *c) +
         (k == 0 ? std::string(" runs as one ")
                 : " and the " + std::to_string(k) + (k == 1 ? " op" : " ops") + " after it run as one ") +
         lib.library + " call";
}

LibraryEpilogue library_epilogue(const Graph& g, std::span<const NodeId> nodes, NodeId c) {
  LibraryEpilogue r;
  const Node& cn = g.node(c);
  std::vector<NodeId> chain;
  for (auto next = chain_successor(g, nodes, g.value_of(c)); next; next = chain_successor(g, nodes, g.value_of(*next))) {
    chain.push_back(*next);
  }
  TailFit fit;
  std::string graph_why;  // why cuDNN's matmul graph cannot take the group either
  if (cn.op_id() == OpId::matmul) {
    r.library = "cuBLASLt";
    std::vector<std::string> ops;
    ValueId v = g.value_of(c);
    for (NodeId n : chain) {
      ops.push_back(matmul_tail_op(g, nodes, n, v).label);
      v = g.value_of(n);
    }
    fit = fit_cublaslt_epilogue(ops);
    const auto after = std::count_if(nodes.begin(), nodes.end(),
                                     [&](NodeId n) { return n != c && !folds_into_operand(g, nodes, n, c); });
    if (!fit.fully_expressible(ops.size()) || static_cast<std::size_t>(after) != chain.size()) {
      // What cuBLASLt cannot take, cuDNN's matmul graph may: everything after the matmul in one call, a DAG too.
      CudnnMatmulTail graph = cudnn_matmul_tail(g, nodes, c);
      if (graph.fits()) {
        r.library = "cuDNN";
        for (const CudnnTailStep& step : graph.steps) r.absorbed.push_back(step.node);
        return r;
      }
      graph_why = (graph.stop ? node_label(g, *graph.stop) + ": " : std::string()) + graph.why_not;
      if (!fit.fully_expressible(ops.size())) fit.why_not += "; as one cuDNN matmul graph, " + graph_why;
    }
  } else if (cn.op_id() == OpId::conv2d) {
    r.library = "cuDNN";
    fit = fit_cudnn_conv(g, nodes, c, chain);
    const bool dag = std::any_of(nodes.begin(), nodes.end(), [&](NodeId n) {
      const auto& readers = g.consumers(g.value_of(n));
      return std::count_if(readers.begin(), readers.end(), [&](NodeId k) { return contains(nodes, k); }) > 1;
    });
    if (dag) {
      // Measured for f32 only: say so for the half types rather than carry the f32 result over.
      graph_why =
          cn.type.dtype == DType::f32
              ? "a DAG after a convolution is not built here: beyond a bias and a ReLU, cuDNN offered pointwise "
                "work in an f32 convolution's call only through an engine it compiles at run time (for a "
                "residual add: seconds per problem, and slower than the add apart; docs/benchmarks.md, \"New "
                "fusion families\")"
              : "a DAG after a convolution is not built here (cuDNN's pointwise graphs after a " +
                    std::string(dtype_name(cn.type.dtype)) + " convolution are not measured here)";
    }
  } else {
    fit = {0, "no library call fuses work after `" + cn.op + "`"};
  }
  r.absorbed.assign(chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(fit.absorbed));
  const std::string second_kernel = "; it would run as a second kernel that reads and writes the " +
                                    shape_to_string(cn.type.shape) + " output of " + cn.name + " again";
  if (fit.absorbed < chain.size()) {
    r.stop = chain[fit.absorbed];
    r.message = node_label(g, *r.stop) + " after " + node_label(g, c) + ": " + fit.why_not + second_kernel;
    return r;
  }
  for (NodeId n : nodes) {
    if (n == c || contains(r.absorbed, n) || folds_into_operand(g, nodes, n, c)) continue;
    r.stop = n;
    const ValueId last = r.absorbed.empty() ? g.value_of(c) : g.value_of(r.absorbed.back());
    r.message = node_label(g, n) + " is not on the single chain of ops " + r.library + " applies after " +
                node_label(g, c) + " (the chain ends at " + g.value_name(last) +
                (stored(g, nodes, last) ? ", which is stored for use outside the kernel" : "") +
                "; a library epilogue stores one output)" +
                (graph_why.empty()            ? std::string()
                 : cn.op_id() == OpId::matmul ? ", and no cuDNN matmul graph takes the group: " + graph_why
                                              : "; " + graph_why) +
                second_kernel;
    return r;
  }
  return r;
}

}  // namespace fx
