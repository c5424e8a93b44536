#include "core/fusion/plan.h"

#include <algorithm>
#include <cassert>
#include <queue>
#include <unordered_set>

#include "core/analysis/views.h"
#include "core/fusion/attention.h"
#include "core/graph/content_hash.h"

namespace fx {

std::string_view to_string(FusionKind k) {
  switch (k) {
    case FusionKind::single: return "single";
    case FusionKind::vertical: return "vertical";
    case FusionKind::horizontal: return "horizontal";
    case FusionKind::epilogue: return "epilogue";
    case FusionKind::attention: return "attention";
  }
  return "?";
}

std::optional<FusionKind> parse_fusion_kind(std::string_view name) {
  for (FusionKind k : {FusionKind::single, FusionKind::vertical, FusionKind::horizontal, FusionKind::epilogue,
                       FusionKind::attention}) {
    if (to_string(k) == name) return k;
  }
  return std::nullopt;
}

namespace {

bool contains(std::span<const NodeId> v, NodeId n) { return std::find(v.begin(), v.end(), n) != v.end(); }

bool is_anchor(OpClass c) { return c == OpClass::reduction || c == OpClass::contraction; }

}  // namespace

GroupIo group_io(const Graph& g, std::span<const NodeId> nodes, std::span<const NodeId> recomputed,
                 std::span<const int> group_of_node, int self,
                 const std::vector<std::vector<NodeId>>& recomputed_by_group) {
  GroupIo io;
  // Loaded plans may recompute many producers: look them up in a set, not by a scan per operand.
  const std::unordered_set<NodeId> recomputed_here(recomputed.begin(), recomputed.end());
  auto inside = [&](NodeId n) {
    return group_of_node[static_cast<std::size_t>(n)] == self || recomputed_here.count(n) > 0;
  };
  auto read_from = [&](std::span<const NodeId> list) {
    for (NodeId n : list) {
      for (const Operand& op : g.node(n).inputs) {
        if (op.is_scalar()) continue;
        auto p = g.producer(op.value);
        if (!p || !inside(*p)) io.inputs.push_back(op.value);
      }
    }
  };
  read_from(nodes);
  read_from(recomputed);
  for (NodeId n : nodes) {
    const ValueId v = g.value_of(n);
    bool needed = g.is_output(v);
    for (NodeId c : g.consumers(v)) {
      if (needed) break;
      const int h = group_of_node[static_cast<std::size_t>(c)];
      if (h == self) continue;
      const auto& rec = recomputed_by_group[static_cast<std::size_t>(h)];
      needed = !contains(rec, n);
    }
    if (needed) io.outputs.push_back(v);
  }
  std::sort(io.inputs.begin(), io.inputs.end());
  io.inputs.erase(std::unique(io.inputs.begin(), io.inputs.end()), io.inputs.end());
  std::sort(io.outputs.begin(), io.outputs.end());
  return io;
}

std::vector<FusionKind> derive_kinds(const Graph& g, std::span<const NodeId> nodes) {
  if (nodes.size() == 1) return {FusionKind::single};
  if (attention_group(g, nodes)) return {FusionKind::attention};
  // Connected parts through internal edges (union-find over positions in `nodes`).
  std::vector<std::size_t> parent(nodes.size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  auto index_of = [&](NodeId n) -> std::ptrdiff_t {
    auto it = std::find(nodes.begin(), nodes.end(), n);
    return it == nodes.end() ? -1 : it - nodes.begin();
  };
  bool vertical = false, epilogue = false;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (NodeId p : g.producers(nodes[i])) {
      const std::ptrdiff_t j = index_of(p);
      if (j < 0) continue;
      parent[find(i)] = find(static_cast<std::size_t>(j));
      if (is_anchor(g.node(p).op_class()) || is_anchor(g.node(nodes[i]).op_class())) epilogue = true;
      else vertical = true;
    }
  }
  std::size_t parts = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) parts += find(i) == i;
  std::vector<FusionKind> kinds;
  if (vertical) kinds.push_back(FusionKind::vertical);
  if (parts > 1) kinds.push_back(FusionKind::horizontal);
  if (epilogue) kinds.push_back(FusionKind::epilogue);
  std::sort(kinds.begin(), kinds.end());
  return kinds;
}

