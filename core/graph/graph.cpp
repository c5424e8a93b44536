// Graph queries and build_graph(): the one place where a graph description is validated.
#include "core/graph/graph.h"

#include <algorithm>
#include <cassert>
#include <queue>
#include <set>
#include <unordered_set>

namespace fx {

std::string_view role_name(Role r) {
  switch (r) {
    case Role::activation: return "activation";
    case Role::weight: return "weight";
    case Role::constant: return "constant";
  }
  return "?";
}

std::optional<NodeId> Graph::producer(ValueId v) const {
  if (is_input(v)) return std::nullopt;
  return v - static_cast<ValueId>(inputs_.size());
}

const std::string& Graph::value_name(ValueId v) const {
  if (is_input(v)) return inputs_[static_cast<std::size_t>(v)].name;
  return nodes_[static_cast<std::size_t>(*producer(v))].name;
}

const TensorType& Graph::value_type(ValueId v) const {
  if (is_input(v)) return inputs_[static_cast<std::size_t>(v)].type;
  return nodes_[static_cast<std::size_t>(*producer(v))].type;
}

std::optional<ValueId> Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<NodeId> Graph::find_node(const std::string& name) const {
  auto v = find_value(name);
  if (!v) return std::nullopt;
  return producer(*v);
}

std::vector<ValueId> Graph::tensor_inputs(NodeId n) const {
  std::vector<ValueId> out;
  const std::vector<Operand>& inputs = node(n).inputs;
  // A linear search is fastest for the usual few operands; a set keeps a concat of 100,000 tensors linear.
  constexpr std::size_t kLinearSearchLimit = 16;
  std::unordered_set<ValueId> seen;
  for (const Operand& o : inputs) {
    if (o.is_scalar()) continue;
    const bool dup = inputs.size() <= kLinearSearchLimit ? std::find(out.begin(), out.end(), o.value) != out.end()
                                                          : !seen.insert(o.value).second;
    if (!dup) out.push_back(o.value);
  }
  return out;
}

namespace {

bool has_control_characters(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// Checks a tensor type's dimensions and sizes; returns false after adding diagnostics.
bool check_tensor_type(const TensorType& t, const std::string& pointer, Diagnostics& errors) {
  // Inferred types too: a reshape to rank 17 would otherwise be saved as a file no loader accepts.
  if (t.shape.size() > kMaxRank) {
    errors.push_back({pointer + "/shape", "rank " + std::to_string(t.shape.size()) + " exceeds the limit of " +
                                              std::to_string(kMaxRank)});
    return false;
  }
  for (std::size_t i = 0; i < t.shape.size(); ++i) {
    if (t.shape[i] <= 0) {
      errors.push_back({pointer + "/shape/" + std::to_string(i),
                        "dimension must be positive, got " + std::to_string(t.shape[i])});
      return false;
    }
  }
  auto n = checked_numel(t.shape);
  if (!n) {
    errors.push_back({pointer + "/shape", "element count of " + shape_to_string(t.shape) + " overflows 64 bits"});
    return false;
  }
  if (*n > INT64_MAX / dtype_size(t.dtype)) {
    errors.push_back({pointer + "/shape", "byte size of " + type_to_string(t) + " overflows 64 bits"});
    return false;
  }
  return true;
}

bool attr_matches(const AttrValue& v, AttrType type) {
  switch (type) {
    case AttrType::integer: return std::holds_alternative<std::int64_t>(v);
    case AttrType::integer_list: return std::holds_alternative<std::vector<std::int64_t>>(v);
    case AttrType::integer_or_list:
      return std::holds_alternative<std::int64_t>(v) || std::holds_alternative<std::vector<std::int64_t>>(v);
    case AttrType::number: return std::holds_alternative<double>(v) || std::holds_alternative<std::int64_t>(v);
    case AttrType::dtype:
      return std::holds_alternative<std::string>(v) && parse_dtype(std::get<std::string>(v)).has_value();
    case AttrType::string: return std::holds_alternative<std::string>(v);
    case AttrType::boolean: return std::holds_alternative<bool>(v);
  }
  return false;
}

std::string_view attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::integer: return "an integer";
    case AttrType::integer_list: return "a list of integers";
    case AttrType::integer_or_list: return "an integer or a list of integers";
    case AttrType::number: return "a number";
    case AttrType::dtype: return "a dtype (f32, f16, bf16, i32, i64, bool)";
    case AttrType::string: return "a string";
    case AttrType::boolean: return "true or false";
  }
  return "?";
}

// Checks a node's attributes against its op's schema and fills in defaults.
std::optional<Attrs> resolve_attrs(const OpDef& def, const Attrs& given, const std::string& pointer,
                                   Diagnostics& errors) {
  Attrs out;
  bool ok = true;
  for (const auto& entry : given.values()) {
    // Not a structured binding: clang 14 (the fuzzing compiler) cannot capture one in the lambda below.
    const std::string& name = entry.first;
    const AttrValue& value = entry.second;
    auto spec = std::find_if(def.attrs.begin(), def.attrs.end(), [&](const AttrSpec& s) { return s.name == name; });
    if (spec == def.attrs.end()) {
      std::string known;
      for (const AttrSpec& s : def.attrs) known += (known.empty() ? "" : ", ") + s.name;
      errors.push_back({pointer + "/attrs/" + pointer_token(name), "unknown attribute " + quoted(name) + " for op " + quoted(def.name) +
                                                        (known.empty() ? " (it takes none)" : " (it takes " + known + ")")});
      ok = false;
    } else if (!attr_matches(value, spec->type)) {
      errors.push_back({pointer + "/attrs/" + pointer_token(name), "attribute " + quoted(name) + " must be " +
                                                        std::string(attr_type_name(spec->type)) + ", got " +
                                                        attr_value_to_string(value)});
      ok = false;
    } else {
      out.set(name, value);
    }
  }
  for (const AttrSpec& s : def.attrs) {
    if (given.has(s.name)) continue;
    if (s.default_value) {
      out.set(s.name, *s.default_value);
    } else {
      errors.push_back({pointer + "/attrs", "op " + quoted(def.name) + " needs attribute " + quoted(s.name) + " (" +
                                                std::string(attr_type_name(s.type)) + ")"});
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return out;
}

// Finds one cycle among the nodes left over by Kahn's algorithm and names it "a -> b -> a".
std::string describe_cycle(const std::vector<std::vector<NodeId>>& preds, const std::vector<int>& indegree,
                           const std::vector<NodeSpec>& nodes, NodeId& start) {
  NodeId n = -1;
  for (std::size_t i = 0; i < indegree.size(); ++i) {
    if (indegree[i] > 0) {
      n = static_cast<NodeId>(i);
      break;
    }
  }
  assert(n >= 0);
  // Walk predecessors that are themselves stuck; the walk must revisit a node.
  std::vector<int> seen_at(indegree.size(), -1);
  std::vector<NodeId> path;
  while (seen_at[static_cast<std::size_t>(n)] < 0) {
    seen_at[static_cast<std::size_t>(n)] = static_cast<int>(path.size());
    path.push_back(n);
    for (NodeId p : preds[static_cast<std::size_t>(n)]) {
      if (indegree[static_cast<std::size_t>(p)] > 0) {
        n = p;
        break;
      }
    }
  }
  std::vector<NodeId> cycle(path.begin() + seen_at[static_cast<std::size_t>(n)], path.end());
  std::reverse(cycle.begin(), cycle.end());  // predecessors were walked backwards
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());  // start at the first node
  start = cycle.front();
  std::string s;
  for (NodeId c : cycle) s += nodes[static_cast<std::size_t>(c)].name + " -> ";
  return s + nodes[static_cast<std::size_t>(cycle.front())].name;
}

}  // namespace

struct detail::GraphBuilder {
  const GraphSpec& spec;
  Graph& g;
  Diagnostics errors;
  std::unordered_map<std::string, ValueId> names;
  std::vector<bool> node_ok;
  std::vector<bool> input_ok;  // a bad input type is reported at the input, not again at its readers
  std::vector<std::vector<NodeId>> preds;

