// Partition::evaluate: the verdict on one proposed merge, with the arithmetic people need to trust it.
#include <algorithm>
#include <cmath>
#include <charconv>

#include "core/fusion/partition.h"

namespace fx {
namespace {

// std::to_chars with a precision writes what printf (and a std::fixed stream) writes, several times faster:
// auto-fuse formats a few numbers for every candidate it logs.
std::string us(double seconds) {
  char buf[400];  // room for the largest double written in full
  const auto end = std::to_chars(buf, buf + sizeof buf, seconds * 1e6, std::chars_format::fixed,
                                 seconds < 1e-4 ? 2 : 1).ptr;
  return std::string(buf, end) + " us";
}

// A share in percent with two significant digits, as a default-formatted stream with precision 2 writes it.
std::string percent(double value) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, value, std::chars_format::general, 2).ptr);
}

bool shares_input(const Graph& g, const std::vector<NodeId>& a, const std::vector<NodeId>& b) {
  std::vector<ValueId> ins;
  for (NodeId n : a) {
    for (ValueId v : g.tensor_inputs(n)) ins.push_back(v);
  }
  std::sort(ins.begin(), ins.end());
  for (NodeId n : b) {
    for (ValueId v : g.tensor_inputs(n)) {
      if (std::binary_search(ins.begin(), ins.end(), v)) return true;
    }
  }
  return false;
}

bool recomputable(const Graph& g, const std::vector<NodeId>& nodes) {
  constexpr std::size_t kMaxRecomputedOps = 8;  // recompute only short, cheap elementwise chains
  if (nodes.size() > kMaxRecomputedOps) return false;
  return std::all_of(nodes.begin(), nodes.end(), [&](NodeId n) {
    return g.node(n).op_class() == OpClass::elementwise && !g.node(n).def->random;
  });
}

// Two predicted times this close are one: a view merged into a kernel leaves its bytes and math as they were,
// and only the order of the sums may differ.
constexpr double kSameTime = 1e-9;

std::string traffic(const GroupCost& c, int kernels) {
  return describe_traffic(c) + " in " + std::to_string(kernels) + (kernels == 1 ? " kernel, " : " kernels, ") +
         us(c.time_s);
}

}  // namespace

