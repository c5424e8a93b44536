// Micro-benchmark behind docs/benchmarks.md (swiglu_bf16): the ways to run SwiGLU's two GEMMs that share x,
// x[8192,4096] @ W1[4096,4096] and x @ W3, in bf16, raced in one process under one protocol:
//   separate  two GEMMs (what PyTorch and torch.compile launch, through cublasGemmEx)
//   batched   one strided-batched GEMM, x broadcast (stride 0), W1 and W3 stacked [2, K, N] (our executor)
//   packed    one GEMM on [W1|W3] packed [K, 2N], output [M, 2N] (column views g and u)
// each with cuBLASLt's first heuristic algorithm, with the fastest of its first 16 (timed here), and through
// the cuBLAS API PyTorch calls. Interleaved rounds (one launch of every variant per round, each after a 256 MB
// memset, as do_bench flushes), so that the power-limited clocks move every variant alike.
// nvcc -O2 -std=c++17 -arch=sm_90 tools/microbench/swiglu_gemms.cu -lcublasLt -lcublas -o swiglu_gemms
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <string>

#include "common.cuh"

#define CB(x) do { int s_ = (int)(x); if (s_) { std::printf("%s: status %d line %d\n", #x, s_, __LINE__); std::exit(1); } } while (0)

namespace {

constexpr int M = 8192, N = 4096, K = 4096;
cublasLtHandle_t lt;
cublasHandle_t blas;
void* ws;
constexpr size_t kWs = 32u << 20;

struct LtGemm {
  cublasLtMatmulDesc_t d;
  cublasLtMatrixLayout_t a, b, c;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;
};

cublasLtMatrixLayout_t layout(int rows, int cols, long long ld, int batch, long long stride) {
  cublasLtMatrixLayout_t l;
  CB(cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, rows, cols, ld));
  if (batch > 1) {
    CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
    CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return l;
}

// Row-major Y[M, n] = X[M, K] W[K, n] as column-major Y^T = W^T X^T (as kernels/contraction/matmul.cpp).
LtGemm make(int n, long long ldw, long long ldy, int batch, long long stride_w, long long stride_y) {
  LtGemm g;
  CB(cublasLtMatmulDescCreate(&g.d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  g.a = layout(n, K, ldw, batch, stride_w);
  g.b = layout(K, M, K, batch, 0);
  g.c = layout(n, M, ldy, batch, stride_y);
  cublasLtMatmulPreference_t pref;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWs, sizeof kWs));
  g.algos.resize(16);
  int found = 0;
  CB(cublasLtMatmulAlgoGetHeuristic(lt, g.d, g.a, g.b, g.c, g.c, pref, 16, g.algos.data(), &found));
  g.algos.resize(found);
  return g;
}

cublasStatus_t run(const LtGemm& g, int i, const void* w, const void* x, void* y) {
  const float one = 1, zero = 0;
  return cublasLtMatmul(lt, g.d, &one, w, g.a, x, g.b, &zero, y, g.c, y, g.c, &g.algos[i].algo, ws, kWs, 0);
}

std::string algo_name(const cublasLtMatmulAlgo_t& a) {
  int tile = 0, stages = 0, splitk = 0, swizzle = 0;
  uint16_t cluster = 0;
  size_t w;
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle, sizeof swizzle, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
  char s[96];
  std::snprintf(s, sizeof s, "tile %d stages %d splitK %d swizzle %d cluster %d", tile, stages, splitk, swizzle,
                (int)cluster);
  return s;
}

struct Variant {
  std::string name;
  std::function<void()> f;
  std::vector<float> t;
};

// Medians of `rounds` interleaved rounds, each launch after the flush.
void race(std::vector<Variant>& vs, int rounds) {
  cudaEvent_t s, e;
  CK(cudaEventCreate(&s));
  CK(cudaEventCreate(&e));
  for (auto& v : vs) { v.f(); v.t.clear(); }
  for (int r = 0; r < rounds; ++r) {
    for (auto& v : vs) {
      CK(cudaMemsetAsync(g_flush, 0, 256u << 20));
      CK(cudaEventRecord(s));
      v.f();
      CK(cudaEventRecord(e));
      CK(cudaEventSynchronize(e));
      float ms;
      CK(cudaEventElapsedTime(&ms, s, e));
      v.t.push_back(ms);
    }
  }
}

float median(std::vector<float> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The fastest of a shape's candidates by interleaved timing; prints them all.
int best_of(const char* what, const LtGemm& g, const std::function<void(int)>& launch) {
  std::vector<Variant> vs;
  for (int i = 0; i < (int)g.algos.size(); ++i) vs.push_back({std::to_string(i), [&, i] { launch(i); }, {}});
  race(vs, 15);
  int best = 0;
  std::printf("%s: %zu candidates\n", what, g.algos.size());
  for (int i = 0; i < (int)vs.size(); ++i) {
    const float ms = median(vs[i].t);
    std::printf("  #%2d %.4f ms  %s ws %zu\n", i, ms, algo_name(g.algos[i].algo).c_str(), g.algos[i].workspaceSize);
    if (ms < median(vs[best].t)) best = i;
  }
  return best;
}

}  // namespace

int main() {
  CB(cublasLtCreate(&lt));
  std::printf("cuBLASLt %zu\n", cublasLtGetVersion());
  CB(cublasCreate(&blas));
  CK(cudaMalloc(&ws, kWs));
  CB(cublasSetWorkspace(blas, ws, kWs));
  CK(cudaMalloc(&g_flush, 256u << 20));
  const size_t xk = (size_t)M * K, kn = (size_t)K * N, mn = (size_t)M * N;
  __nv_bfloat16 *x, *w, *wp, *y, *yp;  // w: [2, K, N] stacked; wp: [K, 2N] packed; y: [2, M, N]; yp: [M, 2N]
  CK(cudaMalloc(&x, xk * 2));
  CK(cudaMalloc(&w, 2 * kn * 2));
  CK(cudaMalloc(&wp, 2 * kn * 2));
  CK(cudaMalloc(&y, 2 * mn * 2));
  CK(cudaMalloc(&yp, 2 * mn * 2));
  {  // small random values, so the tensor cores do real work (zeros can draw less power)
    std::vector<__nv_bfloat16> h(2 * kn);
    unsigned s = 1;
    for (auto& v : h) { s = s * 1664525u + 1013904223u; v = __float2bfloat16(((s >> 9) & 1023) / 1024.0f - 0.5f); }
    CK(cudaMemcpy(w, h.data(), 2 * kn * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(wp, h.data(), 2 * kn * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(x, h.data(), xk * 2, cudaMemcpyHostToDevice));
  }
  const LtGemm sep = make(N, N, N, 1, 0, 0);
  const LtGemm bat = make(N, N, N, 2, (long long)kn, (long long)mn);
  const LtGemm pk = make(2 * N, 2 * N, 2 * N, 1, 0, 0);
  auto sep_lt = [&](int i) { CB(run(sep, i, w, x, y)); CB(run(sep, i, w + kn, x, y + mn)); };
  auto bat_lt = [&](int i) { CB(run(bat, i, w, x, y)); };
  auto pk_lt = [&](int i) { CB(run(pk, i, wp, x, yp)); };
  const int bs = best_of("separate (x2)", sep, sep_lt);
  const int bb = best_of("batched", bat, bat_lt);
  const int bp = best_of("packed", pk, pk_lt);
  const float one = 1, zero = 0;
  // cuBLAS (PyTorch's at::cuda::blas::gemm for bf16): column-major C[n, M] = W^T-view * X^T-view.
  auto ex = [&](int n, const void* wv, const void* xv, void* yv) {
    CB(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, M, K, &one, wv, CUDA_R_16BF, n, xv, CUDA_R_16BF, K, &zero, yv,
                    CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
  };
  std::vector<Variant> vs = {
      {"separate cuBLAS (PyTorch's call)", [&] { ex(N, w, x, y); ex(N, w + kn, x, y + mn); }, {}},
      {"separate cuBLASLt first", [&] { sep_lt(0); }, {}},
      {"separate cuBLASLt best #" + std::to_string(bs), [&] { sep_lt(bs); }, {}},
      {"batched cuBLAS StridedBatchedEx",
       [&] {
         CB(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, w, CUDA_R_16BF, N, kn, x,
                                       CUDA_R_16BF, K, 0, &zero, y, CUDA_R_16BF, N, mn, 2, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT_TENSOR_OP));
       },
       {}},
      {"batched cuBLASLt first", [&] { bat_lt(0); }, {}},
      {"batched cuBLASLt best #" + std::to_string(bb), [&] { bat_lt(bb); }, {}},
      {"packed cuBLAS", [&] { ex(2 * N, wp, x, yp); }, {}},
      {"packed cuBLASLt first", [&] { pk_lt(0); }, {}},
      {"packed cuBLASLt best #" + std::to_string(bp), [&] { pk_lt(bp); }, {}},
  };
  for (int run = 1; run <= 2; ++run) {
    race(vs, 40);
    std::printf("race %d (40 interleaved rounds, medians; 2 x %.0f GFLOP)\n", run, 2.0 * M * N * K / 1e9);
    for (auto& v : vs) {
      const float ms = median(v.t);
      std::printf("  %-36s %.4f ms  %.0f TFLOP/s\n", v.name.c_str(), ms, 4.0 * M * N * K / ms / 1e9);
    }
  }
  return 0;
}
