// How `fusion-cli run` ends when a kernel faults (kernels/executor/gpu_fault.h): the CUDA context is dead, so
// the run stops at once, prints one line on stderr, writes a "gpu_fault" report where --json asked for one and
// exits with kGpuFault. Nothing measured is printed or exported: what came after the fault cannot be trusted.
#pragma once

#ifdef FX_HAVE_CUDA

#include <optional>
#include <ostream>
#include <string>

#include "kernels/executor/executor.h"

namespace fx::cli {

struct FaultReportTarget {
  std::optional<std::string> json_file;  // --json
  std::string graph;                     // the graph's name
  std::string plan_source;               // LoadedPlans::how
};

// Returns kGpuFault (or still kGpuFault after a second message when the report cannot be written).
int end_run_with_fault(const gpu::GpuFault& fault, const std::optional<gpu::DeviceInfo>& device,
                       const FaultReportTarget& target, std::ostream& err);

}  // namespace fx::cli

#endif  // FX_HAVE_CUDA
