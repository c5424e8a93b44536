// The ONNX op table: how each ONNX operator maps to the graph format's ops. A mapper either emits nodes
// whose last one takes the ONNX output's name, or returns why it cannot; the node then imports as `custom`
// (the driver rolls back anything the mapper emitted). Semantics follow the ONNX operator docs per opset.
#include <algorithm>
#include <array>
#include <numeric>
#include <unordered_map>

#include "app/import/onnx_internal.h"

namespace fx::onnx_import {
namespace {

using Result = std::optional<std::string>;
using Node = onnx::NodeProto;

Result emit(Importer& imp, std::string name, std::string op, std::vector<Operand> inputs, Attrs attrs = {}) {
  NodeSpec n;
  n.name = std::move(name);
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  std::string why;
  if (!imp.emit(std::move(n), why)) return why;
  return std::nullopt;
}

// Emits the node that carries ONNX output `i`, and binds the ONNX name to it.
Result emit_output(Importer& imp, const Node& node, int i, std::string op, std::vector<Operand> inputs, Attrs attrs = {}) {
  const std::string name = imp.output_name(node, i);
  if (auto r = emit(imp, name, std::move(op), std::move(inputs), std::move(attrs))) return r;
  imp.alias(node.output(i), name);
  return std::nullopt;
}

Attrs attrs_of(std::initializer_list<std::pair<const char*, AttrValue>> list) {
  Attrs a;
  for (const auto& [k, v] : list) a.set(k, v);
  return a;
}

const TensorType* input_type(Importer& imp, const Node& node, int i) {
  return i < node.input_size() && !node.input(i).empty() ? imp.type_of(node.input(i)) : nullptr;
}

bool has_input(const Node& node, int i) { return i < node.input_size() && !node.input(i).empty(); }

// An attribute-or-input list (axes, splits): opsets moved many attributes to constant inputs.
std::optional<std::vector<std::int64_t>> ints_from(Importer& imp, const Node& node, const char* attr, int input) {
  if (auto a = attr_ints(node, attr)) return a;
  if (has_input(node, input)) return imp.const_ints(node.input(input));
  return std::vector<std::int64_t>{};
}

// ---- elementwise ----

const std::unordered_map<std::string, std::string>& unary_ops() {
  static const std::unordered_map<std::string, std::string> ops = {
      {"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"},   {"Log", "log"},
      {"Neg", "neg"},   {"Abs", "abs"},         {"Sqrt", "sqrt"}, {"Sin", "sin"},   {"Cos", "cos"},
      {"Erf", "erf"},   {"Reciprocal", "reciprocal"}};
  return ops;
}

const std::unordered_map<std::string, std::string>& binary_ops() {
  static const std::unordered_map<std::string, std::string> ops = {
      {"Add", "add"}, {"Sub", "sub"},      {"Mul", "mul"},      {"Div", "div"}, {"Pow", "pow"},
      {"Greater", "gt"}, {"GreaterOrEqual", "ge"}, {"Less", "lt"}, {"LessOrEqual", "le"}, {"Equal", "eq"},
      {"Where", "where"}, {"Sum", "add"}, {"Max", "maximum"}, {"Min", "minimum"}};
  return ops;
}

// Operands of an elementwise node: one-element constants become number literals (which the fusion engine
// folds into the kernel) when a tensor operand of at least their rank remains, so broadcasting is unchanged.
std::vector<Operand> elementwise_operands(Importer& imp, const Node& node) {
  const int n = node.input_size();
  std::vector<bool> literal(static_cast<std::size_t>(n));
  std::size_t tensor_rank = 0;
  int widest = -1;
  for (int j = 0; j < n; ++j) {
    const TensorType* t = imp.type_of(node.input(j));
    const std::size_t rank = t ? t->shape.size() : 0;
    literal[static_cast<std::size_t>(j)] = imp.const_scalar(node.input(j)).has_value();
    if (!literal[static_cast<std::size_t>(j)]) tensor_rank = std::max(tensor_rank, rank);
    if (widest < 0 || rank > (imp.type_of(node.input(widest)) ? imp.type_of(node.input(widest))->shape.size() : 0)) {
      widest = j;
    }
  }
  if (std::all_of(literal.begin(), literal.end(), [](bool b) { return b; }) && widest >= 0) {
    literal[static_cast<std::size_t>(widest)] = false;
    tensor_rank = imp.type_of(node.input(widest)) ? imp.type_of(node.input(widest))->shape.size() : 0;
  }
  std::vector<Operand> out;
  for (int j = 0; j < n; ++j) {
    const TensorType* t = imp.type_of(node.input(j));
    if (literal[static_cast<std::size_t>(j)] && t && t->shape.size() <= tensor_rank) {
      out.emplace_back(*imp.const_scalar(node.input(j)));
    } else {
      out.emplace_back(imp.tensor(node.input(j)));
    }
  }
  return out;
}

Result map_unary(Importer& imp, const Node& node) {
  return emit_output(imp, node, 0, unary_ops().at(node.op_type()), {imp.tensor(node.input(0))});
}

Result map_binary(Importer& imp, const Node& node) {
  const std::string& op = binary_ops().at(node.op_type());
  std::vector<Operand> ins = elementwise_operands(imp, node);
  if (ins.size() == 1) {
    imp.alias(node.output(0), node.input(0));  // Sum/Max/Min of one tensor
    return std::nullopt;
  }
  if (op == "where" || ins.size() == 2) return emit_output(imp, node, 0, op, ins);
  // Variadic Sum/Max/Min: a chain of binary nodes.
  Operand acc = ins[0];
  for (std::size_t j = 1; j + 1 < ins.size(); ++j) {
    const std::string name = imp.temp_name(node.output(0) + "/" + op + std::to_string(j));
    if (auto r = emit(imp, name, op, {acc, ins[j]})) return r;
    acc = name;
  }
  return emit_output(imp, node, 0, op, {acc, ins.back()});
}

Result map_gelu(Importer& imp, const Node& node) {
  const std::string approx = attr_string(node, "approximate", "none");
  if (approx != "none" && approx != "tanh") return "unknown approximate=" + approx;
  return emit_output(imp, node, 0, approx == "tanh" ? "gelu_tanh" : "gelu", {imp.tensor(node.input(0))});
}

// Clip(x, min, max) = minimum(maximum(x, min), max); min 0 without max is relu (ReLU6 keeps both).
Result map_clip(Importer& imp, const Node& node) {
  std::optional<double> lo, hi;
  if (imp.opset() < 11) {
    if (find_attr(node, "min")) lo = attr_float(node, "min", 0);
    if (find_attr(node, "max")) hi = attr_float(node, "max", 0);
  } else {
    for (int i : {1, 2}) {
      if (!has_input(node, i)) continue;
      auto v = imp.const_scalar(node.input(i));
      if (!v) return std::string("Clip bounds must be constants");
      (i == 1 ? lo : hi) = v;
    }
  }
  Operand x = imp.tensor(node.input(0));
  if (lo && *lo == 0.0 && !hi) return emit_output(imp, node, 0, "relu", {x});
  if (!lo && !hi) {
    imp.alias(node.output(0), node.input(0));
    return std::nullopt;
  }
  if (lo && hi) {
    const std::string mid = imp.temp_name(node.output(0) + "/max");
    if (auto r = emit(imp, mid, "maximum", {x, *lo})) return r;
    return emit_output(imp, node, 0, "minimum", {mid, *hi});
  }
  return emit_output(imp, node, 0, lo ? "maximum" : "minimum", {x, lo ? *lo : *hi});
}

Result map_cast(Importer& imp, const Node& node) {
  bool narrowed = false;
  auto dtype = map_dtype(static_cast<int>(attr_int(node, "to", 0)), narrowed);
  if (!dtype) return "cast to " + onnx_dtype_name(static_cast<int>(attr_int(node, "to", 0)));
  if (narrowed) {
    // The format has no f64 (nor 8/16-bit or unsigned integers): say what the cast became.
    imp.warn("Cast '" + node.name() + "' to " + onnx_dtype_name(static_cast<int>(attr_int(node, "to", 0))) +
             " imported as a cast to " + std::string(dtype_name(*dtype)) + ": the format has no such type, so values "
             "keep " + std::string(dtype_name(*dtype)) + "'s range and precision");
  }
  return emit_output(imp, node, 0, "cast", {imp.tensor(node.input(0))},
                     attrs_of({{"dtype", std::string(dtype_name(*dtype))}}));
}

// Dropout is the identity in inference; only a constant training_mode=true makes it random.
Result map_dropout(Importer& imp, const Node& node) {
  double ratio = attr_float(node, "ratio", 0.5);
  bool training = false;
  if (imp.opset() >= 12) {
    if (has_input(node, 1)) {
      auto r = imp.const_scalar(node.input(1));
      if (!r) return std::string("ratio must be a constant");
      ratio = *r;
    }
    if (has_input(node, 2)) {
      auto t = imp.const_ints(node.input(2));
      if (!t || t->size() != 1) return std::string("training_mode must be a constant");
      training = (*t)[0] != 0;
    }
  }
  if (!training || ratio == 0.0) {
    imp.alias(node.output(0), node.input(0));
    return std::nullopt;
  }
  return emit_output(imp, node, 0, "dropout", {imp.tensor(node.input(0))}, attrs_of({{"p", ratio}}));
}

// ---- reductions ----

const std::unordered_map<std::string, std::string>& reduce_ops() {
  static const std::unordered_map<std::string, std::string> ops = {
      {"ReduceSum", "sum"}, {"ReduceMean", "mean"}, {"ReduceMax", "max"}, {"ReduceMin", "min"},
      {"ReduceSumSquare", "sum"}, {"GlobalAveragePool", "mean"}, {"GlobalMaxPool", "max"}};
  return ops;
}

Result map_reduce(Importer& imp, const Node& node) {
  const TensorType* x = input_type(imp, node, 0);
  if (!x) return std::string("input type unknown");
  const std::string& op = reduce_ops().at(node.op_type());
  const bool global_pool = node.op_type().rfind("Global", 0) == 0;
  std::vector<std::int64_t> axes;
  bool keepdim = attr_int(node, "keepdims", 1) != 0;
  if (global_pool) {
    for (std::size_t d = 2; d < x->shape.size(); ++d) axes.push_back(static_cast<std::int64_t>(d));
    keepdim = true;
  } else {
    auto given = ints_from(imp, node, "axes", 1);
    if (!given) return std::string("axes must be a constant");
    axes = *given;
    if (axes.empty() && attr_int(node, "noop_with_empty_axes", 0) != 0) {
      imp.alias(node.output(0), node.input(0));
      return std::nullopt;
    }
    if (axes.empty()) {
      for (std::size_t d = 0; d < x->shape.size(); ++d) axes.push_back(static_cast<std::int64_t>(d));
    }
  }
  if (axes.empty()) return std::string("nothing to reduce");
  Operand in = imp.tensor(node.input(0));
  if (node.op_type() == "ReduceSumSquare") {
    const std::string sq = imp.temp_name(node.output(0) + "/square");
    if (auto r = emit(imp, sq, "square", {in})) return r;
    in = sq;
  }
  return emit_output(imp, node, 0, op, {in}, attrs_of({{"axis", axes}, {"keepdim", keepdim}}));
}

std::int64_t softmax_default_axis(const Importer& imp) { return imp.opset() < 13 ? 1 : -1; }

// Before opset 13 Softmax flattened dims [axis, rank) into one; that is our softmax only on the last axis.
Result map_softmax(Importer& imp, const Node& node) {
  const TensorType* x = input_type(imp, node, 0);
  if (!x) return std::string("input type unknown");
  const std::int64_t axis = attr_int(node, "axis", softmax_default_axis(imp));
  auto a = normalize_axis(axis, x->shape.size());
  if (!a) return std::string("axis out of range");
  if (imp.opset() < 13 && static_cast<std::size_t>(*a) + 1 != x->shape.size()) {
    return std::string("opset < 13 softmax over flattened trailing dimensions");
  }
  Attrs attrs = attrs_of({{"axis", std::int64_t{*a}}});
  if (node.op_type() == "Softmax") return emit_output(imp, node, 0, "softmax", {imp.tensor(node.input(0))}, attrs);
  const std::string sm = imp.temp_name(node.output(0) + "/softmax");
  if (auto r = emit(imp, sm, "softmax", {imp.tensor(node.input(0))}, attrs)) return r;
  return emit_output(imp, node, 0, "log", {sm});
}

Result map_layernorm(Importer& imp, const Node& node) {
  std::vector<Operand> ins = {imp.tensor(node.input(0)), imp.tensor(node.input(1))};
  if (has_input(node, 2)) ins.emplace_back(imp.tensor(node.input(2)));
  return emit_output(imp, node, 0, "layernorm", ins,
                     attrs_of({{"axis", attr_int(node, "axis", -1)}, {"eps", attr_float(node, "epsilon", 1e-5)}}));
}

Result map_batchnorm(Importer& imp, const Node& node) {
  if (attr_int(node, "training_mode", 0) != 0) return std::string("training-mode batch normalization");
  if (imp.opset() < 9 && attr_int(node, "spatial", 1) != 1) return std::string("spatial=0");
  // ONNX order is (X, scale, B, mean, var); the format's is (x, mean, var, gamma, beta).
  std::vector<Operand> ins;
  for (int i : {0, 3, 4, 1, 2}) ins.emplace_back(imp.tensor(node.input(i)));
  return emit_output(imp, node, 0, "batchnorm", ins, attrs_of({{"eps", attr_float(node, "epsilon", 1e-5)}}));
}

// ---- contractions ----

Result reshape_to(Importer& imp, const std::string& name, const Operand& in, const Shape& shape) {
  return emit(imp, name, "reshape", {in}, attrs_of({{"shape", shape}}));
}

// ONNX MatMul follows numpy: a 1-D operand gains a unit dimension that the result then loses.
Result map_matmul(Importer& imp, const Node& node) {
  const TensorType* a = input_type(imp, node, 0);
  const TensorType* b = input_type(imp, node, 1);
  if (!a || !b) return std::string("input type unknown");
  Operand ia = imp.tensor(node.input(0)), ib = imp.tensor(node.input(1));
  const bool a1 = a->shape.size() == 1, b1 = b->shape.size() == 1;
  if (!a1 && !b1) return emit_output(imp, node, 0, "matmul", {ia, ib});
  const std::string base = node.output(0);
  if (a1) {
    const std::string n = imp.temp_name(base + "/a2d");
    if (auto r = reshape_to(imp, n, ia, {1, a->shape[0]})) return r;
    ia = n;
  }
  if (b1) {
    const std::string n = imp.temp_name(base + "/b2d");
    if (auto r = reshape_to(imp, n, ib, {b->shape[0], 1})) return r;
    ib = n;
  }
  const std::string mm = imp.temp_name(base + "/matmul");
  if (auto r = emit(imp, mm, "matmul", {ia, ib})) return r;
  // The result without the unit dimensions added above.
  Shape shape = imp.our_type(mm)->shape;
  if (b1) shape.erase(shape.end() - 1);
  if (a1) shape.erase(shape.end() - (b1 ? 1 : 2));
  return emit_output(imp, node, 0, "reshape", {mm}, attrs_of({{"shape", shape}}));
}

// Gemm: Y = alpha * op(A) @ op(B) + beta * C.
Result map_gemm(Importer& imp, const Node& node) {
  const double alpha = attr_float(node, "alpha", 1.0), beta = attr_float(node, "beta", 1.0);
  const bool has_c = has_input(node, 2) && beta != 0.0;
  const Attrs mm_attrs = attrs_of({{"transpose_a", attr_int(node, "transA", 0) != 0},
                                   {"transpose_b", attr_int(node, "transB", 0) != 0}});
  std::vector<Operand> ab = {imp.tensor(node.input(0)), imp.tensor(node.input(1))};
  const std::string base = node.output(0);
  if (!has_c && alpha == 1.0) return emit_output(imp, node, 0, "matmul", ab, mm_attrs);
  std::string acc = imp.temp_name(base + "/matmul");
  if (auto r = emit(imp, acc, "matmul", ab, mm_attrs)) return r;
  if (alpha != 1.0) {
    const std::string scaled = has_c ? imp.temp_name(base + "/alpha") : std::string();
    if (!has_c) return emit_output(imp, node, 0, "mul", {acc, alpha});
    if (auto r = emit(imp, scaled, "mul", {acc, alpha})) return r;
    acc = scaled;
  }
  Operand c = imp.const_scalar(node.input(2)) ? Operand(*imp.const_scalar(node.input(2)) * beta)
                                              : Operand(imp.tensor(node.input(2)));
  if (beta != 1.0 && std::holds_alternative<std::string>(c)) {
    const std::string cs = imp.temp_name(base + "/beta");
    if (auto r = emit(imp, cs, "mul", {c, beta})) return r;
    c = cs;
  }
  return emit_output(imp, node, 0, "add", {acc, c});
}

// Symmetric padding per spatial dimension of a 2-D window of `kernel` (Conv, MaxPool), from explicit pads or
// auto_pad; nullopt when asymmetric.
std::optional<std::vector<std::int64_t>> window_padding(const Node& node, const Shape& x,
                                                        const std::array<std::int64_t, 2>& kernel,
                                                        const std::vector<std::int64_t>& stride,
                                                        const std::vector<std::int64_t>& dilation) {
  const std::string auto_pad = attr_string(node, "auto_pad", "NOTSET");
  std::vector<std::int64_t> pad(2, 0);
  if (auto_pad == "NOTSET") {
    auto pads = attr_ints(node, "pads").value_or(std::vector<std::int64_t>(4, 0));
    if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3]) return std::nullopt;
    return std::vector<std::int64_t>{pads[0], pads[1]};
  }
  if (auto_pad == "VALID") return pad;
  for (std::size_t d = 0; d < 2; ++d) {  // SAME_UPPER / SAME_LOWER: output = ceil(input / stride)
    const std::int64_t in = x[d + 2], k = (kernel[d] - 1) * dilation[d] + 1;
    const std::int64_t out = (in + stride[d] - 1) / stride[d];
    const std::int64_t total = std::max<std::int64_t>((out - 1) * stride[d] + k - in, 0);
    if (total % 2 != 0) return std::nullopt;
    pad[d] = total / 2;
  }
  return pad;
}

