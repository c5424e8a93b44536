// Micro-benchmark behind docs/benchmarks.md: are back-to-back CUDA-event timings (fusion-cli) and do_bench-style
// timings (256 MB memset before each launch) comparable? nvcc -O3 -arch=sm_90 tools/microbench/timing_protocol.cu
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
constexpr int N = 8192;
__device__ __forceinline__ float relu(float v){ return v > 0.f ? v : 0.f; }
template <int T, int R>
__global__ void __launch_bounds__(32*R) v_scalar(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y) {
  __shared__ float tile[T][T+1];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int tiles_a = N / T;
  for (long long t = blockIdx.x; t < (long long)tiles_a * tiles_a; t += gridDim.x) {
    const int a0 = (t % tiles_a) * T, b0 = (t / tiles_a) * T;
#pragma unroll
    for (int bb = warp; bb < T; bb += R)
#pragma unroll
      for (int aa = lane; aa < T; aa += 32) { int a = a0+aa, b = b0+bb; tile[bb][aa] = x[b*N+a]*w[b*N+a]; }
    __syncthreads();
#pragma unroll
    for (int aa = warp; aa < T; aa += R)
#pragma unroll
      for (int bb = lane; bb < T; bb += 32) { int a = a0+aa, b = b0+bb; y[a*N+b] = relu(tile[bb][aa] + 1.f); }
    __syncthreads();
  }
}
__global__ void copy4b(const float4* __restrict__ s, float4* __restrict__ d, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) d[i] = s[i];
}
__global__ void ew(const float4* __restrict__ x, const float4* __restrict__ w, const float4* __restrict__ b, float4* __restrict__ y, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) { float4 a = x[i], c = w[i], d = b[i]; y[i] = make_float4(relu(a.x)*c.x+d.x, relu(a.y)*c.y+d.y, relu(a.z)*c.z+d.z, relu(a.w)*c.w+d.w); }
}
void* flushbuf;
template <class F> float b2b(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> ts;
  std::vector<cudaEvent_t> ev(51); for (auto& e : ev) cudaEventCreate(&e);
  cudaEventRecord(ev[0]);
  for (int r = 0; r < 50; ++r) { f(); cudaEventRecord(ev[r+1]); }
  cudaEventSynchronize(ev[50]);
  for (int r = 0; r < 50; ++r) { float ms; cudaEventElapsedTime(&ms, ev[r], ev[r+1]); ts.push_back(ms); }
  std::sort(ts.begin(), ts.end()); return ts[25];
}
template <class F> float dobench(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<cudaEvent_t> s(50), e(50); for (int i = 0; i < 50; ++i) { cudaEventCreate(&s[i]); cudaEventCreate(&e[i]); }
  for (int r = 0; r < 50; ++r) { cudaMemsetAsync(flushbuf, 0, 256u << 20); cudaEventRecord(s[r]); f(); cudaEventRecord(e[r]); }
  cudaDeviceSynchronize();
  std::vector<float> ts; for (int r = 0; r < 50; ++r) { float ms; cudaEventElapsedTime(&ms, s[r], e[r]); ts.push_back(ms); }
  std::sort(ts.begin(), ts.end()); return ts[25];
}
int main() {
  size_t bytes = (size_t)N * N * 4;
  float *x, *w, *y, *z; cudaMalloc(&x, bytes); cudaMalloc(&w, bytes); cudaMalloc(&y, bytes); cudaMalloc(&z, bytes); cudaMalloc(&flushbuf, 256u << 20);
  cudaMemset(x, 0, bytes); cudaMemset(w, 0, bytes);
  long long n4 = (long long)N*N/4;
  auto copy = [&]{ copy4b<<<(n4+255)/256, 256>>>((const float4*)x, (float4*)y, n4); };
  auto memc = [&]{ cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice); };
  auto tr8 = [&]{ v_scalar<64,8><<<(N/64)*(N/64), 256>>>(x, w, y); };
  auto tr16 = [&]{ v_scalar<64,16><<<(N/64)*(N/64), 512>>>(x, w, y); };
  auto e3 = [&]{ ew<<<(n4+255)/256, 256>>>((const float4*)x, (const float4*)w, (const float4*)z, (float4*)y, n4); };
  struct { const char* name; double gb; float b, d; } rows[] = {
    {"copy kernel 512MiB", 2.0*bytes, b2b(copy), dobench(copy)}, {"cudaMemcpy 512MiB", 2.0*bytes, b2b(memc), dobench(memc)},
    {"transpose fused w8", 3.0*bytes, b2b(tr8), dobench(tr8)}, {"transpose fused w16", 3.0*bytes, b2b(tr16), dobench(tr16)},
    {"relu(x)*w+b", 4.0*bytes, b2b(e3), dobench(e3)}};
  for (auto& r : rows) printf("%-22s back-to-back %.4f ms (%.3f TB/s)  do_bench-like %.4f ms (%.3f TB/s)  ratio %.3f\n",
                              r.name, r.b, r.gb/r.b/1e9, r.d, r.gb/r.d/1e9, r.d / r.b);
  return 0;
}
