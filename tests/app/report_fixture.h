// Run reports for the GUI's tests, made with core's type and written by its writer, so every test file is a
// report of the one format and version fusion-cli writes.
#pragma once

#include <QString>
#include <QTemporaryDir>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/graph/graph_io.h"
#include "core/report/run_report.h"

namespace fx::app::test {

// A kernel as a test states it (a constructor, so that the tests may leave out the trailing fields).
struct KernelSpec {
  KernelSpec(std::string name_, std::string group_, std::vector<std::string> nodes_, double measured_us_,
             std::optional<double> predicted_us_ = {}, std::optional<double> bytes_read_ = {},
             std::optional<double> bytes_written_ = {}, std::int64_t predicted_bytes_ = 0, bool mismatch_ = false,
             std::optional<double> flops_per_s_ = {}, std::string library_ = {}, std::string path_ = {})
      : name(std::move(name_)), group(std::move(group_)), nodes(std::move(nodes_)), measured_us(measured_us_),
        predicted_us(predicted_us_), bytes_read(bytes_read_), bytes_written(bytes_written_),
        predicted_bytes(predicted_bytes_), mismatch(mismatch_), flops_per_s(flops_per_s_),
        library(std::move(library_)), path(std::move(path_)) {}
  std::string name, group;
  std::vector<std::string> nodes;
  double measured_us = 0;
  std::optional<double> predicted_us;
  std::optional<double> bytes_read, bytes_written;  // counters; absent: not measured
  std::int64_t predicted_bytes = 0;
  bool mismatch = false;
  std::optional<double> flops_per_s;
  std::string library, path;
};

inline KernelReport kernel(const KernelSpec& s) {
  KernelReport k;
  k.name = s.name;
  k.group = s.group;
  k.nodes = s.nodes;
  k.measured_ms = s.measured_us / 1e3;
  if (s.predicted_us) k.group_predicted_ms = *s.predicted_us / 1e3;
  k.group_predicted_bytes = s.predicted_bytes;
  k.library = s.library;
  k.path = s.path;
  MeasuredTraffic m;
  m.bytes_read = s.bytes_read;
  m.bytes_written = s.bytes_written;
  if (!s.bytes_read) m.reason = "not measured: --no-profile";
  m.predicted_bytes = static_cast<double>(s.predicted_bytes);
  m.mismatch = s.mismatch;
  m.flops_per_s = s.flops_per_s;
  k.measured = m;
  return k;
}

// Both plans, each timed whole at the sum of its kernels unless `total_ms` says otherwise.
inline RunReport two_plans(const std::string& graph, const std::vector<KernelSpec>& unfused,
                           const std::vector<KernelSpec>& fused) {
  RunReport r;
  r.graph = graph;
  r.device = RunDevice{"NVIDIA H100 80GB HBM3", "sm_90", 132};
  r.verified = true;
  for (auto [plan, specs, name] : {std::tuple{&r.unfused, &unfused, "unfused"}, std::tuple{&r.fused, &fused, "fused"}}) {
    plan->name = name;
    for (const KernelSpec& s : *specs) {
      plan->kernels.push_back(kernel(s));
      plan->total_ms += s.measured_us / 1e3;
    }
  }
  r.speedup = r.fused.total_ms > 0 ? r.unfused.total_ms / r.fused.total_ms : 0;
  r.timing.repeat = 20;
  r.timing.warmup = 3;
  return r;
}

inline QString write_report(const QTemporaryDir& dir, const RunReport& report,
                            const QString& name = QStringLiteral("report.json")) {
  const QString path = dir.filePath(name);
  if (!write_text_file_atomic(path.toStdString(), to_json(report).dump(2))) return {};
  return path;
}

}  // namespace fx::app::test
