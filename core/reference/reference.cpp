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

// One double per element; the other ops' references are in reference_ops.cpp.
double unary(OpId op, double x) {
  switch (op) {
    case OpId::neg: return -x;
    case OpId::abs: return std::fabs(x);
    case OpId::relu: return std::isnan(x) ? x : (x < 0 ? 0.0 : x);
    case OpId::gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case OpId::gelu_tanh: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case OpId::silu: return x / (1.0 + std::exp(-x));
    case OpId::sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case OpId::tanh: return std::tanh(x);
    case OpId::exp: return std::exp(x);
    case OpId::log: return std::log(x);
    case OpId::sqrt: return std::sqrt(x);
    case OpId::rsqrt: return 1.0 / std::sqrt(x);
    case OpId::sin: return std::sin(x);
    case OpId::cos: return std::cos(x);
    case OpId::erf: return std::erf(x);
    case OpId::reciprocal: return 1.0 / x;
    case OpId::square: return x * x;
    default: break;
  }
  throw std::invalid_argument("no reference for op " + std::string(op_name(op)));
}

double binary(OpId op, double a, double b, DType out) {
  switch (op) {
    case OpId::add: return a + b;
    case OpId::sub: return a - b;
    case OpId::mul: return a * b;
    case OpId::div: return is_floating(out) ? a / b : std::trunc(a / b);  // C integer division
    case OpId::maximum: return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
    case OpId::minimum: return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
    case OpId::pow: return std::pow(a, b);
    case OpId::gt: return a > b;
    case OpId::ge: return a >= b;
    case OpId::lt: return a < b;
    case OpId::le: return a <= b;
    case OpId::eq: return a == b;
    default: break;
  }
  throw std::invalid_argument("no reference for op " + std::string(op_name(op)));
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

// One element of an elementwise node from its operands' elements a (already broadcast) at flat index i.
double elementwise_value(const Graph& g, const Node& node, const std::vector<double>& a, std::int64_t i) {
  switch (node.op_id()) {
    case OpId::where: return a[0] != 0.0 ? a[1] : a[2];
    case OpId::cast: return cast(a[0], g.value_type(node.inputs[0].value).dtype, node.type.dtype);
    case OpId::dropout: {
      const double p = node.attrs.get_number("p");
      const auto seed = static_cast<std::uint64_t>(node.attrs.get_int("seed"));
      return philox_bits24(seed, static_cast<std::uint64_t>(i)) >= dropout_threshold(p) ? a[0] / (1.0 - p) : 0.0;
    }
    case OpId::batchnorm: return (a[0] - a[1]) / std::sqrt(a[2] + node.attrs.get_number("eps")) * a[3] + a[4];
    default: return a.size() == 1 ? unary(node.op_id(), a[0]) : binary(node.op_id(), a[0], a[1], node.type.dtype);
  }
}

HostTensor evaluate_elementwise(const Graph& g, const Node& node, const std::vector<const HostTensor*>& in) {
  HostTensor out{node.type, std::vector<double>(static_cast<std::size_t>(node.type.numel()))};
  const Shape& s = node.type.shape;
  // batchnorm's parameters are [C] vectors indexed by the channel coordinate, not broadcast.
  const bool batchnorm = node.op_id() == OpId::batchnorm;
  std::size_t channel_axis = 0;
  if (batchnorm) channel_axis = static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), s.size()));
  std::vector<double> a(in.size());
  for_each_element(s, [&](std::int64_t i, const std::vector<std::int64_t>& c) {
    for (std::size_t k = 0; k < in.size(); ++k) {
      const bool per_channel = batchnorm && k > 0;
      const std::int64_t off = per_channel ? c[channel_axis] : broadcast_offset(in[k]->type.shape, s, c);
      a[k] = in[k]->values[static_cast<std::size_t>(off)];
    }
    out.values[static_cast<std::size_t>(i)] = elementwise_value(g, node, a, i);
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