// A 2-D window attribute (strides, dilations): two values, [1, 1] when absent; empty when not two.
std::vector<std::int64_t> two_ints(const Node& node, const char* name) {
  auto v = attr_ints(node, name).value_or(std::vector<std::int64_t>{1, 1});
  return v.size() == 2 ? v : std::vector<std::int64_t>{};
}

Result map_conv(Importer& imp, const Node& node) {
  const TensorType* x = input_type(imp, node, 0);
  const TensorType* w = input_type(imp, node, 1);
  if (!x || !w) return std::string("input type unknown");
  if (x->shape.size() != 4 || w->shape.size() != 4) {
    return std::to_string(static_cast<int>(x->shape.size()) - 2) + "-D convolution (the format has conv2d)";
  }
  const auto stride = two_ints(node, "strides"), dilation = two_ints(node, "dilations");
  if (stride.empty() || dilation.empty()) return std::string("strides/dilations need two values");
  auto pad = window_padding(node, x->shape, {w->shape[2], w->shape[3]}, stride, dilation);
  if (!pad) return std::string("asymmetric padding (the format's conv2d pads both sides equally)");
  std::vector<Operand> ins = {imp.tensor(node.input(0)), imp.tensor(node.input(1))};
  if (has_input(node, 2)) ins.emplace_back(imp.tensor(node.input(2)));
  return emit_output(imp, node, 0, "conv2d", ins,
                     attrs_of({{"stride", stride}, {"padding", *pad}, {"dilation", dilation},
                               {"groups", attr_int(node, "group", 1)}}));
}

