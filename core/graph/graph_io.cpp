// Reading and writing the JSON graph format: every problem is reported with the JSON pointer of the value
// (and line:column for syntax errors); a file is either a valid graph or a list of diagnostics.
#include "core/graph/graph_io.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <unistd.h>

#include "core/graph/graph_json.h"
#include "core/graph/json_dom.h"

namespace fx {
namespace {

using json = nlohmann::json;

void line_column(std::string_view text, std::size_t offset, int& line, int& column) {
  line = 1;
  column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
}

// Rejects documents nested deeper than the limit before the parser sees them, so hostile files cannot
// exhaust the stack or memory.
std::optional<Diagnostic> check_depth(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        Diagnostic d{"", "nesting deeper than " + std::to_string(max_depth) + " levels; a graph file needs far fewer"};
        line_column(text, i, d.line, d.column);
        return d;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

std::string type_name(const json& v) { return v.type_name(); }

// "300 MiB, over the limit of 64 MiB"; in exact bytes where rounding would print the same size twice.
std::string size_over_limit(std::uintmax_t size, std::uintmax_t limit) {
  const std::string a = format_bytes(static_cast<double>(size)), b = format_bytes(static_cast<double>(limit));
  if (a != b) return a + ", over the limit of " + b;
  return std::to_string(size) + " bytes, over the limit of " + std::to_string(limit) + " bytes (" + b + ")";
}

struct Reader {
  Diagnostics& errors;

  bool expect(const json& v, json::value_t t, const std::string& p, const char* what) {
    const bool ok = v.type() == t || (t == json::value_t::number_integer && v.is_number_unsigned());
    if (!ok) errors.push_back({p, std::string("must be ") + what + ", got " + type_name(v)});
    return ok;
  }

  std::optional<std::string> string_field(const json& obj, const char* key, const std::string& p, bool required) {
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) errors.push_back({p, std::string("missing field \"") + key + "\""});
      return std::nullopt;
    }
    if (!it->is_string()) {
      errors.push_back({p + "/" + key, "must be a string, got " + type_name(*it)});
      return std::nullopt;
    }
    return it->get<std::string>();
  }

  std::optional<std::int64_t> integer(const json& v, const std::string& p) {
    if (v.is_number_unsigned()) {
      if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
        errors.push_back({p, "integer too large for 64 bits"});
        return std::nullopt;
      }
      return static_cast<std::int64_t>(v.get<std::uint64_t>());
    }
    if (v.is_number_integer()) return v.get<std::int64_t>();
    if (v.is_number_float()) {
      // Only a number beyond 64 bits earns the hint; 2.5 is simply not an integer.
      const bool huge = std::fabs(v.get<double>()) >= 9.2233720368547758e18;
      errors.push_back({p, "must be an integer, got " + v.dump() +
                               (huge ? " (a number too large for 64 bits reads as a float)" : "")});
    } else {
      errors.push_back({p, "must be an integer, got " + type_name(v)});
    }
    return std::nullopt;
  }

  std::optional<Shape> shape(const json& v, const std::string& p, const LoadLimits& limits) {
    if (!expect(v, json::value_t::array, p, "an array of dimensions")) return std::nullopt;
    if (v.size() > limits.max_rank) {
      errors.push_back({p, "rank " + std::to_string(v.size()) + " exceeds the limit of " +
                               std::to_string(limits.max_rank)});
      return std::nullopt;
    }
    Shape s;
    for (std::size_t i = 0; i < v.size(); ++i) {
      auto d = integer(v[i], p + "/" + std::to_string(i));
      if (!d) return std::nullopt;
      s.push_back(*d);
    }
    return s;
  }

  std::optional<DType> dtype(const json& v, const std::string& p) {
    if (!expect(v, json::value_t::string, p, "a dtype string")) return std::nullopt;
    auto t = parse_dtype(v.get<std::string>());
    if (!t) errors.push_back({p, "unknown dtype '" + v.get<std::string>() + "' (f32, f16, bf16, i32, i64, bool)"});
    return t;
  }

  void unknown_keys(const json& obj, const std::string& p, std::initializer_list<std::string_view> known,
                    std::initializer_list<std::string_view> extra = {}) {
    for (const auto& [key, value] : obj.items()) {
      bool ok = false;
      for (auto k : known) ok = ok || k == key;
      for (auto k : extra) ok = ok || k == key;
      if (!ok) errors.push_back({p + "/" + pointer_token(key), "unknown field \"" + key + "\""});
    }
  }

