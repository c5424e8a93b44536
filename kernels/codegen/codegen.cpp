// generate_group(): picks the kernel template for a group, or splits the group (saying why) when no single
// kernel here can compute it.
#include "kernels/codegen/codegen.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/fusion/attention.h"
#include "core/fusion/library_epilogue.h"
#include "kernels/codegen/codegen_internal.h"

namespace fx::gpu {

void swap_layout(GeneratedKernel& k, KernelLayout& alt) {
  std::swap(k.layout, alt.description);
  std::swap(k.source, alt.source);
  std::swap(k.block, alt.block);
  std::swap(k.grid, alt.grid);
}

std::string_view kernel_kind_name(KernelKind k) {
  switch (k) {
    case KernelKind::elementwise: return "elementwise";
    case KernelKind::row_reduction: return "row_reduction";
    case KernelKind::generic_reduction: return "generic_reduction";
    case KernelKind::transpose_tiled: return "transpose_tiled";
    case KernelKind::cub_sort: return "cub_sort";
    case KernelKind::window_pool: return "window_pool";
  }
  return "?";
}

namespace {

// A group's nodes in topological order, each once; costs the group's size, not the graph's (a plan of
// n one-node groups generates in O(n log n)).
std::vector<NodeId> in_topo_order(const Graph& g, std::span<const NodeId> group) {
  std::vector<NodeId> nodes(group.begin(), group.end());
  std::sort(nodes.begin(), nodes.end(), [&](NodeId a, NodeId b) { return g.topo_position(a) < g.topo_position(b); });
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

}  // namespace

std::vector<ValueId> group_outputs(const Graph& g, std::span<const NodeId> group) {
  const std::set<NodeId> in(group.begin(), group.end());
  std::vector<NodeId> sorted(group.begin(), group.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<ValueId> out;
  for (NodeId n : sorted) {
    const ValueId v = g.value_of(n);
    const auto& cons = g.consumers(v);
    if (g.is_output(v) || std::any_of(cons.begin(), cons.end(), [&](NodeId c) { return !in.count(c); })) out.push_back(v);
  }
  return out;
}

std::vector<ValueId> group_inputs(const Graph& g, std::span<const NodeId> group) {
  const std::set<NodeId> in(group.begin(), group.end());
  std::vector<ValueId> out;
  const std::vector<NodeId> nodes = in_topo_order(g, group);
  std::size_t operands = 0;
  for (NodeId n : nodes) operands += g.node(n).inputs.size();
  codegen::KeyTable seen;
  seen.reserve(operands);
  bool inserted = false;
  for (NodeId n : nodes) {
    // The operands themselves, not tensor_inputs(): `seen` drops repeats, and a wide concat pays for one set.
    for (const Operand& o : g.node(n).inputs) {
      if (o.is_scalar()) continue;
      const ValueId v = o.value;
      auto p = g.producer(v);
      if (p && in.count(*p)) continue;
      seen.find_or_insert(static_cast<std::uint32_t>(v), inserted);
      if (inserted) out.push_back(v);
    }
  }
  return out;
}

std::string unsupported_reason(const Graph& g, std::span<const NodeId> group) {
  if (const auto chain = attention_group(g, group)) {
    const AttentionKernel k = attention_kernel(*chain);
    return "the attention chain runs as one call of " + attention_kernel_name(k) +
           (k == AttentionKernel::tf32_flash ? " (kernels/contraction/flash_attention_tf32.cu, compiled ahead of time)"
                                             : "") +
           ", not generated code";
  }
  for (NodeId n : group) {
    const Node& node = g.node(n);
    if (node.op_id() == OpId::custom) return "node " + node.name + " is a custom op (" + node.label + "): it has no implementation to run";
    if (node.op_class() == OpClass::contraction) {
      if (std::string call = library_call_summary(g, group); !call.empty()) return "node " + call + ", not generated code";
      return "node " + node.name + " (" + node.op + ") runs on cuBLASLt/cuDNN, not generated code";
    }
    if (node.op_id() == OpId::sort || node.op_id() == OpId::topk) return "node " + node.name + " (" + node.op + ") runs through CUB, not generated code";
  }
  return {};
}

namespace codegen {

std::int64_t bytes_of(const Graph& g, const std::vector<ValueId>& values) {
  std::int64_t b = 0;
  for (ValueId v : values) b = saturating_add(b, g.value_type(v).bytes());
  return b;
}

std::int64_t widest_bytes(const Graph& g, const std::vector<NodeId>& nodes, const std::vector<ValueId>& outputs) {
  std::int64_t widest = 1;
  auto see = [&](ValueId v) { widest = std::max(widest, dtype_size(g.value_type(v).dtype)); };
  for (ValueId v : group_inputs(g, nodes)) see(v);
  for (ValueId v : outputs) see(v);
  return widest;
}

std::string in_ptr(Identifiers& ids, const Graph& g, ValueId v) {
  return ids.get(Identifiers::Kind::input_pointer, v, "in_", g.value_name(v));
}
std::string out_ptr(Identifiers& ids, const Graph& g, ValueId v) {
  return ids.get(Identifiers::Kind::output_pointer, v, "out_", g.value_name(v));
}

std::string kernel_signature(const Graph& g, const std::string& name, int block, const std::vector<ValueId>& inputs,
                             const std::vector<ValueId>& outputs, Identifiers& ids) {
  std::string s = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) + ") " + name + "(";
  bool first = true;
  auto parameter = [&](std::string_view qualifier, ValueId v, const std::string& id) {
    const std::size_t before = s.size();
    s.append(first ? "\n    " : ",\n    ").append(qualifier).append(storage_type(g.value_type(v).dtype));
    s.append("* __restrict__ ").append(id);
    // Parameters are alike: room for all at twice the first one's size (a concat of 200,000 has as many).
    if (first) s.reserve(s.size() + 2 * (s.size() - before) * (inputs.size() + outputs.size()));
    first = false;
  };
  for (ValueId v : inputs) parameter("const ", v, in_ptr(ids, g, v));
  for (ValueId v : outputs) parameter("", v, out_ptr(ids, g, v));
  s += ')';
  return s;
}

std::string header_comment(const Graph& g, const std::vector<NodeId>& nodes, const std::string& what) {
  std::string s = "// Kernel: " + what + ".\n// Graph nodes computed here:\n";
  for (NodeId n : nodes) s.append("//   ").append(describe_node(g, n)).append("\n");
  return s;
}

std::string layout_note(const std::string& layout, const std::vector<std::string>& others) {
  if (others.empty()) return {};
  std::string s = "Layout: " + layout + ". A run also times this kernel with " + others.front();
  for (std::size_t i = 1; i < others.size(); ++i) s += " and with " + others[i];
  return s + " and keeps the " + (others.size() == 1 ? "faster" : "fastest") + " (RunOptions::autotune).";
}

}  // namespace codegen

namespace {

// The nodes of `group` that `outputs` depend on, in topological order.
std::vector<NodeId> needed_nodes(const Graph& g, const std::vector<NodeId>& group, const std::vector<ValueId>& outputs) {
  const std::set<NodeId> in(group.begin(), group.end());
  std::set<NodeId> need;
  std::vector<ValueId> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    const ValueId v = stack.back();
    stack.pop_back();
    auto p = g.producer(v);
    if (!p || !in.count(*p) || !need.insert(*p).second) continue;
    for (const Operand& o : g.node(*p).inputs) {
      if (!o.is_scalar()) stack.push_back(o.value);  // a repeat stops at `need`
    }
  }
  std::vector<NodeId> out;
  for (NodeId n : group) {
    if (need.count(n)) out.push_back(n);
  }
  return out;
}

GroupCode elementwise_group(const Graph& g, const std::vector<NodeId>& nodes, const std::vector<ValueId>& outputs,
                            const std::string& name_base) {
  // One kernel per output shape: a kernel loops over one index space.
  std::map<Shape, std::vector<ValueId>> by_shape;
  std::vector<Shape> order;
  for (ValueId o : outputs) {
    const Shape& s = g.value_type(o).shape;
    if (!by_shape.count(s)) order.push_back(s);
    by_shape[s].push_back(o);
  }
  GroupCode code;
  if (order.size() > 1) {
    code.note = "the group's outputs have " + std::to_string(order.size()) +
                " different shapes; one kernel per output shape (each loops over one index space)";
  }
  for (const Shape& s : order) {
    const auto& outs = by_shape[s];
    const std::vector<NodeId> need = needed_nodes(g, nodes, outs);
    std::string name = name_base;
    if (order.size() > 1) name += "_" + std::to_string(code.kernels.size());
    auto tiled = codegen::generate_transpose_tiled(g, need, outs, name);
    code.kernels.push_back(tiled ? std::move(*tiled) : codegen::generate_elementwise(g, need, outs, name));
  }
  return code;
}

GroupCode single_node(const Graph& g, NodeId n, const std::string& name, const CodegenOptions& options) {
  const std::vector<NodeId> one = {n};
  if (g.node(n).op_id() == OpId::max_pool2d) return {{codegen::generate_max_pool2d(g, n, name)}, {}};
  if (g.node(n).op_class() != OpClass::reduction) return elementwise_group(g, one, {g.value_of(n)}, name);
  std::string why;
  auto row = codegen::generate_row_reduction(g, one, {g.value_of(n)}, name, options, why);
  GroupCode code;
  if (row) {
    code.kernels.push_back(std::move(*row));
  } else {
    code.kernels.push_back(codegen::generate_generic_reduction(g, n, name));
    code.note = why + "; generic reduction kernel";
  }
  return code;
}

}  // namespace

GroupCode generate_group(const Graph& g, std::span<const NodeId> group, const std::string& kernel_name,
                         const CodegenOptions& options) {
  return generate_group(g, group, group_outputs(g, group), kernel_name, options);
}

GroupCode generate_group(const Graph& g, std::span<const NodeId> group, const std::vector<ValueId>& outputs,
                         const std::string& kernel_name, const CodegenOptions& options) {
  if (std::string why = unsupported_reason(g, group); !why.empty()) throw std::invalid_argument(why);
  if (group.empty()) throw std::invalid_argument("empty group");
  const std::vector<NodeId> nodes = in_topo_order(g, group);
  if (outputs.empty()) return {};  // everything it computes is recomputed by its consumers: nothing to launch
  if (nodes.size() == 1) return single_node(g, nodes[0], kernel_name, options);
  const bool has_reduction =
      std::any_of(nodes.begin(), nodes.end(), [&](NodeId n) { return g.node(n).op_class() == OpClass::reduction; });
  if (!has_reduction) return elementwise_group(g, nodes, outputs, kernel_name);
  std::string why;
  auto row = codegen::generate_row_reduction(g, nodes, outputs, kernel_name,
                                             options, why);
  GroupCode code;
  if (row) {
    code.kernels.push_back(std::move(*row));
    return code;
  }
  std::string chain_why;
  if (auto chained = codegen::generate_chained_reduction(g, nodes, outputs, kernel_name,
                                                          chain_why)) {
    code.kernels.push_back(std::move(*chained));
    return code;
  }
  if (!chain_why.empty()) why = chain_why;
  // Not one row-wise kernel: run the group's nodes one kernel each (correct, and the report says why).
  code.note = "not generated as one kernel: " + why + "; ran as one kernel per node";
  for (NodeId n : nodes) {
    GroupCode part = single_node(g, n, kernel_name + "_" + std::to_string(code.kernels.size()), options);
    for (auto& k : part.kernels) code.kernels.push_back(std::move(k));
  }
  return code;
}

GeneratedKernel generate_layout_transpose(DType type, std::int64_t batch, std::int64_t rows, std::int64_t cols,
                                          const std::string& label) {
  if (batch < 1 || rows < 1 || cols < 1) throw std::invalid_argument("a layout conversion needs positive sizes");
  GraphSpec spec;
  spec.name = label;
  spec.inputs.push_back(GraphInput{"src", TensorType{Shape{batch, rows, cols}, type}, Role::activation});
  NodeSpec node;
  node.name = label;
  node.op = "transpose";
  node.inputs = {std::string("src")};
  node.attrs.set("perm", std::vector<std::int64_t>{0, 2, 1});
  spec.nodes.push_back(std::move(node));
  spec.outputs = {label};
  Expected<Graph> g = build_graph(spec);
  if (!g.ok()) throw std::invalid_argument("layout conversion " + label + ": " + format_diagnostics(g.errors()));
  GroupCode code = generate_group(*g, std::vector<NodeId>{0}, label);
  if (code.kernels.size() != 1) throw std::logic_error("layout conversion " + label + " did not become one kernel");
  return std::move(code.kernels[0]);
}

bool has_channels_last_variant(const Graph& g, KernelKind kind, std::span<const NodeId> nodes) {
  return kind == KernelKind::window_pool && nodes.size() == 1 && g.node(nodes[0]).op_id() == OpId::max_pool2d &&
         g.node(nodes[0]).type.shape.size() == 4;
}

GeneratedKernel generate_channels_last_variant(const Graph& g, const GeneratedKernel& k) {
  if (!has_channels_last_variant(g, k.kind, k.nodes)) {
    throw std::invalid_argument(k.name + " has no channels-last variant (only max_pool2d has one)");
  }
  return codegen::generate_max_pool2d(g, k.nodes[0], k.name, true);
}

}  // namespace fx::gpu
