// Shared pieces of the generated source: types, conversions, op expressions, identifiers, the preamble.
#include "kernels/codegen/emit.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "core/reference/numerics.h"

namespace fx::gpu::codegen {

std::string compute_type(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return "float";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::string storage_type(DType t) {
  switch (t) {
    case DType::f32: return "float";
    case DType::f16:
    case DType::bf16: return "unsigned short";
    case DType::i32: return "int";
    case DType::i64: return "long long";
    case DType::boolean: return "unsigned char";
  }
  return "?";
}

std::string from_storage(DType t, const std::string& raw) {
  switch (t) {
    case DType::f16: return "fx_f16_to_f32(" + raw + ")";
    case DType::bf16: return "fx_bf16_to_f32(" + raw + ")";
    case DType::boolean: return "(" + raw + " != 0)";
    default: return raw;
  }
}

std::string to_storage(DType t, const std::string& value) {
  switch (t) {
    case DType::f16: return "fx_f32_to_f16(" + value + ")";
    case DType::bf16: return "fx_f32_to_bf16(" + value + ")";
    case DType::boolean: return "(unsigned char)(" + value + ")";
    default: return value;
  }
}

std::string round_to(DType t, const std::string& expr) {
  if (t == DType::f16) return "fx_round_f16(" + expr + ")";
  if (t == DType::bf16) return "fx_round_bf16(" + expr + ")";
  return expr;
}

std::string number(std::int64_t v) { return v > INT32_MAX || v < INT32_MIN ? std::to_string(v) + "LL" : std::to_string(v); }

std::string literal(double value, DType t) {
  if (t == DType::boolean) return value != 0.0 ? "true" : "false";
  if (!is_floating(t)) {
    // Saturate: a double beyond int64 (1e308) has no integer value, and converting it would be undefined.
    if (std::isnan(value)) return "0";
    if (value >= 9223372036854775807.0) return "9223372036854775807LL";
    if (value <= -9223372036854775808.0) return "(-9223372036854775807LL - 1)";
    return number(static_cast<std::int64_t>(value));
  }
  // Registers hold floats: a literal is the float nearest to it, which is infinite beyond f32's range
  // (1e308, an eps of 1e39), as the CPU reference rounds it. printf would write "inf", not a constant.
  const float f = static_cast<float>(value);
  if (std::isnan(f)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "(-__int_as_float(0x7f800000))";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return value < 0 ? "(" + s + "f)" : s + "f";
}

std::string scalar_operand(const Graph& g, const Node& node, double value) {
  DType t = node.type.dtype;
  if (t == DType::boolean) {
    for (const Operand& o : node.inputs) {
      if (!o.is_scalar()) {
        t = g.value_type(o.value).dtype;
        break;
      }
    }
  }
  return literal(value, t);
}

namespace {

std::string call(const char* f, const std::vector<std::string>& a) {
  std::string s = std::string(f) + "(";
  for (std::size_t i = 0; i < a.size(); ++i) s += (i ? ", " : "") + a[i];
  return s + ")";
}

std::string infix(const std::vector<std::string>& a, const char* op) { return "(" + a[0] + " " + op + " " + a[1] + ")"; }

// unary float math; the helpers are defined in the preamble or are CUDA's own. nullptr: not a call.
const char* unary_function(OpId op) {
  switch (op) {
    case OpId::relu: return "fx_relu";
    case OpId::gelu: return "fx_gelu";
    case OpId::gelu_tanh: return "fx_gelu_tanh";
    case OpId::silu: return "fx_silu";
    case OpId::sigmoid: return "fx_sigmoid";
    case OpId::tanh: return "tanhf";
    case OpId::exp: return "expf";
    case OpId::log: return "logf";
    case OpId::sqrt: return "sqrtf";
    case OpId::rsqrt: return "rsqrtf";
    case OpId::sin: return "sinf";
    case OpId::cos: return "cosf";
    case OpId::erf: return "erff";
    case OpId::abs: return "fx_abs";
    default: return nullptr;
  }
}

const char* infix_operator(OpId op) {
  switch (op) {
    case OpId::add: return "+";
    case OpId::sub: return "-";
    case OpId::mul: return "*";
    case OpId::div: return "/";
    case OpId::gt: return ">";
    case OpId::ge: return ">=";
    case OpId::lt: return "<";
    case OpId::le: return "<=";
    case OpId::eq: return "==";
    default: return nullptr;
  }
}

std::string cast_expr(DType from, DType to, const std::string& a) {
  if (to == DType::boolean) return "(" + a + " != 0)";
  if (from == DType::boolean) return is_floating(to) ? "(" + a + " ? 1.0f : 0.0f)" : "(" + compute_type(to) + ")(" + a + ")";
  if (is_floating(to)) return round_to(to, "(float)(" + a + ")");
  return "(" + compute_type(to) + ")(" + a + ")";
}

// x^2 and x^3 (GELU's tanh form has x^3) as products: powf is a long instruction sequence that makes a
// decomposed tanh-GELU compute-bound. The product is correctly rounded, within powf's own 2 ulp.
std::string pow_expr(const Node& node, const std::vector<std::string>& a, DType out) {
  if (is_floating(out) && node.inputs[1].is_scalar() && (node.inputs[1].scalar == 2.0 || node.inputs[1].scalar == 3.0)) {
    return "(" + a[0] + " * " + a[0] + (node.inputs[1].scalar == 3.0 ? " * " + a[0] : "") + ")";
  }
  return is_floating(out) ? call("powf", a) : "(" + compute_type(out) + ")pow((double)" + a[0] + ", (double)" + a[1] + ")";
}

// Keep an element when the top 24 bits of its Philox draw are >= p * 2^24: an integer threshold, so the CPU
// reference draws exactly the same mask.
std::string dropout_expr(const Node& node, const std::vector<std::string>& a, const std::string& flat_index) {
  const double p = node.attrs.get_number("p");
  const std::uint32_t threshold = dropout_threshold(p);
  const double scale = 1.0 / (1.0 - p);
  return "fx_dropout(" + a[0] + ", " + std::to_string(threshold) + "u, " + literal(scale, DType::f32) + ", " +
         std::to_string(node.attrs.get_int("seed")) + "ULL, (unsigned long long)(" + flat_index + "))";
}

// The expression before rounding to the output dtype.
std::string unrounded_expr(const Node& node, const std::vector<std::string>& a, const std::string& flat_index) {
  const OpId op = node.op_id();
  const DType out = node.type.dtype;
  if ((op == OpId::sigmoid || op == OpId::silu) && (out == DType::f16 || out == DType::bf16)) {
    return call(op == OpId::silu ? "fx_silu_fast" : "fx_sigmoid_fast", a);  // see the preamble: 16-bit results only
  }
  if (const char* f = unary_function(op)) return call(f, a);
  if (const char* o = infix_operator(op)) return infix(a, o);
  switch (op) {
    case OpId::neg: return "(-" + a[0] + ")";
    case OpId::reciprocal: return "(1.0f / " + a[0] + ")";
    case OpId::square: return "(" + a[0] + " * " + a[0] + ")";
    case OpId::maximum: return call("fx_max", a);
    case OpId::minimum: return call("fx_min", a);
    case OpId::pow: return pow_expr(node, a, out);
    case OpId::where: return "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
    case OpId::dropout: return dropout_expr(node, a, flat_index);
    case OpId::batchnorm:
      return "((" + a[0] + " - " + a[1] + ") * rsqrtf(" + a[2] + " + " + literal(node.attrs.get_number("eps"), DType::f32) +
             ") * " + a[3] + " + " + a[4] + ")";
    default: throw std::invalid_argument("no elementwise expression for op '" + node.op + "' (node " + node.name + ")");
  }
}

}  // namespace

std::string elementwise_expr(const Graph& g, const Node& node, const std::vector<std::string>& a,
                             const std::string& flat_index) {
  const DType out = node.type.dtype;
  if (node.def->comparison) return infix(a, infix_operator(node.op_id()));  // bool: nothing to round
  if (node.op_id() == OpId::cast) return cast_expr(g.value_type(node.inputs[0].value).dtype, out, a[0]);
  const std::string e = unrounded_expr(node, a, flat_index);
  return is_floating(out) ? round_to(out, e) : e;
}

StatisticAccumulator statistic_accumulator(const Node& node) {
  // Floating types accumulate in float, the others in long long; the identities of max and min are -inf and +inf
  // in float, the extremes of long long otherwise.
  const bool fp = is_floating(node.type.dtype);
  const std::string type = fp ? "float" : "long long";
  switch (node.op_id()) {
    case OpId::sum:
    case OpId::mean: return {type, fp ? "float(0)" : "0LL", "sum", true};  // "long long(0)" is not C++
    case OpId::max: return {type, fp ? "(-__int_as_float(0x7f800000))" : "(-9223372036854775807LL - 1)", "max", false};
    case OpId::min: return {type, fp ? "__int_as_float(0x7f800000)" : "9223372036854775807LL", "min", false};
    default: throw std::logic_error("codegen: " + node.op + " is not a statistic reduction");
  }
}

std::string describe_node(const Graph& g, NodeId n) {
  const Node& node = g.node(n);
  std::string s = node.name + " = " + node.op + "(";
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    if (i) s += ", ";
    const Operand& o = node.inputs[i];
    if (o.is_scalar()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", o.scalar);
      s += buf;
    } else {
      s += g.value_name(o.value);
    }
  }
  s += ")";
  std::string attrs;
  for (const auto& [k, v] : node.attrs.values()) attrs += (attrs.empty() ? "" : ", ") + k + "=" + attr_value_to_string(v);
  if (!attrs.empty()) s += " {" + attrs + "}";
  return s + "  -> " + type_to_string(node.type);
}

std::vector<std::string> coords_of(const Shape& d, const std::string& flat) {
  std::vector<std::string> c(d.size());
  std::int64_t inner = 1;
  for (std::size_t k = d.size(); k-- > 0;) {
    std::string q = inner == 1 ? flat : "(" + flat + ") / " + number(inner);
    if (d[k] == 1) {
      c[k] = "0";
    } else {
      c[k] = k == 0 ? "(" + q + ")" : "((" + q + ") % " + number(d[k]) + ")";
    }
    inner *= d[k];
  }
  return c;
}

std::string flat_of(const Shape& d, const std::vector<std::string>& coords) {
  std::string s;
  std::int64_t inner = 1;
  for (std::size_t k = d.size(); k-- > 0;) {
    if (d[k] != 1) {
      std::string term = inner == 1 ? coords[k] : coords[k] + " * " + number(inner);
      s = s.empty() ? term : term + " + " + s;
    }
    inner *= d[k];
  }
  return s.empty() ? "0" : "(" + s + ")";
}

std::string broadcast_offset(const Shape& s, const Shape& d, const std::vector<std::string>& coords) {
  std::string off;
  std::int64_t stride = 1;
  for (std::size_t k = s.size(); k-- > 0;) {
    const std::size_t dk = d.size() - (s.size() - k);
    if (s[k] != 1) {
      std::string term = stride == 1 ? coords[dk] : coords[dk] + " * " + number(stride);
      off = off.empty() ? term : term + " + " + off;
    }
    stride *= s[k];
  }
  return off.empty() ? "0" : off;
}

Code translation_unit(std::size_t kernel_bytes) {
  Code c;
  c.reserve(device_preamble().size() + 1 + kernel_bytes + 4096);  // 4096: the kernel's own few lines
  c.append_text(device_preamble());
  c.line();
  return c;
}

}  // namespace fx::gpu::codegen