  std::optional<AttrValue> attr_value(const json& v, const std::string& p) {
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_integer() || v.is_number_unsigned()) {
      auto i = integer(v, p);
      if (!i) return std::nullopt;
      return *i;
    }
    if (v.is_number_float()) return v.get<double>();
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array()) {
      std::vector<std::int64_t> list;
      for (std::size_t i = 0; i < v.size(); ++i) {
        auto e = integer(v[i], p + "/" + std::to_string(i));
        if (!e) return std::nullopt;
        list.push_back(*e);
      }
      return list;
    }
    errors.push_back({p, "attribute values are numbers, strings, booleans or lists of integers; got " + type_name(v)});
    return std::nullopt;
  }

  std::optional<GraphInput> input(const json& v, const std::string& p, const LoadLimits& limits) {
    if (!expect(v, json::value_t::object, p, "an object")) return std::nullopt;
    unknown_keys(v, p, {"name", "shape", "dtype", "role", "description"});
    GraphInput in;
    auto name = string_field(v, "name", p, true);
    if (!v.contains("shape")) errors.push_back({p, "missing field \"shape\""});
    if (!v.contains("dtype")) errors.push_back({p, "missing field \"dtype\""});
    if (!name || !v.contains("shape") || !v.contains("dtype")) return std::nullopt;
    in.name = *name;
    auto s = shape(v["shape"], p + "/shape", limits);
    auto t = dtype(v["dtype"], p + "/dtype");
    if (!s || !t) return std::nullopt;
    in.type = {*s, *t};
    if (auto role = string_field(v, "role", p, false)) {
      if (*role == "activation") in.role = Role::activation;
      else if (*role == "weight") in.role = Role::weight;
      else if (*role == "constant") in.role = Role::constant;
      else {
        errors.push_back({p + "/role", "unknown role '" + *role + "' (activation, weight, constant)"});
        return std::nullopt;
      }
    }
    return in;
  }

  std::optional<NodeSpec> node(const json& v, const std::string& p, const LoadLimits& limits) {
    if (!expect(v, json::value_t::object, p, "an object")) return std::nullopt;
    unknown_keys(v, p, {"name", "op", "inputs", "attrs", "shape", "dtype", "description", "source"});
    NodeSpec n;
    auto name = string_field(v, "name", p, true);
    auto op = string_field(v, "op", p, true);
    if (!name || !op) return std::nullopt;
    n.name = *name;
    n.op = *op;
    if (v.contains("source")) {
      auto source = string_field(v, "source", p, false);
      if (!source) return std::nullopt;
      n.source = *source;
    }
    bool ok = true;
    if (auto it = v.find("inputs"); it != v.end()) {
      if (!expect(*it, json::value_t::array, p + "/inputs", "an array of names or numbers")) return std::nullopt;
      for (std::size_t i = 0; i < it->size(); ++i) {
        const json& e = (*it)[i];
        if (e.is_string()) n.inputs.emplace_back(e.get<std::string>());
        else if (e.is_number()) n.inputs.emplace_back(e.get<double>());
        else {
          errors.push_back({p + "/inputs/" + std::to_string(i), "must be a name or a number, got " + type_name(e)});
          ok = false;
        }
      }
    } else {
      errors.push_back({p, "missing field \"inputs\""});
      ok = false;
    }
    if (auto it = v.find("attrs"); it != v.end()) {
      if (!expect(*it, json::value_t::object, p + "/attrs", "an object")) return std::nullopt;
      for (const auto& [key, value] : it->items()) {
        auto a = attr_value(value, p + "/attrs/" + pointer_token(key));
        if (a) n.attrs.set(key, *a); else ok = false;
      }
    }
    if (auto it = v.find("shape"); it != v.end()) {
      n.shape = shape(*it, p + "/shape", limits);
      ok = ok && n.shape.has_value();
    }
    if (auto it = v.find("dtype"); it != v.end()) {
      n.dtype = dtype(*it, p + "/dtype");
      ok = ok && n.dtype.has_value();
    }
    if (!ok) return std::nullopt;
    return n;
  }
};

}  // namespace