// MaxPool over NCHW, rounding down, without its Indices output: max_pool2d.
Result map_max_pool(Importer& imp, const Node& node) {
  const TensorType* x = input_type(imp, node, 0);
  if (!x) return std::string("input type unknown");
  if (x->shape.size() != 4) {
    return std::to_string(static_cast<int>(x->shape.size()) - 2) + "-D pooling (the format has max_pool2d)";
  }
  if (node.output_size() > 1 && !node.output(1).empty()) {
    return std::string("the Indices output is used (the format's max_pool2d has none)");
  }
  if (attr_int(node, "ceil_mode", 0) != 0) return std::string("ceil_mode=1 (the format's max_pool2d rounds down)");
  const auto kernel = attr_ints(node, "kernel_shape");
  if (!kernel || kernel->size() != 2) return std::string("kernel_shape needs two values");
  const auto stride = two_ints(node, "strides"), dilation = two_ints(node, "dilations");
  if (stride.empty() || dilation.empty()) return std::string("strides/dilations need two values");
  auto pad = window_padding(node, x->shape, {(*kernel)[0], (*kernel)[1]}, stride, dilation);
  if (!pad) return std::string("asymmetric padding (the format's max_pool2d pads both sides equally)");
  return emit_output(imp, node, 0, "max_pool2d", {imp.tensor(node.input(0))},
                     attrs_of({{"kernel_size", *kernel}, {"stride", stride}, {"padding", *pad}, {"dilation", dilation}}));
}

