// Micro-benchmark behind docs/benchmarks.md: transpose tile shapes for relu(transpose(x*w)+1) at 8192^2 f32, and the
// head-split permute with one vs four elements per thread. Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -std=c++17 tools/microbench/transpose_tiles.cu -o /tmp/tt && /tmp/tt
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
constexpr int N = 8192;
__device__ __forceinline__ float relu(float v){ return v > 0.f ? v : 0.f; }

// Output tile: TA rows (output dim 0 = input inner) x TB cols (output inner). ORDER 0: blocks walk a first.
template <int TA, int TB, int R, int V, int ORDER>
__global__ void __launch_bounds__(32*R) v_rect(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y) {
  extern __shared__ float tile[];  // [TB][TA+1]
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int tiles_a = N / TA, tiles_b = N / TB;
  const long long t = blockIdx.x;
  const int a0 = ORDER == 0 ? (t % tiles_a) * TA : (t / tiles_b) * TA;
  const int b0 = ORDER == 0 ? (t / tiles_a) * TB : (t % tiles_b) * TB;
  {  // phase 1: rows b, contiguous a (TA/V lanes per row)
    constexpr int L = TA / V, RPW = 32 / L;
    const int sub = lane / L, col = (lane % L) * V;
#pragma unroll
    for (int bb = warp * RPW + sub; bb < TB; bb += R * RPW) {
      const int a = a0 + col, b = b0 + bb;
      float4 xv = *(const float4*)&x[(size_t)b*N+a], wv = *(const float4*)&w[(size_t)b*N+a];
      float* row = &tile[bb * (TA + 1) + col];
      row[0] = xv.x*wv.x; row[1] = xv.y*wv.y; row[2] = xv.z*wv.z; row[3] = xv.w*wv.w;
    }
  }
  __syncthreads();
  {  // phase 2: rows a, contiguous b
    constexpr int L = TB / V, RPW = 32 / L;
    const int sub = lane / L, col = (lane % L) * V;
#pragma unroll
    for (int aa = warp * RPW + sub; aa < TA; aa += R * RPW) {
      const int a = a0 + aa, b = b0 + col;
      float4 o;
      o.x = relu(tile[(col+0)*(TA+1)+aa] + 1.f); o.y = relu(tile[(col+1)*(TA+1)+aa] + 1.f);
      o.z = relu(tile[(col+2)*(TA+1)+aa] + 1.f); o.w = relu(tile[(col+3)*(TA+1)+aa] + 1.f);
      *(float4*)&y[(size_t)a*N+b] = o;
    }
  }
}

__global__ void copy4(const float4* __restrict__ s, float4* __restrict__ d, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) d[i] = s[i];
}
__global__ void copy4b(const float4* __restrict__ s, float4* __restrict__ d, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) d[i] = s[i];
}

// head split [8,1024,12,64] -> [8,12,1024,64]
__global__ void __launch_bounds__(256) p0(const float* __restrict__ in, float* __restrict__ out) {
  const int n = 6291456;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = in[((i / 786432) * 786432 + ((i / 64) % 1024) * 768 + ((i / 65536) % 12) * 64 + (i % 64))];
}
__global__ void __launch_bounds__(256) p1(const float* __restrict__ in, float* __restrict__ out) {
  const int n = 6291456;
  for (int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4; base < n; base += gridDim.x * blockDim.x * 4) {
    float4 o; float* ov = &o.x;
#pragma unroll
    for (int v = 0; v < 4; ++v) { int i = base + v; ov[v] = in[((i / 786432) * 786432 + ((i / 64) % 1024) * 768 + ((i / 65536) % 12) * 64 + (i % 64))]; }
    *(float4*)&out[base] = o;
  }
}
__global__ void __launch_bounds__(256) p2(const float* __restrict__ in, float* __restrict__ out) {
  const int n = 6291456;
  for (int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4; base < n; base += gridDim.x * blockDim.x * 4) {
    int i = base;
    *(float4*)&out[base] = *(const float4*)&in[((i / 786432) * 786432 + ((i / 64) % 1024) * 768 + ((i / 65536) % 12) * 64 + (i % 64))];
  }
}

