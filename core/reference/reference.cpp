// The reference evaluator's driver and its elementwise ops (broadcasting by coordinates, one double per element).
#include "core/reference/reference.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/reference/numerics.h"

namespace fx {
namespace reference_detail {

std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> st(s.size(), 1);
  for (std::size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

std::int64_t broadcast_offset(const Shape& in, const Shape& out, const std::vector<std::int64_t>& coords) {
  std::int64_t off = 0, stride = 1;
  for (std::size_t k = in.size(); k-- > 0;) {
    const std::size_t d = out.size() - (in.size() - k);
    if (in[k] != 1) off += coords[d] * stride;
    stride *= in[k];
  }
  return off;
}

AxisSplit split_at(const Shape& s, std::size_t axis) {
  AxisSplit a;
  for (std::size_t d = 0; d < s.size(); ++d) (d < axis ? a.outer : d == axis ? a.length : a.inner) *= s[d];
  return a;
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double unary(const std::string& op, double x) {
  if (op == "neg") return -x;
  if (op == "abs") return std::fabs(x);
  if (op == "relu") return std::isnan(x) ? x : (x < 0 ? 0.0 : x);
  if (op == "gelu") return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  if (op == "gelu_tanh") return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  if (op == "silu") return x / (1.0 + std::exp(-x));
  if (op == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (op == "tanh") return std::tanh(x);
  if (op == "exp") return std::exp(x);
  if (op == "log") return std::log(x);
  if (op == "sqrt") return std::sqrt(x);
  if (op == "rsqrt") return 1.0 / std::sqrt(x);
  if (op == "sin") return std::sin(x);
  if (op == "cos") return std::cos(x);
  if (op == "erf") return std::erf(x);
  if (op == "reciprocal") return 1.0 / x;
  if (op == "square") return x * x;
  throw std::invalid_argument("no reference for op " + op);
}

double binary(const std::string& op, double a, double b, DType out) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") return is_floating(out) ? a / b : std::trunc(a / b);  // C integer division
  if (op == "maximum") return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
  if (op == "minimum") return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
  if (op == "pow") return std::pow(a, b);
  if (op == "gt") return a > b;
  if (op == "ge") return a >= b;
  if (op == "lt") return a < b;
  if (op == "le") return a <= b;
  if (op == "eq") return a == b;
  throw std::invalid_argument("no reference for op " + op);
}

double cast(double x, DType from, DType to) {
  if (to == DType::boolean) return x != 0.0;
  if (from == DType::boolean || is_floating(to)) return x;  // rounded to `to` with every node's result
  return std::trunc(x);  // float to integer truncates, as a C cast does
}

// Calls f(out_flat, coords) for every element of shape s.
template <typename F>
void for_each_element(const Shape& s, F f) {
  const std::int64_t n = numel(s);
  std::vector<std::int64_t> c(s.size(), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    f(i, c);
    for (std::size_t d = s.size(); d-- > 0;) {
      if (++c[d] < s[d]) break;
      c[d] = 0;
    }
  }
}

HostTensor evaluate_elementwise(const Graph& g, const Node& node, const std::vector<const HostTensor*>& in) {
  HostTensor out{node.type, std::vector<double>(static_cast<std::size_t>(node.type.numel()))};
  const Shape& s = node.type.shape;
  std::size_t channel_axis = 0;
  if (node.op == "batchnorm") channel_axis = static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), s.size()));
  std::vector<double> a(in.size());
  for_each_element(s, [&](std::int64_t i, const std::vector<std::int64_t>& c) {
    for (std::size_t k = 0; k < in.size(); ++k) {
      const bool per_channel = node.op == "batchnorm" && k > 0;
      const std::int64_t off = per_channel ? c[channel_axis] : broadcast_offset(in[k]->type.shape, s, c);
      a[k] = in[k]->values[static_cast<std::size_t>(off)];
    }
    double r = 0;
    const std::string& op = node.op;
    if (op == "where") {
      r = a[0] != 0.0 ? a[1] : a[2];
    } else if (op == "cast") {
      r = cast(a[0], g.value_type(node.inputs[0].value).dtype, node.type.dtype);
    } else if (op == "dropout") {
      const double p = node.attrs.get_number("p");
      const auto seed = static_cast<std::uint64_t>(node.attrs.get_int("seed"));
      r = philox_bits24(seed, static_cast<std::uint64_t>(i)) >= dropout_threshold(p) ? a[0] / (1.0 - p) : 0.0;
    } else if (op == "batchnorm") {
      r = (a[0] - a[1]) / std::sqrt(a[2] + node.attrs.get_number("eps")) * a[3] + a[4];
    } else if (in.size() == 1) {
      r = unary(op, a[0]);
    } else {
      r = binary(op, a[0], a[1], node.type.dtype);
    }
    out.values[static_cast<std::size_t>(i)] = r;
  });
  return out;
}

}  // namespace

