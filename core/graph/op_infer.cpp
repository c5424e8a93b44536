// Shape and dtype inference and FLOP counts for the op table (op_registry.cpp): what each op promises about
// its output, with errors located by JSON pointer relative to the node.
#include "core/graph/op_infer.h"

#include <algorithm>
#include <cmath>

namespace fx::op_infer {
namespace {

// Signed overflow is undefined behaviour, and attributes come straight from files: arithmetic on them is checked.
std::optional<std::int64_t> checked_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<std::int64_t> checked_mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::string in_ptr(std::size_t i) { return "/inputs/" + std::to_string(i); }

InferResult require_tensor(Inputs in, std::size_t i) {
  if (!in[i].tensor) return InferResult::fail("this operand must be a tensor, not a number", in_ptr(i));
  return InferResult::ok(*in[i].tensor);
}

// Broadcasts every tensor operand; all tensors must share one dtype (the format has no implicit promotion).
InferResult broadcast_all(Inputs in, std::size_t first = 0) {
  std::optional<TensorType> acc;
  for (std::size_t i = first; i < in.size(); ++i) {
    if (!in[i].tensor) continue;
    const TensorType& t = *in[i].tensor;
    if (!acc) {
      acc = t;
      continue;
    }
    if (t.dtype != acc->dtype) {
      return InferResult::fail("dtype mismatch: " + std::string(dtype_name(acc->dtype)) + " vs " +
                                   std::string(dtype_name(t.dtype)) + "; the format has no implicit promotion, insert a cast",
                               in_ptr(i));
    }
    auto s = broadcast_shapes(acc->shape, t.shape);
    if (!s) {
      return InferResult::fail("shape mismatch: " + shape_to_string(acc->shape) + " and " + shape_to_string(t.shape) +
                                   " do not broadcast (numpy rule: align trailing dimensions; each pair must be equal "
                                   "or one of them 1)",
                               in_ptr(i));
    }
    acc->shape = *s;
  }
  if (!acc) return InferResult::fail("at least one operand must be a tensor", in_ptr(first));
  return InferResult::ok(*acc);
}

InferResult check_vector_param(Inputs in, std::size_t i, std::int64_t length, DType dtype, const char* what) {
  if (!in[i].tensor) return InferResult::fail(std::string(what) + " must be a tensor", in_ptr(i));
  const TensorType& t = *in[i].tensor;
  if (t.shape != Shape{length}) {
    return InferResult::fail(std::string(what) + " must have shape [" + std::to_string(length) + "], got " +
                                 shape_to_string(t.shape),
                             in_ptr(i));
  }
  if (t.dtype != dtype) {
    return InferResult::fail("dtype mismatch: " + std::string(what) + " is " + std::string(dtype_name(t.dtype)) +
                                 ", the input is " + std::string(dtype_name(dtype)),
                             in_ptr(i));
  }
  return InferResult::ok(t);
}

// Reduction axes, normalised and sorted; error on duplicates or out of range.
std::optional<std::vector<int>> reduction_axes(const Attrs& attrs, std::size_t rank, std::string& error) {
  std::vector<int> axes;
  for (std::int64_t a : attrs.get_ints("axis")) {
    auto n = normalize_axis(a, rank);
    if (!n) {
      error = "axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank);
      return std::nullopt;
    }
    axes.push_back(*n);
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    error = "axis lists a dimension twice";
    return std::nullopt;
  }
  if (axes.empty()) {
    error = "axis list is empty";
    return std::nullopt;
  }
  return axes;
}

InferResult check_affine_param(Inputs in, std::size_t i, const Shape& expected, DType dtype, const char* what) {
  if (!in[i].tensor) return InferResult::fail(std::string(what) + " must be a tensor", in_ptr(i));
  if (in[i].tensor->shape != expected) {
    return InferResult::fail(std::string(what) + " must have shape " + shape_to_string(expected) + " (the normalised " +
                                 "dimensions), got " + shape_to_string(in[i].tensor->shape),
                             in_ptr(i));
  }
  if (in[i].tensor->dtype != dtype) {
    return InferResult::fail("dtype mismatch: " + std::string(what) + " is " +
                                 std::string(dtype_name(in[i].tensor->dtype)) + ", the input is " +
                                 std::string(dtype_name(dtype)),
                             in_ptr(i));
  }
  return InferResult::ok(*in[i].tensor);
}

// stride, padding and dilation of a 2-D window (conv2d, max_pool2d): an int or [h, w]; padding >= 0, the others > 0.
std::optional<InferResult> check_window_attrs(const Attrs& attrs) {
  for (const char* name : {"stride", "padding", "dilation"}) {
    auto v = attrs.get_ints(name);
    if (v.empty() || v.size() > 2) return InferResult::fail("must be an int or [h, w]", std::string("/attrs/") + name);
    for (auto e : v) {
      if (e < 0 || (e == 0 && std::string(name) != "padding")) {
        return InferResult::fail("must be positive", std::string("/attrs/") + name);
      }
    }
  }
  return std::nullopt;
}

// The output height and width of a 2-D window of k_hw over in_hw: (in + 2 pad - dilation (k - 1) - 1) / stride
// + 1, each step checked for overflow. `whole` is the operand a too-large window is blamed on.
std::optional<InferResult> window_out(const std::int64_t in_hw[2], const std::int64_t k_hw[2], const Attrs& attrs,
                                      const std::string& whole, std::int64_t out_hw[2]) {
  auto [sh, sw] = attrs.get_int_pair("stride");
  auto [ph, pw] = attrs.get_int_pair("padding");
  auto [dh, dw] = attrs.get_int_pair("dilation");
  const std::int64_t pad[2] = {ph, pw}, dil[2] = {dh, dw}, stride[2] = {sh, sw};
  for (int i = 0; i < 2; ++i) {
    auto twice = checked_mul(2, pad[i]);
    auto padded = twice ? checked_add(in_hw[i], *twice) : std::nullopt;
    if (!padded) return InferResult::fail("padding too large: the padded input overflows 64 bits", "/attrs/padding");
    auto extent = checked_mul(dil[i], k_hw[i] - 1);
    if (!extent) return InferResult::fail("dilation too large: the kernel's extent overflows 64 bits", "/attrs/dilation");
    out_hw[i] = (*padded - *extent - 1) / stride[i] + 1;  // padded >= 1 and extent >= 0: no overflow
  }
  if (out_hw[0] <= 0 || out_hw[1] <= 0) return InferResult::fail("the kernel is larger than the padded input", whole);
  return std::nullopt;
}

}  // namespace

// The first tensor operand's type: scalars adopt the dtype of the tensors they combine with.
std::optional<TensorType> first_tensor(Inputs in) {
  for (const auto& o : in) {
    if (o.tensor) return o.tensor;
  }
  return std::nullopt;
}

InferResult infer_unary(Inputs in, const Attrs&) {
  auto r = require_tensor(in, 0);
  if (r.type && !is_floating(r.type->dtype)) {
    return InferResult::fail("needs a floating-point tensor, got " + type_to_string(*r.type), in_ptr(0));
  }
  return r;
}

InferResult infer_binary(Inputs in, const Attrs&) { return broadcast_all(in); }

InferResult infer_compare(Inputs in, const Attrs&) {
  auto r = broadcast_all(in);
  if (r.type) r.type->dtype = DType::boolean;
  return r;
}

InferResult infer_where(Inputs in, const Attrs&) {
  if (!in[0].tensor) return InferResult::fail("the condition must be a tensor", in_ptr(0));
  if (in[0].tensor->dtype != DType::boolean) {
    return InferResult::fail("the condition must be bool, got " + type_to_string(*in[0].tensor), in_ptr(0));
  }
  auto values = broadcast_all(in, 1);
  if (!values.type) return values;
  auto s = broadcast_shapes(in[0].tensor->shape, values.type->shape);
  if (!s) {
    return InferResult::fail("shape mismatch: condition " + shape_to_string(in[0].tensor->shape) + " and values " +
                                 shape_to_string(values.type->shape) + " do not broadcast",
                             in_ptr(0));
  }
  values.type->shape = *s;
  return values;
}

InferResult infer_cast(Inputs in, const Attrs& attrs) {
  auto r = require_tensor(in, 0);
  if (!r.type) return r;
  auto dt = parse_dtype(attrs.get_string("dtype"));
  if (!dt) return InferResult::fail("unknown dtype '" + attrs.get_string("dtype") + "'", "/attrs/dtype");
  r.type->dtype = *dt;
  return r;
}

InferResult infer_dropout(Inputs in, const Attrs& attrs) {
  const double p = attrs.get_number("p");
  if (!(p >= 0.0 && p < 1.0)) return InferResult::fail("p must be in [0, 1), got " + std::to_string(p), "/attrs/p");
  return infer_unary(in, attrs);
}

InferResult infer_batchnorm(Inputs in, const Attrs& attrs) {
  auto r = infer_unary(in, attrs);
  if (!r.type) return r;
  auto axis = normalize_axis(attrs.get_int("axis"), r.type->shape.size());
  if (!axis) return InferResult::fail("axis out of range for " + shape_to_string(r.type->shape), "/attrs/axis");
  const std::int64_t channels = r.type->shape[static_cast<std::size_t>(*axis)];
  const char* names[] = {"", "mean", "var", "gamma", "beta"};
  for (std::size_t i = 1; i < 5; ++i) {
    auto c = check_vector_param(in, i, channels, r.type->dtype, names[i]);
    if (!c.type) return c;
  }
  if (attrs.get_number("eps") <= 0) return InferResult::fail("eps must be positive", "/attrs/eps");
  return r;
}

InferResult infer_reduce(Inputs in, const Attrs& attrs) {
  auto r = require_tensor(in, 0);
  if (!r.type) return r;
  std::string error;
  auto axes = reduction_axes(attrs, r.type->shape.size(), error);
  if (!axes) return InferResult::fail(error, "/attrs/axis");
  Shape out;
  for (std::size_t d = 0; d < r.type->shape.size(); ++d) {
    const bool reduced = std::find(axes->begin(), axes->end(), static_cast<int>(d)) != axes->end();
    if (!reduced) {
      out.push_back(r.type->shape[d]);
    } else if (attrs.get_bool("keepdim")) {
      out.push_back(1);
    }
  }
  r.type->shape = out;
  return r;
}

InferResult infer_softmax(Inputs in, const Attrs& attrs) {
  auto r = infer_unary(in, attrs);
  if (r.type && !normalize_axis(attrs.get_int("axis"), r.type->shape.size())) {
    return InferResult::fail("axis out of range for " + shape_to_string(r.type->shape), "/attrs/axis");
  }
  return r;
}

InferResult infer_layernorm(Inputs in, const Attrs& attrs) {
  auto r = infer_unary(in, attrs);
  if (!r.type) return r;
  auto axis = normalize_axis(attrs.get_int("axis"), r.type->shape.size());
  if (!axis) return InferResult::fail("axis out of range for " + shape_to_string(r.type->shape), "/attrs/axis");
  const Shape normalized(r.type->shape.begin() + *axis, r.type->shape.end());
  for (std::size_t i = 1; i < in.size(); ++i) {
    auto c = check_affine_param(in, i, normalized, r.type->dtype, i == 1 ? "gamma" : "beta");
    if (!c.type) return c;
  }
  if (attrs.get_number("eps") <= 0) return InferResult::fail("eps must be positive", "/attrs/eps");
  return r;
}

InferResult infer_rmsnorm(Inputs in, const Attrs& attrs) {
  auto r = infer_unary(in, attrs);
  if (!r.type) return r;
  if (r.type->shape.empty()) return InferResult::fail("needs at least one dimension", in_ptr(0));
  auto c = check_affine_param(in, 1, {r.type->shape.back()}, r.type->dtype, "gamma");
  if (!c.type) return c;
  if (attrs.get_number("eps") <= 0) return InferResult::fail("eps must be positive", "/attrs/eps");
  return r;
}

InferResult infer_matmul(Inputs in, const Attrs& attrs) {
  for (std::size_t i = 0; i < 2; ++i) {
    if (!in[i].tensor) return InferResult::fail("matmul operands must be tensors", in_ptr(i));
    if (in[i].tensor->shape.size() < 2) {
      return InferResult::fail("matmul needs operands of rank 2 or more, got " + shape_to_string(in[i].tensor->shape),
                               in_ptr(i));
    }
  }
  const TensorType& a = *in[0].tensor;
  const TensorType& b = *in[1].tensor;
  if (a.dtype != b.dtype) {
    return InferResult::fail("dtype mismatch: " + std::string(dtype_name(a.dtype)) + " @ " +
                                 std::string(dtype_name(b.dtype)),
                             in_ptr(1));
  }
  if (!is_floating(a.dtype)) return InferResult::fail("matmul needs floating-point operands", in_ptr(0));
  const std::size_t ra = a.shape.size(), rb = b.shape.size();
  std::int64_t m = a.shape[ra - 2], ka = a.shape[ra - 1];
  std::int64_t kb = b.shape[rb - 2], n = b.shape[rb - 1];
  if (attrs.get_bool("transpose_a")) std::swap(m, ka);
  if (attrs.get_bool("transpose_b")) std::swap(kb, n);
  if (ka != kb) {
    return InferResult::fail("shape mismatch: inner dimensions differ, " + shape_to_string(a.shape) + " @ " +
                                 shape_to_string(b.shape) + " (K " + std::to_string(ka) + " vs " + std::to_string(kb) +
                                 ")",
                             in_ptr(1));
  }
  auto batch = broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2), Shape(b.shape.begin(), b.shape.end() - 2));
  if (!batch) {
    return InferResult::fail("shape mismatch: batch dimensions of " + shape_to_string(a.shape) + " and " +
                                 shape_to_string(b.shape) + " do not broadcast",
                             in_ptr(1));
  }
  Shape out = *batch;
  out.push_back(m);
  out.push_back(n);
  if (in.size() > 2) return InferResult::fail("matmul takes two operands; add a bias with an add node", in_ptr(2));
  return InferResult::ok({out, a.dtype});
}

