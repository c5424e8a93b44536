// Timing on the GPU with CUDA events: one pair of events around each run, the median of the runs; and the
// interleaved rounds in which a choice between ways is timed. Shared by calibrate (copy and GEMM rates), the
// cuBLASLt plan's algorithm choice and the executor's layout tuning.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/cuda_call.h"
#include "kernels/common/ms_text.h"

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

// Mean milliseconds of one of `count` (>= 1) runs of body() enqueued back to back on `stream` between one pair of
// events, the host waiting at the end: a round's time as triton.testing.do_bench estimates one before counting
// its warm-up and timed rounds (the executor's timing_rounds).
template <typename F>
double mean_event_ms(cudaStream_t stream, int count, F&& body) {
  EventPair ev;
  FX_CUDA_CALL(cudaEventRecord(ev.start, stream));
  for (int r = 0; r < count; ++r) body();
  FX_CUDA_CALL(cudaEventRecord(ev.stop, stream));
  FX_CUDA_CALL(cudaEventSynchronize(ev.stop));
  float ms = 0;
  FX_CUDA_CALL(cudaEventElapsedTime(&ms, ev.start, ev.stop));
  return static_cast<double>(ms) / count;
}

// The median of timed runs (or of clock samples) as every choice here takes it: the upper middle one (t is
// reordered; not empty).
template <typename T>
T upper_median(std::vector<T>& t) {
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

// Medians of n ways timed in interleaved rounds: `warmup` rounds not counted, then `rounds` counted ones, each
// with one run of every way, so that a drift of the clocks during the search (large GEMMs run at the power limit)
// moves every way alike instead of favouring whichever was timed while the clocks were high. time(i) returns the
// milliseconds of one run of way i, or nullopt when it cannot run: that way drops out and its median is nullopt.
template <typename Time>
std::vector<std::optional<double>> interleaved_medians(std::size_t n, int warmup, int rounds, Time&& time) {
  std::vector<std::vector<double>> times(n);
  std::vector<char> runs(n, 1);
  for (int round = 0; round < warmup + rounds; ++round) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!runs[i]) continue;
      const std::optional<double> ms = time(i);
      if (!ms) runs[i] = 0;
      if (ms && round >= warmup) times[i].push_back(*ms);
    }
  }
  std::vector<std::optional<double>> medians(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<double>& t = times[i];
    if (!runs[i] || t.empty()) continue;
    medians[i] = upper_median(t);
  }
  return medians;
}

}  // namespace fx::gpu