  void check_names();
  void resolve_nodes();
  bool order_nodes(std::vector<NodeId>& topo);
  void infer_types(const std::vector<NodeId>& topo);
  void resolve_outputs(std::vector<ValueId>& outputs);
};

void detail::GraphBuilder::check_names() {
  for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
    const GraphInput& in = spec.inputs[i];
    const std::string p = "/inputs/" + std::to_string(i);
    if (in.name.empty()) errors.push_back({p + "/name", "name must not be empty"});
    if (has_control_characters(in.name)) errors.push_back({p + "/name", "name contains control characters"});
    if (!names.emplace(in.name, static_cast<ValueId>(i)).second) {
      errors.push_back({p + "/name", "duplicate name " + quoted(in.name)});
    }
    input_ok.push_back(check_tensor_type(in.type, p, errors));
  }
  const auto first_node_value = static_cast<ValueId>(spec.inputs.size());
  for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
    const NodeSpec& n = spec.nodes[i];
    const std::string p = "/nodes/" + std::to_string(i);
    if (n.name.empty()) errors.push_back({p + "/name", "name must not be empty"});
    if (has_control_characters(n.name)) errors.push_back({p + "/name", "name contains control characters"});
    if (!names.emplace(n.name, first_node_value + static_cast<ValueId>(i)).second) {
      errors.push_back({p + "/name", "duplicate name " + quoted(n.name) + " (every input and node names one tensor)"});
    }
  }
}