// ---- layout ----

Result map_transpose(Importer& imp, const Node& node) {
  const TensorType* x = input_type(imp, node, 0);
  if (!x) return std::string("input type unknown");
  std::vector<std::int64_t> perm(x->shape.size());
  std::iota(perm.rbegin(), perm.rend(), 0);  // the default reverses the dimensions
  if (auto p = attr_ints(node, "perm")) perm = *p;
  return emit_output(imp, node, 0, "transpose", {imp.tensor(node.input(0))}, attrs_of({{"perm", perm}}));
}

// Reshape-like ops (Reshape, Flatten, Squeeze, Unsqueeze) become `reshape` to the output shape: ONNX's
// inferred shape when it has one (it resolves shapes computed at run time), else our own computation.
Result reshape_output(Importer& imp, const Node& node, std::optional<Shape> computed) {
  const TensorType* x = input_type(imp, node, 0);
  if (!x) return std::string("input type unknown");
  Shape target;
  if (const TensorType* t = imp.onnx_type_of(node.output(0))) {
    target = t->shape;
  } else if (computed) {
    target = *computed;
  } else {
    return std::string("the target shape is neither constant nor inferred by ONNX");
  }
  if (target == x->shape) {
    imp.alias(node.output(0), node.input(0));
    return std::nullopt;
  }
  return emit_output(imp, node, 0, "reshape", {imp.tensor(node.input(0))}, attrs_of({{"shape", target}}));
}

