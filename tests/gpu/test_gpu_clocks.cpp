// NVML's clocks on the GPU machine (kernels/profile/gpu_clocks.h): a watch over busy work sees the SM clock
// the device reports (test_executor.cpp checks that a run report carries the clocks of its timing).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>

#include <cuda_runtime.h>

#include "kernels/profile/gpu_clocks.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

TEST(GpuClocksGpu, AWatchOverBusyWorkSeesTheSmClock) {
  FX_REQUIRE_DEVICE();
  ClockMonitor m(0);
  ASSERT_TRUE(m.available()) << "a machine with a CUDA device has the driver's NVML: " << m.why_not();
  EXPECT_GT(m.max_sm_mhz(), 0u);
  void* buf = nullptr;
  constexpr std::size_t kBytes = std::size_t{1} << 30;
  ASSERT_EQ(cudaMalloc(&buf, kBytes), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  cudaEvent_t first_half = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&first_half, cudaEventDisableTiming), cudaSuccess);
  std::atomic<bool> recorded{false};
  // The samples before the first 200 memsets have run are the span, the later ones the rest (as the plan timing
  // keeps its whole rounds apart from the step-by-step rounds queued after them).
  ClockWatch watch(m, std::chrono::milliseconds(2),
                   [&] { return recorded.load() && cudaEventQuery(first_half) == cudaSuccess; });
  // About 150 ms of 1 GiB memsets, enqueued ahead so the GPU never waits for the host.
  for (int i = 0; i < 400; ++i) {
    ASSERT_EQ(cudaMemsetAsync(buf, i & 0xff, kBytes, stream), cudaSuccess);
    if (i == 199) {
      ASSERT_EQ(cudaEventRecord(first_half, stream), cudaSuccess);
      recorded = true;
    }
  }
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const ClockSpan span = watch.stop();
  const ClockSpan rest = watch.rest();
  cudaEventDestroy(first_half);
  cudaStreamDestroy(stream);
  cudaFree(buf);
  EXPECT_GT(span.samples, 10);
  EXPECT_GT(rest.samples, 10) << "the second half's samples";
  ASSERT_GT(span.busy_samples, 0) << describe_clock_span(span);
  EXPECT_GT(span.sm_mhz_min, 0u);
  EXPECT_LE(span.sm_mhz_min, span.sm_mhz_max);
  EXPECT_LE(span.sm_mhz_max, m.max_sm_mhz()) << describe_clock_span(span);
  EXPECT_GT(span.power_w_max, 0);
  EXPECT_NE(describe_clock_span(span).find("SM clock"), std::string::npos);
  std::cout << "clocks over 400 memsets of 1 GiB: " << describe_clock_span(span) << "\n";
}

}  // namespace
}  // namespace fx::gpu