void detail::GraphBuilder::resolve_nodes() {
  const auto first_node_value = static_cast<ValueId>(spec.inputs.size());
  g.nodes_.resize(spec.nodes.size());
  node_ok.assign(spec.nodes.size(), true);
  preds.assign(spec.nodes.size(), {});
  for (std::size_t i = 0; i < spec.nodes.size(); ++i) {
    const NodeSpec& ns = spec.nodes[i];
    Node& n = g.nodes_[i];
    std::unordered_set<NodeId> pred_seen;  // a wide node (concat of thousands) must stay linear
    const std::string p = "/nodes/" + std::to_string(i);
    n.name = ns.name;
    n.op = ns.op;
    n.source = ns.source;
    n.def = OpRegistry::instance().find(ns.op);
    if (!n.def) {
      errors.push_back({p + "/op", "unknown op " + quoted(ns.op)});
      node_ok[i] = false;
      continue;
    }
    const int arity = static_cast<int>(ns.inputs.size());
    if (arity < n.def->min_inputs || (n.def->max_inputs >= 0 && arity > n.def->max_inputs)) {
      std::string expected = n.def->min_inputs == n.def->max_inputs
                                 ? std::to_string(n.def->min_inputs)
                                 : n.def->max_inputs < 0 ? std::to_string(n.def->min_inputs) + " or more"
                                                         : std::to_string(n.def->min_inputs) + " to " +
                                                               std::to_string(n.def->max_inputs);
      errors.push_back({p + "/inputs", "op " + quoted(ns.op) + " takes " + expected + (n.def->max_inputs == 1 && n.def->min_inputs == 1 ? " input, got " : " inputs, got ") +
                                           std::to_string(arity)});
      node_ok[i] = false;
    }
    auto attrs = resolve_attrs(*n.def, ns.attrs, p, errors);
    if (!attrs) node_ok[i] = false; else n.attrs = *attrs;
    if (n.def->needs_declared_type) {
      if (!ns.shape || !ns.dtype) {
        errors.push_back({p, "op " + quoted(ns.op) + " must state its output \"shape\" and \"dtype\""});
        node_ok[i] = false;
      }
      if (n.attrs.has("label")) n.label = n.attrs.get_string("label");
    }
    for (std::size_t j = 0; j < ns.inputs.size(); ++j) {
      const std::string ip = p + "/inputs/" + std::to_string(j);
      if (const double* s = std::get_if<double>(&ns.inputs[j])) {
        if (!n.def->allows_scalar_inputs) {
          errors.push_back({ip, "op " + quoted(ns.op) + " does not take number literals here"});
          node_ok[i] = false;
        }
        n.inputs.push_back({-1, *s});
        continue;
      }
      const std::string& name = std::get<std::string>(ns.inputs[j]);
      auto it = names.find(name);
      if (it == names.end()) {
        errors.push_back({ip, "unknown input " + quoted(name) + ": no graph input or node has that name"});
        node_ok[i] = false;
        n.inputs.push_back({});
        continue;
      }
      n.inputs.push_back({it->second, 0.0});
      if (it->second >= first_node_value) {
        const NodeId pred = it->second - first_node_value;
        if (pred_seen.insert(pred).second) preds[i].push_back(pred);
      }
    }
  }
}

