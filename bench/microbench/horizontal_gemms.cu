// Micro-benchmark behind docs/benchmarks.md (swiglu_bf16, qkv_bf16): the ways to run P bf16 GEMMs that share
// their input, x[M, K] @ W_i[K, N] for i < P, raced in one process under one protocol:
//   separate  P GEMMs (what PyTorch and torch.compile launch, through cublasGemmEx)
//   batched   one strided-batched GEMM, x broadcast (stride 0), the W_i stacked [P, K, N] (our executor's
//             horizontal matmul), with its own heuristic's candidates and with one member's (the configurations
//             cuBLASLt gives a single [M, K] x [K, N] GEMM, where it accepts them for the batch: what the
//             executor's search adds, kernels/contraction/matmul_search.cpp member_candidates)
//   packed    one GEMM on [W_0|...|W_P-1] packed [K, P*N], output [M, P*N] (column views)
// each with cuBLASLt's first heuristic algorithm, with the fastest of its first 16 (timed here), and through
// the cuBLAS API PyTorch calls. Interleaved rounds (one launch of every variant per round, each after a 256 MB
// memset, as do_bench flushes), so that the power-limited clocks move every variant alike. Its defaults are SwiGLU's.
// nvcc -O2 -std=c++17 -arch=sm_90 bench/microbench/horizontal_gemms.cu -lcublasLt -lcublas -o horizontal_gemms
//   ./horizontal_gemms                    # SwiGLU: P=2, x[8192, 4096] @ W1, W3 [4096, 4096]
//   ./horizontal_gemms 3 8192 1024 4096   # qkv_bf16: P=3, x[8192, 4096] @ Wq, Wk, Wv [4096, 1024]
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <string>

#include "common.cuh"

#define CB(x) do { int s_ = (int)(x); if (s_) { std::printf("%s: status %d line %d\n", #x, s_, __LINE__); std::exit(1); } } while (0)

