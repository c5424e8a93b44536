// Micro-benchmark behind docs/engine.md's TF32 flash attention kernel (kernels/contraction/flash_attention_tf32.cu,
// included here as the executor compiles it): the kernel alone, warm L2, CUDA-event median of 100 launches, at
// gpt2_block's attention (B 8, H 12, T 1024, D 64; a random, a causal and no mask), at D 128 and at T 8192, each
// also checked against a float64 reference computed on the GPU (relative L2 error). Its time inside a plan is
// `fusion-cli run sample_graphs/gpt2_block.json --auto`; the chain as three kernels is the same with
// `fusion-cli fuse --auto --disable attention -o plan.json` and `--plan plan.json`.
// nvcc -O3 -std=c++17 -arch=sm_90 -I. bench/microbench/flash_attention_tf32.cu -o flash_attention_tf32
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>
#include "kernels/contraction/flash_attention_tf32.cu"
using namespace fx::gpu;
#define CK(x)                                                     \
  do {                                                            \
    cudaError_t e = (x);                                          \
    if (e != cudaSuccess) {                                       \
      printf("CUDA %s at %d\n", cudaGetErrorString(e), __LINE__); \
      exit(1);                                                    \
    }                                                             \
  } while (0)

__global__ void ref_kernel(const float* q, const float* k, const float* v, const float* mask, double* o, int heads,
                           int tq, int tkv, int d, long long mbs, long long mhs, float scale, int kt) {
  extern __shared__ double sc[];
  int bh = blockIdx.y, row = blockIdx.x, b = bh / heads, h = bh % heads;
  const float* qr = q + ((long long)bh * tq + row) * d;
  for (int j = threadIdx.x; j < tkv; j += blockDim.x) {
    double s = 0;
    for (int i = 0; i < d; ++i) {
      double kv = kt ? k[(long long)bh * tkv * d + (long long)i * tkv + j] : k[((long long)bh * tkv + j) * d + i];
      s += (double)qr[i] * kv;
    }
    s *= scale;
    if (mask) s += mask[b * mbs + h * mhs + (long long)row * tkv + j];
    sc[j] = s;
  }
  __syncthreads();
  __shared__ double sum;
  if (threadIdx.x == 0) {
    double m = -INFINITY;
    for (int j = 0; j < tkv; ++j) m = fmax(m, sc[j]);
    double s = 0;
    for (int j = 0; j < tkv; ++j) {
      sc[j] = exp(sc[j] - m);
      s += sc[j];
    }
    sum = s;
  }
  __syncthreads();
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    double a = 0;
    for (int j = 0; j < tkv; ++j) a += sc[j] * v[((long long)bh * tkv + j) * d + c];
    o[((long long)bh * tq + row) * d + c] = a / sum;
  }
}

int run(int B, int H, int T, int TK, int D, int mask_kind, int kt, bool timeit) {
  size_t nq = (size_t)B * H * T * D, nk = (size_t)B * H * TK * D;
  std::vector<float> hq(nq), hk(nk), hv(nk), hm((size_t)T * TK);
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (auto& x : hq) x = nd(rng);
  for (auto& x : hk) x = nd(rng);
  for (auto& x : hv) x = nd(rng);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < TK; ++j)
      hm[(size_t)i * TK + j] = mask_kind == 1 ? (j <= i ? 0.f : -INFINITY) : mask_kind == 2 ? nd(rng) : 0.f;
  float *q, *k, *v, *m, *o;
  double* r;
  CK(cudaMalloc(&q, nq * 4));
  CK(cudaMalloc(&k, nk * 4));
  CK(cudaMalloc(&v, nk * 4));
  CK(cudaMalloc(&m, hm.size() * 4));
  CK(cudaMalloc(&o, nq * 4));
  CK(cudaMalloc(&r, nq * 8));
  std::vector<float> hkk = hk;
  if (kt) {
    for (int bh = 0; bh < B * H; ++bh)
      for (int j = 0; j < TK; ++j)
        for (int i = 0; i < D; ++i)
          hkk[(size_t)bh * TK * D + (size_t)i * TK + j] = hk[(size_t)bh * TK * D + (size_t)j * D + i];
  }
  CK(cudaMemcpy(q, hq.data(), nq * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(k, hkk.data(), nk * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(v, hv.data(), nk * 4, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(m, hm.data(), hm.size() * 4, cudaMemcpyHostToDevice));
  FlashAttentionTf32 p;
  p.batch = B;
  p.heads = H;
  p.seq_q = T;
  p.seq_kv = TK;
  p.head_dim = D;
  p.scale = 1.0f / sqrtf((float)D);
  p.k_transposed = kt;
  const float* mp = mask_kind ? m : nullptr;
  CK(flash_attention_tf32(p, q, k, v, mp, o, 0));
  CK(cudaFuncSetAttribute(ref_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, TK * 8));
  ref_kernel<<<dim3(T, B * H), 128, TK * 8>>>(q, k, v, mp, r, H, T, TK, D, 0, 0, p.scale, kt);
  CK(cudaDeviceSynchronize());
  std::vector<float> ho(nq);
  std::vector<double> hr(nq);
  CK(cudaMemcpy(ho.data(), o, nq * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hr.data(), r, nq * 8, cudaMemcpyDeviceToHost));
  double num = 0, den = 0, mxe = 0;
  size_t nan = 0;
  for (size_t i = 0; i < nq; ++i) {
    if (std::isnan(ho[i])) {
      ++nan;
      continue;
    }
    double e = ho[i] - hr[i];
    num += e * e;
    den += hr[i] * hr[i];
    mxe = std::max(mxe, std::fabs(e));
  }
  double ms = 0;
  if (timeit) {
    cudaEvent_t a, bb;
    cudaEventCreate(&a);
    cudaEventCreate(&bb);
    std::vector<float> ts;
    for (int i = 0; i < 10; ++i) flash_attention_tf32(p, q, k, v, mp, o, 0);
    for (int i = 0; i < 100; ++i) {
      cudaEventRecord(a);
      flash_attention_tf32(p, q, k, v, mp, o, 0);
      cudaEventRecord(bb);
      cudaEventSynchronize(bb);
      float t;
      cudaEventElapsedTime(&t, a, bb);
      ts.push_back(t);
    }
    std::sort(ts.begin(), ts.end());
    ms = ts[50];
  }
  double fl = 4.0 * B * H * (double)T * TK * D;
  printf("B%d H%d T%d Tkv%d D%d mask%d kt%d: rel L2 err %.3g, max abs err %.3g, NaN %zu; %.4f ms, %.1f TFLOP/s\n", B, H,
         T, TK, D, mask_kind, kt, sqrt(num / den), mxe, nan, ms, ms > 0 ? fl / ms / 1e9 : 0.0);
  cudaFree(q);
  cudaFree(k);
  cudaFree(v);
  cudaFree(m);
  cudaFree(o);
  cudaFree(r);
  return 0;
}

int main() {
  run(8, 12, 1024, 1024, 64, 2, 0, true);  // random mask
  run(8, 12, 1024, 1024, 64, 1, 0, true);  // causal, -inf above the diagonal
  run(8, 12, 1024, 1024, 64, 0, 0, true);  // no mask
  run(8, 12, 1024, 1024, 128, 2, 0, true);
  run(1, 12, 8192, 8192, 64, 1, 0, true);
  return 0;
}