Result map_reshape(Importer& imp, const Node& node) {
  const TensorType* x = input_type(imp, node, 0);
  std::optional<Shape> computed;
  if (auto s = has_input(node, 1) ? imp.const_ints(node.input(1)) : attr_ints(node, "shape"); s && x) {
    computed = *s;
    for (std::size_t i = 0; i < computed->size(); ++i) {  // 0 copies the input's dimension unless allowzero
      if ((*computed)[i] == 0 && attr_int(node, "allowzero", 0) == 0 && i < x->shape.size()) (*computed)[i] = x->shape[i];
    }
    if (std::count(computed->begin(), computed->end(), -1) == 1) {
      std::int64_t known = 1;
      for (auto d : *computed) known *= d == -1 ? 1 : d;
      if (known > 0) std::replace(computed->begin(), computed->end(), std::int64_t{-1}, x->numel() / known);
    }
  }
  return reshape_output(imp, node, computed);
}

Result map_flatten(Importer& imp, const Node& node) {
  const TensorType* x = input_type(imp, node, 0);
  if (!x) return std::string("input type unknown");
  std::int64_t axis = attr_int(node, "axis", 1);
  if (axis < 0) axis += static_cast<std::int64_t>(x->shape.size());
  if (axis < 0 || axis > static_cast<std::int64_t>(x->shape.size())) return std::string("axis out of range");
  std::int64_t outer = 1, inner = 1;
  for (std::size_t d = 0; d < x->shape.size(); ++d) (static_cast<std::int64_t>(d) < axis ? outer : inner) *= x->shape[d];
  return reshape_output(imp, node, Shape{outer, inner});
}

