// What the GPU's clocks do under a stretch of work, through the same NVML watch fusion-cli run uses
// (kernels/profile/gpu_clocks.h): MS milliseconds (default 300) of back-to-back 1 GiB memsets, sampled every
// 2 ms, then the span. Builds without the project's CMake (the GPU machine's quick check), from the root:
//   g++ -std=c++20 -O2 -I. -I/usr/local/cuda/include bench/microbench/clock_watch.cpp
//       kernels/profile/gpu_clocks.cpp -L/usr/local/cuda/lib64 -lcudart -ldl -lpthread -o /tmp/clock_watch
//   /tmp/clock_watch 300
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#include "kernels/profile/gpu_clocks.h"

int main(int argc, char** argv) {
  const int ms = argc > 1 ? std::atoi(argv[1]) : 300;
  fx::gpu::ClockMonitor monitor(0);
  if (!monitor.available()) {
    std::printf("clocks not read: %s\n", monitor.why_not().c_str());
    return 1;
  }
  std::printf("highest SM clock %u MHz, power limit %.0f W\n", monitor.max_sm_mhz(), monitor.power_limit_w());
  if (auto s = monitor.sample()) {
    std::printf("idle: SM %u MHz, %.0f W, %u C, reasons 0x%llx\n", s->sm_mhz, s->power_w, s->temperature_c,
                static_cast<unsigned long long>(s->reasons));
  }
  constexpr size_t kBytes = size_t{1} << 30;
  void* buf = nullptr;
  if (cudaMalloc(&buf, kBytes) != cudaSuccess) return 1;
  fx::gpu::ClockWatch watch(monitor, std::chrono::milliseconds(2));
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  int n = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 20; ++i, ++n) cudaMemsetAsync(buf, n & 0xff, kBytes);
    cudaDeviceSynchronize();
  }
  const fx::gpu::ClockSpan span = watch.stop();
  std::printf("%d memsets of 1 GiB: %s\n", n, fx::gpu::describe_clock_span(span).c_str());
  std::printf("brief: %s\n", fx::gpu::clock_span_brief(span).c_str());
  cudaFree(buf);
  return 0;
}
