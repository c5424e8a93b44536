// Canonical JSON for graphs, and the pretty printer shared by every file the project writes.
#include "core/graph/graph_json.h"

namespace fx {
namespace {

using ojson = nlohmann::ordered_json;

ojson attr_to_json(const AttrValue& v) {
  return std::visit([](const auto& x) { return ojson(x); }, v);
}

bool is_flat(const ojson& v) {
  if (v.is_array()) {
    for (const auto& e : v) {
      if (e.is_structured()) return false;
    }
    return true;
  }
  if (v.is_object()) {
    for (const auto& [k, e] : v.items()) {
      if (e.is_object() || (e.is_array() && !is_flat(e))) return false;
    }
    return true;
  }
  return true;
}

void dump_into(const ojson& v, int indent, std::string& out) {
  constexpr std::size_t kInlineWidth = 110;
  if (!v.is_structured() || v.empty()) {
    out += v.dump();
    return;
  }
  if (is_flat(v)) {
    std::string one_line = v.dump(-1, ' ', false);
    // nlohmann's compact form has no spaces; add them after separators for readability.
    std::string spaced;
    bool in_string = false;
    for (std::size_t i = 0; i < one_line.size(); ++i) {
      const char c = one_line[i];
      spaced += c;
      if (in_string && c == '\\' && i + 1 < one_line.size()) {
        spaced += one_line[++i];  // an escape pair: "\\" must not hide the closing quote after it
      } else if (c == '"') {
        in_string = !in_string;
      } else if (!in_string && (c == ',' || c == ':')) {
        spaced += ' ';
      }
    }
    if (spaced.size() + static_cast<std::size_t>(indent) <= kInlineWidth || v.is_array()) {
      out += spaced;
      return;
    }
  }
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  const bool object = v.is_object();
  out += object ? "{\n" : "[\n";
  std::size_t i = 0;
  for (auto it = v.begin(); it != v.end(); ++it, ++i) {
    out += pad;
    if (object) out += ojson(it.key()).dump() + ": ";
    dump_into(*it, indent + 2, out);
    out += i + 1 < v.size() ? ",\n" : "\n";
  }
  out += std::string(static_cast<std::size_t>(indent), ' ') + (object ? "}" : "]");
}

}  // namespace

std::string dump_pretty(const nlohmann::ordered_json& value) {
  std::string out;
  dump_into(value, 0, out);
  out += "\n";
  return out;
}

nlohmann::ordered_json graph_to_json(const Graph& graph) {
  ojson doc;
  doc["format"] = kGraphFormat;
  doc["version"] = kGraphFormatVersion;
  doc["name"] = graph.name();
  doc["description"] = graph.description();
  ojson inputs = ojson::array();
  for (const GraphInput& in : graph.inputs()) {
    ojson i;
    i["name"] = in.name;
    i["shape"] = in.type.shape;
    i["dtype"] = dtype_name(in.type.dtype);
    if (in.role != Role::activation) i["role"] = role_name(in.role);
    inputs.push_back(std::move(i));
  }
  doc["inputs"] = std::move(inputs);
  ojson nodes = ojson::array();
  for (const Node& n : graph.nodes()) {
    ojson j;
    j["name"] = n.name;
    j["op"] = n.op;
    ojson ins = ojson::array();
    for (const Operand& o : n.inputs) {
      if (o.is_scalar()) ins.push_back(o.scalar);
      else ins.push_back(graph.value_name(o.value));
    }
    j["inputs"] = std::move(ins);
    if (!n.attrs.values().empty()) {
      ojson attrs = ojson::object();
      for (const auto& [k, v] : n.attrs.values()) attrs[k] = attr_to_json(v);
      j["attrs"] = std::move(attrs);
    }
    j["shape"] = n.type.shape;
    j["dtype"] = dtype_name(n.type.dtype);
    if (!n.source.empty()) j["source"] = n.source;
    nodes.push_back(std::move(j));
  }
  doc["nodes"] = std::move(nodes);
  ojson outputs = ojson::array();
  for (ValueId v : graph.outputs()) outputs.push_back(graph.value_name(v));
  doc["outputs"] = std::move(outputs);
  return doc;
}

std::string save_graph(const Graph& graph) { return dump_pretty(graph_to_json(graph)); }

}  // namespace fx
