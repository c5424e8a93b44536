// Micro-benchmark behind the row-kernel configuration in kernels/codegen/row_codegen.cpp: which layout of a
// row-wise kernel (softmax, layernorm) streams closest to copy bandwidth at the shapes of the samples?
//   block/T/C : one block of T threads per row, C 16-byte accesses per thread (the generated kernels' layout)
//   warp/W/C  : one warp per row, W rows per block, C 16-byte accesses per lane (no __syncthreads)
//   pers/T/C  : block per row on a persistent grid, loading the next row while reducing this one
//   2pass/T   : softmax only, Inductor's layout: a block of T threads loops over its row twice, first with
//               evict_last loads and an online max/sum, then reading the row again (from the L2) to write it
// Suffixes (HINTS bits): +s streams x and y (ld.global.cs / st.global.cs, evict-first), +m reads the broadcast
// mask with an L2 evict_last policy (as Triton's eviction_policy="evict_last"), +e fast exp (ex2.approx), +f loads
// x with an L2 evict_first policy (Triton's eviction_policy="evict_first"; stores stay plain).
// Kinds: 0 softmax, 1 layernorm, 2 sum of squares (one value per row stored).
// Every variant is checked against block/.. (the first of its table); times are medians of 50 runs with a 256 MB
// memset before each (triton.testing.do_bench's protocol) and back to back.
//   nvcc -O3 -std=c++17 -arch=sm_90 bench/microbench/row_kernels.cu -o /tmp/rk && /tmp/rk [layouts|hints|reductions|twopass]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "common.cuh"

template <typename Op>
__device__ __forceinline__ float warp_reduce(float v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <int THREADS, typename Op>
__device__ __forceinline__ float block_reduce(float v, Op op, float* scratch) {
  v = warp_reduce(v, op);
  if (THREADS == 32) return v;
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = scratch[0];
#pragma unroll
  for (int w = 1; w < THREADS / 32; ++w) r = op(r, scratch[w]);
  __syncthreads();
  return r;
}
enum { kStream = 1, kKeepMask = 2, kFastExp = 4, kFirst = 8 };
template <int HINTS> __device__ __forceinline__ float4 ld_x(const float* p) {
  if (HINTS & kFirst) return ld_policy<false>(p);
  return (HINTS & kStream) ? __ldcs(reinterpret_cast<const float4*>(p)) : *reinterpret_cast<const float4*>(p);
}
template <int HINTS> __device__ __forceinline__ void st_y(float* p, float4 v) {
  if (HINTS & kStream) __stcs(reinterpret_cast<float4*>(p), v); else *reinterpret_cast<float4*>(p) = v;
}
template <int HINTS> __device__ __forceinline__ float ex(float x) { return (HINTS & kFastExp) ? __expf(x) : expf(x); }

struct Sum { __device__ float operator()(float a, float b) const { return a + b; } };
struct Max { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };

// The work on one row held in registers: kind 0 softmax(x * scale + mask[row % mask_rows]), kind 1 layernorm.
struct RowArgs {
  const float* x; const float* aux0; const float* aux1; float* y; int rows; int mask_rows;
};

template <int KIND, int HINTS, int N, typename Reduce>
__device__ __forceinline__ void row_math(float4 (&v)[N], const RowArgs& a, long long row, int R,
                                         const int (&cols)[N], Reduce reduce) {
  constexpr int kVec = 4;
  if (KIND == 0) {
    if (a.aux0) {
      const float* m = a.aux0 + (long long)(row % a.mask_rows) * R;
#pragma unroll
      for (int c = 0; c < N; ++c) {
        const float4 mv = (HINTS & kKeepMask) ? ld_policy<true>(m + cols[c]) : *reinterpret_cast<const float4*>(m + cols[c]);
        v[c].x = v[c].x * 0.125f + mv.x; v[c].y = v[c].y * 0.125f + mv.y;
        v[c].z = v[c].z * 0.125f + mv.z; v[c].w = v[c].w * 0.125f + mv.w;
      }
    }
    float mx = -INFINITY;
#pragma unroll
    for (int c = 0; c < N; ++c) mx = fmaxf(mx, fmaxf(fmaxf(v[c].x, v[c].y), fmaxf(v[c].z, v[c].w)));
    mx = reduce(mx, Max());
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < N; ++c) {
      v[c].x = ex<HINTS>(v[c].x - mx); v[c].y = ex<HINTS>(v[c].y - mx); v[c].z = ex<HINTS>(v[c].z - mx); v[c].w = ex<HINTS>(v[c].w - mx);
      s += (v[c].x + v[c].y) + (v[c].z + v[c].w);
    }
    const float inv = 1.0f / reduce(s, Sum());
#pragma unroll
    for (int c = 0; c < N; ++c) { v[c].x *= inv; v[c].y *= inv; v[c].z *= inv; v[c].w *= inv; }
  } else if (KIND == 2) {
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < N; ++c) s += (v[c].x * v[c].x + v[c].y * v[c].y) + (v[c].z * v[c].z + v[c].w * v[c].w);
    v[0].x = reduce(s, Sum());
  } else {
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < N; ++c) s += (v[c].x + v[c].y) + (v[c].z + v[c].w);
    const float mean = reduce(s, Sum()) / (float)R;
    float q = 0.f;
