#include "kernels/profile/timing_rows.h"

#include <algorithm>
#include <unordered_map>

namespace fx::gpu {
namespace {

struct StepState {
  const PlanStepLabel* label = nullptr;
  const KernelCounters* counters = nullptr;
  std::size_t timed_kernels = 0;  // kernels of this step in the timing pass
  std::size_t seen = 0;           // of those, already turned into rows
};

std::unordered_map<std::uint64_t, StepState> index_steps(const std::vector<PlanStepLabel>& steps,
                                                         const std::vector<KernelRecord>& timed,
                                                         const std::vector<KernelCounters>& counters) {
  std::unordered_map<std::uint64_t, StepState> state;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    StepState& s = state[steps[i].step_id];
    s.label = &steps[i];
    if (i < counters.size()) s.counters = &counters[i];
  }
  for (const KernelRecord& r : timed) {
    if (r.step_id) ++state[*r.step_id].timed_kernels;
  }
  return state;
}

void attach_bytes(KernelTimingRow& row, StepState& step) {
  const std::size_t k = step.seen++;
  if (step.label && k == 0) row.predicted_bytes = step.label->predicted_bytes;
  const KernelCounters* c = step.counters;
  if (!c || !c->available || c->per_kernel.size() != step.timed_kernels || k >= c->per_kernel.size()) return;
  row.bytes_read = c->per_kernel[k].bytes_read;
  row.bytes_written = c->per_kernel[k].bytes_written;
}

}  // namespace

std::vector<KernelTimingRow> join_timing_rows(const std::string& plan, const std::vector<PlanStepLabel>& steps,
                                              const std::vector<KernelRecord>& timed,
                                              const std::vector<KernelCounters>& counters) {
  auto state = index_steps(steps, timed, counters);
  std::vector<KernelTimingRow> rows;
  if (timed.empty()) return rows;
  std::uint64_t origin = timed.front().start_ns;
  for (const KernelRecord& r : timed) origin = std::min(origin, r.start_ns);
  for (const KernelRecord& r : timed) {
    KernelTimingRow row;
    row.plan = plan;
    row.kernel = r.name;
    row.start_us = static_cast<double>(r.start_ns - origin) / 1000.0;
    row.duration_us = r.duration_us();
    if (r.step_id) {
      StepState& step = state[*r.step_id];
      if (step.label) {
        row.group = step.label->group;
        row.nodes = step.label->nodes;
      }
      attach_bytes(row, step);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace fx::gpu
