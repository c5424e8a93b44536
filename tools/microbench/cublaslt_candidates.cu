// Micro-benchmark behind docs/benchmarks.md: every cuBLASLt heuristic candidate for gpt2_block's TF32 GEMMs, by
// epilogue, and the residual as C input (beta = 1). nvcc -O2 -arch=sm_90 tools/microbench/cublaslt_candidates.cu -lcublasLt
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cublasLt.h>
#include <cuda_runtime.h>
#define CK(x) do{auto e=(x); if((int)e){printf("%s: %d line %d\n",#x,(int)e,__LINE__); return 1;}}while(0)
template <class F> float timeit(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> ts;
  for (int r = 0; r < 20; ++r) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms); }
  std::sort(ts.begin(), ts.end()); return ts[ts.size()/2];
}
int bench(cublasLtHandle_t h, void* ws, size_t wsb, int M, int N, int K, cublasLtEpilogue_t epi, const char* name, bool beta1) {
  float *A, *B, *C, *bias, *R;
  cudaMalloc(&A, (size_t)M*K*4); cudaMalloc(&B, (size_t)K*N*4); cudaMalloc(&C, (size_t)M*N*4); cudaMalloc(&R, (size_t)M*N*4); cudaMalloc(&bias, N*4);
  cudaMemset(A, 0, (size_t)M*K*4); cudaMemset(B, 0, (size_t)K*N*4); cudaMemset(bias, 0, N*4); cudaMemset(R, 0, (size_t)M*N*4);
  cublasLtMatmulDesc_t d; CK(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F));
  CK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  if (epi != CUBLASLT_EPILOGUE_DEFAULT) { const void* p = bias; CK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof(p))); }
  cublasLtMatrixLayout_t la, lb, lc;  // col-major: Y^T[N,M] = W^T[N,K] X^T[K,M]
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, N, K, N)); CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, M, K)); CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, N, M, N));
  cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
  cublasLtMatmulHeuristicResult_t res[16]; int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(h, d, la, lb, lc, lc, pref, 16, res, &found));
  float alpha = 1, beta = beta1 ? 1.f : 0.f;
  printf("%s M=%d N=%d K=%d beta=%g: %d candidates\n", name, M, N, K, beta, found);
  for (int i = 0; i < found; ++i) {
    cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
    float ms = timeit([&]{ st = cublasLtMatmul(h, d, &alpha, B, la, A, lb, &beta, beta1 ? R : C, lc, C, lc, &res[i].algo, ws, wsb, 0); });
    printf("  #%d %.4f ms %.1f TFLOP/s ws=%zu st=%d\n", i, ms, 2.0*M*N*K/ms/1e9, res[i].workspaceSize, (int)st);
  }
  cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(R); cudaFree(bias);
  return 0;
}
int main() {
  cublasLtHandle_t h; CK(cublasLtCreate(&h)); void* ws; size_t wsb = 32u << 20; cudaMalloc(&ws, wsb);
  bench(h, ws, wsb, 8192, 3072, 768, CUBLASLT_EPILOGUE_GELU_BIAS, "fc GELU_BIAS", false);
  bench(h, ws, wsb, 8192, 3072, 768, CUBLASLT_EPILOGUE_DEFAULT, "fc plain", false);
  bench(h, ws, wsb, 8192, 768, 3072, CUBLASLT_EPILOGUE_BIAS, "proj BIAS", false);
  bench(h, ws, wsb, 8192, 768, 3072, CUBLASLT_EPILOGUE_BIAS, "proj BIAS + residual C", true);
  bench(h, ws, wsb, 8192, 768, 768, CUBLASLT_EPILOGUE_BIAS, "q BIAS", false);
  return 0;
}
