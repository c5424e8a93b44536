// The measured numbers of a run report (`fusion-cli run --json OUT`, schemas/run-report.schema.json) as plain
// values, for the session report and the lessons: core has no Qt, so it reads the report with nlohmann_json.
// The GUI's run panel reads the same format with its own tolerant reader (app/gui/run_report.h) for its views.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/diagnostic.h"

namespace fx {

struct MeasuredKernel {
  std::string name;     // as the GPU ran it
  std::string group;    // the plan group that launched it
  std::string library;  // "generated (NVRTC)", "cuBLASLt", ...
  std::vector<std::string> nodes;
  std::optional<double> measured_ms, predicted_ms;
  std::optional<double> measured_bytes, predicted_bytes;  // DRAM read + write
};

struct MeasuredPlan {
  std::string name;  // "unfused", "fused"
  int kernel_count = 0;
  std::optional<double> measured_ms;  // the plan timed whole ("total_ms")
  std::optional<double> predicted_ms;
  std::optional<double> measured_bytes, predicted_bytes;
  std::vector<MeasuredKernel> kernels;
};

struct RunSummary {
  std::string graph;       // the graph's name
  std::string graph_hash;  // content hash, "" in reports from before it was written
  std::string plan_hash;
  std::string gpu;         // the device's name, "NVIDIA H100 80GB HBM3"
  std::string plan_source;
  std::optional<bool> verified;
  std::optional<double> speedup;  // unfused time / fused time
  std::optional<double> hbm_reduction, hbm_reduction_predicted;
  std::vector<MeasuredPlan> plans;
  const MeasuredPlan* plan(std::string_view name) const;
};

// A completed run (status ok or verification_failed) with its two plans; a GPU-fault report, another format
// or version, or a report without plans is an error located by JSON pointer.
Expected<RunSummary> read_run_summary(std::string_view json_text);

}  // namespace fx
