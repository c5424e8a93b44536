// Does the plan timing's interleaving move the fused kernel's time? fusion-cli times the two plans in alternating
// rounds (executor_run.cpp: time_plans; unfused, fused, unfused, ..., a 256 MB memset before each), while
// triton.testing.do_bench and fusion-cli's own layout tuning time one thing over and over. In the paired runs
// of 2026-11-26 relu(x*w+b)'s fused kernel took 0.2472 ms in the plan timing on an H200 (0.3512-0.3514 on an
// H100), the same kernel in the tuning of the same process 0.2464 (0.3501-0.3504), and Inductor's under do_bench
// 0.2464 (0.3510-0.3516).
// Here relu(x*w+b) over 64M f32, fused (one kernel) and unfused (x*w, +b, relu: three), every kernel with 8-byte
// accesses and 512 threads per block (the tuner's pick on both devices), is timed in stretches as long as
// do_bench's (MS, default 100 ms of runs after 25 ms of warm-up, a 1 s rest before each):
//   alone        memset, event, fused, event; ...            (do_bench, the tuning)
//   interleaved  memset, event, unfused, event, memset, event, fused, event; ...   (the plan timing)
//   after-copy   memset, a 768 MiB copy (untimed), memset, event, fused, event; ...  (heavy traffic between runs,
//                with no kernel of the plan's)
//   fresh        alone's runs, but 15 of them right after the rest with no warm-up (as fusion-cli's layout tuning
//                times each layout: kRounds in layout_tuning.cpp)
// The stretches alternate (alone, interleaved, after-copy, alone, ...) over --rounds rounds, so a drift touches
// all alike; each prints its median, and the summary the median of each protocol's medians.
// On an H100 (run AF, docs/benchmarks.md) alone, interleaved and after-copy all gave 0.3510-0.3513 ms, and fresh
// 0.3508: interleaving costs nothing, and the old 15-round tuning read low.
//   nvcc -O3 -std=c++17 -arch=sm_90 tools/microbench/plan_interleave.cu -o /tmp/pi && /tmp/pi [ROUNDS] [MS]
#include "common.cuh"

#include <chrono>
#include <string>
#include <thread>

