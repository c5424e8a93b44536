// The ONNX importer's driver: parse, fix symbolic dimensions, run ONNX's shape inference, then map node by
// node (onnx_ops.cpp holds the op table), fall back to `custom` where a mapping does not apply, and drop
// nodes no output needs (shape arithmetic whose results became reshape attributes).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "app/import/onnx_internal.h"
#include "core/graph/utf8.h"
#include "core/graph/graph_io.h"

namespace fx {
namespace onnx_import {
namespace {

// Constants up to this many elements have their values decoded: enough for any shape, axes or bounds list.
constexpr std::size_t kMaxDecodedValues = 4096;

std::string in_quotes(const std::string& s) { return "'" + s + "'"; }

std::string node_pointer(int index) { return "/graph/node/" + std::to_string(index); }

std::string describe(const onnx::NodeProto& n) {
  return in_quotes(n.name().empty() ? (n.output_size() ? n.output(0) : std::string("?")) : n.name()) + " (" +
         (n.domain().empty() || n.domain() == "ai.onnx" ? "" : n.domain() + ".") + n.op_type() + ")";
}

// The format's rank limit holds for imported tensors too, or the import would save a file that does not load.
std::optional<std::string> rank_problem(const std::string& what, const TensorType& t) {
  if (t.shape.size() <= kMaxRank) return std::nullopt;
  return what + " has rank " + std::to_string(t.shape.size()) + ", over the format's limit of " +
         std::to_string(kMaxRank);
}

bool is_default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

}  // namespace

Importer::Importer(const onnx::ModelProto& model, const OnnxImportOptions& options, std::vector<std::string>& warnings)
    : model_(model), graph_(model.graph()), options_(options), warnings_(warnings) {
  for (const auto& o : model.opset_import()) {
    if (is_default_domain(o.domain())) opset_ = static_cast<int>(o.version());
  }
  for (const auto& v : graph_.input()) reserved_.insert(v.name());
  for (const auto& t : graph_.initializer()) reserved_.insert(t.name());
  for (const auto& n : graph_.node()) {
    for (const auto& o : n.output()) reserved_.insert(o);
    for (const auto& i : n.input()) consumed_.insert(i);
  }
  for (const auto& o : graph_.output()) consumed_.insert(o.name());
  // Types from the model itself and from ONNX's shape inference (run before the Importer is made).
  auto collect = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    const auto& tt = v.type().tensor_type();
    bool narrowed = false;
    auto dtype = map_dtype(tt.elem_type(), narrowed);
    if (!dtype) return;
    TensorType t{{}, *dtype};
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() <= 0) return;
      t.shape.push_back(d.dim_value());
    }
    onnx_types_[v.name()] = t;
  };
  for (const auto& v : graph_.input()) collect(v);
  for (const auto& v : graph_.value_info()) collect(v);
  for (const auto& v : graph_.output()) collect(v);
}

void Importer::warn(std::string message) { warnings_.push_back(std::move(message)); }

const TensorType* Importer::type_of(const std::string& onnx_name) const {
  if (auto it = names_.find(onnx_name); it != names_.end()) {
    auto t = types_.find(it->second);
    return t == types_.end() ? nullptr : &t->second;
  }
  if (auto c = constants_.find(onnx_name); c != constants_.end()) return &c->second.type;
  return nullptr;
}

const TensorType* Importer::onnx_type_of(const std::string& onnx_name) const {
  auto it = onnx_types_.find(onnx_name);
  return it == onnx_types_.end() ? nullptr : &it->second;
}

const TensorType* Importer::our_type(const std::string& our_name) const {
  auto it = types_.find(our_name);
  return it == types_.end() ? nullptr : &it->second;
}

const ConstValue* Importer::constant(const std::string& onnx_name) const {
  auto it = constants_.find(onnx_name);
  return it == constants_.end() ? nullptr : &it->second;
}

std::optional<std::vector<std::int64_t>> Importer::const_ints(const std::string& onnx_name) const {
  const ConstValue* c = constant(onnx_name);
  if (!c || !c->has_values || is_floating(c->type.dtype)) return std::nullopt;
  return c->ints;
}