Plan Plan::unfused(const Graph& g, const CostModel& model) {
  std::vector<GroupSpec> specs;
  specs.reserve(static_cast<std::size_t>(g.num_nodes()));
  for (NodeId n = 0; n < g.num_nodes(); ++n) specs.push_back({{n}, {}});
  return from_groups(g, model, std::move(specs));
}

namespace {

// Orders groups topologically (Kahn), ties by the topological position of their first node.
std::vector<std::size_t> order_groups(const Graph& g, const std::vector<GroupSpec>& specs,
                                      const std::vector<int>& group_of, const std::vector<int>& first_pos) {
  const std::size_t count = specs.size();
  std::vector<std::vector<int>> succ(count);
  std::vector<int> indegree(count, 0);
  for (std::size_t s = 0; s < count; ++s) {
    auto add_edges = [&](NodeId n) {
      for (NodeId p : g.producers(n)) {
        const int from = group_of[static_cast<std::size_t>(p)];
        if (from == static_cast<int>(s) || std::find(specs[s].recomputed.begin(), specs[s].recomputed.end(), p) !=
                                               specs[s].recomputed.end()) {
          continue;
        }
        succ[static_cast<std::size_t>(from)].push_back(static_cast<int>(s));
      }
    };
    for (NodeId n : specs[s].nodes) add_edges(n);
    for (NodeId n : specs[s].recomputed) add_edges(n);
  }
  for (auto& list : succ) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    for (int t : list) ++indegree[static_cast<std::size_t>(t)];
  }
  using Item = std::pair<int, std::size_t>;  // (first node position, group)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (std::size_t s = 0; s < count; ++s) {
    if (indegree[s] == 0) ready.push({first_pos[s], s});
  }
  std::vector<std::size_t> order;
  order.reserve(count);
  while (!ready.empty()) {
    const std::size_t s = ready.top().second;
    ready.pop();
    order.push_back(s);
    for (int t : succ[s]) {
      if (--indegree[static_cast<std::size_t>(t)] == 0) ready.push({first_pos[static_cast<std::size_t>(t)], static_cast<std::size_t>(t)});
    }
  }
  return order;  // shorter than count if the group graph has a cycle
}

std::vector<int> first_positions(const Graph& g, std::vector<GroupSpec>& specs, std::vector<int>& group_of) {
  std::vector<int> pos(static_cast<std::size_t>(g.num_nodes()));
  for (std::size_t i = 0; i < g.topo_order().size(); ++i) pos[static_cast<std::size_t>(g.topo_order()[i])] = static_cast<int>(i);
  group_of.assign(static_cast<std::size_t>(g.num_nodes()), -1);
  std::vector<int> first_pos(specs.size());
  auto by_pos = [&](NodeId a, NodeId b) { return pos[static_cast<std::size_t>(a)] < pos[static_cast<std::size_t>(b)]; };
  for (std::size_t s = 0; s < specs.size(); ++s) {
    std::sort(specs[s].nodes.begin(), specs[s].nodes.end(), by_pos);
    std::sort(specs[s].recomputed.begin(), specs[s].recomputed.end(), by_pos);
    assert(!specs[s].nodes.empty());
    first_pos[s] = pos[static_cast<std::size_t>(specs[s].nodes.front())];
    for (NodeId n : specs[s].nodes) {
      assert(group_of[static_cast<std::size_t>(n)] < 0 && "a node in two groups");
      group_of[static_cast<std::size_t>(n)] = static_cast<int>(s);
    }
  }
  return first_pos;
}

}  // namespace