template <class F> float timeit(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 5; ++i) f();
  std::vector<float> ts;
  for (int r = 0; r < 50; ++r) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms); }
  std::sort(ts.begin(), ts.end()); return ts[ts.size()/2];
}

int main() {
  size_t bytes = (size_t)N * N * 4;
  float *x, *w, *y; cudaMalloc(&x, bytes); cudaMalloc(&w, bytes); cudaMalloc(&y, bytes);
  std::vector<float> hx((size_t)N*N), hw((size_t)N*N), hy((size_t)N*N);
  for (size_t i = 0; i < hx.size(); ++i) { hx[i] = (float)((i*2654435761u)%1000)/500.f - 1.f; hw[i] = (float)((i*40503u)%777)/388.f - 1.f; }
  cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice); cudaMemcpy(w, hw.data(), bytes, cudaMemcpyHostToDevice);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  long long n4 = (long long)N*N/4;
  float tc = timeit([&]{ copy4<<<sms*8, 512>>>((const float4*)x, (float4*)y, n4); });
  float tc2 = timeit([&]{ copy4b<<<(n4+255)/256, 256>>>((const float4*)x, (float4*)y, n4); });
  float tm = timeit([&]{ cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); });
  double copy_bw = 2.0 * bytes / (std::min(tc, tc2) * 1e-3) / 1e12;
  printf("copy grid-stride %.4f ms, copy one-per-thread %.4f ms, memcpy %.4f ms; best %.3f TB/s\n", tc, tc2, tm, copy_bw);
  auto check = [&](const char* name, float ms) {
    cudaMemcpy(hy.data(), y, bytes, cudaMemcpyDeviceToHost);
    long bad = 0; for (int a = 0; a < N; a += 37) for (int b = 0; b < N; b += 41) { float e = std::max(hx[(size_t)b*N+a]*hw[(size_t)b*N+a]+1.f, 0.f); if (hy[(size_t)a*N+b] != e) ++bad; }
    double bw = 3.0 * bytes / (ms * 1e-3) / 1e12;
    printf("%-26s %.4f ms %.3f TB/s  frac %.3f %s\n", name, ms, bw, bw / copy_bw, bad ? "WRONG" : "ok");
    cudaMemset(y, 0, bytes);
  };
#define RECT(TA, TB, R, ORD) do { auto k = v_rect<TA, TB, R, 4, ORD>; int sm = TB * (TA + 1) * 4; \
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, sm); \
    check("rect " #TA "x" #TB " w" #R " o" #ORD, timeit([&]{ k<<<(N/TA)*(N/TB), 32*R, sm>>>(x, w, y); })); } while (0)
  RECT(64, 64, 8, 0); RECT(64, 64, 8, 1); RECT(64, 64, 16, 0);
  RECT(128, 64, 8, 0); RECT(128, 64, 8, 1); RECT(64, 128, 8, 0); RECT(64, 128, 8, 1);
  RECT(128, 128, 8, 0); RECT(128, 128, 16, 0); RECT(128, 128, 16, 1);
  RECT(32, 128, 8, 0); RECT(128, 32, 8, 0); RECT(32, 32, 8, 0); RECT(32, 64, 4, 0); RECT(64, 32, 4, 0);
  // head split
  const int hn = 6291456; const size_t hb = (size_t)hn * 4;
  double hbw = 2.0 * hb;
  float t0 = timeit([&]{ p0<<<hn/256, 256>>>(x, y); });
  float t1 = timeit([&]{ p1<<<hn/1024, 256>>>(x, y); });
  float t2 = timeit([&]{ p2<<<hn/1024, 256>>>(x, y); });
  float t3 = timeit([&]{ copy4b<<<hn/1024, 256>>>((const float4*)x, (float4*)y, hn/4); });
  printf("head split 48 MiB: scalar %.4f ms (%.2f TB/s), vec-store %.4f (%.2f), vec-load+store %.4f (%.2f), copy %.4f (%.2f)\n",
         t0, hbw/t0/1e9, t1, hbw/t1/1e9, t2, hbw/t2/1e9, t3, hbw/t3/1e9);
  return 0;
}