std::optional<double> Importer::const_scalar(const std::string& onnx_name) const {
  const ConstValue* c = constant(onnx_name);
  if (!c || !c->has_values || c->type.numel() != 1) return std::nullopt;
  const double v = is_floating(c->type.dtype) ? c->reals[0] : static_cast<double>(c->ints[0]);
  // JSON has no infinities or NaN: such constants stay tensors.
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

void Importer::bind(const std::string& onnx_name, const std::string& our_name) {
  names_[onnx_name] = our_name;
  journal_.push_back(onnx_name);
}

std::string Importer::tensor(const std::string& onnx_name) {
  if (auto it = names_.find(onnx_name); it != names_.end()) return it->second;
  const ConstValue* c = constant(onnx_name);
  if (!c) return onnx_name;  // unknown: check_node_inputs reported it; build_graph will too
  // A constant used as a tensor becomes a graph input: weights for initializers, constants otherwise.
  spec_.inputs.push_back({onnx_name, c->type, c->is_initializer ? Role::weight : Role::constant});
  types_[onnx_name] = c->type;
  bind(onnx_name, onnx_name);
  return onnx_name;
}

std::string Importer::temp_name(const std::string& base) {
  std::string name = base;
  for (int k = 2; reserved_.count(name); ++k) name = base + "#" + std::to_string(k);
  reserved_.insert(name);
  return name;
}

std::string Importer::output_name(const onnx::NodeProto& node, int i) { return node.output(i); }

bool Importer::emit(NodeSpec node, std::string& why) {
  if (node.source.empty()) node.source = source_;
  const OpDef* def = OpRegistry::instance().find(node.op);
  if (!def) {
    why = "the format has no op " + in_quotes(node.op);
    return false;
  }
  for (const AttrSpec& s : def->attrs) {
    if (node.attrs.has(s.name)) continue;
    if (!s.default_value) {
      why = node.op + " needs attribute " + s.name;
      return false;
    }
    node.attrs.set(s.name, *s.default_value);
  }
  const int arity = static_cast<int>(node.inputs.size());
  if (arity < def->min_inputs || (def->max_inputs >= 0 && arity > def->max_inputs)) {
    why = node.op + " takes " + std::to_string(def->min_inputs) + (def->max_inputs == def->min_inputs ? "" : " or more") +
          " inputs, got " + std::to_string(arity);
    return false;
  }
  std::vector<OperandType> operands;
  for (const auto& in : node.inputs) {
    if (const double* s = std::get_if<double>(&in)) {
      if (!def->allows_scalar_inputs) {
        why = node.op + " takes no number literals";
        return false;
      }
      operands.push_back({std::nullopt, *s});
      continue;
    }
    auto t = types_.find(std::get<std::string>(in));
    if (t == types_.end()) {
      why = "input " + in_quotes(std::get<std::string>(in)) + " has no type";
      return false;
    }
    operands.push_back({t->second, 0.0});
  }
  TensorType type;
  if (def->needs_declared_type) {
    type = {*node.shape, *node.dtype};
  } else {
    InferResult r = def->infer(operands, node.attrs);
    if (!r.type) {
      why = node.op + ": " + r.error;
      return false;
    }
    type = *r.type;
  }
  types_[node.name] = type;
  spec_.nodes.push_back(std::move(node));
  return true;
}

void Importer::alias(const std::string& onnx_out, const std::string& onnx_in) { bind(onnx_out, tensor(onnx_in)); }

void Importer::rollback(const Checkpoint& c) {
  for (std::size_t i = c.nodes; i < spec_.nodes.size(); ++i) types_.erase(spec_.nodes[i].name);
  for (std::size_t i = c.inputs; i < spec_.inputs.size(); ++i) types_.erase(spec_.inputs[i].name);
  spec_.nodes.resize(c.nodes);
  spec_.inputs.resize(c.inputs);
  for (std::size_t i = c.journal; i < journal_.size(); ++i) names_.erase(journal_[i]);
  journal_.resize(c.journal);
}

void Importer::add_constant(const std::string& name, ConstValue value) { constants_[name] = std::move(value); }

void Importer::add_graph_inputs(Diagnostics& errors) {
  std::set<std::string> initializers;
  for (int i = 0; i < graph_.initializer_size(); ++i) {
    const auto& t = graph_.initializer(i);
    std::string error;
    auto c = decode_tensor(t, kMaxDecodedValues, error);
    if (!c) {
      failed_.insert(t.name());
      errors.push_back({"/graph/initializer/" + std::to_string(i), "initializer " + in_quotes(t.name()) + ": " + error});
      continue;
    }
    if (auto bad = rank_problem("initializer " + in_quotes(t.name()), c->type)) {
      failed_.insert(t.name());
      errors.push_back({"/graph/initializer/" + std::to_string(i), *bad});
      continue;
    }
    c->is_initializer = true;
    add_constant(t.name(), std::move(*c));
    initializers.insert(t.name());
  }
  for (int i = 0; i < graph_.input_size(); ++i) {
    const auto& v = graph_.input(i);
    if (initializers.count(v.name())) continue;  // IR < 4 lists weights as inputs too
    const TensorType* t = onnx_type_of(v.name());
    if (!t) {
      failed_.insert(v.name());
      errors.push_back({"/graph/input/" + std::to_string(i),
                        "graph input " + in_quotes(v.name()) + " is not a tensor with a known element type and shape"});
      continue;
    }
    if (auto bad = rank_problem("graph input " + in_quotes(v.name()), *t)) {
      failed_.insert(v.name());
      errors.push_back({"/graph/input/" + std::to_string(i), *bad});
      continue;
    }
    spec_.inputs.push_back({v.name(), *t, Role::activation});
    types_[v.name()] = *t;
    bind(v.name(), v.name());
  }
}

bool Importer::check_node_inputs(const onnx::NodeProto& node, int index, Diagnostics& errors) const {
  bool ok = true;
  for (int j = 0; j < node.input_size(); ++j) {
    const std::string& in = node.input(j);
    if (in.empty() || names_.count(in) || constants_.count(in)) continue;  // "" marks an omitted optional input
    if (failed_.count(in)) return false;  // its producer already reported the error
    errors.push_back({node_pointer(index) + "/input/" + std::to_string(j),
                      "node " + describe(node) + " reads " + in_quotes(in) +
                          ", which no graph input, initializer or earlier node produces"});
    ok = false;
  }
  return ok;
}

// A mapped node must produce every output something reads, with the type ONNX inferred where it did.
bool Importer::verify_outputs(const onnx::NodeProto& node, std::string& why) const {
  for (const std::string& out : node.output()) {
    if (out.empty() || !consumed_.count(out)) continue;
    const TensorType* ours = type_of(out);
    if (!ours) {
      why = "output " + in_quotes(out) + " has no mapping";
      return false;
    }
    const TensorType* theirs = onnx_type_of(out);
    if (theirs && *theirs != *ours) {
      why = "the mapping gives " + type_to_string(*ours) + " where ONNX infers " + type_to_string(*theirs);
      return false;
    }
  }
  return true;
}

void Importer::import_as_custom(const onnx::NodeProto& node, int index, const std::string& why, Diagnostics& errors) {
  if (!why.empty()) ++fallbacks_[node.op_type() + ": " + why];
  const std::string label = (is_default_domain(node.domain()) ? "" : node.domain() + ".") + node.op_type();
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string& out = node.output(i);
    if (out.empty() || !consumed_.count(out)) continue;
    const TensorType* t = onnx_type_of(out);
    if (!t) {
      errors.push_back({node_pointer(index) + "/output/" + std::to_string(i),
                        "node " + describe(node) + " imports as an opaque custom op, but the shape of its output " +
                            in_quotes(out) + " is unknown (ONNX shape inference gives none" +
                            (why.empty() ? "" : "; the mapping failed: " + why) + ")"});
      continue;
    }
    NodeSpec n;
    n.name = out;
    n.op = "custom";
    n.attrs.set("label", label);
    for (const std::string& in : node.input()) {
      if (!in.empty()) n.inputs.emplace_back(tensor(in));
    }
    n.shape = t->shape;
    n.dtype = t->dtype;
    std::string unused;
    if (emit(std::move(n), unused)) bind(out, out);
  }
}