namespace {

int P = 2, M = 8192, N = 4096, K = 4096;  // main() reads them from the command line
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


// The configurations `from` offers that cuBLASLt accepts for `to` (cublasLtMatmulAlgoCheck, workspace fits).
std::vector<cublasLtMatmulHeuristicResult_t> accepted_for(const LtGemm& from, const LtGemm& to) {
  std::vector<cublasLtMatmulHeuristicResult_t> out;
  for (const auto& r : from.algos) {
    cublasLtMatmulHeuristicResult_t check{};
    if (cublasLtMatmulAlgoCheck(lt, to.d, to.a, to.b, to.c, to.c, &r.algo, &check) == CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= kWs) {
      cublasLtMatmulHeuristicResult_t kept = r;
      kept.workspaceSize = check.workspaceSize;
      out.push_back(kept);
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5) {
    P = std::atoi(argv[1]), M = std::atoi(argv[2]), N = std::atoi(argv[3]), K = std::atoi(argv[4]);
  } else if (argc != 1) {
    std::printf("usage: %s [P M N K]   (default 2 8192 4096 4096: SwiGLU; qkv_bf16: 3 8192 1024 4096)\n", argv[0]);
    return 2;
  }
  if (P < 1 || M < 1 || N < 1 || K < 1) { std::printf("P, M, N and K must be positive\n"); return 2; }
  CB(cublasLtCreate(&lt));
  std::printf("cuBLASLt %zu; P = %d GEMMs of x[%d, %d] @ W[%d, %d], bf16\n", cublasLtGetVersion(), P, M, K, K, N);
  CB(cublasCreate(&blas));
  CK(cudaMalloc(&ws, kWs));
  CB(cublasSetWorkspace(blas, ws, kWs));
  CK(cudaMalloc(&g_flush, 256u << 20));
  const size_t xk = (size_t)M * K, kn = (size_t)K * N, mn = (size_t)M * N;
  __nv_bfloat16 *x, *w, *wp, *y, *yp;  // w: [P, K, N] stacked; wp: [K, P*N] packed; y: [P, M, N]; yp: [M, P*N]
  CK(cudaMalloc(&x, xk * 2));
  CK(cudaMalloc(&w, P * kn * 2));
  CK(cudaMalloc(&wp, P * kn * 2));
  CK(cudaMalloc(&y, P * mn * 2));
  CK(cudaMalloc(&yp, P * mn * 2));
  {  // small random values, so the tensor cores do real work (zeros can draw less power)
    std::vector<__nv_bfloat16> h(std::max(P * kn, xk));
    unsigned s = 1;
    for (auto& v : h) { s = s * 1664525u + 1013904223u; v = __float2bfloat16(((s >> 9) & 1023) / 1024.0f - 0.5f); }
    CK(cudaMemcpy(w, h.data(), P * kn * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(wp, h.data(), P * kn * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(x, h.data(), xk * 2, cudaMemcpyHostToDevice));
  }
  const LtGemm sep = make(N, N, N, 1, 0, 0);
  const LtGemm bat = make(N, N, N, P, (long long)kn, (long long)mn);
  LtGemm bat_member = bat;  // the same problem, searched over one member's configurations
  bat_member.algos = accepted_for(sep, bat);
  const LtGemm pk = make(P * N, P * N, P * N, 1, 0, 0);
  auto sep_lt = [&](int i) { for (int p = 0; p < P; ++p) CB(run(sep, i, w + p * kn, x, y + p * mn)); };
  auto bat_lt = [&](int i) { CB(run(bat, i, w, x, y)); };
  auto bat_member_lt = [&](int i) { CB(run(bat_member, i, w, x, y)); };
  auto pk_lt = [&](int i) { CB(run(pk, i, wp, x, yp)); };
  const int bs = best_of("separate", sep, sep_lt);
  const int bb = best_of("batched", bat, bat_lt);
  const int bm = bat_member.algos.empty() ? -1 : best_of("batched, one member's configurations", bat_member, bat_member_lt);
  const int bp = best_of("packed", pk, pk_lt);
  const float one = 1, zero = 0;
  // cuBLAS (PyTorch's at::cuda::blas::gemm for bf16): column-major C[n, M] = W^T-view * X^T-view.
  auto ex = [&](int n, const void* wv, const void* xv, void* yv) {
    CB(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, M, K, &one, wv, CUDA_R_16BF, n, xv, CUDA_R_16BF, K, &zero, yv,
                    CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP));
  };
  std::vector<Variant> vs = {
      {"separate cuBLAS (PyTorch's call)", [&] { for (int p = 0; p < P; ++p) ex(N, w + p * kn, x, y + p * mn); }, {}},
      {"separate cuBLASLt first", [&] { sep_lt(0); }, {}},
      {"separate cuBLASLt best #" + std::to_string(bs), [&] { sep_lt(bs); }, {}},
      {"batched cuBLAS StridedBatchedEx",
       [&] {
         CB(cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, w, CUDA_R_16BF, N, kn, x,
                                       CUDA_R_16BF, K, 0, &zero, y, CUDA_R_16BF, N, mn, P, CUBLAS_COMPUTE_32F,
                                       CUBLAS_GEMM_DEFAULT_TENSOR_OP));
       },
       {}},
      {"batched cuBLASLt first", [&] { bat_lt(0); }, {}},
      {"batched cuBLASLt best #" + std::to_string(bb), [&] { bat_lt(bb); }, {}},
      {"packed cuBLAS", [&] { ex(P * N, wp, x, yp); }, {}},
      {"packed cuBLASLt first", [&] { pk_lt(0); }, {}},
      {"packed cuBLASLt best #" + std::to_string(bp), [&] { pk_lt(bp); }, {}},
  };
  if (bm >= 0) {
    vs.push_back({"batched, member's first", [&] { bat_member_lt(0); }, {}});
    vs.push_back({"batched, member's best #" + std::to_string(bm), [&] { bat_member_lt(bm); }, {}});
  } else {
    std::printf("batched: cuBLASLt accepts none of one member's %zu configurations\n", sep.algos.size());
  }
  for (int run = 1; run <= 2; ++run) {
    race(vs, 40);
    std::printf("race %d (40 interleaved rounds, medians; %d x %.0f GFLOP)\n", run, P, 2.0 * M * N * K / 1e9);
    for (auto& v : vs) {
      const float ms = median(v.t);
      std::printf("  %-36s %.4f ms  %.0f TFLOP/s\n", v.name.c_str(), ms, 2.0 * P * M * N * K / ms / 1e9);
    }
  }
  return 0;
}
