#include "core/fusion/engine.h"

#include <algorithm>
#include <queue>

#include "core/fusion/partition.h"

namespace fx {

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::merge: return "merge";
    case Strategy::multi_output: return "multi_output";
    case Strategy::recompute: return "recompute";
  }
  return "?";
}

FusionEngine::FusionEngine(std::shared_ptr<const Graph> graph, DeviceDescription device, EngineOptions options)
    : graph_(std::move(graph)), model_(std::move(device)), options_(std::move(options)),
      plan_(Plan::unfused(*graph_, model_)) {}

FusionEngine::FusionEngine(const Graph& graph, DeviceDescription device, EngineOptions options)
    : FusionEngine(std::make_shared<const Graph>(graph), std::move(device), std::move(options)) {}

void FusionEngine::set_options(EngineOptions options) { options_ = std::move(options); }

std::vector<Candidate> FusionEngine::candidates() const {
  Partition p(*graph_, model_, plan_);
  std::vector<Candidate> out;
  for (const auto& [a, b] : p.pairs()) out.push_back(p.evaluate(a, b, options_, rejected_));
  return out;
}

std::optional<Candidate> FusionEngine::candidate(std::string_view id) const {
  Partition p(*graph_, model_, plan_);
  auto pair = p.find_pair(id);
  if (!pair) return std::nullopt;
  return p.evaluate(pair->first, pair->second, options_, rejected_);
}

void FusionEngine::log_candidate(const Candidate& c, const std::string& action, const std::string& by) {
  LogEntry e;
  e.step = step_;
  e.action = action;
  e.by = by;
  e.candidate_id = c.id;
  e.kind = c.kind;
  e.strategy = c.strategy;
  e.group_a = c.group_a;
  e.group_b = c.group_b;
  e.reason = c.decision.reason;
  e.message = c.decision.message;
  e.time_before_us = c.time_before_s * 1e6;
  e.time_after_us = c.time_after_s * 1e6;
  log_.push_back(std::move(e));
}

void FusionEngine::restore(State s) {
  plan_ = std::move(s.plan);
  rejected_ = std::move(s.rejected);
  log_ = std::move(s.log);
  step_ = s.step;
}

FusionDecision FusionEngine::accept(std::string_view id) {
  Partition p(*graph_, model_, plan_);
  auto pair = p.find_pair(id);
  if (!pair) return FusionDecision::no(Reason::not_related, "no candidate " + std::string(id) + " in the current plan");
  // The user may accept a legal fusion the model finds unprofitable (and is told so); never an illegal one.
  Candidate c = p.evaluate(pair->first, pair->second, options_, {});
  if (!c.decision.fuse && c.decision.reason != Reason::not_profitable) return c.decision;
  ++step_;
  p.apply(c);
  plan_ = Plan::from_groups(*graph_, model_, p.specs());
  rejected_.erase(c.id);
  log_candidate(c, "accepted", "user");
  c.decision.fuse = true;
  return c.decision;
}

FusionDecision FusionEngine::reject(std::string_view id, std::string why) {
  auto c = candidate(id);
  if (!c) return FusionDecision::no(Reason::not_related, "no candidate " + std::string(id) + " in the current plan");
  ++step_;
  rejected_.insert(c->id);
  c->decision = FusionDecision::no(Reason::user_rejected, c->id + ": rejected by the user" + (why.empty() ? "" : ": " + why));
  log_candidate(*c, "rejected", "user");
  return c->decision;
}

void FusionEngine::reset() {
  ++step_;
  plan_ = Plan::unfused(*graph_, model_);
}

namespace {

// When an epilogue merge and another merge save about the same time, the epilogue goes first. Where the two move
// the same bytes (a GEMM's bias add into the GEMM, or into the layout kernel after it), the model tells them
// apart only by charging the bias add's math (under 1% of the saving) on top of the GEMM's, and the executor
// absorbs an epilogue into the library call for free while a layout change runs best as its own
// index-remapping kernel. Deterministic: a fixed scaling of the priority, ties still by node order.
constexpr double kEpiloguePreference = 0.02;

double priority(const Candidate& c) {
  return c.saved_s() * (c.kind == FusionKind::epilogue ? 1 + kEpiloguePreference : 1.0);
}

struct QueueEntry {
  double saved;  // priority(): predicted time saved, epilogues preferred
  int first_a, first_b;  // topological positions of the groups' first nodes: ties by node order
  int a, b, version_a, version_b;
  bool operator<(const QueueEntry& o) const {  // priority_queue pops the largest
    if (saved != o.saved) return saved < o.saved;
    if (first_a != o.first_a) return first_a > o.first_a;
    return first_b > o.first_b;
  }
};

}  // namespace

int FusionEngine::auto_fuse() {
  ++step_;
  Partition p(*graph_, model_, plan_);
  std::priority_queue<QueueEntry> queue;
  using Detail = Partition::Detail;
  auto consider = [&](int a, int b) {
    const Candidate c = p.evaluate(a, b, options_, rejected_, Detail::verdict);
    if (c.decision.fuse) {
      queue.push({priority(c), p.first_pos(a), p.first_pos(b), a, b, p.version(a), p.version(b)});
    }
  };
  for (const auto& [a, b] : p.pairs()) consider(a, b);
  int merges = 0;
  const int max_steps = 4 * graph_->num_nodes() + 16;  // each step merges or adds a recomputation
  for (int guard = 0; !queue.empty() && guard < max_steps; ++guard) {
    const QueueEntry e = queue.top();
    queue.pop();
    if (!p.alive(e.a) || !p.alive(e.b) || p.version(e.a) != e.version_a || p.version(e.b) != e.version_b) continue;
    const Candidate c = p.evaluate(e.a, e.b, options_, rejected_, Detail::full);  // spelled out for the log
    if (!c.decision.fuse) continue;
    if (priority(c) < e.saved * (1 - 1e-9)) {  // worth less than when queued: back in line
      queue.push({priority(c), e.first_a, e.first_b, e.a, e.b, e.version_a, e.version_b});
      continue;
    }
    p.apply(c);
    ++merges;
    log_candidate(c, "accepted", "auto");
    std::vector<int> touched = {e.a, e.b};  // a recompute changes every consumer that takes the producer
    for (const std::string& id : c.recompute_in) touched.push_back(p.group_of(*graph_->find_node(id.substr(2))));
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    for (int s : touched) {
      if (!p.alive(s)) continue;
      for (const auto& [x, y] : p.pairs(s)) consider(x, y);
    }
  }
  plan_ = Plan::from_groups(*graph_, model_, p.specs());
  // Record why the remaining pairs stay apart: the "why not fused" views read this.
  Partition final_partition(*graph_, model_, plan_);
  for (const auto& [a, b] : final_partition.pairs()) {
    const Candidate c = final_partition.evaluate(a, b, options_, rejected_);
    log_candidate(c, c.decision.fuse ? "considered" : "rejected", "auto");
  }
  return merges;
}

}  // namespace fx
