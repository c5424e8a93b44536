#include "kernels/executor/gpu_fault.h"

#include "kernels/common/sticky_error.h"

namespace fx::gpu {

std::string FaultSite::attribution() const {
  if (!has_step()) return "none";
  return exact ? "exact" : "last_launched";
}

std::string FaultSite::describe() const {
  std::string s = has_step() ? plan + " plan step " + std::to_string(step) + " (kernel " + kernel + ", group " + group + ")"
                             : std::string("no plan step (none had been launched)");
  return s + ", during " + (phase.empty() ? std::string("setup") : phase);
}

GpuFault::GpuFault(const GpuError& cause, FaultSite site)
    : GpuError(cause.library(), cause.code(), cause.code_name(), cause.call(), cause.file(), cause.line(), cause.what()),
      site_(std::move(site)),
      message_(cuda_error_message(cause.code())) {}

std::string GpuFault::summary() const {
  std::string s = "GPU fault: " + code_name() + " (" + std::to_string(code()) + ", " + message_ + ") in " + site_.describe();
  if (site_.exact) return s + "; each step was synchronised, so this is the step that faulted";
  if (site_.has_step()) return s + "; attributed to the last step launched before the error was seen (launches are asynchronous)";
  return s;
}

}  // namespace fx::gpu