InferResult infer_conv2d(Inputs in, const Attrs& attrs) {
  for (std::size_t i = 0; i < 2; ++i) {
    if (!in[i].tensor || in[i].tensor->shape.size() != 4) {
      return InferResult::fail(i == 0 ? "conv2d input must be NCHW (rank 4)" : "conv2d weight must be OIHW (rank 4)",
                               in_ptr(i));
    }
  }
  const TensorType& x = *in[0].tensor;
  const TensorType& w = *in[1].tensor;
  if (x.dtype != w.dtype) return InferResult::fail("dtype mismatch between input and weight", in_ptr(1));
  if (auto bad = check_window_attrs(attrs)) return *bad;
  const std::int64_t groups = attrs.get_int("groups");
  if (groups < 1) return InferResult::fail("groups must be at least 1", "/attrs/groups");
  const std::int64_t c = x.shape[1], o = w.shape[0];
  if (c % groups != 0 || o % groups != 0 || w.shape[1] * groups != c) {
    return InferResult::fail("channel mismatch: input has " + std::to_string(c) + " channels, weight " +
                                 shape_to_string(w.shape) + " with groups=" + std::to_string(groups) +
                                 " expects C = weight[1] * groups",
                             in_ptr(1));
  }
  if (in.size() > 2) {
    auto b = check_vector_param(in, 2, o, x.dtype, "bias");
    if (!b.type) return b;
  }
  std::int64_t out_hw[2] = {0, 0};
  const std::int64_t in_hw[2] = {x.shape[2], x.shape[3]}, k_hw[2] = {w.shape[2], w.shape[3]};
  if (auto bad = window_out(in_hw, k_hw, attrs, in_ptr(1), out_hw)) return *bad;
  return InferResult::ok({{x.shape[0], o, out_hw[0], out_hw[1]}, x.dtype});
}

