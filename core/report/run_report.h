// The run report: what `fusion-cli run --json OUT` writes after running a graph's unfused and fused plans on a
// GPU (schemas/run-report.schema.json). One type with one writer and one reader: the executor fills it, and the
// CLI, the GUI, the session report, the lessons and the exports read it. Plain values, no CUDA, no Qt. Times are
// milliseconds unless a field's name says otherwise; what a run did not measure is absent, never a zero.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/graph/diagnostic.h"

namespace fx {

inline constexpr const char* kRunReportFormat = "fusion-explorer/run";
inline constexpr int kRunReportVersion = 1;

// The GPU the run used ("device"); the executor's query of the driver fills it.
struct RunDevice {
  std::string name;
  std::string arch;  // "sm_90"
  int sm_count = 0;
  std::int64_t total_memory_bytes = 0, free_memory_bytes = 0;
  double clock_mhz = 0, memory_clock_mhz = 0;
  int memory_bus_bits = 0;
  std::int64_t l2_bytes = 0;
  bool operator==(const RunDevice&) const = default;
};

// One CUDA kernel of a step as the CUPTI timing pass saw it.
struct TimedKernel {
  std::string name;
  double start_us = 0.0;  // from the plan's first kernel in the timing pass
  double duration_us = 0.0;
  bool operator==(const TimedKernel&) const = default;
};

// Where a kernel's counters come from when the counter pass measured one window for several identical steps (the
// same kernel on the same problem moves the same DRAM bytes from a cold L2: docs/measurement.md): the step it
// measured, in this run, and how many steps share that window's numbers.
struct SharedCounterWindow {
  std::string plan;    // "unfused" / "fused": the plan of the measured step
  int step = 0;        // its index in that plan's kernels
  std::string kernel;  // its name
  int steps = 0;       // the steps sharing the window, the measured one included (2 or more)
  bool operator==(const SharedCounterWindow&) const = default;
};

// What the counter pass measured of a kernel or a whole plan ("measured"), next to the cost model's bytes.
// Without counters, bytes_read and bytes_written are absent (written "not measured") and `reason` says why.
struct MeasuredTraffic {
  std::optional<double> bytes_read, bytes_written;
  std::string reason;
  double predicted_bytes = 0;
  std::optional<double> measured_over_predicted;
  bool mismatch = false;        // measured off the prediction by more than 10%
  std::string mismatch_reason;  // why, for people (a kernel's)
  std::optional<double> achieved_bytes_per_s, fraction_of_peak_bandwidth, fraction_of_copy_bandwidth;
  std::optional<double> flops;  // a plan's FLOPs
  std::optional<double> flops_per_s;
  // A kernel's only: L2 writes, the CUDA kernels its step launched, notes, and the CUPTI timeline.
  std::optional<double> l2_bytes_written;
  std::optional<int> cuda_kernels;
  std::vector<std::string> notes;
  std::vector<TimedKernel> timeline;
  // A kernel's only: set where its counters are shared with identical steps (its own window or another's).
  std::optional<SharedCounterWindow> shared_window;
  // True where this kernel's numbers were measured in another step's window.
  bool reused_measurement(const std::string& plan, int step) const {
    return shared_window && (shared_window->plan != plan || shared_window->step != step);
  }
  std::optional<double> bytes() const {  // DRAM read + written, where both were measured
    if (!bytes_read || !bytes_written) return std::nullopt;
    return *bytes_read + *bytes_written;
  }
  bool operator==(const MeasuredTraffic&) const = default;
};

// What a shared window means for step `step` of plan `plan`, for people: "bytes measured once for 4 identical
// steps: same as step 3 of the fused plan (fx_g_relu)", or, for the measured step, that its window serves others.
std::string shared_window_text(const SharedCounterWindow& window, const std::string& plan, int step);

// The library of a kernel Fusion Explorer ships compiled ahead of time (the TF32 flash attention kernel).
inline constexpr const char* kBuiltInKernelLibrary = "Fusion Explorer (nvcc)";

// One step of a plan: a generated kernel or one library call (which may launch several CUDA kernels).
struct KernelReport {
  std::string name, group, kind, library;  // "generated (NVRTC)", "cuBLASLt", "cuDNN", "CUB", kBuiltInKernelLibrary
  // Library calls: "cuBLASLt RELU_BIAS epilogue, TF32 tensor cores", the cuDNN algorithm; generated kernels:
  // the layout over threads and, when layouts were timed, the times behind the choice.
  std::string path;
  std::vector<std::string> nodes;
  std::int64_t bytes = 0;                    // minimum traffic: inputs read once, outputs written once
  std::optional<double> group_predicted_ms;  // the cost model's time for the whole group
  std::int64_t group_predicted_bytes = 0;
  std::string tuned_at;  // where its layout or configuration came from the tuning cache: when it was tuned
  double measured_ms = 0;                    // median over the timed runs
  std::optional<MeasuredTraffic> measured;   // the counter pass's numbers; absent where it did not run
  double measured_gbps() const { return measured_ms > 0 ? static_cast<double>(bytes) / (measured_ms * 1e6) : 0.0; }
  std::optional<double> measured_bytes() const { return measured ? measured->bytes() : std::nullopt; }
  bool operator==(const KernelReport&) const = default;
};

// A group the plan runs as more than one kernel (a library call and the epilogue it cannot take, a convolution
// converted around, a horizontal GEMM run as its parts...): the plan says so before it runs, never silently.
struct SplitGroup {
  std::string group;
  int kernels = 0;
  std::vector<std::string> why;  // the plan's notes about the group
  bool operator==(const SplitGroup&) const = default;
};

struct PlanReport {
  std::string name;  // "unfused" / "fused"
  std::vector<KernelReport> kernels;
  std::vector<std::string> notes;  // groups run as several kernels, and why
  std::vector<SplitGroup> split_groups;
  double total_ms = 0;             // median of whole-plan times (no event between the steps)
  double min_ms = 0, max_ms = 0;
  double stepped_ms = 0;           // median of the runs timing each step (an event after every step)
  std::optional<double> graph_ms;  // median of CUDA-graph replays
  double predicted_ms = 0;
  std::int64_t bytes = 0;          // predicted ("predicted_bytes")
  std::optional<MeasuredTraffic> measured;
  std::optional<double> measured_bytes() const { return measured ? measured->bytes() : std::nullopt; }
  bool operator==(const PlanReport&) const = default;
};

struct OutputCheck {
  std::string name;
  std::string dtype;
  double rel_error = 0;   // ||fused - unfused|| / ||unfused||; NaN (null) where it could not be computed
  double threshold = 0;
  std::int64_t nan_count = 0;  // NaN in the fused output where the unfused has none, or any NaN at all
  bool passed = false;
  bool operator==(const OutputCheck&) const = default;
};

// What the GPU's clocks did while a timing ran ("gpu_clocks"): absent numbers where nothing was read.
struct ClockReading {
  int samples = 0, busy_samples = 0;
  std::optional<double> sm_mhz_median, sm_mhz_min, sm_mhz_max, max_sm_mhz;
  std::optional<double> power_w_max, power_limit_w, temperature_c_max;
  std::optional<std::vector<std::string>> held_back_by;
  std::string summary;  // the line fusion-cli prints
  std::string note;     // why the clocks were not read ("" when they were)
  // Every sample, idle ones included: [ms since sampling started, SM MHz, power W, temperature C].
  std::vector<std::array<double, 4>> timeline;
  bool operator==(const ClockReading&) const = default;
};

// How the plans were timed ("timing"): the protocol asked for and the rounds it came to.
struct RunTiming {
  std::string preset;  // "interactive", "do_bench", "custom"
  int repeat = 0, warmup = 0;  // 0 timed rounds: a report that does not say how it timed
  std::optional<double> warmup_ms, repeat_ms, round_ms, rest_ms;  // absent: the protocol asked for none
  double tuning_rest_ms = 0;
  bool cold_l2 = false;
  std::string layouts;  // "timed" (autotune), "default", or "forced K"
  std::int64_t placement = 0;
  std::int64_t placement_gap_bytes = 0;
  std::string protocol;  // in words
  std::optional<ClockReading> gpu_clocks, graph_gpu_clocks;
  bool operator==(const RunTiming&) const = default;
};

// The measurement passes' settings and the device's peaks ("profile").
struct RunProfile {
  std::string timing_source;  // "CUPTI activity records" or "CUDA events"
  std::string timing_reason;  // why CUPTI timing was not used
  std::string counters;       // "measured", or why the counter pass did not run
  std::string peak_device;    // the datasheet preset the peaks come from ("H100 SXM")
  double peak_bandwidth_bytes_per_s = 0;
  std::optional<double> copy_bandwidth_bytes_per_s;
  std::string copy_bandwidth_reason;
  std::vector<std::string> notes;
  bool operator==(const RunProfile&) const = default;
};

// Where a run stopped on a GPU fault ("fault"): the error and the step it is attributed to.
struct RunFault {
  std::string error;  // "cudaErrorIllegalAddress"
  std::int64_t code = 0;
  std::string message, detected_by, phase;
  std::optional<std::string> plan;  // absent when no plan step had been launched
  std::optional<int> step;
  std::optional<std::string> kernel, group;
  std::string attribution;  // "exact", "last_launched" or "none"
  std::string summary;
  bool operator==(const RunFault&) const = default;
};

struct RunReport {
  // A run that stopped on a GPU fault has a fault and nothing measured (no plans, no timing); a completed one
  // has no fault. "status" is derived: "gpu_fault", else "ok" or "verification_failed" from `verified`.
  std::optional<RunFault> fault;
  std::string graph, graph_hash, plan_hash, plan_source;
  nlohmann::json fusion;            // the measured plan's "fusion" section, so a viewer can load it; null if absent
  std::optional<RunDevice> device;  // absent in a fault report where the device could not be queried
  PlanReport unfused, fused;
  double speedup = 0;  // unfused total / fused total
  bool verified = false;
  std::vector<OutputCheck> checks;
  // Each plan's outputs against the float64 reference, named "unfused: y" / "fused: y"; their failure fails
  // `verified`. Empty when the reference did not run, and then `reference_note` says why.
  std::vector<OutputCheck> reference_checks;
  std::string reference_note;
  RunTiming timing;
  int kernels_compiled = 0, cache_hits = 0;
  // NVRTC's time summed over the kernels compiled, and the wall time the run waited for them: compiled several
  // at once, the sum is larger.
  double compile_seconds = 0, compile_wall_seconds = 0;
  std::string tuning_cache;                  // the tuning cache's folder, or why none was used
  int tuned_steps = 0, reused_steps = 0;     // choices timed in this run, and taken from the tuning cache
  std::vector<std::string> tuning_warnings;  // the cache's: a damaged entry, a folder that cannot be written
  std::vector<std::pair<std::string, double>> stages_s;  // fusion-cli's wall time by stage, in order
  std::int64_t device_bytes = 0;                         // allocated for the run
  std::optional<RunProfile> profile;                     // the measurement passes, where they ran
  std::optional<double> hbm_traffic_reduction;           // measured unfused bytes / fused bytes
  std::string hbm_traffic_reduction_reason;              // why it is absent
  std::optional<double> hbm_traffic_reduction_predicted;

  bool completed() const { return !fault.has_value(); }
  std::string status() const { return fault ? "gpu_fault" : verified ? "ok" : "verification_failed"; }
  std::array<const PlanReport*, 2> plans() const { return {&unfused, &fused}; }
  const PlanReport* plan(std::string_view name) const;  // "unfused" / "fused"; null for another name
  bool operator==(const RunReport&) const = default;
};

// The report as fusion-cli writes it; a fault report holds only the fault, the device and what was run.
nlohmann::ordered_json to_json(const RunReport& report);
nlohmann::ordered_json to_json(const RunDevice& device);
nlohmann::ordered_json to_json(const ClockReading& clocks);

// Reads a report of this format and version, completed or stopped by a GPU fault. Another format or version is
// refused (naming the one found and the one read), as is a value of the wrong type or a missing required field;
// every error is located by JSON pointer.
Expected<RunReport> read_run_report(std::string_view json_text);
Expected<RunReport> run_report_from_json(const nlohmann::json& document);

}  // namespace fx