bool detail::GraphBuilder::order_nodes(std::vector<NodeId>& topo) {
  const std::size_t n = spec.nodes.size();
  std::vector<std::vector<NodeId>> succs(n);
  std::vector<int> indegree(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    for (NodeId p : preds[i]) {
      succs[static_cast<std::size_t>(p)].push_back(static_cast<NodeId>(i));
      ++indegree[i];
    }
  }
  // Min-heap on node id: ties go to file order, so the order is deterministic.
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (indegree[i] == 0) ready.push(static_cast<NodeId>(i));
  }
  while (!ready.empty()) {
    NodeId v = ready.top();
    ready.pop();
    topo.push_back(v);
    for (NodeId s : succs[static_cast<std::size_t>(v)]) {
      if (--indegree[static_cast<std::size_t>(s)] == 0) ready.push(s);
    }
  }
  if (topo.size() == n) return true;
  NodeId start = 0;
  const std::string cycle = describe_cycle(preds, indegree, spec.nodes, start);
  errors.push_back({"/nodes/" + std::to_string(start), "the graph has a cycle: " + cycle});
  return false;
}

void detail::GraphBuilder::infer_types(const std::vector<NodeId>& topo) {
  const auto first_node_value = static_cast<ValueId>(spec.inputs.size());
  for (NodeId id : topo) {
    const auto i = static_cast<std::size_t>(id);
    Node& n = g.nodes_[i];
    const NodeSpec& ns = spec.nodes[i];
    const std::string p = "/nodes/" + std::to_string(i);
    if (!node_ok[i]) continue;
    bool inputs_ok = true;
    std::vector<OperandType> operands;
    for (const Operand& o : n.inputs) {
      if (o.is_scalar()) {
        operands.push_back({std::nullopt, o.scalar});
        continue;
      }
      const bool producer_failed = o.value >= first_node_value
                                       ? !node_ok[static_cast<std::size_t>(o.value - first_node_value)]
                                       : !input_ok[static_cast<std::size_t>(o.value)];
      if (producer_failed) {
        inputs_ok = false;  // already reported at the producer
        break;
      }
      operands.push_back({g.value_type(o.value), 0.0});
    }
    if (!inputs_ok) {
      node_ok[i] = false;
      continue;
    }
    if (n.def->needs_declared_type) {
      n.type = {*ns.shape, *ns.dtype};
    } else {
      InferResult r = n.def->infer(operands, n.attrs);
      if (!r.type) {
        errors.push_back({p + r.error_pointer, "op " + quoted(n.op) + ": " + r.error});
        node_ok[i] = false;
        continue;
      }
      n.type = *r.type;
      if (ns.shape && *ns.shape != n.type.shape) {
        errors.push_back({p + "/shape", "stated shape " + shape_to_string(*ns.shape) + " differs from the inferred " +
                                            shape_to_string(n.type.shape)});
      }
      if (ns.dtype && *ns.dtype != n.type.dtype) {
        errors.push_back({p + "/dtype", "stated dtype " + std::string(dtype_name(*ns.dtype)) +
                                            " differs from the inferred " + std::string(dtype_name(n.type.dtype))});
      }
    }
    if (!check_tensor_type(n.type, p, errors)) {
      node_ok[i] = false;
      continue;
    }
    g.flops_[i] = n.def->flops ? n.def->flops(operands, n.type, n.attrs) : 0.0;
  }
}