#pragma unroll
    for (int c = 0; c < N; ++c) {
      const float d0 = v[c].x - mean, d1 = v[c].y - mean, d2 = v[c].z - mean, d3 = v[c].w - mean;
      q += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);
    }
    const float rstd = rsqrtf(reduce(q, Sum()) / (float)R + 1e-5f);
#pragma unroll
    for (int c = 0; c < N; ++c) {
      const float4 g = (HINTS & kKeepMask) ? ld_policy<true>(a.aux0 + cols[c]) : *reinterpret_cast<const float4*>(a.aux0 + cols[c]);
      const float4 b = (HINTS & kKeepMask) ? ld_policy<true>(a.aux1 + cols[c]) : *reinterpret_cast<const float4*>(a.aux1 + cols[c]);
      v[c].x = (v[c].x - mean) * rstd * g.x + b.x; v[c].y = (v[c].y - mean) * rstd * g.y + b.y;
      v[c].z = (v[c].z - mean) * rstd * g.z + b.z; v[c].w = (v[c].w - mean) * rstd * g.w + b.w;
    }
  }
  (void)kVec;
}

template <int KIND, int THREADS, int C, int HINTS = 0>
__global__ void __launch_bounds__(THREADS) block_row(RowArgs a) {
  constexpr int R = THREADS * C * 4;
  __shared__ float scratch[32];
  const long long row = blockIdx.x;
  int cols[C];
  float4 v[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    cols[c] = (c * THREADS + (int)threadIdx.x) * 4;
    v[c] = ld_x<HINTS>(a.x + row * R + cols[c]);
  }
  row_math<KIND, HINTS>(v, a, row, R, cols, [&](float x, auto op) { return block_reduce<THREADS>(x, op, scratch); });
  if constexpr (KIND == 2) {
    if (threadIdx.x == 0) a.y[row] = v[0].x;
  } else {
#pragma unroll
    for (int c = 0; c < C; ++c) st_y<HINTS>(a.y + row * R + cols[c], v[c]);
  }
}

template <int KIND, int W, int C>
__global__ void __launch_bounds__(32 * W) warp_row(RowArgs a) {
  constexpr int R = 32 * C * 4;
  const long long row = (long long)blockIdx.x * W + (threadIdx.x >> 5);
  if (row >= a.rows) return;
  const int lane = threadIdx.x & 31;
  int cols[C];
  float4 v[C];
#pragma unroll
  for (int c = 0; c < C; ++c) {
    cols[c] = (c * 32 + lane) * 4;
    v[c] = *reinterpret_cast<const float4*>(a.x + row * R + cols[c]);
  }
  row_math<KIND, 0>(v, a, row, R, cols, [](float x, auto op) { return warp_reduce(x, op); });
  if constexpr (KIND == 2) {
    if (lane == 0) a.y[row] = v[0].x;
  } else {
#pragma unroll
    for (int c = 0; c < C; ++c) *reinterpret_cast<float4*>(a.y + row * R + cols[c]) = v[c];
  }
}

