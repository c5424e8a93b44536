// Internal to kernels/executor: how the tuning passes time a step's ways inside its plan (time_rounds), how
// many rounds a comparison takes and when the GPU rests first (comparison_rounds), and what a timed choice
// depends on besides its candidates (tuning_context). layout_tuning.h says what is tuned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/contraction/device_memory.h"
#include "kernels/contraction/matmul.h"
#include "kernels/executor/executor_internal.h"
#include "kernels/profile/gpu_clocks.h"
#include "kernels/tuning/timed_choice.h"

namespace fx::gpu {

// Timed rounds per layout, after one warm-up round; one launch of each layout per round, so that a drift of
// the clocks during the search moves every layout alike (the cuBLASLt search does the same). A convolution's
// ways and a horizontal GEMM's get more: their times spread wider (library calls, several launches, after each
// flush).
constexpr int kRounds = 15;
constexpr int kConvRounds = 31;

// The rounds of one comparison: `timed` rounds after `warmup` (one by default).
struct TuneRounds {
  TuneRounds(int timed_rounds, int warmup_rounds = 1) : timed(timed_rounds), warmup(warmup_rounds) {}  // NOLINT
  int timed, warmup;
};

// The GEMM problems whose search finalists were timed in a plan already: one choice per problem serves every
// step that runs it, in both plans (the cuBLASLt plan cache is keyed by problem and pointer alignment, and the
// arena aligns every value alike).
using TimedProblems = std::vector<MatmulProblem>;
bool timed_before(const TimedProblems& timed, const MatmulProblem& p);

// Where a tuning pass spent its time, for its last progress line: what a cold run's tuning costs, by kind.
struct TuningSpend {
  double search_s = 0, rest_s = 0, timed_s = 0;  // library searches (cuBLASLt, cuDNN), rests, timed rounds (with their launches)
  int searches = 0, rests = 0, comparisons = 0, runs = 0;  // runs: the timed and warm-up launches of every way
  std::uint64_t gate_timeouts = 0;  // StreamGate::timeouts() during the pass: none unless a launch waited
  std::string text() const;
};

// What one run of the tuning passes shares across its steps and plans. Invariants: `flush` is allocated only
// where the protocol flushes and nothing is forced (a forced layout is never timed); `timed` only grows; the
// clock watch covers the GPU's work since the previous GEMM comparison began, rested or not (comparison_rounds
// restarts it): a cap seen there is what a rest would undo.
struct TuningPass {
  CompiledProgram& im;
  int forced = -1;  // RunOptions::force_layout
  contraction_detail::DeviceMemory flush;
  TimedProblems timed;
  std::unique_ptr<ClockWatch> since_check;
  TuningSpend spend;
  std::uint64_t gate_timeouts_before = 0;  // StreamGate::timeouts() as the pass began

  explicit TuningPass(CompiledProgram& program);
  ChoiceSource choices() const { return {im.tuning.get(), im.options.retune}; }
  // `key`'s choice (choose()), counted for the report as timed now or reused.
  TimedChoice choose(const TuningKey& key, std::size_t n, const std::function<TimedChoice()>& time,
                     const std::function<bool(const TimedChoice&)>& usable = {});
};

using WayLaunch = std::function<void(std::size_t)>;

// Medians of each of `n` ways of plan p's step s, timed in interleaved rounds (see the definition).
std::vector<double> time_rounds(TuningPass& pass, PlanId p, std::size_t s, std::size_t n, TuneRounds rounds,
                                const WayLaunch& launch);

// The rounds of a comparison of `n` ways, after the rest a GEMM comparison needs (Rest::yes; see the definition).
enum class Rest { yes, no };
TuneRounds comparison_rounds(TuningPass& pass, PlanId p, std::size_t s, std::size_t n, int rounds,
                             const WayLaunch& launch, Rest rest = Rest::yes);

// What decides a timed choice besides its candidates: the protocol it was timed under (the flush; rounds counted
// or timed) and the step the plan runs before it, whose outputs are in the L2 when it runs.
std::string tuning_context(const CompiledProgram& im, PlanId p, std::size_t s);

// The clocks a GEMM's tuning rounds ran at, for its report line; "" where NVML was not read.
std::string at_clocks(const ClockSpan& span);

// A library call's first launch runs its algorithm search (cuBLASLt's, cuDNN's), which synchronises: never
// inside a timed round. Runs `first_launch` and waits for it, counted as search time.
void search(TuningPass& pass, const std::function<void()>& first_launch);
// A GEMM call's search: its first launch in plan p.
void search(TuningPass& pass, PlanId p, const LibraryStep& call);

// "reused from the tuning cache (timed DATE)".
std::string reused_from(const TimedChoice& c);

}  // namespace fx::gpu
