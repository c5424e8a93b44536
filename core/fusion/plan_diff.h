// Two plans of one graph side by side: the groups both formed, the groups only one formed (with how the other
// split those nodes), and for each split both sides' reasons: what the plan files recorded (Inductor's "cannot
// fuse" messages) and what our engine says (its decision for the pair under that plan, or its legality
// verdict on a group the other maker formed). Predicted bytes and time come from our cost model, for both.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost/cost_model.h"
#include "core/fusion/decision.h"
#include "core/fusion/engine.h"
#include "core/fusion/plan_file.h"

namespace fx {

// One side of a comparison: the plan as read, and, where our engine accepts it as its own plan (every
// group legal), that engine, so its decisions can be asked for.
struct PlanSideInput {
  std::string label;  // the file name, for people
  PlanFile file;
  const FusionEngine* engine = nullptr;
};

struct ReasonNote {
  std::string side;    // "A" or "B"
  std::string source;  // "inductor", "fusion-explorer" (our engine)
  std::string code;
  std::string message;
};

// A pair of nodes, joined by an edge, that one plan fused and the other did not; with every reason known.
struct SplitPair {
  NodeId producer = 0, consumer = 0;
  std::vector<ReasonNote> reasons;
};

struct GroupCostSummary {
  bool known = false;  // false where the plan's groups cannot be ordered (no prediction)
  double time_us = 0;
  double bytes = 0;
};

struct DiffGroup {
  std::vector<NodeId> nodes;               // topological order
  std::string id, kernel;                  // as this side names it
  bool library = false, launched = true;
  GroupCostSummary cost;                   // our cost model's prediction for this group
  std::vector<std::string> other_groups;   // for a group only one side has: the other side's groups over it
  std::optional<FusionDecision> our_verdict;  // our legality verdict, for a group another maker formed
  std::vector<SplitPair> splits;           // adjacent nodes the other side kept apart, with reasons
};

struct PlanSummary {
  std::string label, source, producer;
  int kernels = 0;  // groups launched
  GroupCostSummary cost;
  std::optional<double> measured_time_us;
  std::vector<std::string> notes;
};

struct PlanDiff {
  PlanSummary a, b;
  std::vector<DiffGroup> both;    // the same node set in both plans (A's view of it)
  std::vector<DiffGroup> only_a;  // A's groups that B does not have
  std::vector<DiffGroup> only_b;
};

// The engine's current plan as one side (its groups, its source and pair reasons, the engine to explain with).
PlanSideInput side_of(const FusionEngine& engine, std::string label);

// The two plans must be of the same graph `g` (the caller checks); `model` predicts both.
PlanDiff diff_plans(const Graph& g, const CostModel& model, const EngineOptions& options, const PlanSideInput& a,
                    const PlanSideInput& b);

// The reasons known for the pair (x, y) under each side (x and y in different groups of that side).
std::vector<ReasonNote> pair_reasons_for(const PlanSideInput& side, std::string_view side_name, NodeId x, NodeId y);

std::string plan_diff_text(const Graph& g, const PlanDiff& d);
std::string plan_diff_json(const Graph& g, const PlanDiff& d);

}  // namespace fx