HostTensor evaluate_node(const Graph& g, const Node& node, const std::vector<const HostTensor*>& operands) {
  switch (node.op_class()) {
    case OpClass::elementwise: return evaluate_elementwise(g, node, operands);
    case OpClass::reduction: return evaluate_reduction(node, operands);
    case OpClass::contraction: return evaluate_contraction(node, operands);
    case OpClass::layout: return evaluate_layout(node, operands);
    case OpClass::opaque: return evaluate_opaque(node, operands);
  }
  throw std::invalid_argument("unknown op class");
}

}  // namespace reference_detail

Expected<std::vector<HostTensor>> evaluate_reference(const Graph& g, std::vector<HostTensor> inputs) {
  if (inputs.size() != g.inputs().size()) {
    return Diagnostic{"/inputs", "the graph has " + std::to_string(g.inputs().size()) + " inputs, " +
                                     std::to_string(inputs.size()) + " were given"};
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& t = g.inputs()[i].type;
    if (inputs[i].type.shape != t.shape || inputs[i].values.size() != static_cast<std::size_t>(t.numel())) {
      return Diagnostic{"/inputs/" + std::to_string(i), "input " + g.inputs()[i].name + " must be " +
                                                            type_to_string(t) + " with " + std::to_string(t.numel()) +
                                                            " values"};
    }
    inputs[i].type.dtype = t.dtype;
  }
  std::vector<HostTensor> values(static_cast<std::size_t>(g.num_values()));
  for (std::size_t i = 0; i < inputs.size(); ++i) values[i] = std::move(inputs[i]);
  for (NodeId n : g.topo_order()) {
    const Node& node = g.node(n);
    std::vector<HostTensor> scalars;
    scalars.reserve(node.inputs.size());
    std::vector<const HostTensor*> operands;
    for (const Operand& o : node.inputs) {
      if (o.is_scalar()) {
        scalars.push_back(HostTensor{TensorType{{}, node.type.dtype}, {o.scalar}});
        operands.push_back(&scalars.back());
      } else {
        operands.push_back(&values[static_cast<std::size_t>(o.value)]);
      }
    }
    try {
      HostTensor r = reference_detail::evaluate_node(g, node, operands);
      if (node.type.dtype != DType::f32) {
        for (double& v : r.values) v = round_to_dtype(v, node.type.dtype);
      }
      values[static_cast<std::size_t>(g.value_of(n))] = std::move(r);
    } catch (const std::invalid_argument& e) {
      return Diagnostic{"/nodes/" + std::to_string(n), "node " + node.name + ": " + e.what()};
    }
  }
  return values;
}

double reference_cost(const Graph& g) {
  double cost = 0;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    double visits = static_cast<double>(node.type.numel());
    for (const Operand& o : node.inputs) {
      if (!o.is_scalar()) visits += static_cast<double>(g.value_type(o.value).numel());
    }
    cost += node.op_class() == OpClass::contraction ? std::max(visits, g.flops(n) / 2) : visits;
  }
  return cost;
}

}  // namespace fx
