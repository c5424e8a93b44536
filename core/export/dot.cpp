#include "core/export/dot.h"

#include <sstream>
#include <string_view>

#include "core/graph/utf8.h"

namespace fx {
namespace {

// Every quoted string stays far below Graphviz's limit (16,384 characters in its scanner) and readable in a
// drawing: longer text is cut at a character boundary, never inside a UTF-8 sequence, and marked "...".
constexpr std::size_t kMaxDotText = 512;

std::string escape(const std::string& full) {
  const std::string_view cut = utf8_prefix(full, kMaxDotText);
  const std::string s = cut.size() < full.size() ? std::string(cut) + "..." : full;
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;  // names were validated; labels stay printable
    out += c;
  }
  return out;
}

std::string value_id(const Graph& g, ValueId v) {
  return g.is_input(v) ? "in" + std::to_string(v) : "n" + std::to_string(*g.producer(v));
}

}  // namespace

const char* op_class_color(OpClass c) {
  switch (c) {
    case OpClass::elementwise: return "#cfe8cf";
    case OpClass::layout: return "#e4dcf2";
    case OpClass::reduction: return "#fde2b8";
    case OpClass::contraction: return "#c6dcf5";
    case OpClass::opaque: return "#e0e0e0";
  }
  return "#ffffff";
}

std::string to_dot(const Graph& g, const DotOptions& options) {
  std::ostringstream out;
  out << "digraph \"" << escape(g.name()) << "\" {\n";
  out << "  rankdir=TB;\n";
  out << "  node [shape=box, style=\"rounded,filled\", fontname=\"DejaVu Sans\", fontsize=10];\n";
  out << "  edge [fontname=\"DejaVu Sans\", fontsize=8, color=\"#555555\"];\n";
  for (ValueId v = 0; v < static_cast<ValueId>(g.inputs().size()); ++v) {
    const GraphInput& in = g.inputs()[static_cast<std::size_t>(v)];
    out << "  " << value_id(g, v) << " [label=\"" << escape(in.name) << "\\n" << type_to_string(in.type)
        << "\", shape=ellipse, fillcolor=\"" << (in.role == Role::activation ? "#ffffff" : "#f4f4f4") << "\"];\n";
  }
  std::vector<int> cluster_of(static_cast<std::size_t>(g.num_nodes()), -1);
  for (std::size_t c = 0; c < options.clusters.size(); ++c) {
    for (NodeId n : options.clusters[c].nodes) cluster_of[static_cast<std::size_t>(n)] = static_cast<int>(c);
  }
  auto emit_node = [&](NodeId id, const char* indent) {
    const Node& n = g.node(id);
    out << indent << "n" << id << " [label=\"" << escape(n.name) << "\\n" << escape(n.op) << "  "
        << type_to_string(n.type) << "\", fillcolor=\"" << op_class_color(n.op_class()) << "\"";
    if (g.is_output(g.value_of(id))) out << ", penwidth=2";
    out << "];\n";
  };
  for (std::size_t c = 0; c < options.clusters.size(); ++c) {
    const DotCluster& cl = options.clusters[c];
    out << "  subgraph \"cluster_" << escape(cl.id) << "\" {\n";
    out << "    label=\"" << escape(cl.label) << "\"; style=\"rounded,filled\"; fillcolor=\"" << cl.color
        << "\"; color=\"#666666\"; fontname=\"DejaVu Sans\"; fontsize=9;\n";
    for (NodeId n : cl.nodes) emit_node(n, "    ");
    out << "  }\n";
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (cluster_of[static_cast<std::size_t>(n)] < 0) emit_node(n, "  ");
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    for (ValueId v : g.tensor_inputs(n)) {
      out << "  " << value_id(g, v) << " -> n" << n;
      if (options.edge_labels) out << " [label=\"" << format_bytes(static_cast<double>(g.value_type(v).bytes())) << "\"]";
      out << ";\n";
    }
  }
  for (ValueId v : g.outputs()) {
    out << "  out_" << value_id(g, v) << " [label=\"output\", shape=plaintext, style=\"\"];\n";
    out << "  " << value_id(g, v) << " -> out_" << value_id(g, v) << ";\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace fx
