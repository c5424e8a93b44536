#include "core/fusion/partition.h"

#include <algorithm>
#include <cassert>

#include "core/analysis/views.h"

namespace fx {
namespace {

bool contains(const std::vector<NodeId>& v, NodeId n) { return std::find(v.begin(), v.end(), n) != v.end(); }

char kind_letter(FusionKind k) {
  switch (k) {
    case FusionKind::vertical: return 'v';
    case FusionKind::horizontal: return 'h';
    case FusionKind::epilogue: return 'e';
    case FusionKind::single: return 's';
    case FusionKind::attention: return 'a';
  }
  return '?';
}

}  // namespace

Partition::Partition(const Graph& g, const CostModel& model, const Plan& plan)
    : g_(g), model_(model), reach_(static_cast<int>(plan.groups().size())) {
  const std::size_t count = plan.groups().size();
  topo_pos_.resize(static_cast<std::size_t>(g.num_nodes()));
  for (std::size_t i = 0; i < g.topo_order().size(); ++i) topo_pos_[static_cast<std::size_t>(g.topo_order()[i])] = static_cast<int>(i);
  group_of_.assign(plan.group_index().begin(), plan.group_index().end());
  nodes_.resize(count);
  recomputed_.resize(count);
  recomputed_in_.resize(static_cast<std::size_t>(g.num_nodes()));
  version_.assign(count, 0);
  position_.resize(count);
  order_.resize(count);
  cost_.resize(count);
  for (std::size_t s = 0; s < count; ++s) {
    const Group& grp = plan.groups()[s];
    nodes_[s] = grp.nodes;
    recomputed_[s] = grp.recomputed;
    for (NodeId n : grp.recomputed) recomputed_in_[static_cast<std::size_t>(n)].push_back(static_cast<int>(s));
    position_[s] = order_[s] = static_cast<int>(s);
    cost_[s] = grp.cost;
  }
  chain_of_.assign(static_cast<std::size_t>(g.num_nodes()), -1);
  for (NodeId n : g.topo_order()) {
    if (g.node(n).op_id() != OpId::matmul) continue;
    AttentionMatch m = match_attention(g, n);
    auto* chain = std::get_if<AttentionPattern>(&m);
    if (!chain) continue;
    for (NodeId c : chain->nodes) chain_of_[static_cast<std::size_t>(c)] = static_cast<int>(attention_.size());
    attention_.push_back(std::move(*chain));
  }
}

// Through the node index: a graph of thousands of layers has as many chains, and this is asked per candidate.
const AttentionPattern* Partition::attention_between(int a, int b) const {
  for (NodeId n : nodes(b)) {
    const int i = chain_of_[static_cast<std::size_t>(n)];
    if (i < 0) continue;
    const AttentionPattern& chain = attention_[static_cast<std::size_t>(i)];
    if (chain.context == n && group_of(chain.scores) == a) return &chain;
  }
  return nullptr;
}

bool Partition::is_view(int s) const {
  return nodes(s).size() == 1 && recomputed(s).empty() && lone_view(g_, nodes(s).front()).is_view();
}

bool Partition::recomputes(int s, NodeId n) const { return contains(recomputed_[static_cast<std::size_t>(s)], n); }

void Partition::for_each_successor(int s, const std::function<void(int)>& visit) const {
  for (NodeId n : nodes(s)) {
    for (NodeId c : g_.consumers(g_.value_of(n))) {
      const int h = group_of(c);
      if (h != s && !recomputes(h, n)) visit(h);
      for (int r : recomputed_in_[static_cast<std::size_t>(c)]) {
        if (r != s) visit(r);
      }
    }
  }
}

bool Partition::has_edge(int a, int b) const {
  bool found = false;
  for_each_successor(a, [&](int h) { found = found || h == b; });
  return found;
}

std::vector<std::pair<int, int>> Partition::pairs(int only) const {
  std::vector<std::pair<int, int>> out;
  auto add = [&](int a, int b) {
    if (a == b || !alive(a) || !alive(b)) return;
    if (position(a) > position(b)) std::swap(a, b);
    out.emplace_back(a, b);
  };
  auto siblings_of = [&](ValueId v) {
    int prev = -1;
    for (NodeId c : g_.consumers(v)) {
      const int h = group_of(c);
      if (h == prev) continue;
      if (prev >= 0) add(prev, h);
      prev = h;
    }
  };
  // The siblings next to `only` in v's reader order, found from n's own place in it: a value read by
  // 200,000 nodes costs each merge a few steps, not a scan of every reader (consumers are sorted by node).
  auto siblings_around = [&](ValueId v, NodeId n) {
    const auto& cons = g_.consumers(v);
    const auto at = std::lower_bound(cons.begin(), cons.end(), n);
    if (at == cons.end() || *at != n) return;
    for (auto it = at; it != cons.begin();) {
      if (group_of(*--it) != only) {
        add(group_of(*it), only);
        break;
      }
    }
    for (auto it = at + 1; it != cons.end(); ++it) {
      if (group_of(*it) != only) {
        add(only, group_of(*it));
        break;
      }
    }
  };
  auto add_chain = [&](const AttentionPattern& chain) { add(group_of(chain.scores), group_of(chain.context)); };
  if (only < 0) {
    for (const AttentionPattern& chain : attention_) add_chain(chain);
  } else {
    for (NodeId n : nodes(only)) {
      if (const int i = chain_of_[static_cast<std::size_t>(n)]; i >= 0) add_chain(attention_[static_cast<std::size_t>(i)]);
    }
  }
  if (only >= 0) {
    for_each_successor(only, [&](int h) { add(only, h); });
    for (NodeId n : nodes(only)) {
      for (NodeId p : g_.producers(n)) {
        if (group_of(p) != only) add(group_of(p), only);
      }
      for (ValueId v : g_.tensor_inputs(n)) siblings_around(v, n);
    }
  } else {
    for (int s = 0; s < slot_count(); ++s) {
      if (alive(s)) for_each_successor(s, [&](int h) { add(s, h); });
    }
    for (ValueId v = 0; v < g_.num_values(); ++v) siblings_of(v);
  }
  auto key = [&](const std::pair<int, int>& p) { return std::make_pair(first_pos(p.first), first_pos(p.second)); };
  std::sort(out.begin(), out.end(), [&](const auto& x, const auto& y) { return key(x) < key(y); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string Partition::candidate_id(FusionKind kind, int a, int b) const {
  return std::string(1, kind_letter(kind)) + ":" + g_.node(nodes(a).front()).name + "+" + g_.node(nodes(b).front()).name;
}

FusionKind Partition::pair_kind(int a, int b, bool edge) const {
  if (attention_between(a, b)) return FusionKind::attention;
  if (!edge) return FusionKind::horizontal;
  OpClass cls = OpClass::elementwise;
  for (int s : {a, b}) {
    for (NodeId n : nodes(s)) cls = combine(cls, g_.node(n).op_class());
  }
  return cls == OpClass::reduction || cls == OpClass::contraction ? FusionKind::epilogue : FusionKind::vertical;
}

std::optional<std::pair<int, int>> Partition::find_pair(std::string_view id) const {
  for (const auto& [a, b] : pairs()) {
    if (pair_id(a, b) == id) return std::make_pair(a, b);
  }
  return std::nullopt;
}

GroupCost Partition::cost_now(int s) const {
  const GroupIo io = group_io(g_, nodes(s), recomputed(s), group_of_, s, recomputed_);
  return model_.cost(g_, io, nodes(s), recomputed(s));
}

GroupCost Partition::cost_union(const std::vector<int>& slots) {
  const int self = slots.front();
  const std::vector<NodeId> merged = sorted_nodes(slots);
  std::vector<NodeId> rec;
  for (int s : slots) {
    for (NodeId n : recomputed(s)) {
      if (std::find(slots.begin(), slots.end(), group_of(n)) == slots.end() && !contains(rec, n)) rec.push_back(n);
    }
  }
  // Evaluated in place: the other slots' nodes count as self's for the io, then go back.
  for (int s : slots) {
    for (NodeId n : nodes(s)) group_of_[static_cast<std::size_t>(n)] = self;
  }
  const GroupIo io = group_io(g_, merged, rec, group_of_, self, recomputed_);
  for (int s : slots) {
    for (NodeId n : nodes(s)) group_of_[static_cast<std::size_t>(n)] = s;
  }
  return model_.cost(g_, io, merged, rec);
}

std::vector<NodeId> Partition::sorted_nodes(const std::vector<int>& slots) const {
  std::vector<NodeId> out;
  for (int s : slots) out.insert(out.end(), nodes(s).begin(), nodes(s).end());
  std::sort(out.begin(), out.end(), [&](NodeId x, NodeId y) { return topo_pos_[static_cast<std::size_t>(x)] < topo_pos_[static_cast<std::size_t>(y)]; });
  return out;
}

std::vector<int> Partition::consumer_groups(int producer) const {
  std::vector<int> out;
  for_each_successor(producer, [&](int h) { out.push_back(h); });
  std::sort(out.begin(), out.end(), [&](int x, int y) { return position(x) < position(y); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

GroupCost Partition::cost_recompute(int producer, const std::vector<int>& consumers, GroupCost& producer_after) {
  std::vector<NodeId> add = nodes(producer);
  add.insert(add.end(), recomputed(producer).begin(), recomputed(producer).end());
  std::vector<std::vector<NodeId>> saved;
  for (int h : consumers) {
    std::vector<NodeId>& rec = recomputed_[static_cast<std::size_t>(h)];
    saved.push_back(rec);
    for (NodeId n : add) {
      if (!contains(rec, n)) rec.push_back(n);
    }
  }
  producer_after = cost_now(producer);
  GroupCost total;
  for (int h : consumers) total += cost_now(h);
  for (std::size_t i = 0; i < consumers.size(); ++i) recomputed_[static_cast<std::size_t>(consumers[i])] = std::move(saved[i]);
  return total;
}

std::vector<int> Partition::cycle_path(int a, int b) {
  return reach_.path_via_others(
      a, b, [this](int s, const std::function<void(int)>& visit) { for_each_successor(s, visit); },
      [this](int s) { return position(s); });
}

std::vector<GroupSpec> Partition::specs() const {
  std::vector<GroupSpec> out;
  for (int s = 0; s < slot_count(); ++s) {
    if (alive(s)) out.push_back({nodes(s), recomputed(s)});
  }
  return out;
}

void Partition::merge(int a, int b) {
  [[maybe_unused]] const auto path = cycle_path(a, b);
  assert(path.empty());
  // Reorder the stretch between a and b: groups that do not depend on a, then the merged group, then the
  // groups that depend on a (reached), keeping their order; b's slot dies.
  // Marks in a vector kept across merges and cleared after: one per slot each time would make auto-fuse
  // quadratic in the number of groups.
  later_.resize(static_cast<std::size_t>(slot_count()), 0);
  for (int s : reach_.reached()) later_[static_cast<std::size_t>(s)] = 1;
  const int pa = position(a), pb = position(b);
  std::vector<int> first, second;
  for (int k = pa + 1; k < pb; ++k) {
    const int s = order_[static_cast<std::size_t>(k)];
    if (s >= 0) (later_[static_cast<std::size_t>(s)] ? second : first).push_back(s);
  }
  for (int s : reach_.reached()) later_[static_cast<std::size_t>(s)] = 0;
  std::vector<int> seq = first;
  seq.push_back(a);
  seq.insert(seq.end(), second.begin(), second.end());
  seq.resize(static_cast<std::size_t>(pb - pa + 1), -1);
  for (int k = pa; k <= pb; ++k) {
    const int s = seq[static_cast<std::size_t>(k - pa)];
    order_[static_cast<std::size_t>(k)] = s;
    if (s >= 0) position_[static_cast<std::size_t>(s)] = k;
  }

  std::vector<NodeId>& na = nodes_[static_cast<std::size_t>(a)];
  for (NodeId n : nodes(b)) {
    group_of_[static_cast<std::size_t>(n)] = a;
    na.push_back(n);
  }
  std::sort(na.begin(), na.end(), [&](NodeId x, NodeId y) { return topo_pos_[static_cast<std::size_t>(x)] < topo_pos_[static_cast<std::size_t>(y)]; });
  std::vector<NodeId> rec;
  for (int s : {a, b}) {
    for (NodeId n : recomputed(s)) {
      auto& in = recomputed_in_[static_cast<std::size_t>(n)];
      in.erase(std::remove(in.begin(), in.end(), s), in.end());
      if (group_of(n) == a || contains(rec, n)) continue;
      rec.push_back(n);
      in.push_back(a);
    }
  }
  recomputed_[static_cast<std::size_t>(a)] = std::move(rec);
  nodes_[static_cast<std::size_t>(b)].clear();
  recomputed_[static_cast<std::size_t>(b)].clear();
  ++version_[static_cast<std::size_t>(a)];
  ++version_[static_cast<std::size_t>(b)];
  cost_[static_cast<std::size_t>(a)] = cost_now(a);
}

void Partition::recompute_into(int producer, int consumer) {
  std::vector<NodeId>& rec = recomputed_[static_cast<std::size_t>(consumer)];
  std::vector<NodeId> add = nodes(producer);
  add.insert(add.end(), recomputed(producer).begin(), recomputed(producer).end());
  for (NodeId n : add) {
    if (contains(rec, n)) continue;
    rec.push_back(n);
    recomputed_in_[static_cast<std::size_t>(n)].push_back(consumer);
  }
  std::sort(rec.begin(), rec.end(), [&](NodeId x, NodeId y) { return topo_pos_[static_cast<std::size_t>(x)] < topo_pos_[static_cast<std::size_t>(y)]; });
  ++version_[static_cast<std::size_t>(producer)];
  ++version_[static_cast<std::size_t>(consumer)];
  cost_[static_cast<std::size_t>(consumer)] = cost_now(consumer);
  cost_[static_cast<std::size_t>(producer)] = cost_now(producer);
}

void Partition::apply(const Candidate& c) {
  if (c.kind == FusionKind::attention) {
    // The chain's groups, merged in order into the first: each next one reads only what the merged ones compute
    // (every value of the chain has one reader), so no merge meets a cycle.
    std::vector<int> slots;
    for (NodeId n : c.nodes) slots.push_back(group_of(n));
    std::sort(slots.begin(), slots.end(), [&](int x, int y) { return position(x) < position(y); });
    slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
    for (std::size_t i = 1; i < slots.size(); ++i) merge(slots[0], slots[i]);
    return;
  }
  const int a = slot_of(c.group_a);
  if (c.strategy != Strategy::recompute) {
    merge(a, slot_of(c.group_b));
    return;
  }
  for (const std::string& id : c.recompute_in) recompute_into(a, slot_of(id));
}

}  // namespace fx