// max_pool2d over NCHW: the largest value of each window; padding counts as -infinity (PyTorch's rule), so no
// window may lie wholly in it: padding at most half the window's extent.
InferResult infer_max_pool2d(Inputs in, const Attrs& attrs) {
  if (!in[0].tensor || in[0].tensor->shape.size() != 4) {
    return InferResult::fail("max_pool2d input must be NCHW (rank 4)", in_ptr(0));
  }
  const TensorType& x = *in[0].tensor;
  if (!is_floating(x.dtype)) {
    return InferResult::fail("max_pool2d takes f32, f16 or bf16, not " + std::string(dtype_name(x.dtype)), in_ptr(0));
  }
  auto k = attrs.get_ints("kernel_size");
  if (k.empty() || k.size() > 2) return InferResult::fail("must be an int or [h, w]", "/attrs/kernel_size");
  for (auto e : k) {
    if (e < 1) return InferResult::fail("must be positive", "/attrs/kernel_size");
  }
  if (auto bad = check_window_attrs(attrs)) return *bad;
  auto [kh, kw] = attrs.get_int_pair("kernel_size");
  auto [ph, pw] = attrs.get_int_pair("padding");
  auto [dh, dw] = attrs.get_int_pair("dilation");
  const std::int64_t k_hw[2] = {kh, kw}, pad[2] = {ph, pw}, dil[2] = {dh, dw};
  for (int i = 0; i < 2; ++i) {
    auto extent = checked_mul(dil[i], k_hw[i] - 1);
    if (extent && pad[i] > (*extent + 1) / 2) {
      return InferResult::fail("padding " + std::to_string(pad[i]) + " is more than half the window's extent (" +
                                   std::to_string(*extent + 1) + "): a window would lie wholly in the padding",
                               "/attrs/padding");
    }
  }
  std::int64_t out_hw[2] = {0, 0};
  const std::int64_t in_hw[2] = {x.shape[2], x.shape[3]};
  if (auto bad = window_out(in_hw, k_hw, attrs, "/attrs/kernel_size", out_hw)) return *bad;
  return InferResult::ok({{x.shape[0], x.shape[1], out_hw[0], out_hw[1]}, x.dtype});
}

