// Internal to kernels/contraction: what the cuBLASLt half of fx::gpu::Matmul shares across its files: matmul.cpp
// builds the descriptors and launches; matmul_search.cpp chooses each plan's algorithm; matmul_algo.cpp says what
// an algorithm configuration is (its identity, its report text, its JSON form for the tuning cache).
// It includes cublasLt.h, so it stays out of the public matmul.h.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/common/cuda_call.h"
#include "kernels/contraction/device_memory.h"
#include "kernels/contraction/matmul.h"
#include "kernels/tuning/tuning_cache.h"

namespace fx::gpu::matmul_detail {

cudaDataType_t cuda_type(DType t);  // f32, f16, bf16; throws std::invalid_argument for another type

// The alignment cuBLASLt may assume of a pointer: its largest power-of-two divisor, capped at the 256 bytes
// that is the heuristic's default. Column views into a wider matrix are often less aligned than that.
std::uint32_t alignment_of(const void* p);

struct PlanKey {
  MatmulProblem problem;
  std::uint32_t align_a, align_b, align_c, align_bias, align_residual;
  // The alignments of cuBLAS's A, B, C and D: A is W (the caller's b), B is X (the caller's a), D is Y, and C is
  // the residual where there is one, else Y.
  std::array<std::uint32_t, 4> cublas_alignments() const {
    return {align_b, align_a, problem.residual ? align_residual : align_c, align_c};
  }
  auto tie() const {
    const MatmulProblem& p = problem;
    const MatmulLayout l = resolve_layout(p);
    return std::tuple(p.batch, p.m, p.n, p.k, p.a_type, p.b_type, p.c_type, p.transpose_a, p.transpose_b,
                      p.allow_tf32, p.epilogue, p.residual, l.lda, l.ldb, l.ldc, l.stride_a, l.stride_b, l.stride_c,
                      align_a, align_b, align_c, align_bias, align_residual);
  }
  bool operator<(const PlanKey& o) const { return tie() < o.tie(); }
};

// A plan serves one problem at one alignment class of its pointers.
PlanKey key_of(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in, const void* c);

template <class T, cublasStatus_t (*Destroy)(T)>
struct LtDeleter {
  void operator()(T h) const { Destroy(h); }
};
using DescPtr = std::unique_ptr<cublasLtMatmulDescOpaque_t, LtDeleter<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>>;
using LayoutPtr =
    std::unique_ptr<cublasLtMatrixLayoutOpaque_t, LtDeleter<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>>;
using PrefPtr = std::unique_ptr<cublasLtMatmulPreferenceOpaque_t,
                                LtDeleter<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>>;

// Everything cublasLtMatmul needs for one problem, built once and reused.
struct Plan {
  DescPtr desc;
  LayoutPtr w_layout, x_layout, y_layout;  // cuBLAS A, B and C/D
  cublasLtMatmulAlgo_t algo{};
  std::string choice;  // how algo was chosen, for reports
  // The search's fastest configurations, fastest first, at most kFinalistsKept (none where no search ran); algo
  // is finalists[0] until the executor's timing in the plan keeps another (Matmul::choose_finalist).
  std::vector<cublasLtMatmulAlgo_t> finalists;
  bool last_finalist_is_heuristics_first = false;  // appended after the fastest (kFinalistsKept)
  std::string search_choice;  // `choice` as the search left it
};

struct Operands {
  const void* a;
  const void* b;
  const void* residual;  // cuBLAS's C where the problem has a residual (beta = 1); null otherwise
  void* c;
  CUstream_st* stream;
};

// cuBLAS's C and beta: the residual with beta = 1, or Y with beta = 0 (C is then not read).
struct CInput {
  const void* c;
  float beta;
};
inline CInput c_input(const void* residual, const void* y) {
  return residual ? CInput{residual, 1.0f} : CInput{y, 0.0f};
}

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& value) {
  FX_CUDA_CALL(cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof(value)));
}

// A row-major [rows, cols] matrix with row stride ld is column-major [cols, rows] with the same ld.
LayoutPtr make_layout(DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t batch,
                      std::int64_t stride);
cublasComputeType_t compute_type(const MatmulProblem& p);
// The operation descriptor: transposes, epilogue and bias type (the bias pointer is set per call).
DescPtr make_desc(const MatmulProblem& p);
// A plan's descriptor and layouts for the key's problem, its algorithm not yet chosen. The bias pointer is set
// because the heuristic reads its value to learn its alignment.
Plan make_plan(const PlanKey& key, const void* bias);

