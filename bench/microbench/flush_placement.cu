// Does where the flush buffer lies move the time of the kernel timed after it? do_bench overwrites a 256 MB
// buffer before each run (triton's get_empty_cache_for_benchmark: a new torch.empty for every do_bench call)
// and fusion-cli a 256 MB cudaMalloc of its own for every timing pass (executor_run.cpp: time_plans); the
// memset leaves about 50 MiB of dirty lines in the L2 that the timed kernel's traffic writes back to DRAM
// (docs/benchmarks.md, run AE). On an H100 (2026-11-26, run AF) softmax's kernels on both sides fell in two
// states 0.5% apart that held for several pairs and then switched (PyTorch 0.1808-0.1809 or 0.1812-0.1815 ms,
// ours 0.1807-0.1812 or 0.1815-0.1820), with buffers that did not move within our process: the one thing that
// moved was the flush allocation.
// Here a 256 MiB -> 256 MiB copy (softmax's and cast_chain's traffic; x and y fixed) and relu(x*w+b) over 64M
// f32 (relu_mul_add's) are timed after a 256 MB memset at each of several offsets of one pool, in interleaved
// rounds (round r times every offset once), in three passes: an offset whose median repeats from pass to pass
// while offsets differ from one another is a flush-placement effect.
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/microbench/flush_placement.cu -o /tmp/fp && /tmp/fp
#include "common.cuh"

namespace {

constexpr long long kElems = 64ll << 20;  // 64M f32, 256 MiB
constexpr size_t kMiB = 1u << 20;

__global__ void __launch_bounds__(512) relu_fma(const float2* x, const float2* w, const float2* b, float2* y) {
  const long long i = blockIdx.x * 512ll + threadIdx.x;
  const float2 a = x[i], m = w[i], c = b[i];
  y[i] = make_float2(fmaxf(a.x * m.x + c.x, 0.0f), fmaxf(a.y * m.y + c.y, 0.0f));
}

}  // namespace

int main() {
  const size_t kFlushPool = 256 * kMiB + 512 * kMiB;
  char *flush_pool = nullptr, *data = nullptr;
  CK(cudaMalloc(&data, 4 * size_t(kElems) * 4));
  CK(cudaMalloc(&flush_pool, kFlushPool));
  CK(cudaMemset(data, 0, 4 * size_t(kElems) * 4));
  const std::vector<size_t> offsets = {0, 2, 4, 6, 8, 16, 32, 64, 128, 192, 256, 384, 512, 0};  // MiB; the last
                                                                                                 // repeats the first
  float* d = reinterpret_cast<float*>(data);
  auto copy = [&] {
    const long long n4 = kElems / 4;
    copy4<<<int((n4 + 255) / 256), 256>>>(reinterpret_cast<const float4*>(d), reinterpret_cast<float4*>(d + kElems), n4);
  };
  auto fma = [&] {
    auto f2 = [&](int k) { return reinterpret_cast<float2*>(d + k * kElems); };
    relu_fma<<<int(kElems / 2 / 512), 512>>>(f2(0), f2(1), f2(2), f2(3));
  };
  constexpr int kRounds = 60, kPasses = 3;
  const char* names[] = {"copy 256 MiB", "relu(x*w+b)"};
  for (int k = 0; k < 2; ++k) {
    auto run = [&] { k == 0 ? copy() : fma(); };
    for (int i = 0; i < 5; ++i) run();
    CK(cudaDeviceSynchronize());
    std::vector<std::vector<float>> med(offsets.size());
    std::vector<cudaEvent_t> s(kRounds * offsets.size()), e(s.size());
    for (size_t i = 0; i < s.size(); ++i) { CK(cudaEventCreate(&s[i])); CK(cudaEventCreate(&e[i])); }
    for (int pass = 0; pass < kPasses; ++pass) {
      for (int r = 0; r < kRounds; ++r) {
        for (size_t i = 0; i < offsets.size(); ++i) {
          CK(cudaMemsetAsync(flush_pool + offsets[i] * kMiB, 0, 256 * kMiB));
          CK(cudaEventRecord(s[r * offsets.size() + i]));
          run();
          CK(cudaEventRecord(e[r * offsets.size() + i]));
        }
      }
      CK(cudaDeviceSynchronize());
      for (size_t i = 0; i < offsets.size(); ++i) {
        std::vector<float> t(kRounds);
        for (int r = 0; r < kRounds; ++r) CK(cudaEventElapsedTime(&t[r], s[r * offsets.size() + i], e[r * offsets.size() + i]));
        std::sort(t.begin(), t.end());
        med[i].push_back(t[kRounds / 2]);
      }
    }
    std::printf("%s, x and y fixed; the 256 MB memset before each run at a flush-pool offset; median of %d runs "
                "per pass\n", names[k], kRounds);
    float lo = 1e9f, hi = 0;
    for (size_t i = 0; i < offsets.size(); ++i) {
      std::printf("  flush at +%4zu MiB:", offsets[i]);
      for (float m : med[i]) {
        std::printf("  %.4f", m);
        lo = std::min(lo, m);
        hi = std::max(hi, m);
      }
      std::printf(" ms\n");
    }
    std::printf("  range over all offsets and passes: %.4f - %.4f ms (%.2f%%)\n", lo, hi, 100.0 * (hi - lo) / lo);
  }
  return 0;
}