void detail::GraphBuilder::resolve_outputs(std::vector<ValueId>& outputs) {
  if (spec.outputs.empty()) errors.push_back({"/outputs", "the graph has no outputs"});
  std::set<ValueId> seen;
  for (std::size_t i = 0; i < spec.outputs.size(); ++i) {
    auto it = names.find(spec.outputs[i]);
    if (it == names.end()) {
      errors.push_back({"/outputs/" + std::to_string(i), "output " + quoted(spec.outputs[i]) + " names nothing"});
    } else if (!seen.insert(it->second).second) {
      errors.push_back({"/outputs/" + std::to_string(i), "output " + quoted(spec.outputs[i]) + " is listed twice"});
    } else {
      outputs.push_back(it->second);
    }
  }
}

Expected<Graph> build_graph(const GraphSpec& spec) {
  Graph g;
  g.name_ = spec.name;
  g.description_ = spec.description;
  g.inputs_ = spec.inputs;
  g.flops_.assign(spec.nodes.size(), 0.0);
  detail::GraphBuilder b{spec, g, {}, {}, {}, {}, {}};
  if (spec.nodes.empty()) b.errors.push_back({"/nodes", "the graph is empty: it has no nodes"});
  b.check_names();
  b.resolve_nodes();
  std::vector<NodeId> topo;
  const bool acyclic = b.order_nodes(topo);
  if (acyclic) b.infer_types(topo);
  b.resolve_outputs(g.outputs_);
  if (!acyclic) return with_more_may_follow(std::move(b.errors), "shapes and dtypes are inferred and checked");
  if (!b.errors.empty()) return b.errors;

  g.topo_ = std::move(topo);
  g.topo_pos_.assign(g.topo_.size(), 0);
  for (std::size_t i = 0; i < g.topo_.size(); ++i) g.topo_pos_[static_cast<std::size_t>(g.topo_[i])] = static_cast<int>(i);
  g.by_name_ = std::move(b.names);
  const auto values = static_cast<std::size_t>(g.num_values());
  g.is_output_.assign(values, false);
  for (ValueId v : g.outputs_) g.is_output_[static_cast<std::size_t>(v)] = true;
  g.consumers_.assign(values, {});
  g.producers_.assign(g.nodes_.size(), {});
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    for (ValueId v : g.tensor_inputs(n)) {
      g.consumers_[static_cast<std::size_t>(v)].push_back(n);
      if (auto p = g.producer(v)) g.producers_[static_cast<std::size_t>(n)].push_back(*p);
    }
    std::sort(g.producers_[static_cast<std::size_t>(n)].begin(), g.producers_[static_cast<std::size_t>(n)].end());
  }
  return g;
}

std::string node_label(const Graph& g, NodeId n) {
  const Node& node = g.node(n);
  return node.name == node.op ? node.name : node.name + " (" + node.op + ")";
}

std::string first_difference(const Graph& a, const Graph& b) {
  if (a == b) return {};
  if (a.name() != b.name()) return "named " + quoted(a.name()) + " vs " + quoted(b.name());
  if (a.inputs().size() != b.inputs().size() || a.num_nodes() != b.num_nodes()) {
    return std::to_string(a.inputs().size()) + " inputs and " + std::to_string(a.num_nodes()) + " nodes vs " +
           std::to_string(b.inputs().size()) + " and " + std::to_string(b.num_nodes());
  }
  for (std::size_t i = 0; i < a.inputs().size(); ++i) {
    const GraphInput &x = a.inputs()[i], &y = b.inputs()[i];
    if (!(x == y)) return "input " + std::to_string(i) + ": " + quoted(x.name) + " " + type_to_string(x.type) + " vs " +
                          quoted(y.name) + " " + type_to_string(y.type);
  }
  for (NodeId n = 0; n < a.num_nodes(); ++n) {
    const Node &x = a.node(n), &y = b.node(n);
    if (!(x == y)) return "node " + std::to_string(n) + ": " + quoted(x.name) + " = " + x.op + " " +
                          type_to_string(x.type) + " vs " + quoted(y.name) + " = " + y.op + " " + type_to_string(y.type);
  }
  return "the outputs or descriptions differ";
}

}  // namespace fx