double pool_flops(Inputs, const TensorType& out, const Attrs& attrs) {
  auto [kh, kw] = attrs.get_int_pair("kernel_size");
  return static_cast<double>(out.numel()) * static_cast<double>(kh * kw);
}

InferResult infer_transpose(Inputs in, const Attrs& attrs) {
  auto r = require_tensor(in, 0);
  if (!r.type) return r;
  auto perm = attrs.get_ints("perm");
  const std::size_t rank = r.type->shape.size();
  std::vector<bool> seen(rank, false);
  if (perm.size() != rank) {
    return InferResult::fail("perm has " + std::to_string(perm.size()) + " entries for a rank-" + std::to_string(rank) +
                                 " input",
                             "/attrs/perm");
  }
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    auto a = normalize_axis(perm[i], rank);
    if (!a || seen[static_cast<std::size_t>(*a)]) return InferResult::fail("perm is not a permutation", "/attrs/perm");
    seen[static_cast<std::size_t>(*a)] = true;
    out[i] = r.type->shape[static_cast<std::size_t>(*a)];
  }
  r.type->shape = out;
  return r;
}

InferResult infer_reshape(Inputs in, const Attrs& attrs) {
  auto r = require_tensor(in, 0);
  if (!r.type) return r;
  Shape out = attrs.get_ints("shape");
  std::int64_t known = 1;
  int wildcard = -1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1 && wildcard < 0) {
      wildcard = static_cast<int>(i);
    } else if (out[i] <= 0) {
      return InferResult::fail("dimensions must be positive (one -1 allowed)", "/attrs/shape");
    } else {
      if (known > INT64_MAX / out[i]) return InferResult::fail("element count overflows", "/attrs/shape");
      known *= out[i];
    }
  }
  const std::int64_t total = r.type->numel();
  if (wildcard >= 0) {
    if (total % known != 0) return InferResult::fail("cannot infer -1: sizes do not divide", "/attrs/shape");
    out[static_cast<std::size_t>(wildcard)] = total / known;
  } else if (known != total) {
    return InferResult::fail("reshape of " + shape_to_string(r.type->shape) + " (" + std::to_string(total) +
                                 " elements) to " + shape_to_string(out) + " (" + std::to_string(known) + ")",
                             "/attrs/shape");
  }
  r.type->shape = out;
  return r;
}

