// Matrix multiplication on cuBLASLt with fused epilogues (residual, bias, ReLU, tanh-GELU), for the executor.
// All matrices are row-major as the graph format stores them: Y[M,N] = X[M,K] * W[K,N] (+ R[M,N]) (+ b[N]).
// No vendor header leaks from here: the cuBLASLt handle, workspace and plan cache sit behind a pimpl.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/dtype.h"

struct CUstream_st;  // cudaStream_t is CUstream_st*; declared here so callers need no CUDA header

namespace fx::gpu {

// What cuBLASLt applies to the accumulator before it writes Y. The bias is a vector of N elements, broadcast
// over rows (and over the batch), of Y's element type. gelu_tanh is the tanh approximation of GELU.
enum class MatmulEpilogue : std::uint8_t { none, bias, relu, relu_bias, gelu_tanh, gelu_tanh_bias };

std::string_view matmul_epilogue_name(MatmulEpilogue e);  // "none", "relu_bias", ...
std::string_view cublaslt_epilogue_name(MatmulEpilogue e);  // "DEFAULT", "RELU_BIAS", "GELU_BIAS", ...
constexpr bool epilogue_has_bias(MatmulEpilogue e) {
  return e == MatmulEpilogue::bias || e == MatmulEpilogue::relu_bias || e == MatmulEpilogue::gelu_tanh_bias;
}

// One (batched) product C[b] = op(A[b]) * op(B[b]), every matrix row-major. A is X ([M,K], or [K,M] stored
// when transpose_a), B is W ([K,N], or [N,K] stored when transpose_b), C is Y ([M,N]).
// Leading dimensions are row strides in elements; unset means packed. Batch strides are in elements;
// unset means packed (rows * ld); 0 broadcasts one matrix to every batch entry.
// ldb/ldc let a weight or an output be a column view of a wider matrix (horizontal matmul).
struct MatmulProblem {
  std::int64_t batch = 1;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  DType a_type = DType::f32;
  DType b_type = DType::f32;
  DType c_type = DType::f32;  // also the bias's type
  bool transpose_a = false;
  bool transpose_b = false;
  bool allow_tf32 = false;  // f32 only: TF32 tensor cores (10-bit mantissa inputs, f32 accumulation)
  MatmulEpilogue epilogue = MatmulEpilogue::none;
  // cuBLASLt's alpha: D = alpha * (A B) before the epilogue's bias and activation. A multiplication of the
  // product by a scalar (attention's 1/sqrt(d)) costs nothing here. Per call: plans are shared across alphas.
  float alpha = 1.0f;
  // cuBLASLt's C input with beta = 1: D = act(alpha * (A B) + R + bias), R a tensor of Y's type and layout (same
  // ldc and batch stride), read from its own buffer (EpilogueInputs::residual), never Y's.
  bool residual = false;
  std::optional<std::int64_t> lda{}, ldb{}, ldc{};
  std::optional<std::int64_t> batch_stride_a{}, batch_stride_b{}, batch_stride_c{};

