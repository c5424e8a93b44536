// Micro-benchmark behind docs/benchmarks.md (gpt2_block): the attention GEMMs (scores = q k^T and ctx = p v,
// 96 batched TF32 products) timed after a 256 MB flush three ways: cuBLAS's cublasGemmStridedBatchedEx (the
// call PyTorch's bmm makes), every candidate cuBLASLt's heuristic returns (up to 64; the executor times its first
// 8), and every (algorithm, tile, stages) cuBLASLt accepts for the problem (up to 1500), cluster shape left to it.
// Prints the tile and stages of each, so the executor's search can be compared with cuBLAS's pick.
// nvcc -O2 -std=c++17 -arch=sm_90 bench/microbench/attention_gemms.cu -lcublasLt -lcublas -o attention_gemms
#include <cublasLt.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common.cuh"

#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { std::printf("%s: %d line %d\n", #x, (int)s_, __LINE__); std::exit(1); } } while (0)

namespace {
struct Shape {
  const char* name;
  // cuBLAS column-major terms: C[m, n] = op(A)[m, k] * B[k, n], batch of them.
  int m, n, k;
  cublasOperation_t ta;
  int lda, ldb, ldc;
};

std::string algo_text(const cublasLtMatmulAlgo_t& a) {
  int id = 0, splitk = 0; std::uint32_t tile = 0, stages = 0; std::uint16_t cluster = 0; size_t w = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
  cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster, sizeof cluster, &w);
  return "id " + std::to_string(id) + " tile " + std::to_string(tile) + " stages " + std::to_string(stages) + " splitk " +
         std::to_string(splitk) + " cluster " + std::to_string(cluster);
}