InferResult infer_concat(Inputs in, const Attrs& attrs) {
  auto r = require_tensor(in, 0);
  if (!r.type) return r;
  auto axis = normalize_axis(attrs.get_int("axis"), r.type->shape.size());
  if (!axis) return InferResult::fail("axis out of range", "/attrs/axis");
  const auto ax = static_cast<std::size_t>(*axis);
  for (std::size_t i = 1; i < in.size(); ++i) {
    if (!in[i].tensor) return InferResult::fail("concat operands must be tensors", in_ptr(i));
    const TensorType& t = *in[i].tensor;
    if (t.dtype != r.type->dtype) return InferResult::fail("dtype mismatch in concat", in_ptr(i));
    bool same = t.shape.size() == r.type->shape.size();
    for (std::size_t d = 0; same && d < t.shape.size(); ++d) same = d == ax || t.shape[d] == r.type->shape[d];
    if (!same) {
      return InferResult::fail("shape mismatch: " + shape_to_string(t.shape) + " cannot be concatenated with " +
                                   shape_to_string(r.type->shape) + " on axis " + std::to_string(ax),
                               in_ptr(i));
    }
    auto sum = checked_add(r.type->shape[ax], t.shape[ax]);
    if (!sum) return InferResult::fail("the concatenated dimension overflows 64 bits", in_ptr(i));
    r.type->shape[ax] = *sum;
  }
  return r;
}

