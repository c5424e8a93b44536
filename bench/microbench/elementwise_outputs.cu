// Micro-benchmark behind the elementwise kernels with one input and two outputs (samples sin_cos and
// exp_two_consumers, 64M f32): 16-byte accesses per thread (1, 2 or 4, all loads issued before the math),
// sinf + cosf or one sincosf, plain or streaming (evict-first) stores. Medians of 50 runs with a 256 MB memset
// before each (triton.testing.do_bench's protocol) and back to back; each variant checked against the first.
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/microbench/elementwise_outputs.cu -o /tmp/ew && /tmp/ew
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "common.cuh"

// MATH 0: sinf, cosf; 1: sincosf; 2: e = expf(x), e * 2, e + 1; 3: as 2 with __expf (ex2.approx).
template <int MATH>
__device__ __forceinline__ void two(float x, float& a, float& b) {
  if (MATH == 0) { a = sinf(x); b = cosf(x); }
  if (MATH == 1) { sincosf(x, &a, &b); }
  if (MATH == 2) { const float e = expf(x); a = e * 2.0f; b = e + 1.0f; }
  if (MATH == 3) { const float e = __expf(x); a = e * 2.0f; b = e + 1.0f; }
}

// LOAD: 0 plain, 1 ld.global.cs, 2 L2 evict_first policy. STREAM: st.global.cs.
template <int LOAD> __device__ __forceinline__ float4 ld(const float4* p) {
  if (LOAD == 1) return __ldcs(p);
  if (LOAD == 2) return ld_policy<false>(p);
  return *p;
}

template <int MATH, int ITEMS, bool STREAM, int LOAD = 0, int T = 256>
__global__ void __launch_bounds__(T) one_in_two_out(const float4* __restrict__ x, float4* __restrict__ y1,
                                                     float4* __restrict__ y2, long long n4) {
  const long long stride = (long long)gridDim.x * T * ITEMS;
  for (long long base = (long long)blockIdx.x * T * ITEMS + threadIdx.x; base < n4; base += stride) {
    float4 v[ITEMS];
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] = ld<LOAD>(&x[base + i * T]);
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      float4 a, b;
      two<MATH>(v[i].x, a.x, b.x); two<MATH>(v[i].y, a.y, b.y); two<MATH>(v[i].z, a.z, b.z); two<MATH>(v[i].w, a.w, b.w);
      if (STREAM) { __stcs(&y1[base + i * T], a); __stcs(&y2[base + i * T], b); }
      else { y1[base + i * T] = a; y2[base + i * T] = b; }
    }
  }
}

// relu(x * w + b) over three streams (sample relu_mul_add), one output; no grid-stride loop (as Triton's).
template <int ITEMS, int LOAD, int T>
__global__ void __launch_bounds__(T) three_in_one_out(const float4* __restrict__ x, const float4* __restrict__ w,
                                                       const float4* __restrict__ b, float4* __restrict__ y) {
  const long long base = (long long)blockIdx.x * T * ITEMS + threadIdx.x;
  float4 xv[ITEMS], wv[ITEMS], bv[ITEMS];
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    xv[i] = ld<LOAD>(&x[base + i * T]);
    wv[i] = ld<LOAD>(&w[base + i * T]);
    bv[i] = ld<LOAD>(&b[base + i * T]);
  }
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) {
    float4 r;
    r.x = fmaxf(xv[i].x * wv[i].x + bv[i].x, 0.f); r.y = fmaxf(xv[i].y * wv[i].y + bv[i].y, 0.f);
    r.z = fmaxf(xv[i].z * wv[i].z + bv[i].z, 0.f); r.w = fmaxf(xv[i].w * wv[i].w + bv[i].w, 0.f);
    y[base + i * T] = r;
  }
}

struct Variant { std::string name; int math; std::function<void(const float4*, float4*, float4*, long long)> launch; };
int g_blocks_per_sm_grid = 0;  // 0: one thread per ITEMS vectors over the whole tensor

template <int MATH, int ITEMS, bool STREAM, int LOAD = 0, int T = 256> Variant v(int persistent_blocks = 0) {
  std::string name = std::string(MATH == 0 ? "sin+cos" : MATH == 1 ? "sincosf" : MATH == 2 ? "exp" : "__expf") + " x" +
                     std::to_string(ITEMS) + (STREAM ? " stcs" : "") + (LOAD == 1 ? " ldcs" : LOAD == 2 ? " first" : "") +
                     (T != 256 ? " T" + std::to_string(T) : "") + (persistent_blocks ? " grid " + std::to_string(persistent_blocks) : "");
  return {name, MATH, [persistent_blocks](const float4* x, float4* a, float4* b, long long n4) {
            const long long blocks = persistent_blocks ? persistent_blocks : n4 / (T * ITEMS);
            one_in_two_out<MATH, ITEMS, STREAM, LOAD, T><<<(unsigned)blocks, T>>>(x, a, b, n4);
          }};
}