Result map_squeeze(Importer& imp, const Node& node) {
  const TensorType* x = input_type(imp, node, 0);
  if (!x) return std::string("input type unknown");
  auto axes = ints_from(imp, node, "axes", 1);
  std::optional<Shape> computed;
  if (axes) {
    const auto rank = static_cast<std::int64_t>(x->shape.size());
    const bool unsqueeze = node.op_type() == "Unsqueeze";
    Shape out = x->shape;
    if (unsqueeze) {
      const std::int64_t out_rank = rank + static_cast<std::int64_t>(axes->size());
      std::vector<std::int64_t> sorted;
      for (auto a : *axes) sorted.push_back(a < 0 ? a + out_rank : a);
      std::sort(sorted.begin(), sorted.end());
      for (auto a : sorted) {
        if (a < 0 || a > static_cast<std::int64_t>(out.size())) return std::string("axis out of range");
        out.insert(out.begin() + a, 1);
      }
    } else {
      out.clear();
      for (std::int64_t d = 0; d < rank; ++d) {
        const bool listed = axes->empty() ? x->shape[static_cast<std::size_t>(d)] == 1
                                          : std::any_of(axes->begin(), axes->end(),
                                                        [&](std::int64_t a) { return a == d || a + rank == d; });
        if (!listed) out.push_back(x->shape[static_cast<std::size_t>(d)]);
      }
    }
    computed = out;
  }
  return reshape_output(imp, node, computed);
}