void bench(cublasHandle_t blas, cublasLtHandle_t lt, void* ws, size_t wsb, const Shape& s, int batch) {
  const long long sa = (long long)s.m * s.k, sb = (long long)s.k * s.n, sc = (long long)s.m * s.n;
  float *A, *B, *Cm;
  CK(cudaMalloc(&A, sa * batch * 4)); CK(cudaMalloc(&B, sb * batch * 4)); CK(cudaMalloc(&Cm, sc * batch * 4));
  CK(cudaMemset(A, 0, sa * batch * 4)); CK(cudaMemset(B, 0, sb * batch * 4));
  const float alpha = 1, beta = 0;
  const double flop = 2.0 * s.m * s.n * s.k * batch;
  std::printf("%s: batch %d, m %d n %d k %d (cuBLAS terms)\n", s.name, batch, s.m, s.n, s.k);
  const float blas_ms = median_ms([&] {
    cublasGemmStridedBatchedEx(blas, s.ta, CUBLAS_OP_N, s.m, s.n, s.k, &alpha, A, CUDA_R_32F, s.lda, sa, B, CUDA_R_32F, s.ldb, sb,
                               &beta, Cm, CUDA_R_32F, s.ldc, sc, batch, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
  }, true);
  std::printf("  cublasGemmStridedBatchedEx: %.4f ms (%.1f TFLOP/s)\n", blas_ms, flop / blas_ms / 1e9);

  cublasLtMatmulDesc_t d; CB(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F));
  cublasOperation_t ta = s.ta;
  CB(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  auto layout = [&](int rows, int cols, int ld, long long stride) {
    cublasLtMatrixLayout_t l; CB(cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, rows, cols, ld));
    CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
    CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
    return l;
  };
  cublasLtMatrixLayout_t la = s.ta == CUBLAS_OP_N ? layout(s.m, s.k, s.lda, sa) : layout(s.k, s.m, s.lda, sa);
  cublasLtMatrixLayout_t lb = layout(s.k, s.n, s.ldb, sb), lc = layout(s.m, s.n, s.ldc, sc);
  auto time_algo = [&](const cublasLtMatmulAlgo_t& a) -> float {
    if (cublasLtMatmul(lt, d, &alpha, A, la, B, lb, &beta, Cm, lc, Cm, lc, &a, ws, wsb, 0) != CUBLAS_STATUS_SUCCESS) return -1;
    return median_ms([&] { cublasLtMatmul(lt, d, &alpha, A, la, B, lb, &beta, Cm, lc, Cm, lc, &a, ws, wsb, 0); }, true);
  };
  cublasLtMatmulPreference_t pref; CB(cublasLtMatmulPreferenceCreate(&pref));
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
  cublasLtMatmulHeuristicResult_t res[64]; int found = 0;
  CB(cublasLtMatmulAlgoGetHeuristic(lt, d, la, lb, lc, lc, pref, 64, res, &found));
  std::printf("  cuBLASLt heuristic, %d candidates:\n", found);
  float best_heur = 1e9f;
  for (int i = 0; i < found; ++i) {
    const float ms = time_algo(res[i].algo);
    if (ms > 0) best_heur = std::min(best_heur, ms);
    std::printf("    #%d %s: %.4f ms\n", i + 1, algo_text(res[i].algo).c_str(), ms);
  }
  int ids[256], n_ids = 0;
  CB(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, 256, ids, &n_ids));
  struct Timed { float ms; std::string what; };
  std::vector<Timed> all;
  for (int i = 0; i < n_ids; ++i) {
    cublasLtMatmulAlgo_t a;
    if (cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, ids[i], &a) != CUBLAS_STATUS_SUCCESS) continue;
    auto caps = [&](cublasLtMatmulAlgoCapAttributes_t attr, std::uint32_t undefined) {
      size_t bytes = 0;
      cublasLtMatmulAlgoCapGetAttribute(&a, attr, nullptr, 0, &bytes);
      std::vector<std::uint32_t> v(std::max<size_t>(bytes / 4, 1), undefined);
      if (bytes) cublasLtMatmulAlgoCapGetAttribute(&a, attr, v.data(), bytes, &bytes);
      return v;
    };
    const std::vector<std::uint32_t> tiles = caps(CUBLASLT_ALGO_CAP_TILE_IDS, CUBLASLT_MATMUL_TILE_UNDEFINED);
    const std::vector<std::uint32_t> stages = caps(CUBLASLT_ALGO_CAP_STAGES_IDS, CUBLASLT_MATMUL_STAGES_UNDEFINED);
    for (std::uint32_t tile : tiles) {
      for (std::uint32_t stage : stages) {
        cublasLtMatmulAlgo_t t = a;
        cublasLtMatmulAlgoConfigSetAttribute(&t, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile);
        cublasLtMatmulAlgoConfigSetAttribute(&t, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage, sizeof stage);
        cublasLtMatmulHeuristicResult_t check{};
        if (cublasLtMatmulAlgoCheck(lt, d, la, lb, lc, lc, &t, &check) != CUBLAS_STATUS_SUCCESS) continue;
        if (check.workspaceSize > wsb || all.size() >= 1500) continue;
        const float ms = time_algo(t);
        if (ms > 0) all.push_back({ms, algo_text(t)});
      }
    }
  }
  std::sort(all.begin(), all.end(), [](const Timed& a, const Timed& b) { return a.ms < b.ms; });
  std::printf("  every (algorithm, tile, stages) accepted: %zu; the fastest:\n", all.size());
  for (size_t i = 0; i < std::min<size_t>(all.size(), 8); ++i) std::printf("    %.4f ms %s\n", all[i].ms, all[i].what.c_str());
  std::printf("  => cuBLAS %.4f, heuristic best %.4f, exhaustive best %.4f ms\n", blas_ms, best_heur, all.empty() ? -1.f : all[0].ms);
  cudaFree(A); cudaFree(B); cudaFree(Cm);
}
}  // namespace

int main() {
  cublasHandle_t blas; CB(cublasCreate(&blas));
  cublasLtHandle_t lt; CB(cublasLtCreate(&lt));
  const size_t wsb = 32u << 20;
  void* ws; CK(cudaMalloc(&ws, wsb));
  CB(cublasSetWorkspace(blas, ws, wsb));
  CB(cublasSetMathMode(blas, CUBLAS_TF32_TENSOR_OP_MATH));
  CK(cudaMalloc(&g_flush, 256u << 20));
  // scores[b] = q[b] k[b]^T: row-major [1024, 1024] = col-major C[1024 (n of k), 1024 (m of q)] = k q^T,
  // A = k (col-major [64, 1024], transposed), B = q^T (col-major [64, 1024]).
  bench(blas, lt, ws, wsb, Shape{"scores q k^T", 1024, 1024, 64, CUBLAS_OP_T, 64, 64, 1024}, 96);
  // ctx[b] = p[b] v[b]: col-major C[64, 1024] = v^T p^T, A = v (col-major [64, 1024]), B = p (col-major [1024, 1024]).
  bench(blas, lt, ws, wsb, Shape{"ctx p v", 64, 1024, 1024, CUBLAS_OP_N, 64, 1024, 64}, 96);
  return 0;
}