template <int KIND, int THREADS, int C>
__global__ void __launch_bounds__(THREADS) pers_row(RowArgs a) {
  constexpr int R = THREADS * C * 4;
  __shared__ float scratch[32];
  int cols[C];
#pragma unroll
  for (int c = 0; c < C; ++c) cols[c] = (c * THREADS + (int)threadIdx.x) * 4;
  float4 v[C];
  long long row = blockIdx.x;
  if (row < a.rows) {
#pragma unroll
    for (int c = 0; c < C; ++c) v[c] = *reinterpret_cast<const float4*>(a.x + row * R + cols[c]);
  }
  for (; row < a.rows; row += gridDim.x) {
    float4 next[C];
    const long long nr = row + gridDim.x;
    if (nr < a.rows) {
#pragma unroll
      for (int c = 0; c < C; ++c) next[c] = *reinterpret_cast<const float4*>(a.x + nr * R + cols[c]);
    }
    row_math<KIND, 0>(v, a, row, R, cols, [&](float x, auto op) { return block_reduce<THREADS>(x, op, scratch); });
#pragma unroll
    for (int c = 0; c < C; ++c) { *reinterpret_cast<float4*>(a.y + row * R + cols[c]) = v[c]; v[c] = next[c]; }
  }
}

template <int THREADS, int R>
__global__ void __launch_bounds__(THREADS) twopass_softmax(RowArgs a) {
  __shared__ float sm[32], ss[32];
  const long long row = blockIdx.x;
  const float* x = a.x + row * R;
  float m = -INFINITY, s = 0.f;
#pragma unroll 4
  for (int col = threadIdx.x * 4; col < R; col += THREADS * 4) {
    const float4 v = ld_policy<true>(x + col);
    const float mv = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
    const float mn = fmaxf(m, mv);
    s = s * expf(m - mn) + (expf(v.x - mn) + expf(v.y - mn)) + (expf(v.z - mn) + expf(v.w - mn));
    m = mn;
  }
  // (max, sum) pairs combined: warp shuffles, then the warps' partials through shared memory.
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float mo = __shfl_xor_sync(0xffffffffu, m, o), so = __shfl_xor_sync(0xffffffffu, s, o);
    const float mn = fmaxf(m, mo);
    s = s * expf(m - mn) + so * expf(mo - mn);
    m = mn;
  }
  if ((threadIdx.x & 31) == 0) sm[threadIdx.x >> 5] = m, ss[threadIdx.x >> 5] = s;
  __syncthreads();
  m = sm[0], s = ss[0];
  for (int w = 1; w < THREADS / 32; ++w) {
    const float mn = fmaxf(m, sm[w]);
    s = s * expf(m - mn) + ss[w] * expf(sm[w] - mn);
    m = mn;
  }
  const float inv = 1.0f / s;
#pragma unroll 4
  for (int col = threadIdx.x * 4; col < R; col += THREADS * 4) {
    const float4 v = ld_policy<false>(x + col);
    float4 y;
    y.x = expf(v.x - m) * inv; y.y = expf(v.y - m) * inv; y.z = expf(v.z - m) * inv; y.w = expf(v.w - m) * inv;
    *reinterpret_cast<float4*>(a.y + row * R + col) = y;
  }
}

struct Variant { std::string name; std::function<void(RowArgs)> launch; };

int g_sms = 132;
template <int KIND, int T, int C, int HINTS = 0> Variant block_v() {
  const std::string suffix = std::string(HINTS & kStream ? "+s" : "") + (HINTS & kKeepMask ? "+m" : "") +
                             (HINTS & kFastExp ? "+e" : "") + (HINTS & kFirst ? "+f" : "");
  return {"block/" + std::to_string(T) + "/" + std::to_string(C) + suffix, [](RowArgs a) { block_row<KIND, T, C, HINTS><<<a.rows, T>>>(a); }};
}
template <int T, int R> Variant twopass_v() {
  return {"2pass/" + std::to_string(T), [](RowArgs a) { twopass_softmax<T, R><<<a.rows, T>>>(a); }};
}
template <int KIND, int W, int C> Variant warp_v() {
  return {"warp/" + std::to_string(W) + "/" + std::to_string(C), [](RowArgs a) { warp_row<KIND, W, C><<<(a.rows + W - 1) / W, 32 * W>>>(a); }};
}
template <int KIND, int T, int C> Variant pers_v() {
  return {"pers/" + std::to_string(T) + "/" + std::to_string(C), [](RowArgs a) {
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, pers_row<KIND, T, C>, T, 0);
    pers_row<KIND, T, C><<<std::min(a.rows, per_sm * g_sms), T>>>(a); }};
}

