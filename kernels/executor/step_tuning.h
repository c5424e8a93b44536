// Internal to kernels/executor: what layout tuning decided for one step (StepTuning), the deciders that time
// each kind of choice or take it from the tuning cache, and the one place that applies a decision to the plan
// (apply_step_tuning). tune_layouts (layout_tuning.h) runs them in plan order.
//
// Why decide-then-apply step by step, not the whole plan at once: a step's ways are timed after the step before
// it as the plan will run it (tuning_rounds.h), so each decision is applied, and its step launched, before the
// next step is timed. The rules:
// - A decider never changes the plan's steps; it may change its step's call (a GEMM's finalist,
//   LibraryStep::choose_finalist), which is shared state of the library call, not of the plan.
// - apply_step_tuning is the only writer of the steps while tuning; it adds steps only for values that have a
//   buffer in the memory plan (a conversion's NHWC side is the call's own scratch), and builds everything that
//   can throw before it changes the plan.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kernels/executor/tuning_rounds.h"

namespace fx::gpu {

// The step as compiled (a GEMM's finalist is kept in its call).
struct KeepStep {};
// A generated kernel in layout i (0: its installed one; i > 0: GeneratedLaunch::alternatives[i - 1]).
struct InstallLayout {
  std::size_t layout = 0;
};
// A convolution kept NCHW: its channels-last way dropped, or kept loaded with the times keep_channels_last weighs
// (LibraryLaunch::nchw_choice).
struct KeepNchw {
  std::optional<LibraryLaunch::NchwChoice> nchw_choice;
};
// A convolution run channels-last, its conversions in conversion layout `conversion_layout`: one step becomes
// three (x to NHWC, the call, y back).
struct RunNhwc {
  std::size_t conversion_layout = 0;
};
// A horizontal GEMM run as its parts, each a call of its own: one step becomes one per part.
struct SplitParts {
  std::vector<std::shared_ptr<LibraryStep>> parts;
  bool forced = false;  // set by hand (RunOptions::force_layout), not timed
};

using StepRewrite = std::variant<KeepStep, InstallLayout, KeepNchw, RunNhwc, SplitParts>;

struct StepTuning {
  StepRewrite rewrite;
  std::string layout_choice;  // what was chosen and why, for every step it becomes; "" keeps the step's own
  std::string tuned_at;       // where the choice came from the tuning cache: when it was timed
};

// Applies `t` to step s of plan p; returns the index of the last step it became. Launches nothing.
std::size_t apply_step_tuning(CompiledProgram& im, PlanId p, std::size_t s, StepTuning t);

// The deciders. Each leaves the steps before s as they were launched and the stream's outputs of step s
// possibly stale: the caller applies the decision and launches what step s became.
StepTuning tune_generated(TuningPass& pass, PlanId p, std::size_t s);     // layout_tuning.cpp
StepTuning tune_gemm(TuningPass& pass, PlanId p, std::size_t s);          // layout_tuning.cpp
StepTuning tune_conv_layout(TuningPass& pass, PlanId p, std::size_t s);   // conv_layout_tuning.cpp
StepTuning tune_horizontal(TuningPass& pass, PlanId p, std::size_t s);    // horizontal_tuning.cpp

}  // namespace fx::gpu
