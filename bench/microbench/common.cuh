// Shared by the micro-benchmarks row_kernels.cu and elementwise_outputs.cu: the error check, a copy kernel for
// the bandwidth reference, loads with an L2 eviction policy, and the timing protocol of docs/benchmarks.md
// (medians of 50 runs, each after a 256 MB memset, as triton.testing.do_bench flushes the cache; or back to back).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)

__global__ void copy4(const float4* __restrict__ s, float4* __restrict__ d, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) d[i] = s[i];
}

// A 16-byte load with an L2 eviction policy, as Triton's eviction_policy: kKeep evict_last, else evict_first.
template <bool kKeep>
__device__ __forceinline__ float4 ld_policy(const void* p) {
  float4 v;
  if (kKeep) {
    asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
                 "ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], pol;\n\t}"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  } else {
    asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_first.b64 pol, 1.0;\n\t"
                 "ld.global.L2::cache_hint.v4.f32 {%0, %1, %2, %3}, [%4], pol;\n\t}"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  }
  return v;
}

// The flush buffer; main() allocates 256 MB into it before timing with flush = true.
inline void* g_flush = nullptr;

// `before`, when given, runs after the flush and before the timed call (a producer writing the call's input).
inline float median_ms(const std::function<void()>& f, bool flush, const std::function<void()>& before = {}) {
  for (int i = 0; i < 5; ++i) f();
  constexpr int kRuns = 50;
  std::vector<cudaEvent_t> s(kRuns), e(kRuns);
  for (int i = 0; i < kRuns; ++i) { CK(cudaEventCreate(&s[i])); CK(cudaEventCreate(&e[i])); }
  for (int r = 0; r < kRuns; ++r) {
    if (flush) CK(cudaMemsetAsync(g_flush, 0, 256u << 20));
    if (before) before();
    CK(cudaEventRecord(s[r])); f(); CK(cudaEventRecord(e[r]));
  }
  CK(cudaDeviceSynchronize());
  std::vector<float> t(kRuns);
  for (int r = 0; r < kRuns; ++r) { CK(cudaEventElapsedTime(&t[r], s[r], e[r])); cudaEventDestroy(s[r]); cudaEventDestroy(e[r]); }
  std::sort(t.begin(), t.end());
  return t[kRuns / 2];
}
