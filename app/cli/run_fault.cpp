#include "app/cli/run_fault.h"

#ifdef FX_HAVE_CUDA

#include <iostream>

#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "core/graph/graph_io.h"
#include "kernels/executor/report_json.h"

namespace fx::cli {

int end_run_with_fault(const gpu::GpuFault& fault, const std::optional<gpu::DeviceInfo>& device,
                       const FaultReportTarget& target, std::ostream& err) {
  err << "fusion-cli run: " << fault.summary() << "; the CUDA context is unusable, the run stopped (exit code "
      << kGpuFault << ")\n";
  if (!target.json_file) return kGpuFault;
  const auto j = to_json(gpu::fault_report(fault, device, target.graph, target.plan_source));
  if (auto written = write_output(*target.json_file, j.dump(2) + "\n", std::cout); !written) {
    err << "fusion-cli run: cannot write the fault report: " << format_diagnostics(written.errors(), *target.json_file);
  }
  return kGpuFault;
}

}  // namespace fx::cli

#endif  // FX_HAVE_CUDA