Candidate Partition::evaluate(int a, int b, const EngineOptions& options, const std::set<std::string>& rejected,
                              Detail detail) {
  Candidate c;
  const bool full = detail == Detail::full;
  const bool edge = has_edge(a, b);
  c.kind = pair_kind(a, b, edge);
  if (full || !rejected.empty()) c.id = candidate_id(c.kind, a, b);
  if (full) {
    c.group_a = group_id(a);
    c.group_b = group_id(b);
  }
  if (const AttentionPattern* chain = attention_between(a, b)) {
    return evaluate_attention(std::move(c), a, b, *chain, options, rejected, detail);
  }
  c.nodes = nodes(a);
  c.nodes.insert(c.nodes.end(), nodes(b).begin(), nodes(b).end());
  std::sort(c.nodes.begin(), c.nodes.end(), [&](NodeId x, NodeId y) { return topo_pos_[static_cast<std::size_t>(x)] < topo_pos_[static_cast<std::size_t>(y)]; });
  GroupCost before = cost(a);
  before += cost(b);
  c.time_before_s = before.time_s;
  c.bytes_before = before.bytes_moved();
  c.time_after_s = c.time_before_s;
  c.bytes_after = c.bytes_before;
  const std::string what = full ? std::string(to_string(c.kind)) + " " + c.group_a + " + " + c.group_b : std::string();

  if (!edge && !shares_input(g_, nodes(a), nodes(b))) {
    c.decision = FusionDecision::no(Reason::not_related, what + ": no edge and no shared input between them");
    return c;
  }
  if (options.disabled_kinds.count(c.kind)) {
    c.decision = FusionDecision::no(Reason::kind_disabled, what + ": " + std::string(to_string(c.kind)) +
                                                               " fusion is switched off");
    return c;
  }
  if (rejected.count(c.id)) {
    c.decision = FusionDecision::no(Reason::user_rejected, what + ": rejected by the user");
    return c;
  }
  c.decision = check_group(g_, c.nodes, options);
  if (!c.decision.fuse) {
    c.decision.message = what + ": " + c.decision.message;
    return c;
  }
  if (const std::vector<int> path = cycle_path(a, b); !path.empty()) {
    if (!full) {
      c.decision = FusionDecision::no(Reason::cycle, {});
      return c;
    }
    std::string names;
    for (int s : path) {
      if (!names.empty()) names += " -> ";
      names += group_id(s);
    }
    c.decision = FusionDecision::no(Reason::cycle, what + ": the path " + names +
                                                       " leaves the merged kernel and comes back into it");
    c.decision.with("path_length", static_cast<double>(path.size()));
    return c;
  }

  GroupCost after = cost_merged(a, b);
  c.strategy = Strategy::merge;
  for (NodeId n : nodes(a)) {
    const ValueId v = g_.value_of(n);
    const bool feeds_b = std::any_of(g_.consumers(v).begin(), g_.consumers(v).end(), [&](NodeId k) { return group_of(k) == b; });
    if (feeds_b && (g_.is_output(v) || std::any_of(g_.consumers(v).begin(), g_.consumers(v).end(), [&](NodeId k) {
                      return group_of(k) != a && group_of(k) != b && !recomputes(group_of(k), n);
                    }))) {
      c.strategy = Strategy::multi_output;
    }
  }
  RecomputeChoice choice;
  if (c.strategy == Strategy::multi_output) choice = weigh_recompute(c, a, b, options, before, after, detail);
  c.time_before_s = before.time_s;
  c.bytes_before = before.bytes_moved();
  c.time_after_s = after.time_s;
  c.bytes_after = after.bytes_moved();
  const double saved = c.time_before_s - c.time_after_s;
  // A view (no kernel) joins its neighbour's kernel at no cost either way: taken, so that the kernels on either
  // side of it can merge through it. It saves nothing, so auto-fuse takes it after every merge that saves time.
  const int views = (is_view(a) ? 1 : 0) + (is_view(b) ? 1 : 0);
  const bool free_view = views > 0 && saved <= 0 && saved >= -kSameTime * c.time_before_s;
  if (c.strategy != Strategy::recompute) choice.kernels_before -= views;
  if (!full) {
    const bool written = c.strategy != Strategy::merge && choice.intermediate_written;
    c.decision = saved <= 0 && !free_view
                     ? FusionDecision::no(Reason::not_profitable, {})
                     : FusionDecision{true, written ? Reason::output_needed_elsewhere : Reason::fusible, {}, {}};
    return c;
  }
  std::string arithmetic = "unfused " + traffic(before, choice.kernels_before) + "; fused " +
                           traffic(after, choice.kernels_after) + choice.how;
  if (after.compute_bound()) {
    arithmetic += "; compute-bound (" + us(after.compute_time_s) +
                  " of math at peak): fusing saves launches and traffic hidden under the math, not the math";
  }
  if (free_view) {
    const std::string view = g_.node(nodes(is_view(a) ? a : b).front()).name;
    c.decision = {true, Reason::fusible,
                  what + ": " + arithmetic + "; no time saved: " + view +
                      " is a view (no kernel, no HBM traffic) and costs nothing inside the kernel either; it joins "
                      "the kernel so that the kernels on either side of it can merge through it",
                  {}};
  } else if (saved <= 0) {
    c.decision = FusionDecision::no(Reason::not_profitable, what + ": " + arithmetic + "; no time saved");
  } else {
    const bool written = c.strategy != Strategy::merge && choice.intermediate_written;
    const Reason r = written ? Reason::output_needed_elsewhere : Reason::fusible;
    c.decision = {true, r, what + ": " + arithmetic + "; saves " + us(saved) + " (" + percent(100.0 * saved / c.time_before_s) + "%)" +
                               concat_note(g_, c.nodes), {}};
  }
  c.decision.with("unfused_us", c.time_before_s * 1e6)
      .with("fused_us", c.time_after_s * 1e6)
      .with("saved_us", saved * 1e6)
      .with("bytes_before", static_cast<double>(c.bytes_before))
      .with("bytes_after", static_cast<double>(c.bytes_after))
      .with("compute_bound", after.compute_bound() ? 1 : 0);
  return c;
}

