// Known-traffic kernels for the profiler tests: each moves exactly the bytes its name says, so measured DRAM
// traffic can be checked against arithmetic (relu(x*w+b): unfused 5 reads + 3 writes, fused 3 reads + 1 write).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace fx::test {

inline constexpr int kThreadsPerBlock = 256;
inline int blocks_for(std::size_t n) { return static_cast<int>((n + kThreadsPerBlock - 1) / kThreadsPerBlock); }

// Each returns the launch status (cudaGetLastError); one thread per element, blocks_for(n) blocks.
cudaError_t launch_copy(const float* in, float* out, std::size_t n);
cudaError_t launch_mul(const float* a, const float* b, float* out, std::size_t n);
cudaError_t launch_add(const float* a, const float* b, float* out, std::size_t n);
cudaError_t launch_relu(const float* a, float* out, std::size_t n);
cudaError_t launch_fused_mul_add_relu(const float* x, const float* w, const float* b, float* out, std::size_t n);

}  // namespace fx::test
