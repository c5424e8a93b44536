#include "app/cli/run_profile.h"

#ifdef FX_HAVE_CUDA

#include <iomanip>
#include <iostream>
#include <sstream>
#include <utility>
#include <vector>

#include "app/cli/cli_io.h"
#include "core/export/timings_export.h"
#include "core/graph/graph_io.h"
#include "core/graph/shape.h"

namespace fx::cli {
namespace {

std::string fixed(double v, int digits) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

std::string ratio_text(const std::optional<double>& v) { return v ? fixed(*v, 2) + "x" : "-"; }

std::string fraction_text(const std::optional<double>& v, const char* of) {
  return v ? fixed(*v, 2) + " of " + of : "";
}

void print_kernel(std::ostream& os, const gpu::KernelProfile& k) {
  os << "  " << std::left << std::setw(34) << k.name << std::right;
  if (k.bytes_read && k.bytes_written) {
    os << " read " << std::setw(10) << format_bytes(*k.bytes_read) << "  written " << std::setw(10)
       << format_bytes(*k.bytes_written);
  } else {
    os << " " << std::setw(38) << std::left << "not measured" << std::right;
  }
  os << "  predicted " << std::setw(10) << format_bytes(k.predicted_bytes) << "  " << std::setw(6)
     << ratio_text(k.measured_over_predicted);
  if (k.achieved_bandwidth) {
    os << "  " << fixed(*k.achieved_bandwidth / 1e12, 2) << " TB/s " << fraction_text(k.fraction_of_peak, "peak");
    if (k.fraction_of_copy) os << ", " << fraction_text(k.fraction_of_copy, "copy");
  }
  os << "\n";
  if (k.mismatch) os << "    DIFFERS >10%: " << k.mismatch_reason << "\n";
  if (!k.bytes_read && !k.not_measured.empty()) os << "    " << k.not_measured << "\n";
  for (const std::string& n : k.notes) os << "    note: " << n << "\n";
}

void print_plan(std::ostream& os, const gpu::PlanProfile& p) {
  os << p.name << " plan, DRAM traffic: ";
  if (const auto measured = p.measured_bytes()) {
    os << "measured " << format_bytes(*measured) << " (read " << format_bytes(*p.bytes_read) << ", written "
       << format_bytes(*p.bytes_written) << ")";
  } else {
    os << p.not_measured;
  }
  os << ", predicted " << format_bytes(p.predicted_bytes) << " (" << ratio_text(p.measured_over_predicted) << ")";
  if (p.fraction_of_peak) os << "; " << fraction_text(p.fraction_of_peak, "peak bandwidth");
  if (p.fraction_of_copy) os << ", " << fraction_text(p.fraction_of_copy, "copy bandwidth");
  if (p.flops_per_s) os << "; " << fixed(*p.flops_per_s / 1e12, 3) << " TFLOP/s";
  os << (p.mismatch ? "  DIFFERS >10%" : "") << "\n";
  for (const gpu::KernelProfile& k : p.kernels) print_kernel(os, k);
}

bool write_file(const std::string& path, const std::string& text, const char* what, std::ostream& err) {
  auto written = write_output(path, text, std::cout);  // "-": stdout
  if (written) return true;
  err << "fusion-cli run: cannot write the " << what << ": " << format_diagnostics(written.errors(), path);
  return false;
}

}  // namespace

DeviceDescription peak_device_for(const std::string& gpu_name, std::string& note) {
  const std::pair<const char*, const char*> known[] = {
      {"H200", "h200"}, {"H100", "h100"}, {"A100", "a100"}, {"4090", "4090"}, {"NVIDIA L4", "l4"}};
  for (const auto& [marker, key] : known) {
    if (gpu_name.find(marker) != std::string::npos) {
      if (auto preset = DeviceDescription::preset(key)) return *preset;
    }
  }
  note = "no preset matches " + gpu_name + ": the peak is the H100 SXM datasheet's";
  return DeviceDescription::h100_sxm();
}

void print_profile(std::ostream& os, const gpu::ProfileSummary& s) {
  os << "\nmeasured HBM traffic (" << (s.counters_reason.empty() ? "CUPTI range profiler, cold L2" : s.counters_reason)
     << "); peak " << fixed(s.peak_bandwidth / 1e12, 2) << " TB/s (" << s.peak_device << "), copy "
     << (s.copy_bandwidth ? fixed(*s.copy_bandwidth / 1e12, 2) + " TB/s (measured)" : s.copy_reason) << "\n";
  os << "kernel timings: " << s.timing_source << (s.timing_reason.empty() ? "" : " (" + s.timing_reason + ")") << "\n";
  for (const std::string& n : s.notes) os << "note: " << n << "\n";
  print_plan(os, s.plans[0]);
  print_plan(os, s.plans[1]);
  os << "HBM traffic reduction, fused over unfused: "
     << (s.hbm_traffic_reduction ? ratio_text(s.hbm_traffic_reduction) + " measured"
                                 : "not measured (" + s.reduction_reason + ")")
     << ", " << ratio_text(s.predicted_reduction) << " predicted\n";
}

bool write_timing_exports(const gpu::ProfileMeasurements& measured, const std::vector<ClockPoint>& clocks,
                          const std::optional<std::string>& csv, const std::optional<std::string>& trace,
                          std::ostream& err) {
  std::vector<KernelTimingRow> rows = measured.plans[0].rows;
  rows.insert(rows.end(), measured.plans[1].rows.begin(), measured.plans[1].rows.end());
  bool ok = true;
  if (csv) ok = write_file(*csv, timings_to_csv(rows), "kernel timings CSV", err) && ok;
  // The kernels come from the timing pass, the NVML samples from the timing rounds before it: its own process.
  const std::string text = timings_to_chrome_trace(rows, clock_tracks(clocks), kClockTrackProcess);
  if (trace) ok = write_file(*trace, text, "Chrome trace", err) && ok;
  return ok;
}

}  // namespace fx::cli

#endif  // FX_HAVE_CUDA
