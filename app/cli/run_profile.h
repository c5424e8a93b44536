// The profile half of `fusion-cli run` (kernels/executor/profile_pass.h does the measuring): the peak device
// the report compares with, the text report of measured bytes next to predicted, and the --csv/--trace exports.
#pragma once

#ifdef FX_HAVE_CUDA

#include <optional>
#include <ostream>
#include <string>

#include "core/cost/device_description.h"
#include "kernels/executor/profile_summary.h"

namespace fx::cli {

// The preset whose name matches the GPU's (its datasheet HBM bandwidth is the "peak"); H100 SXM with a note
// in `note` when none matches.
DeviceDescription peak_device_for(const std::string& gpu_name, std::string& note);

// Measured DRAM bytes per kernel next to the prediction, flags and notes, plan totals and the reduction.
void print_profile(std::ostream& os, const gpu::ProfileSummary& summary);

// Kernel timings of both plans as CSV and as a Chrome trace (core/export/timings_export.h), the trace with the
// NVML samples `clocks` (the report's, core/export/timings_export.h) as counter tracks; either path may be absent
// ("-": stdout). False after a message on `err` when a file cannot be written.
bool write_timing_exports(const gpu::ProfileMeasurements& measured, const std::vector<ClockPoint>& clocks,
                          const std::optional<std::string>& csv, const std::optional<std::string>& trace,
                          std::ostream& err);

}  // namespace fx::cli

#endif  // FX_HAVE_CUDA
