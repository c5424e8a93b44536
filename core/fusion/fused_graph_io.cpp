// Fused graph files (a graph plus a "fusion" section) and the decision log as JSON.
#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/fusion/engine.h"
#include "core/fusion/plan_file.h"
#include "core/graph/graph_json.h"

namespace fx {
namespace {

nlohmann::ordered_json entry_json(const LogEntry& e) {
  nlohmann::ordered_json j;
  j["step"] = e.step;
  j["action"] = e.action;
  j["by"] = e.by;
  j["candidate"] = e.candidate_id;
  j["kind"] = to_string(e.kind);
  j["strategy"] = to_string(e.strategy);
  j["group_a"] = e.group_a;
  j["group_b"] = e.group_b;
  j["reason"] = to_string(e.reason);
  j["message"] = e.message;
  j["time_before_us"] = e.time_before_us;
  j["time_after_us"] = e.time_after_us;
  return j;
}

// Reads one decision-log entry; a mistyped field is reported at its pointer, never thrown.
std::optional<LogEntry> entry_from_json(const nlohmann::json& j, const std::string& pointer, Diagnostics& errors) {
  bool ok = true;
  auto text = [&](const char* key, const char* fallback) -> std::string {
    auto it = j.find(key);
    if (it == j.end()) return fallback;
    if (!it->is_string()) {
      errors.push_back({pointer + "/" + key, std::string("decision field \"") + key + "\" must be a string, got " +
                                                 it->type_name()});
      ok = false;
      return fallback;
    }
    return it->get<std::string>();
  };
  auto number = [&](const char* key) -> double {
    auto it = j.find(key);
    if (it == j.end()) return 0.0;
    if (!it->is_number()) {
      errors.push_back({pointer + "/" + key, std::string("decision field \"") + key + "\" must be a number, got " +
                                                 it->type_name()});
      ok = false;
      return 0.0;
    }
    return it->get<double>();
  };
  LogEntry e;
  auto step_it = j.find("step");
  // Steps count the user's decisions; the engine adds one per decision, so a bound keeps that from overflowing.
  constexpr std::int64_t kMaxStep = 1'000'000'000;
  if (step_it != j.end() && !step_it->is_number_integer()) {
    errors.push_back({pointer + "/step", std::string("decision field \"step\" must be an integer, got ") +
                                             step_it->type_name()});
    ok = false;
  } else if (step_it != j.end() && (step_it->is_number_unsigned() ? step_it->get<std::uint64_t>() > kMaxStep
                                                                  : step_it->get<std::int64_t>() < 0 ||
                                                                        step_it->get<std::int64_t>() > kMaxStep)) {
    errors.push_back({pointer + "/step", "decision field \"step\" must be between 0 and " + std::to_string(kMaxStep) +
                                             ", got " + step_it->dump()});
    ok = false;
  } else if (step_it != j.end()) {
    e.step = static_cast<int>(step_it->get<std::int64_t>());
  }
  e.action = text("action", "");
  e.by = text("by", "");
  e.candidate_id = text("candidate", "");
  e.kind = parse_fusion_kind(text("kind", "vertical")).value_or(FusionKind::vertical);
  const std::string strategy = text("strategy", "merge");
  e.strategy = strategy == "recompute" ? Strategy::recompute
               : strategy == "multi_output" ? Strategy::multi_output : Strategy::merge;
  e.group_a = text("group_a", "");
  e.group_b = text("group_b", "");
  const std::string reason = text("reason", "FUSIBLE");
  auto parsed = parse_reason(reason);
  if (!parsed && ok) {
    errors.push_back({pointer + "/reason", "unknown reason code '" + reason + "'"});
    ok = false;
  }
  e.reason = parsed.value_or(Reason::fusible);
  e.message = text("message", "");
  e.time_before_us = number("time_before_us");
  e.time_after_us = number("time_after_us");
  if (!ok) return std::nullopt;
  return e;
}

nlohmann::ordered_json names_json(const Graph& g, const std::vector<NodeId>& nodes) {
  auto j = nlohmann::ordered_json::array();
  for (NodeId n : nodes) j.push_back(g.node(n).name);
  return j;
}

// The `recomputed` list of a group is group content like its nodes: each producer once, none of the group's
// own nodes, only ops that can be recomputed (elementwise, not random), each feeding the group (directly or
// through another recomputed producer), and the whole of nodes + recomputed legal as one kernel. Without
// these a plan could "recompute" a sort away or list one name 200,000 times.
void check_recomputed(const Graph& g, const GroupSpec& spec, const std::string& at, Diagnostics& errors) {
  std::unordered_set<NodeId> members(spec.nodes.begin(), spec.nodes.end());
  std::unordered_map<NodeId, std::size_t> first_index;
  std::vector<std::pair<NodeId, std::size_t>> listed;  // (node, index in the file), each node once
  for (std::size_t k = 0; k < spec.recomputed.size(); ++k) {
    const NodeId n = spec.recomputed[k];
    const std::string here = at + "/recomputed/" + std::to_string(k);
    const std::string name = "'" + g.node(n).name + "'";
    if (auto [it, fresh] = first_index.emplace(n, k); !fresh) {
      errors.push_back({here, "node " + name + " is listed twice (first at " + at + "/recomputed/" +
                                  std::to_string(it->second) + ")"});
    } else if (members.count(n)) {
      errors.push_back({here, "node " + name + " is one of the group's own nodes: a group cannot recompute itself"});
    } else if (g.node(n).op_class() != OpClass::elementwise || g.node(n).def->random) {
      errors.push_back({here, "node " + name + " (" + g.node(n).op + ") cannot be recomputed: only elementwise, "
                              "non-random ops are recomputed in their consumers"});
    } else {
      listed.emplace_back(n, k);
    }
  }
  // Consumers come later in topological order: walk back from the group, keeping what feeds it.
  std::sort(listed.begin(), listed.end(),
            [&](const auto& a, const auto& b) { return g.topo_position(a.first) > g.topo_position(b.first); });
  std::unordered_set<NodeId> feeding = members;
  for (const auto& [n, k] : listed) {
    const auto& readers = g.consumers(g.value_of(n));
    if (std::none_of(readers.begin(), readers.end(), [&](NodeId c) { return feeding.count(c) > 0; })) {
      errors.push_back({at + "/recomputed/" + std::to_string(k), "node '" + g.node(n).name +
                                                                     "' does not feed this group: nothing in it reads "
                                                                     "its value"});
    } else {
      feeding.insert(n);
    }
  }
}

Expected<std::vector<GroupSpec>> read_groups(const Graph& g, const nlohmann::json& groups, const EngineOptions& options) {
  Diagnostics errors;
  if (!groups.is_array()) return Diagnostic{"/fusion/groups", "must be an array of groups"};
  std::vector<GroupSpec> specs;
  std::map<NodeId, std::size_t> owner;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string at = "/fusion/groups/" + std::to_string(i);
    if (!groups[i].is_object() || !groups[i].contains("nodes")) {
      errors.push_back({at, "a group must be an object with \"nodes\""});
      continue;
    }
    GroupSpec spec;
    spec.nodes = read_node_names(g, groups[i]["nodes"], at + "/nodes", errors);
    if (groups[i].contains("recomputed")) spec.recomputed = read_node_names(g, groups[i]["recomputed"], at + "/recomputed", errors);
    if (spec.nodes.empty()) errors.push_back({at + "/nodes", "a group needs at least one node"});
    for (std::size_t k = 0; k < spec.nodes.size(); ++k) {
      auto [it, fresh] = owner.emplace(spec.nodes[k], i);
      if (!fresh) {
        errors.push_back({at + "/nodes/" + std::to_string(k),
                          "node '" + g.node(spec.nodes[k]).name + "' is in two groups (/fusion/groups/" +
                              std::to_string(it->second) + " and " + at + "): a plan is a partition"});
      }
    }
    const std::size_t errors_before = errors.size();
    check_recomputed(g, spec, at, errors);
    // Legal as one kernel: the nodes and what the group recomputes (only once the lists themselves are sound).
    std::vector<NodeId> sorted = spec.nodes;
    if (errors.size() == errors_before) sorted.insert(sorted.end(), spec.recomputed.begin(), spec.recomputed.end());
    std::sort(sorted.begin(), sorted.end(), [&](NodeId a, NodeId b) { return g.topo_position(a) < g.topo_position(b); });
    const FusionDecision legal = check_group(g, sorted, options);
    if (!legal.fuse) {
      errors.push_back({at, "illegal group: " + std::string(to_string(legal.reason)) + ": " + legal.message});
    }
    specs.push_back(std::move(spec));
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (!owner.count(n)) errors.push_back({"/fusion/groups", "node '" + g.node(n).name + "' is in no group"});
  }
  if (errors.empty() && !group_graph_is_acyclic(g, specs)) {
    errors.push_back({"/fusion/groups", "the groups depend on each other in a cycle: no kernel order exists"});
  }
  if (!errors.empty()) return errors;
  return specs;
}

}  // namespace