Result map_concat(Importer& imp, const Node& node) {
  std::vector<Operand> ins;
  for (const auto& in : node.input()) {
    if (!in.empty()) ins.emplace_back(imp.tensor(in));
  }
  if (ins.size() == 1) {
    imp.alias(node.output(0), node.input(0));
    return std::nullopt;
  }
  return emit_output(imp, node, 0, "concat", ins, attrs_of({{"axis", attr_int(node, "axis", 0)}}));
}

// One `slice` per sliced axis, chained; axes left whole are skipped.
Result map_slice(Importer& imp, const Node& node) {
  const TensorType* x = input_type(imp, node, 0);
  if (!x) return std::string("input type unknown");
  const bool from_inputs = imp.opset() >= 10;
  auto starts = from_inputs ? ints_from(imp, node, "", 1) : attr_ints(node, "starts");
  auto ends = from_inputs ? ints_from(imp, node, "", 2) : attr_ints(node, "ends");
  auto axes = from_inputs ? ints_from(imp, node, "", 3) : ints_from(imp, node, "axes", 99);
  auto steps = from_inputs ? ints_from(imp, node, "", 4) : std::optional<std::vector<std::int64_t>>(std::vector<std::int64_t>{});
  if (!starts || !ends || !axes || !steps) return std::string("slice bounds must be constants");
  if (axes->empty()) {
    for (std::size_t i = 0; i < starts->size(); ++i) axes->push_back(static_cast<std::int64_t>(i));
  }
  if (steps->empty()) steps->assign(starts->size(), 1);
  if (ends->size() != starts->size() || axes->size() != starts->size() || steps->size() != starts->size()) {
    return std::string("starts, ends, axes and steps differ in length");
  }
  Operand acc = imp.tensor(node.input(0));
  std::vector<std::size_t> active;
  for (std::size_t i = 0; i < starts->size(); ++i) {
    auto a = normalize_axis((*axes)[i], x->shape.size());
    if (!a) return std::string("axis out of range");
    const std::int64_t dim = x->shape[static_cast<std::size_t>(*a)];
    if ((*steps)[i] <= 0) return std::string("negative slice steps");
    const std::int64_t s = (*starts)[i] < 0 ? (*starts)[i] + dim : (*starts)[i];
    const std::int64_t e = (*ends)[i] < 0 ? (*ends)[i] + dim : (*ends)[i];
    if (!(s <= 0 && e >= dim && (*steps)[i] == 1)) active.push_back(i);
    (*axes)[i] = *a;
  }
  if (active.empty()) {
    imp.alias(node.output(0), node.input(0));
    return std::nullopt;
  }
  for (std::size_t k = 0; k < active.size(); ++k) {
    const std::size_t i = active[k];
    const Attrs a = attrs_of({{"axis", (*axes)[i]}, {"start", (*starts)[i]}, {"end", (*ends)[i]}, {"step", (*steps)[i]}});
    if (k + 1 == active.size()) return emit_output(imp, node, 0, "slice", {acc}, a);
    const std::string name = imp.temp_name(node.output(0) + "/slice" + std::to_string(k));
    if (auto r = emit(imp, name, "slice", {acc}, a)) return r;
    acc = name;
  }
  return std::nullopt;
}

