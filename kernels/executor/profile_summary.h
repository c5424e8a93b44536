// What the measurement passes of a run found (kernels/executor/profile_pass.h collects it) and what the report
// says about it: measured DRAM bytes next to the cost model's, achieved bandwidth as a fraction of the device's
// peak and of its measured copy bandwidth, FLOP/s, plan totals, and the measured HBM traffic reduction of the
// fused plan over the unfused one. Everything here is arithmetic over plain values: no CUDA, no CUPTI, so it is
// tested without a GPU. A number that was not measured stays absent and carries a reason, never a zero.
#pragma once

#include <optional>
#include <string>
#include <vector>


#include "core/cost/device_description.h"
#include "core/export/timings_export.h"
#include "core/fusion/plan.h"
#include "kernels/executor/executor.h"
#include "kernels/profile/dram_profiler.h"

namespace fx::gpu {

// Measured and predicted differ by more than this fraction: the report flags the kernel and says why.
inline constexpr double kBytesMismatchTolerance = 0.10;

// One CUDA kernel of a step as the timing pass saw it (CUPTI activity records): core's TimedKernel.

// One executor step (a report "kernel": a generated kernel or one library call, which may launch several).
struct StepMeasurement {
  std::vector<TimedKernel> timeline;  // timing pass; empty when CUPTI timing was not available
  KernelCounters counters;            // counter pass; available = false with a reason when not measured
  // Where `counters` were measured once for several identical steps (kernels/profile/counter_windows.h).
  std::optional<SharedCounterWindow> shared_window;
};

struct PlanMeasurement {
  std::vector<StepMeasurement> steps;  // in step order, as RunReport's PlanReport::kernels
  std::vector<KernelTimingRow> rows;   // for the CSV and Chrome-trace exports
};

struct ProfileMeasurements {
  std::string timing_source;    // "CUPTI activity records" or "CUDA events"
  std::string timing_reason;    // why CUPTI timing was not used; empty when it was
  std::string counters_reason;  // why the counter pass did not run ("--no-profile", a CUPTI refusal); empty when it ran
  std::optional<double> copy_bandwidth;  // bytes/s, read + write, measured in this run
  std::string copy_reason;               // why copy_bandwidth is absent
  std::vector<std::string> notes;        // e.g. CUPTI dropped records
  std::size_t counter_windows = 0;       // windows the counter pass measured (0 where it measured nothing)
  PlanMeasurement plans[2];              // unfused, fused
};

struct KernelProfile {
  std::string name, group, library;
  double predicted_bytes = 0.0;  // the cost model's count: every input read once, every output written once
  double time_ms = 0.0;          // CUDA-event median of the timed runs
  std::optional<double> bytes_read, bytes_written, l2_bytes_written;  // measured; absent: see not_measured
  std::string not_measured;
  int cuda_kernels = 0;  // kernels the counter pass saw for this step
  std::optional<double> measured_over_predicted;
  std::optional<double> achieved_bandwidth;  // measured bytes / time_ms, bytes/s
  std::optional<double> fraction_of_peak, fraction_of_copy;
  std::optional<double> flops_per_s;  // the group's FLOPs over the time of the group's kernels
  bool mismatch = false;              // |measured / predicted - 1| > kBytesMismatchTolerance
  std::string mismatch_reason;
  std::vector<std::string> notes;
  std::vector<TimedKernel> timeline;
  std::optional<SharedCounterWindow> shared_window;  // measured once for several identical steps
};

struct PlanProfile {
  std::string name;
  std::vector<KernelProfile> kernels;
  double predicted_bytes = 0.0;                     // the plan's total, PlanReport::bytes
  double time_ms = 0.0;                             // CUDA-event median of whole-plan runs
  std::optional<double> bytes_read, bytes_written;  // sums; absent unless every kernel was measured
  std::string not_measured;
  std::optional<double> measured_over_predicted, achieved_bandwidth, fraction_of_peak, fraction_of_copy;
  double flops = 0.0;
  std::optional<double> flops_per_s;
  bool mismatch = false;
  std::optional<double> measured_bytes() const {
    if (!bytes_read || !bytes_written) return std::nullopt;
    return *bytes_read + *bytes_written;
  }
};

struct ProfileSummary {
  std::string timing_source, timing_reason, counters_reason;
  std::string peak_device;      // the DeviceDescription preset the peak comes from
  double peak_bandwidth = 0.0;  // bytes/s
  std::optional<double> copy_bandwidth;
  std::string copy_reason;
  std::vector<std::string> notes;
  PlanProfile plans[2];
  std::optional<double> hbm_traffic_reduction;  // measured unfused bytes / fused bytes
  std::string reduction_reason;                 // why it is absent
  std::optional<double> predicted_reduction;    // the same from the cost model
};

// `plans` are the unfused and fused plans the run executed (for each group's FLOPs); `l2_bytes` the device's L2.
ProfileSummary summarize_profile(const RunReport& report, const ProfileMeasurements& measured, const Plan& unfused,
                                 const Plan& fused, const DeviceDescription& peak, std::int64_t l2_bytes);

// Adds the summary to the report: `measured` on every kernel and plan, the profile and the HBM traffic reduction.
void add_profile(RunReport& report, const ProfileSummary& summary);

// Why measured bytes differ from the prediction, for people; empty when within the tolerance.
std::string explain_bytes_mismatch(const KernelProfile& k, std::int64_t l2_bytes);

}  // namespace fx::gpu
