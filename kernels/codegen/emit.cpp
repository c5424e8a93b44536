// Shared pieces of the generated source: types, conversions, op expressions, identifiers, the preamble.
#include "kernels/codegen/emit.h"

#include <cctype>
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
  if (!is_floating(t)) return number(static_cast<std::int64_t>(value));
  if (std::isnan(value)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(value)) return value > 0 ? "__int_as_float(0x7f800000)" : "(-__int_as_float(0x7f800000))";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(value)));
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

// unary float math, by op name; the helpers are defined in the preamble or are CUDA's own.
const std::map<std::string, std::string>& unary_functions() {
  static const std::map<std::string, std::string> table = {
      {"relu", "fx_relu"},   {"gelu", "fx_gelu"},   {"gelu_tanh", "fx_gelu_tanh"}, {"silu", "fx_silu"},
      {"sigmoid", "fx_sigmoid"}, {"tanh", "tanhf"}, {"exp", "expf"},       {"log", "logf"},
      {"sqrt", "sqrtf"},     {"rsqrt", "rsqrtf"},   {"sin", "sinf"},       {"cos", "cosf"},
      {"erf", "erff"},       {"abs", "fx_abs"}};
  return table;
}

std::string cast_expr(DType from, DType to, const std::string& a) {
  if (to == DType::boolean) return "(" + a + " != 0)";
  if (from == DType::boolean) return is_floating(to) ? "(" + a + " ? 1.0f : 0.0f)" : "(" + compute_type(to) + ")(" + a + ")";
  if (is_floating(to)) return round_to(to, "(float)(" + a + ")");
  return "(" + compute_type(to) + ")(" + a + ")";
}

}  // namespace

std::string elementwise_expr(const Graph& g, const Node& node, const std::vector<std::string>& a,
                             const std::string& flat_index) {
  const std::string& op = node.op;
  const DType out = node.type.dtype;
  std::string e;
  if ((op == "sigmoid" || op == "silu") && (out == DType::f16 || out == DType::bf16)) {
    e = call(op == "silu" ? "fx_silu_fast" : "fx_sigmoid_fast", a);  // see the preamble: 16-bit results only
  } else if (auto it = unary_functions().find(op); it != unary_functions().end()) {
    e = call(it->second.c_str(), a);
  } else if (op == "neg") {
    e = "(-" + a[0] + ")";
  } else if (op == "reciprocal") {
    e = "(1.0f / " + a[0] + ")";
  } else if (op == "square") {
    e = "(" + a[0] + " * " + a[0] + ")";
  } else if (op == "add") {
    e = infix(a, "+");
  } else if (op == "sub") {
    e = infix(a, "-");
  } else if (op == "mul") {
    e = infix(a, "*");
  } else if (op == "div") {
    e = infix(a, "/");
  } else if (op == "maximum" || op == "minimum") {
    e = call(op == "maximum" ? "fx_max" : "fx_min", a);
  } else if (op == "pow" && is_floating(out) && node.inputs[1].is_scalar() &&
             (node.inputs[1].scalar == 2.0 || node.inputs[1].scalar == 3.0)) {
    // x^2 and x^3 (GELU's tanh form has x^3) as products: powf is a long instruction sequence that makes a
    // decomposed tanh-GELU instruction-bound. The product is correctly rounded, within powf's own 2 ulp.
    e = "(" + a[0] + " * " + a[0] + (node.inputs[1].scalar == 3.0 ? " * " + a[0] : "") + ")";
  } else if (op == "pow") {
    e = is_floating(out) ? call("powf", a) : "(" + compute_type(out) + ")pow((double)" + a[0] + ", (double)" + a[1] + ")";
  } else if (op == "gt" || op == "ge" || op == "lt" || op == "le" || op == "eq") {
    static const std::map<std::string, const char*> ops = {{"gt", ">"}, {"ge", ">="}, {"lt", "<"}, {"le", "<="}, {"eq", "=="}};
    return infix(a, ops.at(op));
  } else if (op == "where") {
    e = "(" + a[0] + " ? " + a[1] + " : " + a[2] + ")";
  } else if (op == "cast") {
    return cast_expr(g.value_type(node.inputs[0].value).dtype, out, a[0]);
  } else if (op == "dropout") {
    const double p = node.attrs.get_number("p");
    // Keep an element when the top 24 bits of its Philox draw are >= p * 2^24: an integer threshold, so the
    // CPU reference draws exactly the same mask.
    const std::uint32_t threshold = dropout_threshold(p);
    const double scale = 1.0 / (1.0 - p);
    e = "fx_dropout(" + a[0] + ", " + std::to_string(threshold) + "u, " + literal(scale, DType::f32) + ", " +
        std::to_string(node.attrs.get_int("seed")) + "ULL, (unsigned long long)(" + flat_index + "))";
  } else if (op == "batchnorm") {
    e = "((" + a[0] + " - " + a[1] + ") * rsqrtf(" + a[2] + " + " + literal(node.attrs.get_number("eps"), DType::f32) +
        ") * " + a[3] + " + " + a[4] + ")";
  } else {
    throw std::invalid_argument("no elementwise expression for op '" + op + "' (node " + node.name + ")");
  }
  return is_floating(out) ? round_to(out, e) : e;
}

std::string Identifiers::fresh(const std::string& base_in) {
  std::string base;
  for (char c : base_in) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "t_" + base;
  // Names that would shadow the kernel's own variables or CUDA's keep a suffix.
  static const std::set<std::string> reserved = {"i", "v", "k", "c", "n", "row", "col", "base", "int", "float",
                                                 "double", "char", "long", "short", "bool", "if", "else", "for",
                                                 "while", "do", "return", "const", "auto", "switch", "case",
                                                 "default", "break", "continue", "unsigned", "signed", "void",
                                                 "struct", "class", "new", "delete", "this", "true", "false",
                                                 "sizeof", "static", "extern", "register", "volatile", "template",
                                                 "typename", "namespace", "operator", "union", "enum", "goto",
                                                 // the generators' own locals (row, tiled transpose, reductions)
                                                 "a", "b", "a0", "b0", "aa", "bb", "A", "B", "R", "d", "j", "o", "len",
                                                 "acc", "row_max", "row_sum", "inv_sum", "sq", "mean", "rstd",
                                                 "fibres", "lane", "warp",
                                                 "rows", "col_of", "tiles_a", "tiles_b", "kChunks", "kItems", "kRows",
                                                 "kTile", "kVec", "kThreads", "idx", "tid", "step", "stride",
                                                 // CUDA built-ins and the math functions the expressions call
                                                 "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "expf",
                                                 "logf", "sqrtf", "rsqrtf", "tanhf", "erff", "sinf", "cosf", "powf",
                                                 "fabsf", "fmaxf", "fminf", "exp", "log", "sqrt", "tanh", "erf", "sin",
                                                 "cos", "pow", "abs", "min", "max"};
  std::string id = base;
  for (int k = 2; used_.count(id) || reserved.count(id) || id.rfind("fx_", 0) == 0 || id.rfind("__", 0) == 0; ++k) {
    id = base + "_" + std::to_string(k);
  }
  used_.insert(id);
  return id;
}

std::string Identifiers::get(const std::string& key, const std::string& base) {
  auto it = by_name_.find(key);
  if (it != by_name_.end()) return it->second;
  return by_name_[key] = fresh(base);
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

Code& Code::line(const std::string& text) {
  if (!text.empty()) out_ << std::string(static_cast<std::size_t>(depth_) * 2, ' ') << text;
  out_ << '\n';
  return *this;
}

}  // namespace fx::gpu::codegen