// An attention chain's groups merged into one fused attention kernel. The chain spans several groups (its two
// matmuls, the scale, the mask, the softmax, perhaps K's transpose), so it is weighed as a whole: one kernel
// cannot hold part of it. K's transpose joins only from a group of its own; otherwise the call reads K^T from
// memory where that group writes it.
Candidate Partition::evaluate_attention(Candidate c, int a, int b, const AttentionPattern& chain,
                                        const EngineOptions& options, const std::set<std::string>& rejected,
                                        Detail detail) {
  const bool full = detail == Detail::full;
  std::vector<int> slots;
  AttentionPattern p = chain;
  for (NodeId n : chain.nodes) {
    const int s = group_of(n);
    if (chain.k_transpose == n && nodes(s).size() > 1) {
      AttentionMatch m = match_attention(g_, chain.context, false);
      p = std::get<AttentionPattern>(std::move(m));  // the same chain, K^T read from memory
      continue;
    }
    if (std::find(slots.begin(), slots.end(), s) == slots.end()) slots.push_back(s);
  }
  std::sort(slots.begin(), slots.end(), [&](int x, int y) { return position(x) < position(y); });
  c.nodes = sorted_nodes(slots);
  GroupCost before;
  for (int s : slots) before += cost(s);
  c.time_before_s = c.time_after_s = before.time_s;
  c.bytes_before = c.bytes_after = before.bytes_moved();
  std::string what;
  if (full) {
    what = "attention " + c.group_a + " + " + c.group_b;
    std::string others;
    for (int s : slots) {
      if (s != a && s != b) others += (others.empty() ? "" : ", ") + group_id(s);
    }
    if (!others.empty()) what += " (with " + others + ")";
  }
  if (options.disabled_kinds.count(FusionKind::attention)) {
    c.decision = FusionDecision::no(Reason::kind_disabled, what + ": attention fusion is switched off");
    return c;
  }
  if (rejected.count(c.id)) {
    c.decision = FusionDecision::no(Reason::user_rejected, what + ": rejected by the user");
    return c;
  }
  c.decision = check_group(g_, c.nodes, options);
  for (int s : slots) {
    if (c.decision.fuse && !recomputed(s).empty()) {
      c.decision = FusionDecision::no(Reason::attention_unsupported,
                                      group_id(s) + " recomputes " + g_.node(recomputed(s).front()).name +
                                          ": the fused attention call reads its inputs from memory");
    }
  }
  if (!c.decision.fuse) {
    c.decision.message = what + ": " + c.decision.message;
    return c;
  }
  const GroupCost after = cost_union(slots);
  c.time_after_s = after.time_s;
  c.bytes_after = after.bytes_moved();
  const double saved = c.time_before_s - c.time_after_s;
  if (!full) {
    c.decision = saved <= 0 ? FusionDecision::no(Reason::not_profitable, {}) : FusionDecision::yes({});
    return c;
  }
  const std::string arithmetic = attention_explanation(g_, p, c.bytes_before, c.bytes_after) + "; unfused " +
                                 traffic(before, static_cast<int>(slots.size())) + "; fused " + traffic(after, 1);
  c.decision = saved <= 0 ? FusionDecision::no(Reason::not_profitable, what + ": " + arithmetic + "; no time saved")
                          : FusionDecision::yes(what + ": " + arithmetic + "; saves " + us(saved) + " (" +
                                                percent(100.0 * saved / c.time_before_s) + "%)");
  c.decision.with("unfused_us", c.time_before_s * 1e6)
      .with("fused_us", c.time_after_s * 1e6)
      .with("saved_us", saved * 1e6)
      .with("bytes_before", static_cast<double>(c.bytes_before))
      .with("bytes_after", static_cast<double>(c.bytes_after))
      .with("score_bytes", static_cast<double>(p.score_bytes()))
      .with("compute_bound", after.compute_bound() ? 1 : 0);
  return c;
}

