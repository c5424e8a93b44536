// Plan comparison (plan_diff.h).
#include "core/fusion/plan_diff.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "core/fusion/legality.h"
#include "core/fusion/plan.h"
#include "core/graph/graph_json.h"

namespace fx {
namespace {

// A side with what the comparison needs: its groups by node, and our cost model's plan where it can be built.
struct Side {
  const PlanSideInput* in = nullptr;
  std::vector<int> group_of;  // node -> index into in->file.groups
  std::optional<Plan> plan;   // costed by our model when the groups can be ordered
};

Side make_side(const Graph& g, const CostModel& model, const PlanSideInput& in) {
  Side s;
  s.in = &in;
  s.group_of.assign(static_cast<std::size_t>(g.num_nodes()), -1);
  std::vector<GroupSpec> specs;
  for (std::size_t i = 0; i < in.file.groups.size(); ++i) {
    for (NodeId n : in.file.groups[i].nodes) s.group_of[static_cast<std::size_t>(n)] = static_cast<int>(i);
    specs.push_back({in.file.groups[i].nodes, in.file.groups[i].recomputed});
  }
  if (group_graph_is_acyclic(g, specs)) s.plan = Plan::from_groups(g, model, std::move(specs));
  return s;
}

std::vector<NodeId> topo_sorted(const Graph& g, std::vector<NodeId> nodes) {
  std::vector<int> pos(static_cast<std::size_t>(g.num_nodes()));
  for (std::size_t i = 0; i < g.topo_order().size(); ++i) pos[static_cast<std::size_t>(g.topo_order()[i])] = static_cast<int>(i);
  std::sort(nodes.begin(), nodes.end(), [&](NodeId a, NodeId b) { return pos[static_cast<std::size_t>(a)] < pos[static_cast<std::size_t>(b)]; });
  return nodes;
}

GroupCostSummary group_cost(const Side& s, const std::vector<NodeId>& nodes) {
  if (!s.plan || nodes.empty()) return {};
  const Group& grp = s.plan->group_of_node(nodes.front());
  return {true, grp.cost.time_s * 1e6, static_cast<double>(grp.cost.bytes_read + grp.cost.bytes_written)};
}

std::vector<std::string> node_names(const Graph& g, const std::vector<NodeId>& nodes) {
  std::vector<std::string> out;
  for (NodeId n : nodes) out.push_back(g.node(n).name);
  return out;
}

// Adjacent nodes of `nodes` that `other` keeps in different groups: one pair per pair of the other's groups.
std::vector<SplitPair> splits_of(const Graph& g, const std::vector<NodeId>& nodes, const Side& other,
                                 std::string_view other_name) {
  std::set<NodeId> members(nodes.begin(), nodes.end());
  std::set<std::pair<int, int>> seen;
  std::vector<SplitPair> out;
  for (NodeId v : nodes) {
    for (NodeId u : g.producers(v)) {
      if (!members.count(u)) continue;
      const int gu = other.group_of[static_cast<std::size_t>(u)], gv = other.group_of[static_cast<std::size_t>(v)];
      if (gu == gv || !seen.insert({gu, gv}).second) continue;
      out.push_back({u, v, pair_reasons_for(*other.in, other_name, u, v)});
    }
  }
  return out;
}

DiffGroup diff_group(const Graph& g, const EngineOptions& options, const Side& self, std::size_t index,
                     const Side* other, std::string_view other_name) {
  const PlanFileGroup& pg = self.in->file.groups[index];
  DiffGroup d;
  d.nodes = topo_sorted(g, pg.nodes);
  d.id = pg.id;
  d.kernel = pg.kernel;
  d.library = pg.library;
  d.launched = pg.launched;
  d.cost = group_cost(self, d.nodes);
  if (!other) return d;
  std::set<int> others;
  for (NodeId n : d.nodes) others.insert(other->group_of[static_cast<std::size_t>(n)]);
  for (int i : others) d.other_groups.push_back(other->in->file.groups[static_cast<std::size_t>(i)].id);
  if (!self.in->file.is_ours() && d.nodes.size() > 1) d.our_verdict = check_group(g, d.nodes, options);
  d.splits = splits_of(g, d.nodes, *other, other_name);
  return d;
}

PlanSummary summarize(const Side& s) {
  PlanSummary p;
  p.label = s.in->label;
  p.source = s.in->file.source;
  p.producer = s.in->file.producer;
  for (const PlanFileGroup& grp : s.in->file.groups) p.kernels += grp.launched ? 1 : 0;
  if (s.plan) p.cost = {true, s.plan->predicted_time_s() * 1e6, static_cast<double>(s.plan->bytes_moved())};
  p.measured_time_us = s.in->file.measured_time_us;
  p.notes = s.in->file.notes;
  return p;
}

}  // namespace

std::vector<ReasonNote> pair_reasons_for(const PlanSideInput& side, std::string_view side_name, NodeId x, NodeId y) {
  std::vector<ReasonNote> out;
  std::map<NodeId, std::size_t> group_of;
  for (std::size_t i = 0; i < side.file.groups.size(); ++i) {
    for (NodeId n : side.file.groups[i].nodes) group_of[n] = i;
  }
  auto touches = [&](const std::vector<NodeId>& list, NodeId n) {
    return std::any_of(list.begin(), list.end(), [&](NodeId m) { return group_of[m] == group_of[n]; });
  };
  for (const PairReason& r : side.file.pair_reasons) {
    if ((touches(r.a, x) && touches(r.b, y)) || (touches(r.a, y) && touches(r.b, x))) {
      out.push_back({std::string(side_name), r.source, r.code, r.message});
    }
  }
  if (side.engine && group_of[x] != group_of[y]) {
    const FusionDecision d = side.engine->explain(x, y);
    out.push_back({std::string(side_name), kOurPlanSource, std::string(to_string(d.reason)), d.message});
  }
  return out;
}

PlanSideInput side_of(const FusionEngine& engine, std::string label) {
  PlanSideInput side;
  side.label = std::move(label);
  side.engine = &engine;
  side.file.source = engine.plan_source();
  side.file.pair_reasons = engine.pair_reasons();
  for (const Group& grp : engine.plan().groups()) {
    PlanFileGroup pg;
    pg.id = grp.id;
    pg.nodes = grp.nodes;
    pg.recomputed = grp.recomputed;
    pg.launched = grp.launched();
    side.file.groups.push_back(std::move(pg));
  }
  return side;
}

PlanDiff diff_plans(const Graph& g, const CostModel& model, const EngineOptions& options, const PlanSideInput& a,
                    const PlanSideInput& b) {
  const Side sa = make_side(g, model, a), sb = make_side(g, model, b);
  std::set<std::vector<NodeId>> sets_b;
  for (const PlanFileGroup& grp : b.file.groups) sets_b.insert(topo_sorted(g, grp.nodes));
  std::set<std::vector<NodeId>> sets_a;
  PlanDiff d{summarize(sa), summarize(sb), {}, {}, {}};
  for (std::size_t i = 0; i < a.file.groups.size(); ++i) {
    std::vector<NodeId> nodes = topo_sorted(g, a.file.groups[i].nodes);
    sets_a.insert(nodes);
    if (sets_b.count(nodes)) d.both.push_back(diff_group(g, options, sa, i, nullptr, "B"));
    else d.only_a.push_back(diff_group(g, options, sa, i, &sb, "B"));
  }
  for (std::size_t i = 0; i < b.file.groups.size(); ++i) {
    if (!sets_a.count(topo_sorted(g, b.file.groups[i].nodes))) d.only_b.push_back(diff_group(g, options, sb, i, &sa, "A"));
  }
  return d;
}

namespace {

std::string fixed(double v, int digits = 1) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << v;
  return out.str();
}

std::string cost_text(const GroupCostSummary& c) {
  return c.known ? fixed(c.time_us) + " us, " + format_bytes(c.bytes) : "no prediction";
}

std::string joined(const std::vector<std::string>& parts, const char* sep = " ") {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

void summary_text(std::ostringstream& out, const char* name, const PlanSummary& s) {
  out << name << " = " << s.label << " (" << s.source << (s.producer.empty() ? "" : ", " + s.producer) << "): "
      << s.kernels << " kernels, predicted " << cost_text(s.cost);
  if (s.measured_time_us) out << ", measured " << fixed(*s.measured_time_us) << " us";
  out << "\n";
  for (const std::string& n : s.notes) out << "  note: " << n << "\n";
}

void group_text(std::ostringstream& out, const Graph& g, const DiffGroup& d, const char* other) {
  out << "  " << d.id << "  [" << joined(node_names(g, d.nodes)) << "]  " << cost_text(d.cost);
  if (d.library) out << "  library: " << d.kernel;
  if (!d.launched) out << "  (no kernel)";
  out << "\n";
  if (!d.other_groups.empty()) out << "    " << other << " has: " << joined(d.other_groups, ", ") << "\n";
  if (d.our_verdict) {
    out << "    our engine: " << (d.our_verdict->fuse ? "legal" : std::string(to_string(d.our_verdict->reason)) + ": " + d.our_verdict->message) << "\n";
  }
  for (const SplitPair& s : d.splits) {
    out << "    " << g.node(s.producer).name << " -> " << g.node(s.consumer).name << ":";
    if (s.reasons.empty()) out << " " << other << " recorded no reason\n";
    else out << "\n";
    for (const ReasonNote& r : s.reasons) out << "      " << r.side << " (" << r.source << ") " << r.code << ": " << r.message << "\n";
  }
}

nlohmann::ordered_json cost_json(const GroupCostSummary& c) {
  if (!c.known) return nullptr;
  return {{"time_us", c.time_us}, {"bytes", c.bytes}};
}

nlohmann::ordered_json group_json(const Graph& g, const DiffGroup& d) {
  nlohmann::ordered_json j;
  j["id"] = d.id;
  j["nodes"] = node_names(g, d.nodes);
  j["kernel"] = d.kernel;
  j["library"] = d.library;
  j["launched"] = d.launched;
  j["predicted"] = cost_json(d.cost);
  if (!d.other_groups.empty()) j["other_groups"] = d.other_groups;
  if (d.our_verdict) j["our_verdict"] = {{"legal", d.our_verdict->fuse}, {"reason", to_string(d.our_verdict->reason)}, {"message", d.our_verdict->message}};
  auto splits = nlohmann::ordered_json::array();
  for (const SplitPair& s : d.splits) {
    auto reasons = nlohmann::ordered_json::array();
    for (const ReasonNote& r : s.reasons) reasons.push_back({{"side", r.side}, {"source", r.source}, {"code", r.code}, {"message", r.message}});
    splits.push_back({{"producer", g.node(s.producer).name}, {"consumer", g.node(s.consumer).name}, {"reasons", reasons}});
  }
  if (!d.splits.empty()) j["splits"] = splits;
  return j;
}

nlohmann::ordered_json summary_json(const PlanSummary& s) {
  nlohmann::ordered_json j;
  j["file"] = s.label;
  j["source"] = s.source;
  j["producer"] = s.producer;
  j["kernels"] = s.kernels;
  j["predicted"] = cost_json(s.cost);
  j["measured_time_us"] = s.measured_time_us ? nlohmann::ordered_json(*s.measured_time_us) : nlohmann::ordered_json(nullptr);
  j["notes"] = s.notes;
  return j;
}

}  // namespace

std::string plan_diff_text(const Graph& g, const PlanDiff& d) {
  std::ostringstream out;
  summary_text(out, "A", d.a);
  summary_text(out, "B", d.b);
  out << "in both (" << d.both.size() << " groups)\n";
  for (const DiffGroup& grp : d.both) {
    if (grp.nodes.size() > 1) group_text(out, g, grp, "B");
  }
  out << "only in A (" << d.only_a.size() << " groups)\n";
  for (const DiffGroup& grp : d.only_a) group_text(out, g, grp, "B");
  out << "only in B (" << d.only_b.size() << " groups)\n";
  for (const DiffGroup& grp : d.only_b) group_text(out, g, grp, "A");
  return out.str();
}

std::string plan_diff_json(const Graph& g, const PlanDiff& d) {
  nlohmann::ordered_json j;
  j["graph"] = g.name();
  j["a"] = summary_json(d.a);
  j["b"] = summary_json(d.b);
  for (auto [key, list] : {std::pair{"both", &d.both}, std::pair{"only_a", &d.only_a}, std::pair{"only_b", &d.only_b}}) {
    auto arr = nlohmann::ordered_json::array();
    for (const DiffGroup& grp : *list) arr.push_back(group_json(g, grp));
    j[key] = std::move(arr);
  }
  return dump_pretty(j);
}

}  // namespace fx
