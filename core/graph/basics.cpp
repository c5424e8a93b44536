// Small value types of the graph model: dtypes, shapes, attributes, diagnostics.
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "core/graph/attrs.h"
#include "core/graph/diagnostic.h"
#include "core/graph/dtype.h"
#include "core/graph/shape.h"

namespace fx {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::i32, DType::i64, DType::boolean}) {
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::optional<std::int64_t> checked_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    // The multiplication's own overflow flag: a division per dimension showed up in the engine's profile.
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return std::nullopt;
  }
  return n;
}

std::int64_t numel(const Shape& shape) {
  auto n = checked_numel(shape);
  assert(n.has_value());
  return n.value_or(0);
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<int> normalize_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) return std::nullopt;
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

std::string type_to_string(const TensorType& type) {
  return std::string(dtype_name(type.dtype)) + shape_to_string(type.shape);
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  // to_chars writes what printf's %.0f / %.2f writes, without printf's cost (auto-fuse logs thousands).
  char buf[400];  // room for the largest double written in full
  const int precision = u == 0 || std::fabs(v - std::round(v)) < 0.005 ? 0 : 2;
  char* end = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, precision).ptr;
  return std::string(buf, end) + " " + units[u];
}

const AttrValue* Attrs::find(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

std::int64_t Attrs::get_int(const std::string& name) const {
  const AttrValue* v = find(name);
  assert(v);
  if (auto* i = std::get_if<std::int64_t>(v)) return *i;
  if (auto* d = std::get_if<double>(v)) return static_cast<std::int64_t>(*d);
  if (auto* l = std::get_if<std::vector<std::int64_t>>(v); l && l->size() == 1) return (*l)[0];
  assert(false && "attribute is not an integer");
  return 0;
}

double Attrs::get_number(const std::string& name) const {
  const AttrValue* v = find(name);
  assert(v);
  if (auto* d = std::get_if<double>(v)) return *d;
  if (auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
  assert(false && "attribute is not a number");
  return 0.0;
}

std::vector<std::int64_t> Attrs::get_ints(const std::string& name) const {
  const AttrValue* v = find(name);
  assert(v);
  if (auto* l = std::get_if<std::vector<std::int64_t>>(v)) return *l;
  if (auto* i = std::get_if<std::int64_t>(v)) return {*i};
  assert(false && "attribute is not an integer list");
  return {};
}

std::pair<std::int64_t, std::int64_t> Attrs::get_int_pair(const std::string& name) const {
  const std::vector<std::int64_t> v = get_ints(name);
  assert(!v.empty());
  return {v[0], v.size() > 1 ? v[1] : v[0]};
}

const std::string& Attrs::get_string(const std::string& name) const {
  const AttrValue* v = find(name);
  assert(v && std::holds_alternative<std::string>(*v));
  return std::get<std::string>(*v);
}

bool Attrs::get_bool(const std::string& name) const {
  const AttrValue* v = find(name);
  assert(v);
  if (auto* b = std::get_if<bool>(v)) return *b;
  if (auto* i = std::get_if<std::int64_t>(v)) return *i != 0;
  return false;
}

std::string attr_value_to_string(const AttrValue& value) {
  struct Visitor {
    std::string operator()(std::int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const {
      std::ostringstream os;
      os << d;
      return os.str();
    }
    std::string operator()(const std::vector<std::int64_t>& l) const { return shape_to_string(l); }
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
  };
  return std::visit(Visitor{}, value);
}

std::string Diagnostic::to_string() const {
  std::string s;
  if (line > 0) s += "line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
  if (!pointer.empty()) s += pointer + ": ";
  return s + message;
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string format_diagnostics(const Diagnostics& diagnostics, const std::string& file) {
  std::string out;
  for (const Diagnostic& d : diagnostics) {
    if (!file.empty()) out += file + ": ";
    out += "error: " + d.to_string() + "\n";
  }
  return out;
}

}  // namespace fx
