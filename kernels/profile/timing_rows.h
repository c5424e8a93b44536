// Joins the two profiling passes of one plan run into export rows (core/export/timings_export.h):
// the timing pass (KernelTimer records, each tagged with the step that launched it) and the counter pass
// (DramProfiler, one KernelCounters per step, launch i = steps[i]). Within a step, kernels pair up by launch
// order, which both passes keep; where the kernel counts differ (a library chose another algorithm the second
// time) the bytes are left absent rather than guessed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/export/timings_export.h"
#include "kernels/profile/dram_profiler.h"
#include "kernels/profile/kernel_timer.h"

namespace fx::gpu {

struct PlanStepLabel {
  std::uint64_t step_id = 0;  // the id given to KernelTimer::push_step
  std::string group;          // "g3"
  std::vector<std::string> nodes;
  std::optional<double> predicted_bytes;  // the cost model's read+write bytes for the whole step
};

// One row per timed kernel, in start order; start_us relative to the first kernel. A kernel outside every step
// gets an empty group. predicted_bytes goes on a step's first kernel only, so column sums stay right.
// `counters` may be empty (counter pass not run): bytes are then absent.
std::vector<KernelTimingRow> join_timing_rows(const std::string& plan, const std::vector<PlanStepLabel>& steps,
                                              const std::vector<KernelRecord>& timed,
                                              const std::vector<KernelCounters>& counters);

}  // namespace fx::gpu
