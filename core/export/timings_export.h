// Measured per-kernel timings and HBM traffic of a plan run, written as CSV (for spreadsheets) or as a Chrome
// trace-event JSON file (opens in Perfetto / chrome://tracing). Pure functions over plain rows: the GPU side
// (kernels/profile) fills the rows, this file only formats them, so it is tested as text without a GPU.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/report/run_report.h"

namespace fx {

// One kernel of one plan, mapped back to the plan step or fusion group that launched it.
struct KernelTimingRow {
  std::string plan;                // "unfused", "fused", ...: one trace process per plan
  std::string kernel;              // kernel name as the GPU ran it (cuBLASLt/cuDNN kernels keep their own names)
  std::string group;               // plan group or step label, e.g. "g3"; empty when the kernel belongs to none
  std::vector<std::string> nodes;  // graph nodes the group computes, in plan order
  double start_us = 0.0;           // relative to the start of the run
  double duration_us = 0.0;
  std::optional<double> bytes_read;       // measured DRAM bytes (dram__bytes_read.sum); absent when not measured
  std::optional<double> bytes_written;    // measured DRAM bytes (dram__bytes_write.sum)
  std::optional<double> predicted_bytes;  // the cost model's read+write bytes for the same group
};

// Header plus one record per row, RFC 4180: CRLF line ends, fields holding a comma, quote, CR or LF are quoted
// with inner quotes doubled. `nodes` is one field joined with ';'. An absent optional is an empty field, never 0,
// so "not measured" cannot be mistaken for "no traffic".
std::string timings_to_csv(const std::vector<KernelTimingRow>& rows);

// A counter sampled over time, e.g. the SM clock NVML read every 10 ms: one counter track in the trace.
struct CounterTrack {
  std::string name;                              // "SM clock"
  std::string unit;                              // "MHz": the key of the value in the counter event's args
  std::vector<std::pair<double, double>> points;  // (time in us, value)
};

// One NVML sample of the GPU while a run timed its plans (a run report's timing.gpu_clocks.timeline rows:
// [ms since the sampling started, SM MHz, W, C]).
struct ClockPoint {
  double ms = 0.0, sm_mhz = 0.0, power_w = 0.0, temperature_c = 0.0;
};
// The samples as the trace's counter tracks: "SM clock" (MHz), "power" (W), "temperature" (C).
std::vector<CounterTrack> clock_tracks(const std::vector<ClockPoint>& samples);
// The samples a run report carries (timing.gpu_clocks.timeline); empty where it has none.
std::vector<ClockPoint> clock_points(const RunReport& report);
// The counter tracks' process in the trace: they come from the timing rounds, the kernels from a later pass.
inline constexpr const char* kClockTrackProcess = "GPU clocks and power over the timing rounds (NVML)";

// Trace-event JSON: {"traceEvents":[...],"displayTimeUnit":"ns"}, one event per line. One pid per plan in
// order of first appearance, named by a process_name metadata event, with its one thread (tid 1) named
// "GPU kernels" by a thread_name event; one complete event ("ph": "X") per row named "group g3: mul+add+relu"
// (the kernel name when the row has no group), args carrying kernel, nodes and bytes ("dram": "not measured"
// when neither byte count is present). Counter tracks ("ph": "C") go in one more process named
// `counter_process`, whose time axis is the counters' own (they may have been sampled over another span).
std::string timings_to_chrome_trace(const std::vector<KernelTimingRow>& rows,
                                    const std::vector<CounterTrack>& counters = {},
                                    const std::string& counter_process = "GPU counters");

}  // namespace fx
