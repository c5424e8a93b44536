// A run report: what `fusion-cli run --json OUT` writes after running the unfused and the fused plan on a
// GPU. Read tolerantly (several spellings of each field) so reports from other builds still open.
#pragma once

#include <QJsonObject>
#include <QString>
#include <optional>
#include <vector>

#include "core/export/timings_export.h"

namespace fx::app {

struct KernelRun {
  QString name;
  QString group;
  // How it ran: "generated (NVRTC)", "cuBLASLt", "cuDNN", "CUB"; and the library's path ("cuBLASLt RELU_BIAS
  // epilogue, TF32 tensor cores") or a generated kernel's layout and why it was chosen ("2 elements per thread
  // (8-byte accesses): the fastest of 2 layouts timed here in 15 rounds (...)"). Empty in reports that do not say.
  QString library, path;
  QString how() const;  // library and path on one line
  std::vector<QString> nodes;
  double start_us = 0;
  double time_us = 0;                     // measured
  std::optional<double> predicted_us;
  std::optional<double> bytes_read, bytes_written;  // measured DRAM bytes
  std::optional<double> predicted_bytes;
  std::optional<double> flops;
  bool bytes_mismatch = false;   // the report's own flag: measured bytes off the prediction by more than 10%
  QString mismatch_reason;       // the report's explanation of it, where it gives one
  std::optional<double> measured_bytes() const;
};

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

struct PlanRun {
  QString name;                           // "unfused", "fused"
  std::vector<KernelRun> kernels;
  // The plan's measured time ("total_ms"): fusion-cli times a plan whole, with no event between its steps, and
  // each step in separate runs with an event after every step, so the steps' sum (steps_us) is a little more.
  std::optional<double> measured_us;
  double steps_us() const;  // the sum of the steps' times
  double total_us() const;  // measured_us, else the steps' sum (reports that do not give the plan's time)
  std::optional<double> total_bytes() const;
  std::vector<GroupCheck> group_checks() const;  // in the order the groups' first kernels ran
};

struct ComputeRoof {
  QString label;  // "FP32", "TF32 tensor cores"
  double flops = 0;
};

struct RunReport {
  QString graph;
  QString device;
  // What ties the report to a graph and a plan (fusion-cli run writes them): content hashes, and the plan's
  // fusion section so that a viewer can load the plan that was measured.
  QString graph_hash, plan_hash;
  QJsonObject fusion;
  double hbm_bandwidth = 0;               // bytes/s, 0 when unknown: the datasheet peak of the device
  double copy_bandwidth = 0;              // bytes/s measured by a copy kernel on the run's GPU, 0 when unknown
  double peak_flops = 0;                  // FLOP/s, 0 when unknown: the highest compute roof
  std::vector<ComputeRoof> compute_roofs;  // the device's peaks (datasheet preset named by the report)
  QString peak_device;                    // the preset the peaks come from ("H100 SXM")
  std::optional<double> hbm_reduction, hbm_reduction_predicted;  // unfused bytes / fused bytes
  std::optional<bool> verified;           // the fused plan's outputs matched the unfused plan's
  std::vector<PlanRun> plans;
  std::optional<double> speedup;          // unfused time / fused time
  QString clocks;       // the GPU's clocks while the plans were timed, in words ("timing"/"gpu_clocks"/"summary")
  QString clocks_note;  // why they were not read ("timing"/"gpu_clocks"/"note"), where they were not
  QString timing;       // how the plans were timed, in words (describe_timing of "timing"); "" where not said
  const PlanRun* plan(const QString& name) const;
};

// Whether a report belongs to the open graph and plan (checked by name and content hashes).
enum class ReportMatch { same, other_plan, other_graph, unchecked };
struct ReportCheck {
  ReportMatch match = ReportMatch::unchecked;
  QString message;  // for people; empty for `same`
};
ReportCheck check_report(const RunReport& report, const QString& graph_name, const QString& graph_hash,
                         const QString& plan_hash);

// One line: measured vs predicted HBM reduction, speedup, verified yes/no ("" when the report says none).
QString summary_line(const RunReport& report);

// fusion-cli run's "timing" in words: "median of 153 runs of each plan after 38 warm-up runs, a 256 MB flush
// before each; the GPU idle 1000 ms before"; "" where it gives no run count.
QString describe_timing(const QJsonObject& timing);

// The format and version fusion-cli run writes (schemas/run-report.schema.json).
inline constexpr const char* kRunReportFormat = "fusion-explorer/run";
inline constexpr int kRunReportVersion = 1;
// Why a report cannot be read, when it names another format or version ("" when it does not); a report that
// names neither is read as version 1.
QString unreadable_version(const QJsonObject& root);

// Parses a report; on failure returns nullopt and sets error (another version: unreadable_version's message).
std::optional<RunReport> parse_run_report(const QByteArray& json, QString* error);

// fusion-cli run's exit code for a GPU fault (app/cli/command.h, kGpuFault): a kernel faulted, the child's
// CUDA context died and the child stopped; its --json report then has "status": "gpu_fault".
inline constexpr int kCliGpuFaultExit = 4;

// What a "gpu_fault" report says (kernels/executor/report_json.h, fault_report_to_json): no measurements, only
// what failed and where.
struct RunFault {
  QString graph, device;
  QString error;    // "cudaErrorIllegalAddress"
  qint64 code = 0;  // 700
  QString message;  // CUDA's text: "an illegal memory access was encountered"
  QString phase;    // "verification", "timing", ...
  QString plan, kernel, group;  // empty when no plan step had been launched
  int step = -1;
  QString attribution;  // "exact", "last_launched" or "none"
  QString describe() const;  // a few lines for people
};
// The fault of a report whose "status" is "gpu_fault"; nullopt for any other report or text.
std::optional<RunFault> parse_run_fault(const QByteArray& json);
std::vector<KernelTimingRow> timing_rows(const RunReport& report);

// One `--progress` line: {"step": 3, "total": 10, "message": "..."}; nullopt when it is not one.
struct Progress {
  int step = 0, total = 0;
  QString message;
};
std::optional<Progress> parse_progress_line(const QString& line);

}  // namespace fx::app