InferResult infer_slice(Inputs in, const Attrs& attrs) {
  auto r = require_tensor(in, 0);
  if (!r.type) return r;
  auto axis = normalize_axis(attrs.get_int("axis"), r.type->shape.size());
  if (!axis) return InferResult::fail("axis out of range", "/attrs/axis");
  const std::int64_t dim = r.type->shape[static_cast<std::size_t>(*axis)];
  const std::int64_t step = attrs.get_int("step");
  if (step <= 0) return InferResult::fail("step must be positive", "/attrs/step");
  auto clamp = [dim](std::int64_t v) { return std::clamp(v < 0 ? v + dim : v, std::int64_t{0}, dim); };
  const std::int64_t start = clamp(attrs.get_int("start")), end = clamp(attrs.get_int("end"));
  if (end <= start) return InferResult::fail("the slice is empty", "/attrs/end");
  r.type->shape[static_cast<std::size_t>(*axis)] = 1 + (end - start - 1) / step;  // ceil without overflow
  return r;
}

InferResult infer_sort(Inputs in, const Attrs& attrs) {
  auto r = require_tensor(in, 0);
  if (r.type && !normalize_axis(attrs.get_int("axis"), r.type->shape.size())) {
    return InferResult::fail("axis out of range", "/attrs/axis");
  }
  return r;
}

InferResult infer_topk(Inputs in, const Attrs& attrs) {
  auto r = require_tensor(in, 0);
  if (!r.type) return r;
  auto axis = normalize_axis(attrs.get_int("axis"), r.type->shape.size());
  if (!axis) return InferResult::fail("axis out of range", "/attrs/axis");
  const std::int64_t k = attrs.get_int("k");
  auto& dim = r.type->shape[static_cast<std::size_t>(*axis)];
  if (k < 1 || k > dim) {
    return InferResult::fail("k = " + std::to_string(k) + " must be in [1, " + std::to_string(dim) + "]", "/attrs/k");
  }
  dim = k;
  return r;
}

FlopFn per_output_element(double flops) {
  return [flops](Inputs, const TensorType& out, const Attrs&) { return flops * static_cast<double>(out.numel()); };
}

FlopFn per_input_element(double flops) {
  return [flops](Inputs in, const TensorType&, const Attrs&) {
    return flops * static_cast<double>(first_tensor(in)->numel());
  };
}

double matmul_flops(Inputs in, const TensorType& out, const Attrs& attrs) {
  const Shape& a = in[0].tensor->shape;
  const std::int64_t k = attrs.get_bool("transpose_a") ? a[a.size() - 2] : a.back();
  return 2.0 * static_cast<double>(out.numel()) * static_cast<double>(k);
}

double conv_flops(Inputs in, const TensorType& out, const Attrs&) {
  const Shape& w = in[1].tensor->shape;
  return 2.0 * static_cast<double>(out.numel()) * static_cast<double>(w[1] * w[2] * w[3]);
}

// n log2 n comparisons, the order of a merge or radix sort's work.
double sort_flops(Inputs in, const TensorType&, const Attrs&) {
  const double n = static_cast<double>(first_tensor(in)->numel());
  return n * std::log2(std::max(2.0, n));
}

}  // namespace fx::op_infer