void table(const char* title, int rows, int R, int mask_rows, int kind, const std::vector<Variant>& vs, double copy_tbs) {
  const size_t n = (size_t)rows * R;
  float *x, *y, *ref, *aux0 = nullptr, *aux1 = nullptr;
  CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&y, n * 4)); CK(cudaMalloc(&ref, n * 4));
  std::vector<float> h(n);
  unsigned s = 12345;
  for (auto& v : h) { s = s * 1664525u + 1013904223u; v = ((s >> 8) * (1.0f / 16777216.0f)) * 8.f - 4.f; }
  CK(cudaMemcpy(x, h.data(), n * 4, cudaMemcpyHostToDevice));
  const size_t aux_n = kind == 0 ? (size_t)mask_rows * R : (size_t)R;
  if (kind == 1 || mask_rows > 0) {
    CK(cudaMalloc(&aux0, aux_n * 4)); CK(cudaMalloc(&aux1, aux_n * 4));
    std::vector<float> ha(aux_n);
    for (auto& v : ha) { s = s * 1664525u + 1013904223u; v = ((s >> 8) * (1.0f / 16777216.0f)) - 0.5f; }
    CK(cudaMemcpy(aux0, ha.data(), aux_n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(aux1, ha.data(), aux_n * 4, cudaMemcpyHostToDevice));
  }
  RowArgs a{x, aux0, aux1, ref, rows, mask_rows > 0 ? mask_rows : 1};
  const double mib = ((kind == 2 ? 1.0 * n * 4 + rows * 4.0 : 2.0 * n * 4) + (aux0 ? aux_n * 4.0 * (kind == 1 ? 2 : 1) : 0)) / (1 << 20);
  std::printf("\n%s: %d rows x %d f32, %.1f MiB min traffic\n", title, rows, R, mib);
  std::printf("  %-14s %10s %10s %8s %10s\n", "variant", "flush ms", "b2b ms", "of copy", "max |err|");
  bool first = true;
  for (const auto& v : vs) {
    a.y = first ? ref : y;
    CK(cudaMemset(a.y, 0xff, n * 4));  // NaN poison
    v.launch(a);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    double err = 0;
    if (!first) {
      std::vector<float> got(n), want(n);
      const size_t m = kind == 2 ? (size_t)rows : n;
      CK(cudaMemcpy(got.data(), y, m * 4, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(want.data(), ref, m * 4, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < m; ++i) {
        const double d = std::fabs((double)got[i] - want[i]);
        err = std::isnan(got[i]) ? INFINITY : std::max(err, d);
      }
    }
    const float f = median_ms([&] { v.launch(a); }, true), b = median_ms([&] { v.launch(a); }, false);
    std::printf("  %-14s %10.4f %10.4f %8.3f %10.2e\n", v.name.c_str(), f, b, mib * (1 << 20) / (f * 1e-3) / (copy_tbs * 1e12), err);
    first = false;
  }
  cudaFree(x); cudaFree(y); cudaFree(ref); cudaFree(aux0); cudaFree(aux1);
}

int main(int argc, char** argv) {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  g_sms = p.multiProcessorCount;
  CK(cudaMalloc(&g_flush, 256u << 20));
  const long long n4 = 1ll << 26;  // 1 GiB copied
  float4 *s, *d;
  CK(cudaMalloc(&s, n4 * 16)); CK(cudaMalloc(&d, n4 * 16)); CK(cudaMemset(s, 0, n4 * 16));
  const float copy_ms = median_ms([&] { copy4<<<(unsigned)(n4 / 256), 256>>>(s, d, n4); }, true);
  const double copy_tbs = 2.0 * n4 * 16 / (copy_ms * 1e-3) / 1e12;
  cudaFree(s); cudaFree(d);
  std::printf("%s, %d SMs; copy kernel %.3f TB/s (read + write, flush protocol)\n", p.name, g_sms, copy_tbs);

  // Groups of tables, by argument (default: all): layouts, hints, reductions, twopass.
  auto want = [&](const char* group) { return argc < 2 || std::string(argv[1]) == group; };
  if (want("layouts")) {
    table("softmax (sample softmax)", 16384, 4096, 0, 0,
          {block_v<0, 256, 4>(), block_v<0, 512, 2>(), block_v<0, 1024, 1>(), block_v<0, 128, 8>(), pers_v<0, 256, 4>(),
           pers_v<0, 512, 2>(), warp_v<0, 1, 32>(), warp_v<0, 2, 32>()}, copy_tbs);
    table("layernorm (sample layernorm)", 16384, 4096, 0, 1,
          {block_v<1, 256, 4>(), block_v<1, 512, 2>(), block_v<1, 1024, 1>(), pers_v<1, 256, 4>(), pers_v<1, 512, 2>(),
           warp_v<1, 2, 32>()}, copy_tbs);
    table("scale + mask + softmax (gpt2_block attention)", 98304, 1024, 1024, 0,
          {block_v<0, 128, 2>(), block_v<0, 256, 1>(), block_v<0, 64, 4>(), pers_v<0, 128, 2>(), warp_v<0, 4, 8>(),
           warp_v<0, 8, 8>(), warp_v<0, 2, 8>(), warp_v<0, 16, 8>()}, copy_tbs);
    table("layernorm (gpt2 width 768)", 8192, 768, 0, 1,
          {block_v<1, 96, 2>(), block_v<1, 192, 1>(), warp_v<1, 4, 6>(), warp_v<1, 8, 6>(), warp_v<1, 2, 6>(), pers_v<1, 96, 2>()},
          copy_tbs);
  }
  if (want("hints")) {
    table("softmax (sample softmax)", 16384, 4096, 0, 0,
          {block_v<0, 256, 4>(), block_v<0, 256, 4, kStream>(), block_v<0, 256, 4, kFastExp>(), block_v<0, 256, 4, kFirst>(),
           block_v<0, 512, 2, kStream>()}, copy_tbs);
    table("layernorm (sample layernorm)", 16384, 4096, 0, 1,
          {block_v<1, 256, 4>(), block_v<1, 256, 4, kStream>(), block_v<1, 256, 4, kKeepMask>(),
           block_v<1, 256, 4, kKeepMask | kFirst>()}, copy_tbs);
    table("scale + mask + softmax (gpt2_block attention)", 98304, 1024, 1024, 0,
          {block_v<0, 128, 2>(), block_v<0, 128, 2, kKeepMask>(), block_v<0, 128, 2, kStream>(),
           block_v<0, 128, 2, kStream | kKeepMask>(), block_v<0, 128, 2, kKeepMask | kFastExp>(),
           block_v<0, 128, 2, kKeepMask | kFirst>()}, copy_tbs);
    table("layernorm (gpt2 width 768)", 8192, 768, 0, 1,
          {block_v<1, 96, 2>(), block_v<1, 96, 2, kKeepMask>(), block_v<1, 96, 2, kStream | kKeepMask>()}, copy_tbs);
  }
  if (want("reductions")) {
    table("sum of squares (sample sum_of_squares)", 16384, 4096, 0, 2,
          {block_v<2, 256, 4>(), block_v<2, 256, 4, kFirst>(), block_v<2, 256, 4, kStream>(), block_v<2, 128, 8>(),
           block_v<2, 512, 2>(), block_v<2, 512, 2, kFirst>(), block_v<2, 1024, 1, kFirst>(), warp_v<2, 4, 32>()},
          copy_tbs);
  }
  if (want("twopass")) {
    table("softmax (sample softmax), two passes over the row", 16384, 4096, 0, 0,
          {block_v<0, 256, 4>(), twopass_v<256, 4096>(), twopass_v<512, 4096>(), twopass_v<1024, 4096>(),
           twopass_v<128, 4096>()}, copy_tbs);
  }
  return 0;
}