// Split into consecutive slices along one axis; only outputs something reads are emitted.
Result map_split(Importer& imp, const Node& node) {
  const TensorType* x = input_type(imp, node, 0);
  if (!x) return std::string("input type unknown");
  auto axis = normalize_axis(attr_int(node, "axis", 0), x->shape.size());
  if (!axis) return std::string("axis out of range");
  const std::int64_t dim = x->shape[static_cast<std::size_t>(*axis)];
  auto sizes = ints_from(imp, node, "split", 1);
  if (!sizes) return std::string("split sizes must be constants");
  const auto parts = static_cast<std::int64_t>(node.output_size());
  if (sizes->empty()) {
    const std::int64_t each = (dim + parts - 1) / parts;  // the last part may be smaller (opset 18)
    for (std::int64_t p = 0; p < parts; ++p) sizes->push_back(std::min(each, dim - p * each));
  }
  if (static_cast<std::int64_t>(sizes->size()) != parts) return std::string("split sizes do not match the outputs");
  std::int64_t start = 0;
  const Operand in = imp.tensor(node.input(0));
  for (int i = 0; i < node.output_size(); ++i) {
    const std::int64_t end = start + (*sizes)[static_cast<std::size_t>(i)];
    if (!node.output(i).empty() && imp.type_of(node.output(i)) == nullptr) {
      Attrs a = attrs_of({{"axis", std::int64_t{*axis}}, {"start", start}, {"end", end}, {"step", std::int64_t{1}}});
      if (auto r = emit_output(imp, node, i, "slice", {in}, a)) return r;
    }
    start = end;
  }
  return std::nullopt;
}

Result map_topk(Importer& imp, const Node& node) {
  if (attr_int(node, "largest", 1) == 0) return std::string("largest=0 (the format's topk takes the largest)");
  std::int64_t k = attr_int(node, "k", 0);
  if (imp.opset() >= 10) {
    auto v = imp.const_ints(node.input(1));
    if (!v || v->size() != 1) return std::string("k must be a constant");
    k = (*v)[0];
  }
  return emit_output(imp, node, 0, "topk", {imp.tensor(node.input(0))},
                     attrs_of({{"k", k}, {"axis", attr_int(node, "axis", -1)}}));
}

Result map_identity(Importer& imp, const Node& node) {
  imp.alias(node.output(0), node.input(0));
  return std::nullopt;
}

const std::unordered_map<std::string, MapFn>& table() {
  static const std::unordered_map<std::string, MapFn> t = [] {
    std::unordered_map<std::string, MapFn> m = {
        {"Gelu", map_gelu},         {"Clip", map_clip},           {"Cast", map_cast},
        {"Dropout", map_dropout},   {"Softmax", map_softmax},     {"LogSoftmax", map_softmax},
        {"LayerNormalization", map_layernorm}, {"BatchNormalization", map_batchnorm},
        {"MatMul", map_matmul},     {"Gemm", map_gemm},           {"Conv", map_conv},
        {"MaxPool", map_max_pool},
        {"Transpose", map_transpose}, {"Reshape", map_reshape},   {"Flatten", map_flatten},
        {"Squeeze", map_squeeze},   {"Unsqueeze", map_squeeze},   {"Concat", map_concat},
        {"Slice", map_slice},       {"Split", map_split},         {"TopK", map_topk},
        {"Identity", map_identity}};
    for (const auto& [op, ours] : unary_ops()) m.emplace(op, map_unary);
    for (const auto& [op, ours] : binary_ops()) m.emplace(op, map_binary);
    for (const auto& [op, ours] : reduce_ops()) m.emplace(op, map_reduce);
    return m;
  }();
  return t;
}

}  // namespace

MapFn find_mapper(const std::string& op_type) {
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : it->second;
}

}  // namespace fx::onnx_import