namespace {

constexpr long long kElems = 64ll << 20;  // 64M f32, 256 MiB per tensor
constexpr int kThreads = 512;
constexpr int kBlocks = int(kElems / 2 / kThreads);

__global__ void __launch_bounds__(kThreads) fused(const float2* x, const float2* w, const float2* b, float2* y) {
  const long long i = blockIdx.x * (long long)kThreads + threadIdx.x;
  const float2 a = x[i], m = w[i], c = b[i];
  y[i] = make_float2(fmaxf(a.x * m.x + c.x, 0.0f), fmaxf(a.y * m.y + c.y, 0.0f));
}
__global__ void __launch_bounds__(kThreads) mul(const float2* x, const float2* w, float2* t) {
  const long long i = blockIdx.x * (long long)kThreads + threadIdx.x;
  const float2 a = x[i], m = w[i];
  t[i] = make_float2(a.x * m.x, a.y * m.y);
}
__global__ void __launch_bounds__(kThreads) add(const float2* t, const float2* b, float2* u) {
  const long long i = blockIdx.x * (long long)kThreads + threadIdx.x;
  const float2 a = t[i], c = b[i];
  u[i] = make_float2(a.x + c.x, a.y + c.y);
}
__global__ void __launch_bounds__(kThreads) relu(const float2* u, float2* y) {
  const long long i = blockIdx.x * (long long)kThreads + threadIdx.x;
  const float2 a = u[i];
  y[i] = make_float2(fmaxf(a.x, 0.0f), fmaxf(a.y, 0.0f));
}

float2* alloc() {
  float2* p = nullptr;
  CK(cudaMalloc(&p, kElems * 4));
  CK(cudaMemset(p, 0, kElems * 4));
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = std::max(1, argc > 1 ? std::atoi(argv[1]) : 8);
  const double ms = std::max(1.0, argc > 2 ? std::atof(argv[2]) : 100.0);
  // In the arena's order: inputs, the unfused plan's values, the fused plan's output.
  float2 *x = alloc(), *w = alloc(), *b = alloc(), *t = alloc(), *u = alloc(), *y = alloc(), *y2 = alloc();
  float4* big = nullptr;  // after-copy's 768 MiB source and destination
  CK(cudaMalloc(&big, 2 * (768ull << 20)));
  CK(cudaMemset(big, 0, 2 * (768ull << 20)));
  CK(cudaMalloc(&g_flush, 256u << 20));
  auto flush = [] { CK(cudaMemsetAsync(g_flush, 0, 256u << 20)); };
  auto run_fused = [&] { fused<<<kBlocks, kThreads>>>(x, w, b, y2); };
  auto run_unfused = [&] {
    mul<<<kBlocks, kThreads>>>(x, w, t);
    add<<<kBlocks, kThreads>>>(t, b, u);
    relu<<<kBlocks, kThreads>>>(u, y);
  };
  const long long n4 = (768ll << 20) / 16;
  auto run_copy = [&] { copy4<<<int((n4 + 255) / 256), 256>>>(big, big + n4, n4); };
  // One run's time, for the counts (as do_bench estimates it).
  run_fused();
  CK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  for (int i = 0; i < 5; ++i) { flush(); run_fused(); }
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float est = 0;
  CK(cudaEventElapsedTime(&est, e0, e1));
  const int runs = std::max(1, int(ms / (est / 5))), warm = std::max(1, int(25.0 / (est / 5)));
  const char* names[] = {"alone", "interleaved", "after-copy", "fresh"};
  constexpr int kProtocols = 4, kFreshRuns = 15;
  std::vector<std::vector<float>> medians(kProtocols), unfused_medians(1);
  std::vector<cudaEvent_t> s(2 * runs), e(2 * runs);
  for (int i = 0; i < 2 * runs; ++i) { CK(cudaEventCreate(&s[i])); CK(cudaEventCreate(&e[i])); }
  std::printf("relu(x*w+b), 64M f32, 8-byte accesses x 512 threads; %d runs per stretch after %d warm-up runs\n", runs,
              warm);
  for (int r = 0; r < rounds; ++r) {
    for (int proto = 0; proto < kProtocols; ++proto) {
      CK(cudaDeviceSynchronize());
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const bool fresh = proto == 3;
      const int n = fresh ? kFreshRuns : runs;
      for (int i = 0; i < (fresh ? 0 : warm); ++i) { flush(); run_fused(); }
      for (int i = 0; i < n; ++i) {
        if (proto == 1) {
          flush();
          CK(cudaEventRecord(s[runs + i]));
          run_unfused();
          CK(cudaEventRecord(e[runs + i]));
        } else if (proto == 2) {
          flush();
          run_copy();
        }
        flush();
        CK(cudaEventRecord(s[i]));
        run_fused();
        CK(cudaEventRecord(e[i]));
      }
      CK(cudaDeviceSynchronize());
      std::vector<float> tf(n), tu(n);
      for (int i = 0; i < n; ++i) {
        CK(cudaEventElapsedTime(&tf[i], s[i], e[i]));
        if (proto == 1) CK(cudaEventElapsedTime(&tu[i], s[runs + i], e[runs + i]));
      }
      std::sort(tf.begin(), tf.end());
      medians[proto].push_back(tf[n / 2]);
      std::printf("round %d %-12s fused %.4f ms", r + 1, names[proto], tf[n / 2]);
      if (proto == 1) {
        std::sort(tu.begin(), tu.end());
        unfused_medians[0].push_back(tu[n / 2]);
        std::printf("  (unfused %.4f ms)", tu[n / 2]);
      }
      std::printf("\n");
    }
  }
  std::printf("median of the rounds' medians:\n");
  for (int proto = 0; proto < kProtocols; ++proto) {
    auto m = medians[proto];
    std::sort(m.begin(), m.end());
    std::printf("  %-12s fused %.4f ms (rounds %.4f - %.4f)", names[proto], m[m.size() / 2], m.front(), m.back());
    if (proto == 1) {
      auto um = unfused_medians[0];
      std::sort(um.begin(), um.end());
      std::printf("; unfused %.4f ms", um[um.size() / 2]);
    }
    std::printf("\n");
  }
  return 0;
}
