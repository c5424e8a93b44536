// A GPU fault during a run: a sticky CUDA error (kernels/common/sticky_error.h) together with the plan step it
// is attributed to. Launches are asynchronous, so the error surfaces at the next synchronising call, not at the
// faulting launch; where the executor synchronised after every step (the verification pass, which runs each
// step for the first time) the step is exact, elsewhere it is the last step launched before the error was seen.
// Vendor-free.
#pragma once

#include <string>

#include "kernels/common/gpu_error.h"

namespace fx::gpu {

struct FaultSite {
  std::string phase;  // "inputs", "verification", "timing", "CUDA graph", "single launches" (the profiler's)
  std::string plan;   // "unfused" / "fused"; empty when no plan step had been launched
  int step = -1;      // index of the step in its plan
  std::string kernel, group;
  bool exact = false;  // every step of the phase was synchronised: the step named is the one that faulted

  bool has_step() const { return step >= 0; }
  // "exact", "last_launched" or "none" (no plan step had been launched): the report's "attribution".
  std::string attribution() const;
  // One phrase for people: "fused plan step 0 (kernel fx_g_mul, group g:mul), during verification".
  std::string describe() const;
};

class GpuFault : public GpuError {
 public:
  // `cause` must be a sticky CUDA error (is_sticky).
  GpuFault(const GpuError& cause, FaultSite site);
  const FaultSite& site() const { return site_; }
  const std::string& message() const { return message_; }  // the CUDA error string
  // The one-line summary the CLI prints: the error, its name and code, the step, how it was attributed.
  std::string summary() const;

 private:
  FaultSite site_;
  std::string message_;
};

}  // namespace fx::gpu