std::string FusionEngine::decision_log_json() const {
  nlohmann::ordered_json j;
  j["graph"] = graph_->name();
  j["device"] = model_.device().name;
  j["kernels"] = plan_.kernel_count();
  j["predicted_time_us"] = plan_.predicted_time_s() * 1e6;
  auto entries = nlohmann::ordered_json::array();
  for (const LogEntry& e : log_) entries.push_back(entry_json(e));
  j["entries"] = std::move(entries);
  return dump_pretty(j);
}

std::string FusionEngine::save_fused_graph() const {
  nlohmann::ordered_json doc = graph_to_json(*graph_);
  nlohmann::ordered_json f;
  f["device"] = model_.device().name;
  f["options"] = {{"max_fusion_size", options_.max_fusion_size},
                  {"register_budget", options_.register_budget},
                  {"allow_recompute", options_.allow_recompute}};
  auto disabled = nlohmann::ordered_json::array();
  for (FusionKind k : options_.disabled_kinds) disabled.push_back(to_string(k));
  f["options"]["disabled_kinds"] = disabled;
  f["kernels"] = plan_.kernel_count();
  f["predicted_time_us"] = plan_.predicted_time_s() * 1e6;
  auto groups = nlohmann::ordered_json::array();
  for (const Group& grp : plan_.groups()) {
    nlohmann::ordered_json j;
    j["id"] = grp.id;
    auto kinds = nlohmann::ordered_json::array();
    for (FusionKind k : grp.kinds) kinds.push_back(to_string(k));
    j["kinds"] = kinds;
    j["nodes"] = names_json(*graph_, grp.nodes);
    if (!grp.recomputed.empty()) j["recomputed"] = names_json(*graph_, grp.recomputed);
    j["bytes_read"] = grp.cost.bytes_read;
    j["bytes_written"] = grp.cost.bytes_written;
    j["flops"] = grp.cost.flops;
    j["time_us"] = grp.cost.time_s * 1e6;
    groups.push_back(std::move(j));
  }
  f["groups"] = std::move(groups);
  f["rejected"] = rejected_;
  if (plan_source_ != kOurPlanSource) f["source"] = plan_source_;
  if (!pair_reasons_.empty()) f["pair_reasons"] = pair_reasons_json(*graph_, pair_reasons_);
  auto decisions = nlohmann::ordered_json::array();
  for (const LogEntry& e : log_) decisions.push_back(entry_json(e));
  f["decisions"] = std::move(decisions);
  doc["fusion"] = std::move(f);
  return dump_pretty(doc);
}

