#include "kernels/profile/l2_flush.h"

namespace fx::gpu::detail {
namespace {

// The buffer is zero-filled at allocation; the sentinel never matches, so `sink` is never written in
// practice, but the compiler cannot know that and must keep every load.
constexpr float kNeverPresent = 1234.5678f;

__global__ void read_to_evict_l2(const float4* buffer, std::size_t count4, int* sink) {
  float acc = 0.0f;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count4; i += stride) {
    const float4 v = buffer[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == kNeverPresent) *sink = 1;
}

}  // namespace

cudaError_t launch_l2_flush(const float* buffer, std::size_t count, int* sink, cudaStream_t stream) {
  constexpr int kThreads = 256;
  constexpr int kBlocks = 1024;  // enough to fill every SM; the grid-stride loop covers the rest
  read_to_evict_l2<<<kBlocks, kThreads, 0, stream>>>(reinterpret_cast<const float4*>(buffer), count / 4, sink);
  return cudaGetLastError();
}

}  // namespace fx::gpu::detail