int main() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  CK(cudaMalloc(&g_flush, 256u << 20));
  const long long n = 1ll << 26, n4 = n / 4;  // 64M f32, the samples' size
  float4 *x, *a, *b, *ra, *rb;
  for (float4** q : {&x, &a, &b, &ra, &rb}) CK(cudaMalloc(q, n * 4));
  std::vector<float> h(n);
  unsigned s = 777;
  for (auto& e : h) { s = s * 1664525u + 1013904223u; e = ((s >> 8) * (1.0f / 16777216.0f)) * 6.f - 3.f; }
  CK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
  const float copy_ms = median_ms([&] { copy4<<<(unsigned)(n4 / 256), 256>>>(x, a, n4); }, true);
  const double copy_tbs = 2.0 * n * 4 / (copy_ms * 1e-3) / 1e12;
  std::printf("%s, %d SMs; copy kernel (256 MiB) %.3f TB/s (read + write, flush protocol)\n", p.name,
              p.multiProcessorCount, copy_tbs);
  const int pers = p.multiProcessorCount * 8;
  const std::vector<Variant> vs = {
      v<0, 1, false>(), v<0, 1, false, 2>(), v<0, 2, false, 0, 128>(), v<0, 1, false, 0, 128>(), v<0, 1, false, 0, 512>(),
      v<0, 2, false, 2, 128>(),
      v<2, 1, false>(), v<2, 1, false, 2>(), v<2, 2, false, 0, 128>(), v<2, 1, false, 0, 128>(), v<2, 1, false, 0, 512>(),
      v<2, 2, false, 2, 128>()};
  (void)pers;
  std::printf("  %-22s %10s %10s %8s %10s\n", "variant (64M f32)", "flush ms", "b2b ms", "of copy", "max |err|");
  int ref_math = -1;
  std::vector<float> want1(n), want2(n), got(n);
  for (const auto& var : vs) {
    // sincosf is checked against sin+cos, __expf against expf
    const bool ref = var.math != ref_math && var.math != 1 && var.math != 3;
    for (float4* q : {a, b}) CK(cudaMemset(q, 0xff, n * 4));
    var.launch(x, a, b, n4);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    double err = 0;
    if (ref) {
      ref_math = var.math;
      CK(cudaMemcpy(want1.data(), a, n * 4, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(want2.data(), b, n * 4, cudaMemcpyDeviceToHost));
    } else {
      for (auto [dev, want] : {std::pair{a, &want1}, std::pair{b, &want2}}) {
        CK(cudaMemcpy(got.data(), dev, n * 4, cudaMemcpyDeviceToHost));
        for (long long i = 0; i < n; ++i) err = std::isnan(got[i]) ? INFINITY : std::max(err, (double)std::fabs(got[i] - (*want)[i]));
      }
    }
    const float f = median_ms([&] { var.launch(x, a, b, n4); }, true), bb = median_ms([&] { var.launch(x, a, b, n4); }, false);
    std::printf("  %-22s %10.4f %10.4f %8.3f %10.2e\n", var.name.c_str(), f, bb, 3.0 * n * 4 / (f * 1e-3) / (copy_tbs * 1e12), err);
  }
  // relu(x * w + b): the reference buffers serve as w and b (their values do not matter for the time).
  struct Three { const char* name; std::function<void()> launch; };
  const std::vector<Three> three = {
      {"relu_mul_add x1 T256", [&] { three_in_one_out<1, 0, 256><<<(unsigned)(n4 / 256), 256>>>(x, ra, rb, a); }},
      {"relu_mul_add x2 T128", [&] { three_in_one_out<2, 0, 128><<<(unsigned)(n4 / 256), 128>>>(x, ra, rb, a); }},
      {"relu_mul_add x1 T128", [&] { three_in_one_out<1, 0, 128><<<(unsigned)(n4 / 128), 128>>>(x, ra, rb, a); }},
      {"relu_mul_add x1 T512", [&] { three_in_one_out<1, 0, 512><<<(unsigned)(n4 / 512), 512>>>(x, ra, rb, a); }},
      {"relu_mul_add x1 first", [&] { three_in_one_out<1, 2, 256><<<(unsigned)(n4 / 256), 256>>>(x, ra, rb, a); }},
      {"relu_mul_add x2 T128 first", [&] { three_in_one_out<2, 2, 128><<<(unsigned)(n4 / 256), 128>>>(x, ra, rb, a); }}};
  for (const auto& t : three) {
    const float f = median_ms(t.launch, true), bb = median_ms(t.launch, false);
    std::printf("  %-22s %10.4f %10.4f %8.3f\n", t.name, f, bb, 4.0 * n * 4 / (f * 1e-3) / (copy_tbs * 1e12));
  }
  return 0;
}
