// plan_contraction_group(): maps a group holding matmuls/convolutions onto cuBLASLt and cuDNN calls. Each
// contraction absorbs the longest prefix of its elementwise tail that the library can apply before the store
// (choose_matmul_epilogue for cuBLASLt; bias, folded batchnorm and ReLU for cuDNN); whatever is left runs as
// generated kernels after the calls, and the notes say why.
#include <cmath>
#include "kernels/executor/contraction_plan.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <stdexcept>
#include <tuple>

#include "core/fusion/attention.h"
#include "core/fusion/kernel_names.h"
#include "core/fusion/library_epilogue.h"
#include "kernels/contraction/epilogue_choice.h"
#include "kernels/executor/executor.h"

namespace fx::gpu {
namespace {

std::int64_t product(const Shape& s, std::size_t begin, std::size_t end) {
  std::int64_t p = 1;
  for (std::size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

// A call's name: the library, the group's kernel stem (core's kernel_stem) and the call's last node; a group's
// only call drops the node (plan_contraction_group), so its name is the group's: "cublaslt_g_q_mm".
std::string call_name(const char* library, const std::string& stem, const std::string& node) {
  return std::string(library) + "_" + stem + "_" + c_identifier(node);
}

// Batch dimensions padded on the left with ones to `rank` entries (numpy alignment).
Shape padded_batch(const Shape& s, std::size_t rank) {
  Shape b(s.begin(), s.end() - 2);
  b.insert(b.begin(), rank - b.size(), 1);
  return b;
}

// The operands cuBLASLt reads for a matmul node: its inputs, or where a transpose of the last two dims in the
// group feeds one (core's folds_into_operand), that transpose's input with the operand's flag flipped.
struct MatmulOperands {
  ValueId a, b;
  bool flip_a = false, flip_b = false;
  std::vector<NodeId> folded;  // the transposes read through
};

// The cuBLASLt problem for one matmul node. Row-major operands are packed in the arena; a left operand with
// batch dimensions and an unbatched right operand fold into M (one plain GEMM, as PyTorch does for Linear).
MatmulProblem matmul_problem(const Graph& g, NodeId n, const MatmulOperands& ops) {
  const Node& node = g.node(n);
  const Shape& as = g.value_type(ops.a).shape;
  const Shape& bs = g.value_type(ops.b).shape;
  MatmulProblem p;
  p.transpose_a = node.attrs.get_bool("transpose_a") != ops.flip_a;
  p.transpose_b = node.attrs.get_bool("transpose_b") != ops.flip_b;
  p.a_type = p.b_type = g.value_type(node.inputs[0].value).dtype;
  p.c_type = node.type.dtype;
  p.allow_tf32 = p.a_type == DType::f32;
  const std::size_t ra = as.size(), rb = bs.size();
  const std::int64_t m = p.transpose_a ? as[ra - 1] : as[ra - 2];
  p.k = p.transpose_a ? as[ra - 2] : as[ra - 1];
  p.n = p.transpose_b ? bs[rb - 2] : bs[rb - 1];
  const std::int64_t batch_a = product(as, 0, ra - 2), batch_b = product(bs, 0, rb - 2);
  p.m = m;
  if (batch_b == 1 && !p.transpose_a) {
    p.m = batch_a * m;
  } else if (batch_b == 1) {
    p.batch = batch_a;
    p.batch_stride_b = 0;
  } else if (batch_a == 1) {
    p.batch = batch_b;
    p.batch_stride_a = 0;
  } else if (const std::size_t r = std::max(ra, rb); padded_batch(as, r) == padded_batch(bs, r)) {
    p.batch = batch_a;
  } else {
    throw std::invalid_argument("matmul " + node.name + ": batch dimensions of " + shape_to_string(as) + " and " +
                                shape_to_string(bs) +
                                " broadcast partially; cuBLASLt's strided batches take equal batches or one "
                                "operand broadcast to every batch entry");
  }
  if (std::string e = validate_matmul(p); !e.empty()) throw std::invalid_argument("matmul " + node.name + ": " + e);
  return p;
}

struct GroupView {
  const Graph& g;
  std::set<NodeId> in;
  std::set<ValueId> outputs;
  bool contains(ValueId v) const {
    auto p = g.producer(v);
    return p && in.count(*p);
  }
};

// The next node of an epilogue chain from value v: its only consumer, inside the group, of the same shape and
// dtype, when v itself is not written (a value written to memory must be stored as it is).
std::optional<NodeId> chain_successor(const GroupView& gv, ValueId v) {
  if (gv.outputs.count(v) || gv.g.is_output(v)) return std::nullopt;
  const auto& cons = gv.g.consumers(v);
  if (cons.size() != 1 || !gv.in.count(cons[0])) return std::nullopt;
  const Node& next = gv.g.node(cons[0]);
  if (next.op_class() != OpClass::elementwise || next.type != gv.g.value_type(v)) return std::nullopt;
  return cons[0];
}

// The operand of a binary node that is not v, when it is a tensor read from memory before the group runs.
std::optional<ValueId> other_operand(const GroupView& gv, const Node& node, ValueId v) {
  if (node.inputs.size() != 2) return std::nullopt;
  const Operand& o = node.inputs[0].value == v ? node.inputs[1] : node.inputs[0];
  if (o.is_scalar() || o.value == v || gv.contains(o.value)) return std::nullopt;
  return o.value;
}

struct MatmulTail {
  std::vector<NodeId> chain;
  std::vector<MatmulTailOp> ops;  // labelled by core's matmul_tail_op, as choose_matmul_epilogue reads them
};

MatmulTail matmul_tail(const GroupView& gv, NodeId mm) {
  const std::vector<NodeId> group(gv.in.begin(), gv.in.end());
  MatmulTail t;
  ValueId v = gv.g.value_of(mm);
  while (auto next = chain_successor(gv, v)) {
    t.chain.push_back(*next);
    t.ops.push_back(matmul_tail_op(gv.g, group, *next, v));
    v = gv.g.value_of(*next);
  }
  return t;
}

MatmulOperands matmul_operands(const GroupView& gv, NodeId mm) {
  const Graph& g = gv.g;
  const Node& node = g.node(mm);
  const std::vector<NodeId> group(gv.in.begin(), gv.in.end());
  MatmulOperands ops;
  ops.a = node.inputs[0].value;
  ops.b = node.inputs[1].value;
  for (auto [value, flip] : {std::pair{&ops.a, &ops.flip_a}, std::pair{&ops.b, &ops.flip_b}}) {
    const auto t = g.producer(*value);
    if (!t || !gv.in.count(*t) || !folds_into_operand(g, group, *t, mm)) continue;
    ops.folded.push_back(*t);
    *value = g.node(*t).inputs[0].value;
    *flip = true;
  }
  return ops;
}

GraphOp graph_op(CudnnPointwise p) {
  switch (p) {
    case CudnnPointwise::mul_scalar: return GraphOp::mul_scalar;
    case CudnnPointwise::add_scalar: return GraphOp::add_scalar;
    case CudnnPointwise::add_bias: return GraphOp::add_bias;
    case CudnnPointwise::add_tensor: return GraphOp::add_tensor;
    case CudnnPointwise::mul_bias: return GraphOp::mul_bias;
    case CudnnPointwise::mul_tensor: return GraphOp::mul_tensor;
    case CudnnPointwise::add_value: return GraphOp::add_value;
    case CudnnPointwise::mul_value: return GraphOp::mul_value;
    case CudnnPointwise::relu: return GraphOp::relu;
    case CudnnPointwise::gelu_erf: return GraphOp::gelu_erf;
    case CudnnPointwise::gelu_tanh: return GraphOp::gelu_tanh;
    case CudnnPointwise::sigmoid: return GraphOp::sigmoid;
    case CudnnPointwise::tanh: return GraphOp::tanh;
    case CudnnPointwise::silu: return GraphOp::silu;
  }
  return GraphOp::relu;
}

// The matmul and every node after it as one cuDNN matmul graph (core's cudnn_matmul_tail said it fits).
LibraryCall matmul_graph_call(const Graph& g, NodeId mm, const CudnnMatmulTail& tail, const std::string& stem) {
  const Node& node = g.node(mm);
  LibraryCall call;
  call.kind = LibraryCallKind::matmul_graph;
  call.a = node.inputs[0].value;
  call.b = {node.inputs[1].value};
  const Shape& bs = g.value_type(call.b[0]).shape;
  MatmulGraphProblem& p = call.graph;
  p.k = bs[0], p.n = bs[1], p.m = g.value_type(call.a).numel() / p.k;
  p.type = node.type.dtype;
  call.nodes = {mm};
  call.inputs = {call.a, call.b[0]};
  for (const CudnnTailStep& step : tail.steps) {
    // A reference to the value just before the step is written as kPrevious, so a chain reads as one.
    const auto ref = [i = static_cast<int>(p.tail.size())](int v) { return v == i ? GraphStep::kPrevious : v; };
    const GraphOp op = graph_op(step.op);
    const bool binary = op == GraphOp::add_value || op == GraphOp::mul_value;
    p.tail.push_back({op, static_cast<float>(step.scalar), ref(step.input), binary ? ref(step.other) : GraphStep::kPrevious});
    call.graph_operands.push_back(step.operand);
    if (step.operand) call.inputs.push_back(*step.operand);
    call.nodes.push_back(step.node);
  }
  call.outputs = {g.value_of(call.nodes.back())};
  call.name = call_name("cudnn", stem, g.node(call.nodes.back()).name);
  call.description = describe_matmul_graph(p);
  return call;
}

LibraryCall matmul_call(const GroupView& gv, NodeId mm, const std::string& stem, std::vector<std::string>& notes,
                        bool cudnn_graph) {
  const Graph& g = gv.g;
  LibraryCall call;
  call.kind = LibraryCallKind::matmul;
  const MatmulOperands ops = matmul_operands(gv, mm);
  call.matmul = matmul_problem(g, mm, ops);
  call.a = ops.a;
  call.b = {ops.b};
  call.nodes = ops.folded;
  call.nodes.push_back(mm);
  const MatmulTail tail = matmul_tail(gv, mm);
  std::vector<std::string> labels;
  for (const MatmulTailOp& op : tail.ops) labels.push_back(op.label);
  const EpilogueChoice choice = choose_matmul_epilogue(labels);
  const bool whole_group = tail.chain.size() + ops.folded.size() + 1 == gv.in.size();
  if ((!choice.fully_expressible() || !whole_group) && cudnn_graph) {
    const CudnnMatmulTail graph = cudnn_matmul_tail(g, std::vector<NodeId>(gv.in.begin(), gv.in.end()), mm);
    if (graph.fits()) return matmul_graph_call(g, mm, graph, stem);
  }
  call.matmul.epilogue = choice.epilogue;
  call.matmul.residual = choice.residual;
  for (std::size_t i = 0; i < choice.absorbed; ++i) {
    const MatmulTailOp& op = tail.ops[i];
    call.nodes.push_back(tail.chain[i]);
    if (op.operand) (classify_tail(op.label) == TailOp::residual ? call.residual : call.bias) = op.operand;
    call.matmul.alpha *= static_cast<float>(op.scale);
  }
  call.inputs = {call.a, call.b[0]};
  if (call.bias) call.inputs.push_back(*call.bias);
  if (call.residual) call.inputs.push_back(*call.residual);
  call.outputs = {g.value_of(call.nodes.back())};
  call.name = call_name("cublaslt", stem, g.node(call.nodes.back()).name);
  call.description = describe_matmul(call.matmul);
  for (NodeId t : ops.folded) {
    call.description += "; " + g.node(t).name + " read as a transposed operand";
    notes.push_back(call.name + ": transpose " + g.node(t).name + " folded into the GEMM (cuBLASLt reads " +
                    g.value_name(g.node(t).inputs[0].value) + " with the operand's transpose flag), never written");
  }
  if (!choice.fully_expressible()) notes.push_back(call.name + ": " + choice.message);
  return call;
}

// Which ops after a convolution cuDNN's fused call can take: [channel bias add] [batchnorm] [relu], in that
// order, f32 only (the legacy cudnnConvolutionBiasActivationForward path verified on the GPU).
Conv2dProblem conv_problem(const Graph& g, const Node& node) {
  const Shape& xs = g.value_type(node.inputs[0].value).shape;
  const Shape& ws = g.value_type(node.inputs[1].value).shape;
  Conv2dProblem p;
  p.n = xs[0], p.c = xs[1], p.h = xs[2], p.w = xs[3];
  p.k = ws[0], p.r = ws[2], p.s = ws[3];
  std::tie(p.stride_h, p.stride_w) = node.attrs.get_int_pair("stride");
  std::tie(p.pad_h, p.pad_w) = node.attrs.get_int_pair("padding");
  std::tie(p.dilation_h, p.dilation_w) = node.attrs.get_int_pair("dilation");
  p.groups = node.attrs.get_int("groups");
  p.type = node.type.dtype;
  p.allow_tf32 = p.type == DType::f32;
  return p;
}

LibraryCall conv_call(const GroupView& gv, NodeId cv, const std::string& stem, std::vector<std::string>& notes) {
  const Graph& g = gv.g;
  const Node& node = g.node(cv);
  LibraryCall call;
  call.kind = LibraryCallKind::conv2d;
  call.conv = conv_problem(g, node);
  Conv2dProblem& p = call.conv;
  call.x = node.inputs[0].value;
  call.w = node.inputs[1].value;
  call.nodes = {cv};
  if (node.inputs.size() > 2) call.bias_terms.push_back(node.inputs[2].value);
  bool relu = false;
  ValueId v = g.value_of(cv);
  std::string stop;
  while (auto next = p.type == DType::f32 ? chain_successor(gv, v) : std::optional<NodeId>{}) {
    const Node& n = g.node(*next);
    const OpId op = n.op_id();
    if (op == OpId::add) {
      const auto other = other_operand(gv, n, v);
      if (other && g.value_type(*other) == g.value_type(v)) {
        stop = conv_residual_refusal();
        break;
      }
    }
    if (op == OpId::add && !call.folded_batchnorm && call.bias_terms.size() < 2) {
      auto other = other_operand(gv, n, v);
      const Shape* os = other ? &g.value_type(*other).shape : nullptr;
      if (!os || !(*os == Shape{p.k, 1, 1} || *os == Shape{1, p.k, 1, 1})) {
        stop = "`add` of a tensor that is not a per-channel [K,1,1] bias";
        break;
      }
      call.bias_terms.push_back(*other);
    } else if (op == OpId::batchnorm && !call.folded_batchnorm && n.inputs[0].value == v &&
               (n.attrs.get_int("axis") == 1 || n.attrs.get_int("axis") == -3) &&
               std::all_of(n.inputs.begin() + 1, n.inputs.end(), [&](const Operand& o) { return g.is_input(o.value); })) {
      call.folded_batchnorm = *next;
    } else if (op == OpId::relu) {
      relu = true;
    } else {
      stop = "`" + n.op + "` has no place in cuDNN's fused conv + bias + activation";
      break;
    }
    call.nodes.push_back(*next);
    v = g.value_of(*next);
    if (relu) break;
  }
  if (relu) {
    p.epilogue = ConvEpilogue::relu_bias;
  } else if (!call.bias_terms.empty() || call.folded_batchnorm) {
    p.epilogue = ConvEpilogue::bias;
  }
  call.inputs = {call.x, call.w};
  call.inputs.insert(call.inputs.end(), call.bias_terms.begin(), call.bias_terms.end());
  if (call.folded_batchnorm) {
    for (std::size_t i = 1; i < 5; ++i) call.inputs.push_back(g.node(*call.folded_batchnorm).inputs[i].value);
  }
  call.outputs = {v};
  call.name = call_name("cudnn", stem, g.node(call.nodes.back()).name);
  call.description = describe_conv2d(p);
  if (call.folded_batchnorm) {
    call.description += "; batchnorm folded into conv weights at plan time";
    notes.push_back(call.name + ": batchnorm " + g.node(*call.folded_batchnorm).name +
                    " folded into conv weights and bias at plan time (once, when the plan is prepared)");
  }
  if (!stop.empty() && chain_successor(gv, v)) notes.push_back(call.name + ": the fused conv stops at " + stop);
  if (p.type != DType::f32 && chain_successor(gv, v)) {
    notes.push_back(call.name + ": no fused epilogue for " + std::string(dtype_name(p.type)) +
                    " convolutions (cuDNN's legacy fused call was verified for f32 only)");
  }
  return call;
}

// A group that is one attention chain: one fused attention call, cuDNN's or the TF32 kernel (core's
// attention_group and attention_kernel decided it).
LibraryCall attention_call(const Graph& g, const AttentionPattern& a, const std::string& stem,
                           std::vector<std::string>& notes) {
  LibraryCall call;
  call.kind = LibraryCallKind::attention;
  AttentionProblem& p = call.attention;
  p.batch = a.batch, p.heads = a.heads, p.seq_q = a.seq_q, p.seq_kv = a.seq_kv;
  p.head_dim = a.head_dim, p.value_dim = a.value_dim;
  p.type = a.dtype;
  p.scale = static_cast<float>(a.scale);
  p.k_transposed = a.k_is_transposed;
  call.q = a.q, call.k = a.k, call.v = a.v, call.mask = a.mask;
  call.inputs = {a.q, a.k, a.v};
  if (a.mask) {
    const Shape& m = g.value_type(*a.mask).shape;
    const std::size_t rank = g.value_type(a.q).shape.size();
    // The mask's leading dims as [B, H] (numpy alignment; a rank-3 chain has no head dim).
    Shape lead(m.begin(), m.end() - 2);
    lead.insert(lead.begin(), rank - 2 - std::min(lead.size(), rank - 2), 1);
    p.mask = true;
    p.mask_batch = lead.empty() ? 1 : lead[0];
    p.mask_heads = rank == 4 && lead.size() > 1 ? lead[1] : 1;
    call.inputs.push_back(*a.mask);
  }
  call.nodes = a.nodes;
  call.outputs = {g.value_of(a.context)};
  call.attention_kernel = attention_kernel(a);
  call.name = attention_kernel_prefix(call.attention_kernel) + stem;
  call.description = describe_attention(p);
  if (a.k_transpose) {
    notes.push_back(call.name + ": transpose " + g.node(*a.k_transpose).name + " folded into the attention call (K^T "
                    "read through swapped strides), never written");
  }
  return call;
}

// Matmuls of the group that can run as one strided-batched GEMM: same left operand and flags, unbatched
// weights that are graph inputs of one shape (stacked once at preparation), and no epilogue of their own.
std::vector<std::vector<NodeId>> horizontal_sets(const GroupView& gv, const std::vector<NodeId>& matmuls,
                                                 const std::map<NodeId, LibraryCall>& single) {
  std::map<std::tuple<ValueId, bool, Shape, Shape, DType>, std::vector<NodeId>> sets;
  std::vector<std::tuple<ValueId, bool, Shape, Shape, DType>> order;
  for (NodeId mm : matmuls) {
    const Node& node = gv.g.node(mm);
    const LibraryCall& call = single.at(mm);
    const ValueId b = node.inputs[1].value;
    // call.nodes is {mm} alone unless the call absorbed a folded transpose (first) or a tail (alpha, residual,
    // bias, activation): one strided-batched GEMM on stacked weights has no epilogue of any part.
    if (call.kind != LibraryCallKind::matmul || call.matmul.batch != 1 || call.nodes.size() != 1 || !gv.g.is_input(b) ||
        gv.g.value_type(b).shape.size() != 2) {
      continue;
    }
    auto key = std::tuple(node.inputs[0].value, node.attrs.get_bool("transpose_b"), gv.g.value_type(b).shape,
                          node.type.shape, node.type.dtype);
    if (node.attrs.get_bool("transpose_a")) continue;
    if (!sets.count(key)) order.push_back(key);
    sets[key].push_back(mm);
  }
  std::vector<std::vector<NodeId>> out;
  for (const auto& key : order) {
    if (sets[key].size() > 1) out.push_back(sets[key]);
  }
  return out;
}

LibraryCall horizontal_call(const Graph& g, const std::vector<NodeId>& parts, const std::map<NodeId, LibraryCall>& single,
                            const std::string& stem) {
  LibraryCall call;
  call.kind = LibraryCallKind::horizontal_matmul;
  call.matmul = single.at(parts[0]).matmul;
  call.a = single.at(parts[0]).a;
  call.inputs = {call.a};
  for (NodeId mm : parts) {
    call.parts.push_back(single.at(mm));
    call.nodes.push_back(mm);
    call.b.push_back(g.node(mm).inputs[1].value);
    call.inputs.push_back(call.b.back());
    call.outputs.push_back(g.value_of(mm));
  }
  MatmulProblem& p = call.matmul;
  p.batch = static_cast<std::int64_t>(parts.size());
  p.batch_stride_a = 0;
  p.batch_stride_b = p.k * p.n;
  p.batch_stride_c = p.m * p.n;  // the arena's spacing of the outputs replaces it at launch
  call.name = "cublaslt_" + stem + "_x" + std::to_string(parts.size());
  call.description = describe_matmul(p) + "; horizontal: " + std::to_string(parts.size()) +
                     " GEMMs as one strided-batched GEMM on weights stacked once at plan time, outputs packed";
  return call;
}

// Every value a call reads must be in memory before it runs: produced outside the group or by an earlier call.
void check_inputs_ready(const GroupView& gv, const std::vector<LibraryCall>& calls) {
  std::set<ValueId> ready;
  for (const LibraryCall& c : calls) {
    for (ValueId v : c.inputs) {
      if (gv.contains(v) && !ready.count(v)) {
        throw std::invalid_argument(c.name + " reads " + gv.g.value_name(v) +
                                    ", which its own group computes before the contraction (a prologue): the "
                                    "executor runs contractions on values already in memory");
      }
    }
    ready.insert(c.outputs.begin(), c.outputs.end());
  }
}

}  // namespace

std::string_view library_call_kind_name(LibraryCallKind k) {
  switch (k) {
    case LibraryCallKind::matmul: return "matmul";
    case LibraryCallKind::horizontal_matmul: return "horizontal_matmul";
    case LibraryCallKind::conv2d: return "conv2d";
    case LibraryCallKind::attention: return "attention";
    case LibraryCallKind::matmul_graph: return "matmul_graph";
  }
  return "?";
}

bool has_contraction(const Graph& g, std::span<const NodeId> nodes) {
  return std::any_of(nodes.begin(), nodes.end(), [&](NodeId n) { return g.node(n).op_class() == OpClass::contraction; });
}

ContractionGroupPlan plan_contraction_group(const Graph& g, std::span<const NodeId> nodes,
                                            const std::vector<ValueId>& outputs, const std::string& stem,
                                            bool cudnn_graph) {
  ContractionGroupPlan plan;
  if (const auto chain = attention_group(g, nodes)) {
    plan.calls.push_back(attention_call(g, *chain, stem, plan.notes));
    return plan;
  }
  GroupView gv{g, std::set<NodeId>(nodes.begin(), nodes.end()), std::set<ValueId>(outputs.begin(), outputs.end())};
  std::vector<NodeId> contractions, matmuls;
  for (NodeId n : g.topo_order()) {
    if (!gv.in.count(n) || g.node(n).op_class() != OpClass::contraction) continue;
    contractions.push_back(n);
    if (g.node(n).op_id() == OpId::matmul) matmuls.push_back(n);
  }
  std::map<NodeId, LibraryCall> single;
  std::map<NodeId, std::vector<std::string>> single_notes;
  for (NodeId n : contractions) {
    single[n] = g.node(n).op_id() == OpId::matmul ? matmul_call(gv, n, stem, single_notes[n], cudnn_graph)
                                                  : conv_call(gv, n, stem, single_notes[n]);
  }
  std::map<NodeId, const std::vector<NodeId>*> merged;  // first part -> its set; other parts -> nullptr
  const auto sets = horizontal_sets(gv, matmuls, single);
  for (const auto& set : sets) {
    for (NodeId mm : set) merged[mm] = mm == set[0] ? &set : nullptr;
  }
  for (NodeId n : contractions) {
    if (!merged.count(n)) {
      plan.calls.push_back(single[n]);
      plan.notes.insert(plan.notes.end(), single_notes[n].begin(), single_notes[n].end());
    } else if (merged[n]) {
      plan.calls.push_back(horizontal_call(g, *merged[n], single, stem));
    }
  }
  if (plan.calls.size() == 1 && plan.calls[0].kind != LibraryCallKind::horizontal_matmul) {
    const LibraryCallKind k = plan.calls[0].kind;
    plan.calls[0].name = (k == LibraryCallKind::conv2d || k == LibraryCallKind::matmul_graph ? "cudnn_" : "cublaslt_") + stem;
  }
  check_inputs_ready(gv, plan.calls);
  std::set<NodeId> done;
  for (const LibraryCall& c : plan.calls) done.insert(c.nodes.begin(), c.nodes.end());
  for (NodeId n : g.topo_order()) {
    if (gv.in.count(n) && !done.count(n)) plan.rest.push_back(n);
  }
  for (NodeId n : plan.rest) {
    if (gv.outputs.count(g.value_of(n))) plan.rest_outputs.push_back(g.value_of(n));
  }
  if (plan.rest_outputs.empty()) plan.rest.clear();
  return plan;
}

std::vector<std::vector<NodeId>> attention_fallback_parts(const Graph& g, const LibraryCall& call) {
  std::vector<std::vector<NodeId>> parts;
  std::optional<NodeId> transpose;  // K's folded transpose goes with the scores matmul, which reads through it
  for (NodeId n : call.nodes) {
    if (g.node(n).op_id() == OpId::transpose) {
      transpose = n;
      continue;
    }
    const auto& in = g.node(n).inputs;
    const bool reads_it = transpose && std::any_of(in.begin(), in.end(), [&](const Operand& o) {
      return !o.is_scalar() && g.producer(o.value) == transpose;
    });
    parts.push_back(reads_it ? std::vector<NodeId>{*transpose, n} : std::vector<NodeId>{n});
  }
  return parts;
}

// An f32 output downstream of TF32 contractions gets a looser limit. Each TF32 contraction on a chain adds an
// independent rounding of about 3e-4 relative (10-bit mantissa); independent errors grow about as the square root
// of their count, so the limit is 2e-3 * sqrt(longest chain of TF32 contractions), capped at the f16 limit (1e-2).
std::map<ValueId, double> tf32_output_tolerances(const Graph& g) {
  std::vector<int> chain(static_cast<std::size_t>(g.num_values()), 0);  // TF32 contractions on the longest path
  for (NodeId n : g.topo_order()) {
    const Node& node = g.node(n);
    int deepest = 0;
    for (ValueId u : g.tensor_inputs(n)) deepest = std::max(deepest, chain[static_cast<std::size_t>(u)]);
    const bool tf32 = node.op_class() == OpClass::contraction && g.value_type(node.inputs[0].value).dtype == DType::f32;
    chain[static_cast<std::size_t>(g.value_of(n))] = deepest + (tf32 ? 1 : 0);
  }
  std::map<ValueId, double> out;
  for (ValueId o : g.outputs()) {
    const int depth = chain[static_cast<std::size_t>(o)];
    if (depth == 0 || tolerance_for(g.value_type(o).dtype) >= kTf32Tolerance) continue;
    out[o] = std::min(1e-2, kTf32Tolerance * std::sqrt(static_cast<double>(depth)));
  }
  return out;
}

std::map<ValueId, double> attention_output_tolerances(const Graph& g) {
  std::vector<char> after(static_cast<std::size_t>(g.num_values()), 0);  // depends on a half-precision chain
  for (NodeId n : g.topo_order()) {
    bool depends = false;
    for (ValueId u : g.tensor_inputs(n)) depends = depends || after[static_cast<std::size_t>(u)];
    if (!depends && g.node(n).op_class() == OpClass::contraction) {
      const AttentionMatch m = match_attention(g, n);
      const auto* chain = std::get_if<AttentionPattern>(&m);
      depends = chain && (chain->dtype == DType::f16 || chain->dtype == DType::bf16);
    }
    after[static_cast<std::size_t>(g.value_of(n))] = depends;
  }
  std::map<ValueId, double> out;
  for (ValueId o : g.outputs()) {
    if (after[static_cast<std::size_t>(o)]) out[o] = 2.0 * tolerance_for(g.value_type(o).dtype);
  }
  return out;
}

}  // namespace fx::gpu