Expected<json> parse_json_text(std::string_view text, const LoadLimits& limits) {
  if (text.size() > limits.max_file_bytes) {
    return Diagnostic{"", "the file is " + size_over_limit(text.size(), limits.max_file_bytes)};
  }
  if (auto d = check_depth(text, limits.max_depth)) return *d;
  try {
    Diagnostics problems;  // duplicate keys, integers beyond int64
    json doc = parse_json_dom(text, problems);
    if (!problems.empty()) return problems;
    return doc;
  } catch (const json::parse_error& e) {
    Diagnostic d{"", "not valid JSON: "};
    std::string what = e.what();
    // nlohmann's message: "[json.exception.parse_error.101] parse error at line 1, column 2: ...": keep the tail.
    auto colon = what.find(": ", what.find("parse error"));
    d.message += colon == std::string::npos ? what : what.substr(colon + 2);
    const std::size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    line_column(text, offset, d.line, d.column);
    return d;
  } catch (const json::out_of_range& e) {
    // A number beyond a double ("1e400"): nlohmann reports it as out_of_range 406 with the token but no
    // position; locate the token to give a line and column.
    Diagnostic d{"", "not valid JSON: "};
    std::string what = e.what();
    const auto bracket = what.find("] ");
    d.message += bracket == std::string::npos ? what : what.substr(bracket + 2);
    const auto quote = what.find('\'');
    if (quote != std::string::npos && what.back() == '\'') {
      const auto at = text.find(what.substr(quote + 1, what.size() - quote - 2));
      if (at != std::string_view::npos) line_column(text, at, d.line, d.column);
    }
    return d;
  }
}

Expected<GraphSpec> spec_from_json(const json& doc, const LoadLimits& limits,
                                   std::initializer_list<std::string_view> extra_top_level_keys) {
  Diagnostics errors;
  Reader r{errors};
  if (!doc.is_object()) return Diagnostic{"", "a graph file is a JSON object, got " + type_name(doc)};
  auto format = r.string_field(doc, "format", "", true);
  if (format && *format != kGraphFormat) {
    return Diagnostic{"/format", "unknown format '" + *format + "' (expected \"" + std::string(kGraphFormat) + "\")"};
  }
  if (!format) return errors;
  auto version_it = doc.find("version");
  if (version_it == doc.end()) return Diagnostic{"", "missing field \"version\""};
  if (!version_it->is_number_integer() || version_it->get<std::int64_t>() != kGraphFormatVersion) {
    return Diagnostic{"/version", "unsupported version " + version_it->dump() + "; this program reads version " +
                                      std::to_string(kGraphFormatVersion)};
  }
  r.unknown_keys(doc, "", {"format", "version", "name", "description", "inputs", "nodes", "outputs", "metadata"},
                 extra_top_level_keys);
  GraphSpec spec;
  spec.name = r.string_field(doc, "name", "", false).value_or("");
  spec.description = r.string_field(doc, "description", "", false).value_or("");
  for (const char* key : {"inputs", "nodes", "outputs"}) {
    if (!doc.contains(key)) errors.push_back({"", std::string("missing field \"") + key + "\""});
    else r.expect(doc[key], json::value_t::array, std::string("/") + key, "an array");
  }
  if (!errors.empty()) return errors;
  const json& nodes = doc["nodes"];
  if (nodes.size() > limits.max_nodes) {
    return Diagnostic{"/nodes", std::to_string(nodes.size()) + " nodes exceed the limit of " +
                                    std::to_string(limits.max_nodes)};
  }
  const json& inputs = doc["inputs"];
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (auto in = r.input(inputs[i], "/inputs/" + std::to_string(i), limits)) spec.inputs.push_back(std::move(*in));
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (auto n = r.node(nodes[i], "/nodes/" + std::to_string(i), limits)) spec.nodes.push_back(std::move(*n));
  }
  const json& outputs = doc["outputs"];
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].is_string()) spec.outputs.push_back(outputs[i].get<std::string>());
    else errors.push_back({"/outputs/" + std::to_string(i), "must be a name, got " + type_name(outputs[i])});
  }
  if (!errors.empty()) return errors;
  return spec;
}

Expected<GraphSpec> parse_graph_spec(std::string_view json_text, const LoadLimits& limits) {
  auto doc = parse_json_text(json_text, limits);
  if (!doc) return doc.errors();
  return spec_from_json(*doc, limits, {"fusion"});
}

Expected<Graph> load_graph(std::string_view json_text, const LoadLimits& limits) {
  auto spec = parse_graph_spec(json_text, limits);
  if (!spec) return with_more_may_follow(spec.errors(), "names, connections and shapes are checked");
  return build_graph(*spec);
}

Expected<std::string> read_text_file(const std::filesystem::path& path, std::size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return Diagnostic{"", path.string() + " is a folder, not a file"};
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return Diagnostic{"", "cannot open " + path.string() + ": " + ec.message()};
  if (size > max_bytes) return Diagnostic{"", path.string() + " is " + size_over_limit(size, max_bytes)};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Diagnostic{"", "cannot open " + path.string() + ": " + std::strerror(errno)};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Expected<Graph> load_graph_file(const std::filesystem::path& path, const LoadLimits& limits) {
  auto text = read_text_file(path, limits.max_file_bytes);
  if (!text) return text.errors();
  return load_graph(*text, limits);
}

}  // namespace fx
