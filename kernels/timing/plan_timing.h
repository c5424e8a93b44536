// Internal to the executor's run: event timing of both plans (whole, then step by step, in interleaved rounds)
// and of each plan replayed as a CUDA graph, as the run's TimingProtocol asks.
#pragma once

#include <array>
#include <string>

#include "kernels/executor/executor_internal.h"

namespace fx::gpu {

struct TimedPlans {
  std::array<PlanReport, 2> plans;  // indexed by plan_index
  PlanReport& plan(PlanId p) { return plans[plan_index(p)]; }
  ClockSpan clocks;                 // the GPU's clocks over the whole-plan rounds
  double round_ms = 0;              // one round as estimated for warmup_ms/repeat_ms (else 0)
  TimingRounds rounds;              // the rounds run
};

// Both plans timed once as im.options.timing asks: the rest, the warm-up rounds, then `repeat` rounds of each
// plan whole and as many step by step.
TimedPlans time_plans(CompiledProgram& im);
// Plan p captured as a CUDA graph and replayed (median ms): launch overhead drops out of the timing.
double time_graph(CompiledProgram& im, PlanId p);
// Why a timing's span has no clock samples ("" when it has some).
std::string clocks_note(const CompiledProgram& im, const ClockSpan& span);

}  // namespace fx::gpu
