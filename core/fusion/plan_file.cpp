// Reading a fused-graph file's "fusion" section as data (plan_file.h).
#include "core/fusion/plan_file.h"

#include <algorithm>
#include <map>

namespace fx {

std::vector<NodeId> read_node_names(const Graph& g, const nlohmann::json& list, const std::string& pointer,
                                    Diagnostics& errors) {
  std::vector<NodeId> out;
  if (!list.is_array()) {
    errors.push_back({pointer, "must be an array of node names"});
    return out;
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = pointer + "/" + std::to_string(i);
    if (!list[i].is_string()) {
      errors.push_back({at, "must be a node name"});
    } else if (auto n = g.find_node(list[i].get<std::string>())) {
      out.push_back(*n);
    } else {
      errors.push_back({at, "no node named '" + list[i].get<std::string>() + "' in the graph"});
    }
  }
  return out;
}

namespace {

std::string text_at(const nlohmann::json& obj, const char* key, const std::string& pointer, Diagnostics& errors,
                    std::string fallback = {}) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_string()) {
    errors.push_back({pointer + "/" + key, std::string("must be a string, got ") + it->type_name()});
    return fallback;
  }
  return it->get<std::string>();
}

std::string producer_text(const nlohmann::json& producer) {
  if (producer.is_string()) return producer.get<std::string>();
  if (!producer.is_object()) return {};
  std::string out;
  for (const char* key : {"torch", "device", "device_name", "triton"}) {
    auto it = producer.find(key);
    if (it == producer.end() || !it->is_string()) continue;
    if (!out.empty()) out += ", ";
    out += std::string(key) == "torch" ? "torch " + it->get<std::string>()
           : std::string(key) == "triton" ? "triton " + it->get<std::string>() : it->get<std::string>();
  }
  return out;
}

void read_annotations(const Graph& g, const nlohmann::json& f, PlanFile& plan, Diagnostics& errors) {
  plan.source = text_at(f, "source", "/fusion", errors, kOurPlanSource);
  if (auto it = f.find("producer"); it != f.end()) plan.producer = producer_text(*it);
  if (auto it = f.find("measured_time_us"); it != f.end() && it->is_number()) plan.measured_time_us = it->get<double>();
  if (auto it = f.find("notes"); it != f.end() && it->is_array()) {
    for (const auto& n : *it) {
      if (n.is_string()) plan.notes.push_back(n.get<std::string>());
    }
  }
  auto it = f.find("pair_reasons");
  if (it == f.end()) return;
  if (!it->is_array()) {
    errors.push_back({"/fusion/pair_reasons", "must be an array of {a, b, message}"});
    return;
  }
  for (std::size_t i = 0; i < it->size(); ++i) {
    const std::string at = "/fusion/pair_reasons/" + std::to_string(i);
    const nlohmann::json& r = (*it)[i];
    if (!r.is_object() || !r.contains("a") || !r.contains("b")) {
      errors.push_back({at, "a pair reason is an object with \"a\" and \"b\" (lists of node names)"});
      continue;
    }
    PairReason pr;
    pr.a = read_node_names(g, r["a"], at + "/a", errors);
    pr.b = read_node_names(g, r["b"], at + "/b", errors);
    pr.source = text_at(r, "source", at, errors, plan.source);
    pr.code = text_at(r, "code", at, errors);
    pr.message = text_at(r, "message", at, errors);
    plan.pair_reasons.push_back(std::move(pr));
  }
}

}  // namespace

bool PairReason::involves(NodeId x, NodeId y) const {
  auto in = [](const std::vector<NodeId>& s, NodeId n) { return std::find(s.begin(), s.end(), n) != s.end(); };
  return (in(a, x) && in(b, y)) || (in(a, y) && in(b, x));
}

std::vector<std::vector<NodeId>> PlanFile::node_sets() const {
  std::vector<std::vector<NodeId>> out;
  out.reserve(groups.size());
  for (const PlanFileGroup& grp : groups) out.push_back(grp.nodes);
  return out;
}

Expected<PlanFile> read_plan_annotations(const Graph& g, const nlohmann::json& fusion) {
  Diagnostics errors;
  PlanFile plan;
  read_annotations(g, fusion, plan, errors);
  if (!errors.empty()) return errors;
  return plan;
}

Expected<PlanFile> read_plan_section(const Graph& g, const nlohmann::json& f) {
  if (!f.is_object()) return Diagnostic{"/fusion", "the fusion section must be an object"};
  if (!f.contains("groups") || !f["groups"].is_array()) return Diagnostic{"/fusion", "the fusion section needs \"groups\" (an array)"};
  Diagnostics errors;
  PlanFile plan;
  read_annotations(g, f, plan, errors);
  std::map<NodeId, std::size_t> owner;
  const nlohmann::json& groups = f["groups"];
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const std::string at = "/fusion/groups/" + std::to_string(i);
    const nlohmann::json& j = groups[i];
    if (!j.is_object() || !j.contains("nodes")) {
      errors.push_back({at, "a group must be an object with \"nodes\""});
      continue;
    }
    PlanFileGroup grp;
    grp.nodes = read_node_names(g, j["nodes"], at + "/nodes", errors);
    if (j.contains("recomputed")) grp.recomputed = read_node_names(g, j["recomputed"], at + "/recomputed", errors);
    if (grp.nodes.empty()) errors.push_back({at + "/nodes", "a group needs at least one node"});
    grp.id = text_at(j, "id", at, errors, grp.nodes.empty() ? "" : "g:" + g.node(grp.nodes.front()).name);
    grp.kernel = text_at(j, "kernel", at, errors);
    grp.library = j.value("library", false) == true;
    grp.launched = !(j.contains("kernel") && j["kernel"].is_null());
    for (std::size_t k = 0; k < grp.nodes.size(); ++k) {
      auto [it, fresh] = owner.emplace(grp.nodes[k], i);
      if (!fresh) {
        errors.push_back({at + "/nodes/" + std::to_string(k),
                          "node '" + g.node(grp.nodes[k]).name + "' is in two groups (/fusion/groups/" +
                              std::to_string(it->second) + " and " + at + "): a plan is a partition"});
      }
    }
    plan.groups.push_back(std::move(grp));
  }
  if (!errors.empty()) return errors;
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (owner.count(n)) continue;
    plan.unassigned.push_back(n);
    PlanFileGroup single;
    single.id = "g:" + g.node(n).name;
    single.nodes = {n};
    plan.groups.push_back(std::move(single));
  }
  return plan;
}

nlohmann::ordered_json pair_reasons_json(const Graph& g, const std::vector<PairReason>& reasons) {
  auto out = nlohmann::ordered_json::array();
  for (const PairReason& r : reasons) {
    nlohmann::ordered_json j;
    auto names = [&](const std::vector<NodeId>& ids) {
      auto list = nlohmann::ordered_json::array();
      for (NodeId n : ids) list.push_back(g.node(n).name);
      return list;
    };
    j["a"] = names(r.a);
    j["b"] = names(r.b);
    j["source"] = r.source;
    j["code"] = r.code;
    j["message"] = r.message;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace fx
