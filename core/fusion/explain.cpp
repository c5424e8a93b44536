// "Why are these two nodes not in one kernel?": the engine's verdict on merging their groups, phrased with the
// nodes the user picked and the groups they sit in; for nodes joined only through other kernels, the path
// between them and the first hop on it whose merge the engine refuses (every op on that path would have to
// share the kernel too).
#include <algorithm>
#include <queue>

#include "core/fusion/engine.h"
#include "core/fusion/library_epilogue.h"
#include "core/fusion/partition.h"

namespace fx {
namespace {

std::string name_op(const Graph& g, NodeId n) { return g.node(n).name + " (" + g.node(n).op + ")"; }

// Nodes from `from` to `to` along edges (a shortest path), or empty when `to` does not depend on `from`.
std::vector<NodeId> data_path(const Graph& g, NodeId from, NodeId to) {
  std::vector<NodeId> parent(static_cast<std::size_t>(g.num_nodes()), -1);
  std::vector<bool> seen(static_cast<std::size_t>(g.num_nodes()), false);
  std::queue<NodeId> queue;
  queue.push(from);
  seen[static_cast<std::size_t>(from)] = true;
  while (!queue.empty()) {
    const NodeId n = queue.front();
    queue.pop();
    if (n == to) break;
    for (NodeId c : g.consumers(g.value_of(n))) {
      if (seen[static_cast<std::size_t>(c)]) continue;
      seen[static_cast<std::size_t>(c)] = true;
      parent[static_cast<std::size_t>(c)] = n;
      queue.push(c);
    }
  }
  if (!seen[static_cast<std::size_t>(to)]) return {};
  std::vector<NodeId> path{to};
  while (path.back() != from) path.push_back(parent[static_cast<std::size_t>(path.back())]);
  std::reverse(path.begin(), path.end());
  return path;
}

// "q_b -> ... -> scores (matmul) -> scaled": the path's ends and the hop that matters, in full.
std::string describe_path(const Graph& g, const std::vector<NodeId>& path, std::size_t hop) {
  std::string out = g.node(path.front()).name;
  if (hop > 1) out += " -> ...";
  if (hop > 0) out += " -> " + name_op(g, path[hop]);
  else out = name_op(g, path.front());
  out += " -> " + name_op(g, path[hop + 1]);
  if (hop + 2 < path.size()) out += hop + 3 < path.size() ? " -> ... -> " + g.node(path.back()).name
                                                          : " -> " + g.node(path.back()).name;
  return out;
}

// "q_b (in kernel g:q_mm) and scaled (in kernel g:scaled)": the groups are named after their first node,
// which need not be the node the user picked.
std::string who(const Partition& p, NodeId a, NodeId b) {
  const Graph& g = p.graph();
  auto one = [&](NodeId n) {
    const int s = p.group_of(n);
    return p.nodes(s).size() > 1 ? g.node(n).name + " (in kernel " + p.group_id(s) + ")" : g.node(n).name;
  };
  return one(a) + " and " + one(b);
}

}  // namespace

PairExplanation FusionEngine::explain_pair(NodeId a, NodeId b) const {
  Partition p(*graph_, model_, plan_);
  PairExplanation out;
  int ga = p.group_of(a), gb = p.group_of(b);
  if (ga == gb) {
    out.decision = FusionDecision::yes(graph_->node(a).name + " and " + graph_->node(b).name +
                                       " are already in one kernel, " + p.group_id(ga));
    const std::string attention = attention_group_explanation(*graph_, model_, p.nodes(ga), p.cost(ga));
    const std::string call = library_call_summary(*graph_, p.nodes(ga));
    if (!attention.empty()) out.decision.message += ": " + attention;
    if (attention.empty() && !call.empty()) out.decision.message += ": " + call;
    return out;
  }
  out.path = data_path(*graph_, a, b);
  if (out.path.empty()) out.path = data_path(*graph_, b, a);
  if (p.position(ga) > p.position(gb)) std::swap(ga, gb);
  out.decision = p.evaluate(ga, gb, options_, rejected_).decision;
  if (out.decision.reason == Reason::not_related && !out.path.empty()) {
    // Joined through other kernels: one kernel with both would hold every op between them. The first hop
    // between two kernels that the engine refuses to merge is what keeps them apart.
    for (std::size_t i = 0; i + 1 < out.path.size(); ++i) {
      int x = p.group_of(out.path[i]), y = p.group_of(out.path[i + 1]);
      if (x == y) continue;
      if (p.position(x) > p.position(y)) std::swap(x, y);
      const FusionDecision hop = p.evaluate(x, y, options_, rejected_).decision;
      if (hop.fuse && !out.blocking) out.blocking = std::make_pair(out.path[i], out.path[i + 1]);
      if (hop.fuse) continue;
      out.blocking = std::make_pair(out.path[i], out.path[i + 1]);
      out.decision = hop;
      out.decision.message = describe_path(*graph_, out.path, i) + ": " + hop.message;
      break;
    }
    if (out.decision.reason == Reason::not_related) {
      out.decision.message = describe_path(*graph_, out.path, 0) +
                             ": the kernels on this path could merge step by step (accept them one by one)";
    }
  } else if (!out.decision.fuse && out.path.size() >= 2) {
    for (std::size_t i = 0; i + 1 < out.path.size(); ++i)
      if (p.group_of(out.path[i]) != p.group_of(out.path[i + 1])) {
        out.blocking = std::make_pair(out.path[i], out.path[i + 1]);
        break;
      }
  }
  if (!out.decision.fuse) out.decision.message = who(p, a, b) + ": " + out.decision.message;
  return out;
}

}  // namespace fx
