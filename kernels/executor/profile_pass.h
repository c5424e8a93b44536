// The measurement passes `fusion-cli run` makes after the timing runs, over the executor's own steps:
//   1. timing: each plan launched once (after a warm-up launch) under KernelTimer; the executor's launch hooks
//      push the step id, so every CUDA kernel, including those cuBLASLt and cuDNN launch inside a step, lands on
//      its step and group with CUPTI's start/end times;
//   2. counters: each distinct step launched alone in a DramProfiler window (cold L2, no CUDA graph), giving DRAM
//      bytes read and written; a step identical to one measured earlier in the run (same kernel, same problem:
//      kernels/profile/counter_windows.h) takes its numbers, and the report names the step measured. Joined
//      with pass 1 by launch order (kernels/profile/timing_rows.h).
// The passes never overlap (CUPTI gives wrong records when activity tracing and range profiling mix). Without
// CUPTI permission or support the run still completes: timings come from the CUDA-event medians of
// Executor::run() and bytes say "not measured" and why. A copy measurement gives the device's copy bandwidth.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/executor/executor.h"
#include "kernels/executor/profile_summary.h"

namespace fx::gpu {

struct ProfileSettings {
  bool counters = true;  // false for `--no-profile`: no counter pass, bytes "not measured"
  // The copy-bandwidth measurement's buffer: several L2s, so the copy streams from and to DRAM.
  std::int64_t copy_bytes = std::int64_t{256} << 20;
  int copy_repeat = 10;
};

class ProfilePass {
 public:
  // Chains its hooks in front of the launch hooks already in `options` (which keep working). Call it before
  // building the Executor: the executor copies its options.
  explicit ProfilePass(RunOptions& options);
  ~ProfilePass();
  ProfilePass(ProfilePass&&) noexcept;
  ProfilePass& operator=(ProfilePass&&) noexcept;
  ProfilePass(const ProfilePass&) = delete;
  ProfilePass& operator=(const ProfilePass&) = delete;

  // After executor.run() returned `report` (which released the device memory): measures copy bandwidth,
  // allocates and fills the inputs again, then runs the passes. Throws GpuError when a launch fails.
  ProfileMeasurements measure(Executor& executor, const RunReport& report, const ProfileSettings& settings);

 private:
  struct Hooks;
  std::shared_ptr<Hooks> hooks_;  // shared with the hook closures inside the executor's options
};

// The trace/CSV rows when no CUPTI timing exists: one row per step, laid end to end from the CUDA-event
// medians (so the trace shows relative durations, not real gaps), with bytes where the counter pass has them.
std::vector<KernelTimingRow> rows_from_event_timings(const PlanReport& plan, const PlanMeasurement& measured);

}  // namespace fx::gpu
