// Timing on the GPU with CUDA events: one pair of events around each run, the median of the runs. Shared by
// calibrate (copy and GEMM rates) and the cuBLASLt plan's algorithm choice.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "kernels/common/cuda_call.h"

namespace fx::gpu {

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    FX_CUDA_CALL(cudaEventCreate(&start));
    FX_CUDA_CALL(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

// Median milliseconds of `repeat` (>= 1) runs of body() enqueued on `stream`, each timed alone (the host waits
// for each). Warm-up, if wanted, is the caller's.
template <typename F>
double median_event_ms(cudaStream_t stream, int repeat, F&& body) {
  EventPair ev;
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    FX_CUDA_CALL(cudaEventRecord(ev.start, stream));
    body();
    FX_CUDA_CALL(cudaEventRecord(ev.stop, stream));
    FX_CUDA_CALL(cudaEventSynchronize(ev.stop));
    float ms = 0;
    FX_CUDA_CALL(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    t.push_back(ms);
  }
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

}  // namespace fx::gpu
