// How the GUI shows a run report (core/report/run_report.h, what `fusion-cli run --json OUT` writes): reading
// it through core's reader, which refuses another format or version, and the presentation built on it (a
// group's measured numbers against its prediction, the roofs, one-line summaries), with QString at the edge.
#pragma once

#include <QByteArray>
#include <QString>
#include <optional>
#include <vector>

#include "core/export/timings_export.h"
#include "core/report/run_report.h"

namespace fx::app {

// The report in `json`, completed or stopped by a GPU fault; on failure nullopt and `error` says why, with the
// JSON pointer of the offending value (another version: the version found and the one this program reads).
std::optional<RunReport> read_report(const QByteArray& json, QString* error);

// How a step ran on one line: its library and path ("cuBLASLt RELU_BIAS epilogue, TF32 tensor cores") or a
// generated kernel's layout and why it was chosen.
QString how(const KernelReport& k);
// The FLOPs the counter pass credits a step with (its FLOP/s over its time); nullopt where not measured.
std::optional<double> kernel_flops(const KernelReport& k);

// A group's measured numbers against its prediction (a group may run as several kernels: their sum).
struct GroupCheck {
  QString group;
  int kernels = 0;
  double measured_us = 0;
  std::optional<double> predicted_us, measured_bytes, predicted_bytes;
  bool report_flag = false;  // a kernel of the group carries the report's mismatch flag
  QString reason;            // the report's explanation, where it gives one
  // "measured 332 MiB vs 129 MiB predicted; time +35%": empty when both are within kMismatchTolerance.
  QString mismatch() const;
  bool comparable() const;  // a prediction and a measurement of the time or of the bytes to compare
};
// Predicted and measured differ when they are more than 10% apart (the report's own tolerance for bytes).
inline constexpr double kMismatchTolerance = 0.10;
// In the order the groups' first kernels ran.
std::vector<GroupCheck> group_checks(const PlanReport& plan);

// The roofs a roofline is drawn under: the datasheet peaks of the device preset the report names (its profile's
// peak device, else the GPU's name), and the copy bandwidth the run measured.
struct ComputeRoof {
  QString label;  // "FP32", "TF32 tensor cores"
  double flops = 0;
};
struct Roofs {
  QString peak_device;     // the preset the peaks come from ("H100 SXM"); empty when none is known
  double hbm_bandwidth = 0;   // bytes/s, 0 when unknown
  double copy_bandwidth = 0;  // bytes/s measured by a copy kernel on the run's GPU, 0 when unknown
  double peak_flops = 0;      // FLOP/s: the highest compute roof, 0 when unknown
  std::vector<ComputeRoof> compute_roofs;
};
Roofs roofs_of(const RunReport& report);

// Whether a report belongs to the open graph and plan (checked by name and content hashes).
enum class ReportMatch { same, other_plan, other_graph, unchecked };
struct ReportCheck {
  ReportMatch match = ReportMatch::unchecked;
  QString message;  // for people; empty for `same`
};
ReportCheck check_report(const RunReport& report, const QString& graph_name, const QString& graph_hash,
                         const QString& plan_hash);

// One line: measured vs predicted HBM reduction, speedup, verified yes/no.
QString summary_line(const RunReport& report);
// "median of 153 runs of each plan after 38 warm-up runs, a 256 MB flush before each; the GPU idle 1000 ms
// before".
QString describe_timing(const RunTiming& timing);
// What a run stopped by a GPU fault says, in a few lines for people: what failed, where, and that nothing was
// measured.
QString describe_fault(const RunFault& fault);
// The report's device name, or "an unnamed GPU".
QString device_name(const RunReport& report);

// fusion-cli run's exit code for a GPU fault (app/cli/command.h, kGpuFault): a kernel faulted, the child's
// CUDA context died and the child stopped; its --json report then has "status": "gpu_fault".
inline constexpr int kCliGpuFaultExit = 4;

// Both plans' kernels as the timing exports' rows, laid end to end in each plan.
std::vector<KernelTimingRow> timing_rows(const RunReport& report);

// One `--progress` line: {"step": 3, "total": 10, "message": "..."}; nullopt when it is not one.
struct Progress {
  int step = 0, total = 0;
  QString message;
};
std::optional<Progress> parse_progress_line(const QString& line);

}  // namespace fx::app