  bool operator==(const MatmulProblem&) const = default;
};

// What the epilogue reads besides the product: the bias vector where the epilogue has one, the residual where
// the problem has one. A bias pointer alone converts to it, so a call without a residual reads as before.
struct EpilogueInputs {
  const void* bias = nullptr;
  const void* residual = nullptr;
  EpilogueInputs() = default;
  EpilogueInputs(const void* bias_vector) : bias(bias_vector) {}  // NOLINT(google-explicit-constructor)
  EpilogueInputs(const void* bias_vector, const void* residual_tensor) : bias(bias_vector), residual(residual_tensor) {}
};

// The problem with every default filled in: what is actually handed to cuBLASLt.
struct MatmulLayout {
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};
MatmulLayout resolve_layout(const MatmulProblem& p);

// Empty when the problem is well formed; otherwise a message naming the first problem found.
std::string validate_matmul(const MatmulProblem& p);

// Every field of the problem in one line, as tuning keys take it: "batch 1 m 8192 n 768 k 768 f32 f32 f32 ...".
std::string matmul_problem_text(const MatmulProblem& p);

// One line for reports: "cuBLASLt GELU_BIAS epilogue (tanh approximation), TF32 tensor cores".
std::string describe_matmul(const MatmulProblem& p);

// Where the algorithm search's choice came from, the start of its report line (the configuration follows). The
// searched pool is the heuristic's list for the problem, [0, offered); for a batched problem its list for one
// member of the batch, [offered, listed); then the variants of both, [listed, size). `chosen` indexes the pool.
std::string describe_search_origin(std::size_t chosen, std::size_t offered, std::size_t listed, std::size_t size);

// What timing the search's finalists again in the plan kept, the end of the report line: `chosen` indexes
// `plan_ms` (finalist 0 is the search's pick; the last the heuristic's first where
// `last_is_heuristics_first`), `algo` describes it; `timed_as` says what the times are of when it is more than
// this GEMM ("its 3 GEMMs together").
std::string describe_finalist_choice(std::size_t chosen, const std::string& algo, const std::vector<double>& plan_ms,
                                     const std::string& timed_as, bool last_is_heuristics_first = false);

// Owns a cuBLASLt handle, a 32 MiB workspace and a cache of chosen algorithms keyed by problem and pointer
// alignment. Not thread-safe, and one workspace serves every call: use one Matmul per stream.
class TuningCache;  // kernels/tuning/tuning_cache.h

class Matmul {
 public:
  static constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

  Matmul();  // throws NoDeviceError without a usable CUDA device, GpuError on a failed call
  ~Matmul();
  Matmul(Matmul&&) noexcept;
  Matmul& operator=(Matmul&&) noexcept;
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  // Enqueues the product on `stream` (nullptr: the legacy default stream). Device pointers; the bias is required
  // exactly when the epilogue has one, the residual exactly when the problem has one (and must not be c).
  // Throws std::invalid_argument for a malformed problem and GpuError (code CUBLAS_STATUS_NOT_SUPPORTED) when
  // cuBLASLt offers no algorithm for it.
  void run(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in, void* c, CUstream_st* stream);

  std::size_t cached_plan_count() const;
  // Keeps each problem's search in `cache` and, with `reuse`, takes an earlier run's search from it instead of
  // searching (every configuration kept is checked with cuBLASLt again first). Null: every problem is searched.
  void set_tuning_cache(TuningCache* cache, bool reuse);
  // How the algorithm of the cached plan for `p` was chosen ("the fastest of 36 configurations by timing (...):
  // not among the heuristic's, algorithm 43, tile 128x64, stages 32xAUTO, cluster auto (0.1670 ms; the
  // heuristic's first: 0.1728 ms)"); empty when no plan for p was built yet. The first run() of a problem
  // screens cuBLASLt's candidates, their algorithms with the cluster shape left to cuBLASLt and every tile and
  // stage count of those algorithms on its operands (outside CUDA graph capture), times the 8 best in full and
  // keeps the fastest.
  std::string algorithm_choice(const MatmulProblem& p) const;

  // The search's fastest configurations for `p` on these operands (a plan serves one alignment class of the
  // pointers), fastest first: at most 3, then the heuristic's first where the search ranked it lower (at most 4
  // in all); none before its first run() or where no search ran (one candidate, CUDA graph capture). The
  // executor times them again inside its plan, where the L2 and the clocks are as the plan leaves them
  // (kernels/executor/layout_tuning.h), and keeps the fastest there: run_finalist launches finalist i (run()'s
  // checks are not repeated), choose_finalist makes finalist i the one run() launches and adds the
  // times (of the whole of what was timed, `timed_as`, e.g. "its 3 GEMMs together") to algorithm_choice. Both
  // throw std::logic_error where the plan does not hold finalist i.
  std::size_t finalist_count(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                             const void* c) const;
  // The finalists' configurations as a fingerprint (16 hex digits; "" where there are none): a choice among
  // them kept by an earlier run holds only for the same finalists.
  std::string finalists_id(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                           const void* c) const;
  void run_finalist(std::size_t i, const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in, void* c,
                    CUstream_st* stream);
  void choose_finalist(std::size_t i, const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                       const void* c, const std::vector<double>& plan_ms, const std::string& timed_as = "");

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx::gpu
