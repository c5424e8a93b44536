#include "kernels/executor/profile_pass.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include "kernels/common/gpu_error.h"
#include "kernels/common/sticky_error.h"
#include "kernels/executor/calibrate.h"
#include "kernels/profile/counter_windows.h"
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

// The counter pass's result: each plan's counters in step order, and where a step's came from another's window.
struct CounterPass {
  std::vector<KernelCounters> counters[2];
  std::vector<std::optional<SharedCounterWindow>> shared[2];
  std::size_t windows = 0, steps = 0;
};

// Progress of the counter pass: window i of n, and how many steps take a window's numbers.
using CounterProgress = std::function<void(std::size_t i, const CounterWindows& w)>;

// Every step of the run in the order the counter pass launches them, the unfused plan's then the fused plan's,
// with its identity for measurement (Executor::measurement_identities).
struct RunSteps {
  std::vector<std::pair<std::size_t, int>> steps;  // (plan index, step)
  std::vector<std::optional<std::string>> identities;
};

RunSteps run_steps(const Executor& executor) {
  RunSteps r;
  for (std::size_t p = 0; p < kPlanIds.size(); ++p) {
    std::vector<std::optional<std::string>> ids = executor.measurement_identities(kPlanIds[p]);
    for (std::size_t s = 0; s < ids.size(); ++s) {
      r.steps.emplace_back(p, static_cast<int>(s));
      r.identities.push_back(std::move(ids[s]));
    }
  }
  return r;
}

// Each step's counters, copied from its window's, and where a window serves several steps, which one it measured.
CounterPass spread_counters(const RunSteps& r, const CounterWindows& w, const std::vector<KernelCounters>& measured,
                            const PlanReport* const (&plans)[2]) {
  CounterPass out;
  out.windows = w.measured.size();
  out.steps = r.steps.size();
  for (std::size_t t = 0; t < r.steps.size(); ++t) {
    const auto [p, s] = r.steps[t];
    KernelCounters c = measured[w.window[t]];
    c.launch_index = s;
    std::optional<SharedCounterWindow> shared;
    if (w.sharing[t] > 1 && c.available) {
      const auto [sp, ss] = r.steps[w.source[t]];
      shared = SharedCounterWindow{plans[sp]->name, ss, plans[sp]->kernels.at(static_cast<std::size_t>(ss)).name,
                                   w.sharing[t]};
    }
    out.counters[p].push_back(std::move(c));
    out.shared[p].push_back(std::move(shared));
  }
  return out;
}

// Both plans' steps in one measure() call, so one profiler session serves every window of the run: one window
// per distinct step (counter_windows.h), the first of its identity in launch order. The steps not measured are
// still launched, in order, before the next window's flush: every measured step reads what a plan run gives it.
CounterPass counters_of_both_plans(DramProfiler& profiler, Executor& executor, const PlanReport* const (&plans)[2],
                                   const CounterProgress& progress) {
  const RunSteps r = run_steps(executor);
  const CounterWindows w = plan_counter_windows(r.identities);
  const auto launch = [&](std::size_t t) { executor.launch_step(kPlanIds[r.steps[t].first], r.steps[t].second); };
  std::size_t next = 0;  // the next step to launch
  const std::vector<KernelCounters> measured = profiler.measure(
      static_cast<int>(w.measured.size()),
      [&](int i) {
        const std::size_t t = w.measured[static_cast<std::size_t>(i)];
        progress(static_cast<std::size_t>(i), w);
        launch(t);
        next = t + 1;
      },
      [&](int i) {
        for (; next < w.measured[static_cast<std::size_t>(i)]; ++next) launch(next);
      });
  return spread_counters(r, w, measured, plans);
}

std::string windows_text(const CounterWindows& w) {
  return std::to_string(w.measured.size()) + " distinct kernels for " + std::to_string(w.source.size()) + " steps, " +
         std::to_string(w.reused()) + " reuse a measurement";
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

  // Pass 2, counters: each distinct step alone in its own window, in plan order.
  hooks_->report(0.6, settings.counters ? "counter pass (CUPTI range profiler)" : "counter pass skipped");
  CounterPass pass;
  if (!settings.counters) {
    m.counters_reason = "not measured: --no-profile";
    for (std::size_t p = 0; p < kPlanIds.size(); ++p) {
      pass.counters[p] = not_measured(plans[p]->kernels.size(), m.counters_reason);
    }
  } else {
    DramProfiler profiler(executor.device().ordinal);
    if (!profiler.available()) m.counters_reason = profiler.reason();
    const auto progress = [this](std::size_t i, const CounterWindows& w) {
      hooks_->report(0.6 + 0.4 * static_cast<double>(i) / static_cast<double>(w.measured.size()),
                     "counter pass (CUPTI range profiler): kernel " + std::to_string(i + 1) + " of " +
                         windows_text(w));
    };
    pass = counters_of_both_plans(profiler, executor, plans, progress);
    const bool measured = std::any_of(std::begin(pass.counters), std::end(pass.counters), [](const auto& plan) {
      return std::any_of(plan.begin(), plan.end(), [](const KernelCounters& c) { return c.available; });
    });
    if (measured) m.counter_windows = pass.windows;
    if (measured && pass.windows < pass.steps) {
      m.notes.push_back("counter pass: " + std::to_string(pass.windows) + " windows for " + std::to_string(pass.steps) +
                        " steps; identical steps (same kernel, same problem) take the numbers of the one measured");
    }
  }

  for (std::size_t p = 0; p < kPlanIds.size(); ++p) {
    const std::vector<KernelRecord> mine = records_of_plan(records, p);
    PlanMeasurement& pm = m.plans[p];
    for (std::size_t s = 0; s < plans[p]->kernels.size(); ++s) {
      StepMeasurement step;
      step.timeline = timeline_of_step(mine, step_id(p, s));
      if (s < pass.counters[p].size()) step.counters = pass.counters[p][s];
      if (s < pass.shared[p].size()) step.shared_window = pass.shared[p][s];
      pm.steps.push_back(std::move(step));
    }
    pm.rows = records.empty() ? rows_from_event_timings(*plans[p], pm)
                              : join_timing_rows(plans[p]->name, step_labels(p, *plans[p]), mine, pass.counters[p]);
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
