// The op table. Each entry states what the format promises about an op: class, arity, attributes, shape
// and dtype inference, and FLOPs (counted as one per arithmetic operation; transcendental functions count
// their usual expansion so that the cost model sees them as heavier than an add).
#include "core/graph/op_registry.h"

#include <algorithm>
#include <stdexcept>

#include "core/graph/op_infer.h"

namespace fx {
namespace {

using namespace op_infer;
using Id = OpId;

OpDef elementwise(OpId id, int arity, double flops, std::string summary,
                  InferFn infer = infer_unary) {
  OpDef d;
  d.id = id;
  d.name = std::string(op_name(id));
  d.op_class = OpClass::elementwise;
  d.min_inputs = d.max_inputs = arity;
  d.allows_scalar_inputs = arity > 1;
  d.infer = std::move(infer);
  d.flops = per_output_element(flops);
  d.summary = std::move(summary);
  return d;
}

OpDef make(OpId id, OpClass c, int min_in, int max_in, std::vector<AttrSpec> attrs, InferFn infer,
           FlopFn flops, std::string summary) {
  OpDef d;
  d.id = id;
  d.name = std::string(op_name(id));
  d.op_class = c;
  d.min_inputs = min_in;
  d.max_inputs = max_in;
  d.attrs = std::move(attrs);
  d.infer = std::move(infer);
  d.flops = std::move(flops);
  d.summary = std::move(summary);
  return d;
}

AttrSpec attr(std::string name, AttrType type, std::optional<AttrValue> def = std::nullopt) {
  return {std::move(name), type, std::move(def)};
}

}  // namespace

std::string_view op_class_name(OpClass c) {
  switch (c) {
    case OpClass::elementwise: return "elementwise";
    case OpClass::layout: return "layout";
    case OpClass::reduction: return "reduction";
    case OpClass::contraction: return "contraction";
    case OpClass::opaque: return "opaque";
  }
  return "?";
}

OpRegistry::OpRegistry() {
  using T = AttrType;
  // Unary elementwise; FLOPs per element approximate the instruction count of each function.
  const std::pair<OpId, double> unary[] = {
      {Id::neg, 1},  {Id::abs, 1},  {Id::relu, 1}, {Id::gelu, 14}, {Id::gelu_tanh, 9}, {Id::silu, 6},
      {Id::sigmoid, 5}, {Id::tanh, 5}, {Id::exp, 4},  {Id::log, 4},  {Id::sqrt, 2},      {Id::rsqrt, 2},
      {Id::sin, 6},  {Id::cos, 6},  {Id::erf, 10}, {Id::reciprocal, 1}, {Id::square, 1}};
  for (auto [id, flops] : unary) {
    OpDef d = elementwise(id, 1, flops, std::string(op_name(id)) + "(x), elementwise");
    d.epilogue = id == Id::relu        ? EpilogueOp::relu
                 : id == Id::gelu_tanh ? EpilogueOp::gelu_tanh
                 : id == Id::gelu      ? EpilogueOp::gelu_erf
                                       : EpilogueOp::none;
    ops_.push_back(std::move(d));
  }
  const std::pair<OpId, double> binary[] = {{Id::add, 1},     {Id::sub, 1},     {Id::mul, 1}, {Id::div, 1},
                                            {Id::maximum, 1}, {Id::minimum, 1}, {Id::pow, 8}};
  for (auto [id, flops] : binary) {
    OpDef d = elementwise(id, 2, flops, std::string(op_name(id)) + "(a, b), elementwise with broadcasting",
                          infer_binary);
    if (id == Id::add) d.epilogue = EpilogueOp::add;
    ops_.push_back(std::move(d));
  }
  for (OpId id : {Id::gt, Id::ge, Id::lt, Id::le, Id::eq}) {
    OpDef d = elementwise(id, 2, 1, std::string(op_name(id)) + "(a, b) -> bool", infer_compare);
    d.comparison = true;
    ops_.push_back(std::move(d));
  }
  ops_.push_back(elementwise(Id::where, 3, 1, "where(cond, a, b)", infer_where));
  {
    OpDef d = elementwise(Id::cast, 1, 1, "cast(x) to attrs.dtype", infer_cast);
    d.attrs = {attr("dtype", T::dtype)};
    ops_.push_back(std::move(d));
  }
  {
    OpDef d = elementwise(Id::dropout, 1, 4, "x * mask / (1 - p), mask drawn by Philox from seed and element index",
                          infer_dropout);
    d.attrs = {attr("p", T::number), attr("seed", T::integer, std::int64_t{0})};
    d.random = true;
    ops_.push_back(std::move(d));
  }
  {
    OpDef d = elementwise(Id::batchnorm, 5, 4, "inference batchnorm (x, mean, var, gamma, beta) per channel",
                          infer_batchnorm);
    d.allows_scalar_inputs = false;
    d.attrs = {attr("eps", T::number, 1e-5), attr("axis", T::integer, std::int64_t{1})};
    d.flops = per_output_element(4);
    d.epilogue = EpilogueOp::batchnorm;
    ops_.push_back(std::move(d));
  }
  add_reductions();
  add_contractions_and_windows();
  add_layout_and_opaque();
  index_by_id();
}

void OpRegistry::add_reductions() {
  using T = AttrType;
  const std::int64_t minus_one = -1;
  const std::vector<AttrSpec> reduce_attrs = {attr("axis", T::integer_or_list, minus_one),
                                              attr("keepdim", T::boolean, false)};
  for (OpId id : {Id::sum, Id::mean, Id::max, Id::min}) {
    ops_.push_back(make(id, OpClass::reduction, 1, 1, reduce_attrs, infer_reduce, per_input_element(1),
                        std::string(op_name(id)) + " over attrs.axis"));
    ops_.back().reduction = ReductionKind::statistic;
  }
  ops_.push_back(make(Id::softmax, OpClass::reduction, 1, 1, {attr("axis", T::integer, minus_one)}, infer_softmax,
                      per_input_element(8), "softmax over attrs.axis"));
  ops_.push_back(make(Id::layernorm, OpClass::reduction, 1, 3,
                      {attr("axis", T::integer, minus_one), attr("eps", T::number, 1e-5)}, infer_layernorm,
                      per_input_element(8), "layernorm(x, gamma, beta) over dims [axis, rank)"));
  ops_.push_back(make(Id::rmsnorm, OpClass::reduction, 2, 2, {attr("eps", T::number, 1e-6)}, infer_rmsnorm,
                      per_input_element(5), "rmsnorm(x, gamma) over the last axis"));
  for (std::size_t i = ops_.size() - 3; i < ops_.size(); ++i) ops_[i].reduction = ReductionKind::normalization;
}

void OpRegistry::add_contractions_and_windows() {
  using T = AttrType;
  ops_.push_back(make(Id::matmul, OpClass::contraction, 2, 2,
                      {attr("transpose_a", T::boolean, false), attr("transpose_b", T::boolean, false)}, infer_matmul,
                      matmul_flops, "a @ b, batched with broadcast batch dimensions"));
  ops_.push_back(make(Id::conv2d, OpClass::contraction, 2, 3,
                      {attr("stride", T::integer_or_list, std::int64_t{1}),
                       attr("padding", T::integer_or_list, std::int64_t{0}),
                       attr("dilation", T::integer_or_list, std::int64_t{1}), attr("groups", T::integer, std::int64_t{1})},
                      infer_conv2d, conv_flops, "conv2d(x NCHW, w OIHW, bias?)"));
  // A window op: never fused (the engine's kernels index outputs one to one or reduce whole axes), one
  // generated kernel of its own. stride defaults to 1 as in ONNX; PyTorch's default is the kernel size.
  ops_.push_back(make(Id::max_pool2d, OpClass::opaque, 1, 1,
                      {attr("kernel_size", T::integer_or_list), attr("stride", T::integer_or_list, std::int64_t{1}),
                       attr("padding", T::integer_or_list, std::int64_t{0}),
                       attr("dilation", T::integer_or_list, std::int64_t{1})},
                      infer_max_pool2d, pool_flops, "max_pool2d(x NCHW) over kernel_size windows; padding is -inf"));
}

void OpRegistry::add_layout_and_opaque() {
  using T = AttrType;
  const std::int64_t minus_one = -1;
  ops_.push_back(make(Id::transpose, OpClass::layout, 1, 1, {attr("perm", T::integer_list)}, infer_transpose,
                      per_output_element(0), "transpose by attrs.perm"));
  ops_.push_back(make(Id::reshape, OpClass::layout, 1, 1, {attr("shape", T::integer_list)}, infer_reshape,
                      per_output_element(0), "reshape to attrs.shape (one -1 allowed)"));
  ops_.back().view = true;  // row-major order is kept: the same bytes, read as another shape
  ops_.push_back(make(Id::concat, OpClass::layout, 2, -1, {attr("axis", T::integer)}, infer_concat,
                      per_output_element(0), "concat on attrs.axis"));
  ops_.push_back(make(Id::slice, OpClass::layout, 1, 1,
                      {attr("axis", T::integer), attr("start", T::integer), attr("end", T::integer),
                       attr("step", T::integer, std::int64_t{1})},
                      infer_slice, per_output_element(0), "slice [start:end:step] on attrs.axis"));
  ops_.push_back(make(Id::sort, OpClass::opaque, 1, 1,
                      {attr("axis", T::integer, minus_one), attr("descending", T::boolean, false)}, infer_sort,
                      sort_flops, "sort along attrs.axis (CUB)"));
  ops_.push_back(make(Id::topk, OpClass::opaque, 1, 1, {attr("k", T::integer), attr("axis", T::integer, minus_one)},
                      infer_topk, per_input_element(4), "the k largest values along attrs.axis (CUB)"));
  OpDef d = make(Id::custom, OpClass::opaque, 0, -1, {attr("label", T::string, std::string{})}, nullptr,
                 per_output_element(0), "an opaque op: never fused, not runnable; states its shape and dtype");
  d.needs_declared_type = true;
  d.allows_scalar_inputs = true;
  ops_.push_back(std::move(d));
}

// get(id) indexes ops_ by id: every id of op_id.h must have exactly one entry.
void OpRegistry::index_by_id() {
  std::sort(ops_.begin(), ops_.end(), [](const OpDef& a, const OpDef& b) { return a.id < b.id; });
  for (std::size_t i = 0; i < kNumOps; ++i) {
    if (i >= ops_.size() || ops_[i].id != static_cast<OpId>(i)) {
      throw std::logic_error("op registry: no single entry for op '" + std::string(kOpNames[i]) + "'");
    }
  }
  if (ops_.size() != kNumOps) throw std::logic_error("op registry: an op has two entries");
}

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry registry;
  return registry;
}

const OpDef* OpRegistry::find(std::string_view name) const {
  const auto id = find_op_id(name);
  return id ? &get(*id) : nullptr;
}

}  // namespace fx