void Importer::map_node(const onnx::NodeProto& node, int index, Diagnostics& errors) {
  const std::size_t errors_before = errors.size();
  // Every node this one maps to names it: ONNX node names are what exporters and Netron show.
  source_ = "onnx node " + describe(node);
  map_node_checked(node, index, errors);
  source_.clear();
  for (const std::string& out : node.output()) {
    const TensorType* t = type_of(out);
    if (auto bad = t ? rank_problem("output " + in_quotes(out), *t) : std::nullopt; bad && errors.size() == errors_before) {
      errors.push_back({node_pointer(index), describe(node) + ": " + *bad});
    }
  }
  if (errors.size() == errors_before) return;
  for (const std::string& out : node.output()) {
    if (!names_.count(out)) failed_.insert(out);
  }
}

void Importer::map_node_checked(const onnx::NodeProto& node, int index, Diagnostics& errors) {
  if (!check_node_inputs(node, index, errors)) {
    for (const std::string& out : node.output()) failed_.insert(out);
    return;
  }
  if (is_default_domain(node.domain()) && node.op_type() == "Constant") {
    std::string error;
    auto c = constant_node_value(node, kMaxDecodedValues, error);
    if (c && node.output_size() == 1) {
      add_constant(node.output(0), std::move(*c));
      return;
    }
    if (!onnx_type_of(node.output(0))) {
      errors.push_back({node_pointer(index), "Constant " + describe(node) + ": " + error});
      return;
    }
  }
  if (is_default_domain(node.domain())) {
    if (auto folded = fold_constant(*this, node)) {
      add_constant(node.output(0), std::move(*folded));
      return;
    }
  }
  MapFn map = is_default_domain(node.domain()) ? find_mapper(node.op_type()) : nullptr;
  std::string why;
  if (map) {
    const Checkpoint c = checkpoint();
    auto failure = map(*this, node);
    if (!failure && verify_outputs(node, why)) return;
    if (failure) why = *failure;
    rollback(c);
  }
  import_as_custom(node, index, why, errors);
}

