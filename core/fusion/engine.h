// The fusion engine: candidates for the current plan, legality and profitability with reasons, accept /
// reject, auto-fuse, what-if limits, the decision log, and fused graph files. Value-based and Qt-free. It
// keeps no history: a caller that offers undo (the GUI's QUndoStack) owns it and moves the engine between
// the State values it recorded.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost/cost_model.h"
#include "core/fusion/decision.h"
#include "core/fusion/legality.h"
#include "core/fusion/plan.h"
#include "core/fusion/plan_file.h"
#include "core/graph/graph.h"

namespace fx {

// How a producer with consumers outside the merged group is handled.
enum class Strategy : std::uint8_t {
  merge,         // plain merge; nothing extra is written
  multi_output,  // one kernel with several outputs: the intermediate is written for its other consumers
  recompute,     // the consumer group recomputes the producer; the producer's group stays (or disappears)
};
std::string_view to_string(Strategy s);

// A proposal to merge two groups of the current plan.
struct Candidate {
  std::string id;                // "v:mul+add" (kind letter, then the two groups' first nodes); stable
  FusionKind kind = FusionKind::vertical;
  Strategy strategy = Strategy::merge;
  std::string group_a, group_b;  // group ids; a before b in topological order (producer first)
  std::vector<NodeId> nodes;     // nodes of the merged group, topological order
  // With Strategy::recompute: every consumer group that recomputes group_a (group_b among them), in plan
  // order. Recompute is weighed over all of group_a's consumers at once, since group_a stops being
  // launched only when none of them reads its result.
  std::vector<std::string> recompute_in;
  double time_before_s = 0;      // the two groups (for recompute: group_a and the groups in recompute_in)
  double time_after_s = 0;       // after the merge
  std::int64_t bytes_before = 0, bytes_after = 0;
  FusionDecision decision;
  double saved_s() const { return time_before_s - time_after_s; }
};

struct LogEntry {
  int step = 0;                  // 0 for analysis, then one per accept/reject/auto-fuse action
  std::string action;            // "considered", "accepted", "rejected"
  std::string by;                // "auto", "user", "analysis"
  std::string candidate_id;
  FusionKind kind = FusionKind::vertical;
  Strategy strategy = Strategy::merge;
  std::string group_a, group_b;
  Reason reason = Reason::fusible;
  std::string message;
  double time_before_us = 0, time_after_us = 0;  // microseconds, as the log JSON stores them
  bool operator==(const LogEntry&) const = default;
};

class FusionEngine {
 public:
  FusionEngine(std::shared_ptr<const Graph> graph, DeviceDescription device, EngineOptions options = {});
  FusionEngine(const Graph& graph, DeviceDescription device, EngineOptions options = {});

  const Graph& graph() const { return *graph_; }
  const CostModel& cost_model() const { return model_; }
  const Plan& plan() const { return plan_; }
  const EngineOptions& options() const { return options_; }
  // What-if limits: the plan is kept; candidates and later auto-fuse runs use the new limits.
  void set_options(EngineOptions options);

  // Every pair of groups along an edge or sharing an input, legal or not, in a deterministic order
  // (by the topological index of the groups' first nodes). Each carries its decision.
  std::vector<Candidate> candidates() const;
  std::optional<Candidate> candidate(std::string_view id) const;
  // Can nodes a and b be in one kernel, given the current plan? Evaluates merging their groups.
  FusionDecision explain(NodeId a, NodeId b) const;

  // Each returns a decision: accepted (fuse == true), or why not; the plan changes only on success.
  FusionDecision accept(std::string_view candidate_id);
  FusionDecision reject(std::string_view candidate_id, std::string why = {});
  // Greedy by predicted time saved, ties by node order, until no profitable legal candidate is left.
  // Returns the number of merges.
  int auto_fuse();

  // Back to the unfused plan; with set_options, the way to see a what-if plan.
  void reset();

  // Everything an action changes: the plan, the rejections, the decision log and its step count. An undo
  // history records a State before each action and restores it; restoring is exact.
  struct State {
    Plan plan;
    std::set<std::string> rejected;
    std::vector<LogEntry> log;
    int step = 0;
    bool operator==(const State&) const = default;
  };
  State state() const { return {plan_, rejected_, log_, step_}; }
  void restore(State s);

  const std::vector<LogEntry>& log() const { return log_; }
  std::string decision_log_json() const;  // {"graph": ..., "device": ..., "entries": [...]}
  const std::set<std::string>& rejected_ids() const { return rejected_; }
  // Who made the plan loaded from a file ("fusion-explorer" unless the file says otherwise) and the reasons
  // its maker gave for pairs it did not fuse; both are kept and saved again.
  const std::string& plan_source() const { return plan_source_; }
  const std::vector<PairReason>& pair_reasons() const { return pair_reasons_; }

  // A graph file with a "fusion" section (groups and decisions); loading restores the plan exactly or
  // reports why the section is invalid (node in two groups, an illegal group, a cycle between groups).
  std::string save_fused_graph() const;
  static Expected<FusionEngine> load_fused_graph(std::string_view json_text, DeviceDescription device,
                                                 EngineOptions options = {});

 private:
  void log_candidate(const Candidate& c, const std::string& action, const std::string& by);

  std::shared_ptr<const Graph> graph_;
  CostModel model_;
  EngineOptions options_;
  Plan plan_;
  std::set<std::string> rejected_;
  std::string plan_source_ = kOurPlanSource;
  std::vector<PairReason> pair_reasons_;
  std::vector<LogEntry> log_;
  int step_ = 0;
};

}  // namespace fx