// A producer read by several consumer groups is either computed once and written for them (one kernel with
// several outputs) or recomputed inside each consumer. Weighed one consumer at a time, recompute almost
// never wins: recomputing into one consumer saves nothing while the others still read the result. So this
// looks at all the producer's consumers at once: recompute in every consumer that can legally take it,
// against the producer and all its consumers in one kernel where that is legal (exp with two elementwise
// consumers), else against this merge with the others reading the written result (two reductions of
// different extents). The one-kernel figure is an estimate (later merges may still meet a cycle or a size
// limit). Linear in the producer's consumers.
Partition::RecomputeChoice Partition::weigh_recompute(Candidate& c, int a, int b, const EngineOptions& options,
                                                      GroupCost& before, GroupCost& after, Detail detail) {
  const bool full = detail == Detail::full;
  RecomputeChoice choice;
  if (full) choice.how = "; one kernel with several outputs: an intermediate is still written for its other consumers";
  if (!options.allow_recompute || c.kind == FusionKind::horizontal || !recomputable(g_, nodes(a))) return choice;
  const std::vector<int> consumers = consumer_groups(a);
  std::vector<int> hosts;  // consumers that can recompute a: b (the caller checked a + b) and legal others
  for (int h : consumers) {
    if (h == b || check_group(g_, sorted_nodes({a, h}), options).fuse) hosts.push_back(h);
  }
  std::vector<int> all = {a};
  all.insert(all.end(), consumers.begin(), consumers.end());
  const bool one_kernel = check_group(g_, sorted_nodes(all), options).fuse;
  GroupCost multi = one_kernel ? cost_union(all) : after;
  GroupCost producer_after;
  const GroupCost hosts_after = cost_recompute(a, hosts, producer_after);
  GroupCost recompute = hosts_after;
  recompute += producer_after;
  for (int h : consumers) {
    if (!one_kernel && h != b) multi += cost(h);
    if (std::find(hosts.begin(), hosts.end(), h) == hosts.end()) recompute += cost(h);
  }
  std::string where, alternative;
  if (full) {
    for (int h : hosts) where += (where.empty() ? "" : ", ") + group_id(h);
    alternative = one_kernel ? "one kernel for " + group_id(a) + " and all its consumers" : "one kernel with several outputs";
  }
  if (recompute.time_s >= multi.time_s) {
    if (full) {
      choice.how = "; one kernel with several outputs: " + group_id(a) +
                   "'s result is still written for its other consumers (recomputing it in " + where +
                   " would cost " + us(recompute.time_s) + ", " + alternative + " " + us(multi.time_s) + ")";
    }
    return choice;
  }
  c.strategy = Strategy::recompute;
  if (full) {
    for (int h : hosts) c.recompute_in.push_back(group_id(h));
  }
  before = cost(a);
  for (int h : hosts) before += cost(h);
  after = hosts_after;
  after += producer_after;
  const bool eliminated = producer_after.time_s == 0;
  // A host that is a view launches nothing until it recomputes the producer.
  choice.kernels_before = 1 + static_cast<int>(std::count_if(hosts.begin(), hosts.end(), [&](int h) { return !is_view(h); }));
  choice.kernels_after = static_cast<int>(hosts.size()) + (eliminated ? 0 : 1);
  choice.intermediate_written = !eliminated;
  if (!full) return choice;
  choice.how = "; recomputes " + group_id(a) + " inside " + where + ", each reading its inputs instead of its result (" +
               (eliminated ? group_id(a) + " is no longer launched" : group_id(a) + " still runs for its other readers") +
               "), cheaper than " + alternative + " (" + us(multi.time_s) + ")";
  return choice;
}

}  // namespace fx
