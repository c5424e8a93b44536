// Does where a kernel's buffers lie in device memory move its time under the flush protocol?
// One 256 MiB -> 256 MiB copy (the shape of cast_chain's and softmax's one kernel: 16-byte accesses, 256
// threads per block), its x and y placed at different offsets of one pool, timed as docs/benchmarks.md times
// (a 256 MB memset before each run, CUDA events around it) in interleaved rounds: round r times every placement
// once, so a drift of the clocks moves all alike. The whole set is timed in three passes; a placement whose
// median repeats from pass to pass while placements differ from one another is a placement effect.
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/microbench/placement.cu -o /tmp/pl && /tmp/pl
#include "common.cuh"

#include <string>

int main() {
  constexpr long long kElems = 64ll << 20;           // 64M floats, 256 MiB
  constexpr size_t kBytes = size_t(kElems) * 4;
  constexpr size_t kMiB = 1u << 20;
  constexpr size_t kPool = 3072 * kMiB;
  char* pool = nullptr;
  CK(cudaMalloc(&pool, kPool));
  CK(cudaMalloc(&g_flush, 256u << 20));
  CK(cudaMemset(pool, 0, kPool));
  struct Placement { size_t x, y; };
  const std::vector<Placement> places = {
      {0, 256 * kMiB},  {0, 512 * kMiB},  {0, 768 * kMiB},  {0, 1024 * kMiB}, {0, 1536 * kMiB},
      {0, 2048 * kMiB}, {0, 2560 * kMiB}, {0, 258 * kMiB},  {0, 264 * kMiB},  {0, 320 * kMiB},
      {1024 * kMiB, 0}, {2048 * kMiB, 512 * kMiB}, {0, 256 * kMiB}};  // the last repeats the first: noise
  constexpr int kRounds = 60, kPasses = 3;
  const int threads = 256;
  const long long n4 = kElems / 4;
  const int blocks = int((n4 + threads - 1) / threads);
  auto run = [&](const Placement& p) {
    copy4<<<blocks, threads>>>(reinterpret_cast<const float4*>(pool + p.x), reinterpret_cast<float4*>(pool + p.y), n4);
  };
  for (const Placement& p : places) run(p);  // warm-up
  CK(cudaDeviceSynchronize());
  std::printf("copy of 256 MiB, x and y at pool offsets (MiB); median of %d runs after a 256 MB memset, per pass\n",
              kRounds);
  std::vector<std::vector<float>> med(places.size());
  cudaEvent_t s[kRounds][16], e[kRounds][16];
  for (int pass = 0; pass < kPasses; ++pass) {
    for (int r = 0; r < kRounds; ++r) {
      for (size_t i = 0; i < places.size(); ++i) {
        CK(cudaEventCreate(&s[r][i]));
        CK(cudaEventCreate(&e[r][i]));
        CK(cudaMemsetAsync(g_flush, 0, 256u << 20));
        CK(cudaEventRecord(s[r][i]));
        run(places[i]);
        CK(cudaEventRecord(e[r][i]));
      }
    }
    CK(cudaDeviceSynchronize());
    for (size_t i = 0; i < places.size(); ++i) {
      std::vector<float> t(kRounds);
      for (int r = 0; r < kRounds; ++r) {
        CK(cudaEventElapsedTime(&t[r], s[r][i], e[r][i]));
        cudaEventDestroy(s[r][i]);
        cudaEventDestroy(e[r][i]);
      }
      std::sort(t.begin(), t.end());
      med[i].push_back(t[kRounds / 2]);
    }
  }
  float lo = 1e9f, hi = 0;
  for (size_t i = 0; i < places.size(); ++i) {
    std::printf("x %5zu  y %5zu:", places[i].x / kMiB, places[i].y / kMiB);
    for (float m : med[i]) std::printf("  %.4f", m);
    const float mid = med[i][kPasses / 2];
    std::printf("  ms  (%.3f TB/s)\n", 2.0 * kBytes / (mid * 1e-3) / 1e12);
    for (float m : med[i]) { lo = std::min(lo, m); hi = std::max(hi, m); }
  }
  std::printf("range over all placements and passes: %.4f - %.4f ms (%.2f%%)\n", lo, hi, 100.0 * (hi - lo) / lo);
  return 0;
}
