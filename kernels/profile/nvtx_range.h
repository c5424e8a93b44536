// NVTX ranges, so that Nsight Systems and `ncu --nvtx` attribute kernels to our plans, groups and steps.
// The executor opens one per plan ("unfused", "fused") and, per launch, one named by the group id ("g:mul+add")
// with one inside it named by the kernel. All are in the NVTX domain "fusion-explorer":
//   ncu --nvtx --nvtx-include "fusion-explorer@fused/g:mul+add/" fusion-cli run GRAPH
// NVTX is header-only (nvtx3); without a profiler attached each range costs a call through a null hook.
#pragma once

#include <string>

namespace fx::gpu {

inline constexpr const char* kNvtxDomain = "fusion-explorer";

// Pushes a range on this thread's stack in the fusion-explorer domain; pops it when destroyed. `name` is copied
// by NVTX, so a temporary is fine.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name);
  explicit NvtxRange(const std::string& name) : NvtxRange(name.c_str()) {}
  ~NvtxRange();
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace fx::gpu