void Importer::resolve_outputs(Diagnostics& errors) {
  std::set<std::string> seen;
  for (int i = 0; i < graph_.output_size(); ++i) {
    const std::string& name = graph_.output(i).name();
    if (failed_.count(name)) continue;
    if (!names_.count(name) && !constants_.count(name)) {
      errors.push_back({"/graph/output/" + std::to_string(i), "graph output " + in_quotes(name) + " is never produced"});
      continue;
    }
    const std::string ours = tensor(name);
    if (!seen.insert(ours).second) {
      warn("graph output " + in_quotes(name) + " is the same tensor as an earlier output; listed once");
      continue;
    }
    spec_.outputs.push_back(ours);
  }
}

void Importer::remove_dead_nodes() {
  std::unordered_map<std::string, std::size_t> producer;
  for (std::size_t i = 0; i < spec_.nodes.size(); ++i) producer[spec_.nodes[i].name] = i;
  std::set<std::string> live(spec_.outputs.begin(), spec_.outputs.end());
  std::vector<std::string> work(spec_.outputs.begin(), spec_.outputs.end());
  while (!work.empty()) {
    auto it = producer.find(work.back());
    work.pop_back();
    if (it == producer.end()) continue;
    for (const auto& in : spec_.nodes[it->second].inputs) {
      if (const auto* s = std::get_if<std::string>(&in); s && live.insert(*s).second) work.push_back(*s);
    }
  }
  const std::size_t before = spec_.nodes.size();
  std::erase_if(spec_.nodes, [&](const NodeSpec& n) { return !live.count(n.name); });
  std::erase_if(spec_.inputs, [&](const GraphInput& in) { return in.role != Role::activation && !live.count(in.name); });
  if (spec_.nodes.size() < before) {
    warn("dropped " + std::to_string(before - spec_.nodes.size()) +
         " node(s) that no graph output needs (shape arithmetic folded into reshape attributes, unused outputs)");
  }
}