// Every configuration field of an algorithm: two algorithms with the same key are the same configuration.
struct AlgoKey {
  std::int32_t id, splitk;
  std::uint32_t tile, stages, reduction, swizzle, custom;
  std::uint16_t inner, cluster;
  explicit AlgoKey(const cublasLtMatmulAlgo_t& a);
  auto tie() const { return std::tie(id, splitk, tile, stages, reduction, swizzle, custom, inner, cluster); }
  bool operator==(const AlgoKey& o) const { return tie() == o.tie(); }
};

// "algorithm 43, tile 128x64, stages 32xAUTO, cluster auto" (and the split-K, swizzle and option when set).
std::string describe_algo(const cublasLtMatmulAlgo_t& algo);

// An algorithm capability (cublasLtMatmulAlgoCapGetAttribute) as a list; empty where cuBLASLt does not say.
template <class T>
std::vector<T> algo_caps(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  std::size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0) return {};
  std::vector<T> v(bytes / sizeof(T));
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v.data(), bytes, &bytes) != CUBLAS_STATUS_SUCCESS) return {};
  return v;
}

// An algorithm's opaque words, as the tuning cache keeps them; algo_from_json refuses anything else.
nlohmann::json algo_json(const cublasLtMatmulAlgo_t& algo);
std::optional<cublasLtMatmulAlgo_t> algo_from_json(const nlohmann::json& words);

}  // namespace fx::gpu::matmul_detail

namespace fx::gpu {

struct Matmul::Impl {
  using Plan = matmul_detail::Plan;
  using PlanKey = matmul_detail::PlanKey;
  using Operands = matmul_detail::Operands;

  cublasLtHandle_t handle = nullptr;
  contraction_detail::DeviceMemory workspace;
  std::map<PlanKey, Plan> plans;
  TuningCache* tuning = nullptr;  // where searches are kept across runs (set_tuning_cache); not owned
  bool reuse_tuning = true;

  ~Impl() {
    if (handle) cublasLtDestroy(handle);
  }
  const Plan& plan_for(const MatmulProblem& p, const Operands& ops, const void* bias);
  void launch(const Plan& plan, const cublasLtMatmulAlgo_t& algo, float alpha, const void* a, const void* b,
              EpilogueInputs in, void* c, CUstream_st* stream);

  // matmul_search.cpp. Sets plan.algo (and where a search ran, its finalists) for a plan whose descriptors are
  // built (make_plan), timing the candidates on the call's own operands.
  void choose_algorithm(Plan& plan, const PlanKey& key, const Operands& ops);
  // Which of the pool's candidates are timed in full (see kCandidates).
  std::vector<std::size_t> screen(const Plan& plan, const std::vector<cublasLtMatmulAlgo_t>& pool,
                                  const Operands& ops);
  // The search's result kept by an earlier run (TuningCache), if every configuration in it is still accepted.
  bool reuse_search(Plan& plan, const PlanKey& key, const TuningKey& tkey);
  void keep_search(const Plan& plan, const TuningKey& tkey);
  // Milliseconds of one launch of `algo`; nullopt if cuBLASLt refuses it.
  std::optional<double> time_algo(const Plan& plan, const cublasLtMatmulAlgo_t& algo, const Operands& ops);
  // Whether cuBLASLt accepts `algo` for the plan's problem (cublasLtMatmulAlgoCheck), its workspace fits ours,
  // and the operands meet its minimum alignments.
  bool accepts(const Plan& plan, const PlanKey& key, const cublasLtMatmulAlgo_t& algo);
  // For a batched problem, the heuristic's candidates for one member of the batch that it accepts for the whole
  // and that are not in `have` (see member_candidates' definition).
  std::vector<cublasLtMatmulAlgo_t> member_candidates(const Plan& plan, const PlanKey& key,
                                                      cublasLtMatmulPreference_t pref,
                                                      const std::vector<cublasLtMatmulAlgo_t>& have);
  // The heuristic's algorithms with the cluster shape left to cuBLASLt, and every (tile, stages) configuration of
  // each algorithm it offered (see kCandidates in matmul_search.cpp).
  std::vector<cublasLtMatmulAlgo_t> tile_variants(const Plan& plan, const PlanKey& key,
                                                  const std::vector<cublasLtMatmulAlgo_t>& offered);
};

}  // namespace fx::gpu
