// Sticky CUDA errors. After a kernel faults (an illegal address, a trap, a failed device assert, ...) the CUDA
// context is dead: every later call in the process returns the same error, and CUDA's documentation says "the
// process must be terminated and relaunched". Nothing measured after such an error can be trusted, so code that
// catches GpuError to carry on (a fallback, "not measured") must rethrow these. Vendor-free: the CLI uses it.
#pragma once

#include "kernels/common/gpu_error.h"

namespace fx::gpu {

// Whether a CUDA runtime error code (a cudaError_t value) is one of the sticky ones.
bool is_sticky_cuda_error(long long code);
// Whether `e` is a CUDA runtime error whose code is sticky (errors of other libraries are never sticky here:
// a dead context surfaces as a CUDA error at the next runtime call).
bool is_sticky(const GpuError& e);
// cudaGetErrorString for a CUDA runtime error code ("an illegal memory access was encountered").
std::string cuda_error_message(long long code);
// Waits for all work on the current device and throws GpuError if any of it failed. Called before a report is
// written, so a fault that no earlier call happened to see cannot hide behind a successful report.
void synchronize_device_checked();

}  // namespace fx::gpu