void Importer::summarize_custom_ops() {
  std::map<std::string, int> customs;
  for (const NodeSpec& n : spec_.nodes) {
    if (n.op == "custom") ++customs[std::get<std::string>(n.attrs.find("label") ? *n.attrs.find("label") : AttrValue{std::string("?")})];
  }
  if (!customs.empty()) {
    std::string list;
    for (const auto& [op, count] : customs) list += (list.empty() ? "" : ", ") + op + " x" + std::to_string(count);
    warn("imported as opaque custom nodes (never fused): " + list);
  }
  for (const auto& [reason, count] : fallbacks_) {
    warn("mapping not applicable, imported as custom (x" + std::to_string(count) + "): " + reason);
  }
}

Expected<GraphSpec> Importer::run(const std::string& source_name) {
  Diagnostics errors;
  add_graph_inputs(errors);
  for (int i = 0; i < graph_.node_size(); ++i) map_node(graph_.node(i), i, errors);
  resolve_outputs(errors);
  if (!errors.empty()) return errors;
  remove_dead_nodes();
  if (spec_.nodes.empty()) {
    return Diagnostic{"/graph/node", "no operation is left to show: every ONNX node is the identity here (Identity, "
                                     "inference-mode Dropout, a no-op Clip or Reshape) or a constant"};
  }
  summarize_custom_ops();
  spec_.name = !options_.name.empty() ? options_.name : !graph_.name().empty() ? graph_.name() : source_name;
  spec_.description = "Imported from ONNX " + source_name + " (opset " + std::to_string(opset_) +
                      (model_.producer_name().empty() ? "" : ", produced by " + model_.producer_name() + " " +
                                                                 model_.producer_version()) +
                      ")";
  if (!graph_.doc_string().empty()) spec_.description += ": " + graph_.doc_string();
  auto built = build_graph(spec_);
  if (!built) {
    Diagnostics out{{"", "the imported graph does not validate; this is an importer bug, please report it"}};
    out.insert(out.end(), built.errors().begin(), built.errors().end());
    return out;
  }
  return std::move(spec_);
}

}  // namespace onnx_import

namespace {

// Gives every symbolic or unknown dimension of the graph inputs a value, so ONNX's shape inference can
// propagate whole shapes; symbolic output and value_info dimensions are cleared to be inferred again.
void fix_dimensions(onnx::GraphProto& graph, const OnnxImportOptions& options, std::vector<std::string>& warnings) {
  std::set<std::string> initializers;
  for (const auto& t : graph.initializer()) initializers.insert(t.name());
  std::map<std::string, std::int64_t> chosen;
  for (auto& v : *graph.mutable_input()) {
    if (initializers.count(v.name()) || !v.type().has_tensor_type()) continue;
    auto* shape = v.mutable_type()->mutable_tensor_type()->mutable_shape();
    for (int d = 0; d < shape->dim_size(); ++d) {
      auto* dim = shape->mutable_dim(d);
      if (dim->has_dim_value() && dim->dim_value() > 0) continue;
      const std::string param = dim->has_dim_param() ? dim->dim_param() : "";
      std::int64_t value = options.default_dim;
      if (auto it = options.dims.find(param); !param.empty() && it != options.dims.end()) {
        value = it->second;
      } else if (!param.empty() && !chosen.count(param)) {
        warnings.push_back("dimension '" + param + "' has no value; using " + std::to_string(value) +
                           " (set it with --dim " + param + "=VALUE)");
      } else if (param.empty()) {
        warnings.push_back("dimension " + std::to_string(d) + " of input '" + v.name() + "' is unknown; using " +
                           std::to_string(value));
      }
      if (!param.empty()) chosen[param] = value;
      dim->set_dim_value(value);
    }
  }
  for (const auto& [name, value] : options.dims) {
    if (!chosen.count(name)) warnings.push_back("--dim " + name + ": no input dimension has that name");
  }
  auto refresh = [&](onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    for (auto& dim : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (!dim.has_dim_param()) continue;
      auto it = chosen.find(dim.dim_param());
      if (it != chosen.end()) dim.set_dim_value(it->second); else dim.clear_value();
    }
  };
  for (auto& v : *graph.mutable_output()) refresh(v);
  for (auto& v : *graph.mutable_value_info()) refresh(v);
}

Expected<onnx::ModelProto> parse_model(std::string_view bytes, const std::string& source) {
  onnx::ModelProto model;
  if (bytes.empty()) return Diagnostic{"", source + " is empty, not an ONNX model"};
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Diagnostic{"", source + " is not an ONNX model: it does not parse as an ONNX ModelProto (protobuf)"};
  }
  if (!model.has_graph() || model.graph().node_size() == 0) {
    return Diagnostic{"/graph", source + " is not an ONNX model, or an empty one: it has no graph nodes" +
                                    std::string(model.ir_version() == 0 ? " and no IR version" : "")};
  }
  if (model.graph().output_size() == 0) return Diagnostic{"/graph/output", source + ": the ONNX graph has no outputs"};
  return model;
}