bool group_graph_is_acyclic(const Graph& g, const std::vector<GroupSpec>& specs) {
  std::vector<GroupSpec> copy = specs;
  std::vector<int> group_of;
  const std::vector<int> first_pos = first_positions(g, copy, group_of);
  return order_groups(g, copy, group_of, first_pos).size() == copy.size();
}

Plan Plan::from_groups(const Graph& g, const CostModel& model, std::vector<GroupSpec> specs) {
  std::vector<int> group_of;
  const std::vector<int> first_pos = first_positions(g, specs, group_of);
  const std::vector<std::size_t> order = order_groups(g, specs, group_of, first_pos);
  assert(order.size() == specs.size() && "the group graph has a cycle");

  Plan plan;
  plan.group_of_.assign(static_cast<std::size_t>(g.num_nodes()), -1);
  std::vector<std::vector<NodeId>> recomputed_by_group(specs.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    for (NodeId n : specs[order[i]].nodes) plan.group_of_[static_cast<std::size_t>(n)] = static_cast<int>(i);
    recomputed_by_group[i] = specs[order[i]].recomputed;
  }
  plan.groups_.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    GroupSpec& s = specs[order[i]];
    Group grp;
    grp.id = "g:" + g.node(s.nodes.front()).name;
    grp.nodes = std::move(s.nodes);
    grp.recomputed = std::move(s.recomputed);
    grp.kinds = derive_kinds(g, grp.nodes);
    for (NodeId n : grp.nodes) grp.op_class = combine(grp.op_class, g.node(n).op_class());
    grp.io = group_io(g, grp.nodes, grp.recomputed, plan.group_of_, static_cast<int>(i), recomputed_by_group);
    if (grp.nodes.size() == 1 && grp.recomputed.empty()) {
      ViewVerdict view = lone_view(g, grp.nodes.front());
      grp.view_of = view.source;
      grp.copy_reason = std::move(view.copy_reason);
    }
    grp.cost = model.cost(g, grp.io, grp.nodes, grp.recomputed);
    plan.groups_.push_back(std::move(grp));
  }
  return plan;
}

const Group* Plan::find(std::string_view id) const {
  for (const Group& grp : groups_) {
    if (grp.id == id) return &grp;
  }
  return nullptr;
}

int Plan::kernel_count() const {
  return static_cast<int>(std::count_if(groups_.begin(), groups_.end(), [](const Group& grp) { return grp.launched(); }));
}

int Plan::view_count() const {
  return static_cast<int>(std::count_if(groups_.begin(), groups_.end(), [](const Group& grp) { return grp.is_view(); }));
}

double Plan::predicted_time_s() const {
  double t = 0;
  for (const Group& grp : groups_) t += grp.cost.time_s;
  return t;
}

std::int64_t Plan::bytes_moved() const {
  std::int64_t b = 0;
  for (const Group& grp : groups_) b = saturating_add(b, grp.cost.bytes_moved());
  return b;
}

std::vector<GroupSpec> Plan::specs() const {
  std::vector<GroupSpec> out;
  out.reserve(groups_.size());
  for (const Group& grp : groups_) out.push_back({grp.nodes, grp.recomputed});
  return out;
}

}  // namespace fx

namespace fx {

std::string plan_content_hash(const Graph& g, const Plan& plan) {
  std::vector<std::string> groups;
  for (const Group& group : plan.groups()) {
    std::string text;
    for (NodeId n : group.nodes) text += g.node(n).name + ",";
    text += "|";
    for (NodeId n : group.recomputed) text += g.node(n).name + ",";
    groups.push_back(std::move(text));
  }
  std::sort(groups.begin(), groups.end());
  std::uint64_t h = fnv1a64("plan");
  for (const std::string& s : groups) h = fnv1a64(s + "\n", h);
  return hex64(h);
}

}  // namespace fx
