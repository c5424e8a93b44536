#include "kernels/executor/profile_pass.h"

#include <algorithm>
#include <functional>
#include <string>

#include "kernels/common/gpu_error.h"
#include "kernels/common/sticky_error.h"
#include "kernels/executor/calibrate.h"
#include "kernels/profile/dram_profiler.h"
#include "kernels/profile/kernel_timer.h"
#include "kernels/profile/timing_rows.h"

namespace fx::gpu {
namespace {

// LaunchInfo::step_id is plan * kPlanStride + step (executor.h).
constexpr std::uint64_t kPlanStride = 1'000'000;

std::uint64_t step_id(std::size_t plan, std::size_t step) { return plan * kPlanStride + step; }

std::vector<PlanStepLabel> step_labels(std::size_t p, const PlanReport& plan) {
  std::vector<PlanStepLabel> labels;
  for (std::size_t s = 0; s < plan.kernels.size(); ++s) {
    const KernelReport& k = plan.kernels[s];
    labels.push_back({step_id(p, s), k.group, k.nodes, static_cast<double>(k.bytes)});
  }
  return labels;
}

std::vector<KernelRecord> records_of_plan(const std::vector<KernelRecord>& all, std::size_t p) {
  std::vector<KernelRecord> out;
  for (const KernelRecord& r : all) {
    if (r.step_id && *r.step_id / kPlanStride == p) out.push_back(r);
  }
  return out;
}

std::vector<TimedKernel> timeline_of_step(const std::vector<KernelRecord>& plan_records, std::uint64_t id) {
  std::vector<TimedKernel> out;
  if (plan_records.empty()) return out;
  const std::uint64_t origin = plan_records.front().start_ns;  // records are sorted by start
  for (const KernelRecord& r : plan_records) {
    if (r.step_id != id) continue;
    out.push_back({r.name, static_cast<double>(r.start_ns - origin) / 1000.0, r.duration_us()});
  }
  return out;
}

std::vector<KernelCounters> not_measured(std::size_t steps, const std::string& reason) {
  std::vector<KernelCounters> out(steps);
  for (std::size_t i = 0; i < steps; ++i) {
    out[i].launch_index = static_cast<int>(i);
    out[i].reason = reason;
  }
  return out;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// Both plans' steps in one measure() call, so one profiler session serves every window of the run.
// `progress(i, total)` before each window, so the pass's cost shows as it goes.
void counters_of_both_plans(DramProfiler& profiler, Executor& executor, const PlanReport& unfused,
                            const PlanReport& fused, const std::function<void(int, int)>& progress,
                            std::vector<KernelCounters> (&out)[2]) {
  const int first = static_cast<int>(unfused.kernels.size());
  const int total = first + static_cast<int>(fused.kernels.size());
  std::vector<KernelCounters> all = profiler.measure(total, [&](int i) {
    progress(i, total);
    if (i < first) {
      executor.launch_step(PlanId::unfused, i);
    } else {
      executor.launch_step(PlanId::fused, i - first);
    }
  });
  for (int i = 0; i < total; ++i) {
    KernelCounters& c = all[static_cast<std::size_t>(i)];
    const bool in_fused = i >= first;
    c.launch_index = in_fused ? i - first : i;
    out[in_fused ? 1 : 0].push_back(std::move(c));
  }
}

}  // namespace

struct ProfilePass::Hooks {
  KernelTimer* timer = nullptr;  // set only during the timing pass
  std::function<void(const std::string&, double, const std::string&)> progress;
  void report(double fraction, const std::string& message) const {
    if (progress) progress("profile", fraction, message);
  }
};

namespace {

// Clears the hooks' timer on every exit, so no later launch pushes onto a destroyed timer.
struct TimerInHooks {
  KernelTimer*& slot;
  TimerInHooks(KernelTimer*& s, KernelTimer& timer) : slot(s) { slot = &timer; }
  ~TimerInHooks() { slot = nullptr; }
  TimerInHooks(const TimerInHooks&) = delete;
  TimerInHooks& operator=(const TimerInHooks&) = delete;
};

double copy_bandwidth(const ProfileSettings& settings, ProfileMeasurements& m) {
  try {
    // Only the copy: the report uses no GEMM rates, and their 8192-cubed GEMMs would cost seconds every run.
    return calibrate_device(settings.copy_bytes, settings.copy_repeat, /*gemm_size=*/0).copy_bandwidth();
  } catch (const GpuError& e) {  // the copy is context for the report; its failure must not end the run...
    if (is_sticky(e)) throw;      // ...unless the context is dead: then nothing after it may be reported
    m.copy_reason = "not measured: " + first_line(e.what());
    return 0.0;
  } catch (const std::exception& e) {
    m.copy_reason = "not measured: " + first_line(e.what());
    return 0.0;
  }
}

}  // namespace

ProfilePass::ProfilePass(RunOptions& options) : hooks_(std::make_shared<Hooks>()) {
  hooks_->progress = options.progress;
  options.before_launch = [h = hooks_, next = options.before_launch](const LaunchInfo& info) {
    if (h->timer) h->timer->push_step(info.step_id);
    if (next) next(info);
  };
  options.after_launch = [h = hooks_, next = options.after_launch](const LaunchInfo& info) {
    if (next) next(info);
    if (h->timer) h->timer->pop_step();
  };
}

ProfilePass::~ProfilePass() = default;
ProfilePass::ProfilePass(ProfilePass&&) noexcept = default;
ProfilePass& ProfilePass::operator=(ProfilePass&&) noexcept = default;

ProfileMeasurements ProfilePass::measure(Executor& executor, const RunReport& report, const ProfileSettings& settings) {
  ProfileMeasurements m;
  const PlanReport* plans[2] = {&report.unfused, &report.fused};
  hooks_->report(0.0, "copy bandwidth");
  if (const double bw = copy_bandwidth(settings, m); bw > 0.0) m.copy_bandwidth = bw;
  executor.prepare();

  // Pass 1, timing. The warm-up launch keeps module loading and library heuristics out of the records.
  hooks_->report(0.3, "timing pass (CUPTI activity records)");
  for (PlanId p : kPlanIds) executor.launch_plan_once(p);
  std::vector<KernelRecord> records;
  {
    KernelTimer timer;
    if (timer.available()) {
      TimerInHooks in_hooks(hooks_->timer, timer);
      for (PlanId p : kPlanIds) executor.launch_plan_once(p);
      records = timer.flush();
      if (const auto dropped = timer.dropped_records()) {
        m.notes.push_back("CUPTI dropped " + std::to_string(dropped) + " activity records: the timeline is incomplete");
      }
      m.timing_source = "CUPTI activity records (one launch per plan after a warm-up)";
    } else {
      m.timing_source = "CUDA events (median of the timed runs)";
      m.timing_reason = timer.reason();
    }
  }  // the timer is gone before the counter pass: the two must not overlap

  // Pass 2, counters: each step alone in its own window, in plan order.
  hooks_->report(0.6, settings.counters ? "counter pass (CUPTI range profiler)" : "counter pass skipped");
  std::vector<KernelCounters> counters[2];
  if (!settings.counters) {
    m.counters_reason = "not measured: --no-profile";
    for (std::size_t p = 0; p < kPlanIds.size(); ++p) counters[p] = not_measured(plans[p]->kernels.size(), m.counters_reason);
  } else {
    DramProfiler profiler(executor.device().ordinal);
    if (!profiler.available()) m.counters_reason = profiler.reason();
    const auto progress = [this](int i, int total) {
      hooks_->report(0.6 + 0.4 * i / total,
                     "counter pass (CUPTI range profiler): step " + std::to_string(i + 1) + " of " + std::to_string(total));
    };
    counters_of_both_plans(profiler, executor, *plans[0], *plans[1], progress, counters);
  }

  for (std::size_t p = 0; p < kPlanIds.size(); ++p) {
    const std::vector<KernelRecord> mine = records_of_plan(records, p);
    PlanMeasurement& pm = m.plans[p];
    for (std::size_t s = 0; s < plans[p]->kernels.size(); ++s) {
      StepMeasurement step;
      step.timeline = timeline_of_step(mine, step_id(p, s));
      if (s < counters[p].size()) step.counters = counters[p][s];
      pm.steps.push_back(std::move(step));
    }
    pm.rows = records.empty() ? rows_from_event_timings(*plans[p], pm)
                              : join_timing_rows(plans[p]->name, step_labels(p, *plans[p]), mine, counters[p]);
  }
  hooks_->report(1.0, "profile done");
  return m;
}

std::vector<KernelTimingRow> rows_from_event_timings(const PlanReport& plan, const PlanMeasurement& measured) {
  std::vector<KernelTimingRow> rows;
  double at_us = 0.0;
  for (std::size_t s = 0; s < plan.kernels.size(); ++s) {
    const KernelReport& k = plan.kernels[s];
    KernelTimingRow row;
    row.plan = plan.name;
    row.kernel = k.name;
    row.group = k.group;
    row.nodes = k.nodes;
    row.start_us = at_us;
    row.duration_us = k.measured_ms * 1000.0;
    row.predicted_bytes = static_cast<double>(k.bytes);
    if (s < measured.steps.size() && measured.steps[s].counters.available) {
      row.bytes_read = measured.steps[s].counters.bytes_read;
      row.bytes_written = measured.steps[s].counters.bytes_written;
    }
    at_us += row.duration_us;
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace fx::gpu