// ONNX stores names as protobuf proto2 strings, which need not be UTF-8; the graph format (JSON) must be.
// Every text the importer copies into the graph is checked here, each failure named by its field.
Diagnostics check_utf8(const onnx::ModelProto& model) {
  Diagnostics errors;
  auto check = [&](const std::string& text, const std::string& pointer) {
    if (auto at = invalid_utf8_offset(text)) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[*at])));
      errors.push_back({pointer, "not valid UTF-8 (byte " + std::string(byte) + " at offset " + std::to_string(*at) +
                                     "); names and text in the graph format are UTF-8"});
    }
  };
  auto values = [&](const auto& list, const std::string& pointer) {
    for (int i = 0; i < list.size(); ++i) check(list.Get(i).name(), pointer + "/" + std::to_string(i) + "/name");
  };
  const onnx::GraphProto& g = model.graph();
  check(model.producer_name(), "/producer_name");
  check(model.producer_version(), "/producer_version");
  check(g.name(), "/graph/name");
  check(g.doc_string(), "/graph/doc_string");
  values(g.input(), "/graph/input");
  values(g.output(), "/graph/output");
  values(g.value_info(), "/graph/value_info");
  values(g.initializer(), "/graph/initializer");
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& n = g.node(i);
    const std::string at = "/graph/node/" + std::to_string(i);
    check(n.name(), at + "/name");
    check(n.op_type(), at + "/op_type");
    check(n.domain(), at + "/domain");
    for (int j = 0; j < n.input_size(); ++j) check(n.input(j), at + "/input/" + std::to_string(j));
    for (int j = 0; j < n.output_size(); ++j) check(n.output(j), at + "/output/" + std::to_string(j));
  }
  return errors;
}

void infer_onnx_shapes(onnx::ModelProto& model, std::vector<std::string>& warnings) {
  // Errors on single nodes are skipped (error_mode 0), so an op this libonnx does not know leaves only its
  // own outputs unshaped. Data propagation gives Reshape targets computed from Shape/Gather/Concat chains.
  onnx::ShapeInferenceOptions options{false, 0, true};
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    warnings.push_back(std::string("ONNX shape inference stopped early: ") + e.what());
  }
}

}  // namespace

bool onnx_import_available() { return true; }

Expected<GraphSpec> import_onnx_bytes(std::string_view bytes, const std::string& source_name,
                                      const OnnxImportOptions& options, std::vector<std::string>& warnings) {
  if (options.default_dim < 1) return Diagnostic{"", "the default dimension must be at least 1"};
  for (const auto& [name, value] : options.dims) {
    if (value < 1) return Diagnostic{"", "--dim " + name + "=" + std::to_string(value) + ": must be at least 1"};
  }
  auto model = parse_model(bytes, source_name);
  if (!model) return model.errors();
  if (Diagnostics bad = check_utf8(*model); !bad.empty()) return bad;
  fix_dimensions(*model->mutable_graph(), options, warnings);
  infer_onnx_shapes(*model, warnings);
  onnx_import::Importer importer(*model, options, warnings);
  return importer.run(source_name);
}

Expected<GraphSpec> import_onnx_file(const std::filesystem::path& path, const OnnxImportOptions& options,
                                     std::vector<std::string>& warnings) {
  auto bytes = read_text_file(path, options.max_file_bytes);
  if (!bytes) return bytes.errors();
  OnnxImportOptions named = options;
  if (named.name.empty()) named.name = path.stem().string();
  return import_onnx_bytes(*bytes, path.string(), named, warnings);
}

}  // namespace fx