Expected<FusionEngine> FusionEngine::load_fused_graph(std::string_view json_text, DeviceDescription device,
                                                      EngineOptions options) {
  auto doc = parse_json_text(json_text);
  if (!doc) return doc.errors();
  const std::string later = std::string("the graph's names, connections and shapes") +
                            (doc->contains("fusion") ? ", then the fusion section, are checked" : " are checked");
  auto spec = spec_from_json(*doc, {}, {"fusion"});
  if (!spec) return with_more_may_follow(spec.errors(), later);
  auto graph = build_graph(*spec);
  if (!graph && doc->contains("fusion")) return with_more_may_follow(graph.errors(), "the fusion section is checked");
  if (!graph) return graph.errors();
  FusionEngine engine(std::move(*graph), std::move(device), options);
  if (!doc->contains("fusion")) return engine;  // a plain graph file: the unfused plan
  const nlohmann::json& f = (*doc)["fusion"];
  if (!f.is_object()) return Diagnostic{"/fusion", "the fusion section must be an object"};
  if (!f.contains("groups")) return Diagnostic{"/fusion", "the fusion section needs \"groups\""};
  auto specs = read_groups(engine.graph(), f["groups"], options);
  if (!specs && f.contains("decisions")) return with_more_may_follow(specs.errors(), "the decision log is checked");
  if (!specs) return specs.errors();
  auto annotations = read_plan_annotations(engine.graph(), f);
  if (!annotations) return annotations.errors();
  engine.plan_source_ = annotations->source;
  engine.pair_reasons_ = std::move(annotations->pair_reasons);
  engine.plan_ = Plan::from_groups(engine.graph(), engine.model_, std::move(*specs));
  if (f.contains("rejected") && f["rejected"].is_array()) {
    for (const auto& id : f["rejected"]) {
      if (id.is_string()) engine.rejected_.insert(id.get<std::string>());
    }
  }
  if (f.contains("decisions")) {
    const nlohmann::json& decisions = f["decisions"];
    if (!decisions.is_array()) return Diagnostic{"/fusion/decisions", "must be an array of decisions"};
    Diagnostics errors;
    for (std::size_t i = 0; i < decisions.size(); ++i) {
      const std::string at = "/fusion/decisions/" + std::to_string(i);
      if (!decisions[i].is_object()) {
        errors.push_back({at, "a decision must be an object"});
      } else if (auto e = entry_from_json(decisions[i], at, errors)) {
        engine.log_.push_back(std::move(*e));
      }
    }
    if (!errors.empty()) return errors;
    if (!engine.log_.empty()) engine.step_ = engine.log_.back().step;
  }
  return engine;
}

}  // namespace fx
