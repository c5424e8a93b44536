// Internal to kernels/profile: evicts the L2 cache between measured kernels, so each one starts cold and its
// DRAM counters count its own traffic only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace fx::gpu::detail {

// Reads `count` floats (a buffer several times the L2 size). Reading, not writing, is the point: a write-based
// flush (cudaMemset) would leave the L2 full of dirty lines, whose write-back the next kernel's
// dram__bytes_write would then count. `sink` is a device int the kernel may write so the reads are not
// optimised away. Returns the launch status.
cudaError_t launch_l2_flush(const float* buffer, std::size_t count, int* sink, cudaStream_t stream);

}  // namespace fx::gpu::detail
