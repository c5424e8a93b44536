// cuBLASLt behind fx::gpu::Matmul. Row-major Y = X*W is computed as column-major Y^T = W^T * X^T
// (cuBLAS m = N, n = M, k = K): the column-major view of a row-major matrix is its transpose, so no data
// moves. CUBLASLT_ORDER_ROW would be the direct route, but with bias epilogues it returns NOT_SUPPORTED
// with 0 algorithms.
#include <algorithm>
#include <array>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/graph/content_hash.h"
#include "kernels/common/cuda_call.h"
#include "kernels/common/event_timing.h"
#include "kernels/contraction/device_memory.h"
#include "kernels/contraction/matmul.h"
#include "kernels/tuning/timing_rules.h"
#include "kernels/tuning/tuning_cache.h"

namespace fx::gpu {
namespace {

using contraction_detail::capturing;
using contraction_detail::DeviceMemory;

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: throw std::invalid_argument("matmul takes f32, f16 or bf16 operands");
  }
}

cublasLtEpilogue_t lt_epilogue(MatmulEpilogue e) {
  switch (e) {
    case MatmulEpilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case MatmulEpilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case MatmulEpilogue::relu: return CUBLASLT_EPILOGUE_RELU;
    case MatmulEpilogue::relu_bias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case MatmulEpilogue::gelu_tanh: return CUBLASLT_EPILOGUE_GELU;
    case MatmulEpilogue::gelu_tanh_bias: return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// The alignment cuBLASLt may assume of a pointer: its largest power-of-two divisor, capped at the 256 bytes
// that is the heuristic's default. Column views into a wider matrix are often less aligned than that.
std::uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

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

// What decides a search's result, as the tuning cache's problem: every field of the plan key, and the heuristic's
// first configuration (a cuBLASLt that offers another has another search to run).
std::string search_key_text(const PlanKey& key, const cublasLtMatmulAlgo_t& heuristics_first) {
  std::string t = matmul_problem_text(key.problem) + " align " + std::to_string(key.align_a) + "," +
                  std::to_string(key.align_b) + "," + std::to_string(key.align_c) + "," + std::to_string(key.align_bias) +
                  (key.problem.residual ? "," + std::to_string(key.align_residual) : std::string()) + " heuristic";
  for (std::uint64_t word : heuristics_first.data) t += " " + std::to_string(word);
  return t;
}

nlohmann::json algo_json(const cublasLtMatmulAlgo_t& algo) {
  nlohmann::json words = nlohmann::json::array();
  for (std::uint64_t word : algo.data) words.push_back(word);
  return words;
}

std::optional<cublasLtMatmulAlgo_t> algo_from_json(const nlohmann::json& words) {
  cublasLtMatmulAlgo_t algo{};
  if (!words.is_array() || words.size() != std::size(algo.data)) return std::nullopt;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (!words[i].is_number_unsigned()) return std::nullopt;
    algo.data[i] = words[i].get<std::uint64_t>();
  }
  return algo;
}

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

// cuBLASLt's heuristic ranks its candidates with a model, and its first pick can be well behind another it
// offers. A plan therefore times kCandidates candidates once, on the call's own operands, and keeps the fastest
// (median of kTimedRounds). The candidates are timed in interleaved rounds, one launch of each per round, so
// that a clock drift during the search (large GEMMs run at the power limit) moves every candidate alike instead
// of favouring whichever was timed while the clocks were high; two warm-up rounds let the clocks settle first.
//
// The heuristic returns a few configurations, each with an explicit cluster shape, so the candidates also include
// its algorithms with the cluster shape left to cuBLASLt and every (tile, stages) pair of each algorithm it
// offered (tile_variants): on batched attention GEMMs such a variant can beat every configuration the heuristic
// named. All of them are screened in a few interleaved rounds; the heuristic's first and the fastest others go
// on to the full timing.
// A batched problem's pool also holds the heuristic's candidates for one member of the batch (member_candidates).
constexpr int kCandidates = 8;  // timed in full: the heuristic's first and the 7 fastest others
constexpr int kWarmupRounds = 2;
constexpr int kTimedRounds = 15;
constexpr int kScreenRounds = 3;  // after one warm-up round, for a pool larger than kCandidates
// Most of a large pool is far behind after one screening round (a tile or stage count that does not suit the
// shape); only candidates within this factor of the kCandidates - 1'th fastest other run the screening's other
// rounds (screen_survivors, timing_rules.h): a large pool has most of its candidates timed once, not three times.
constexpr double kScreenMargin = 1.3;
constexpr int kHeuristicRequest = 16;
// The search's best configurations kept for the executor to time again inside its plan (Matmul::finalist_count):
// the ranking of close configurations moves with the GPU's state and with the L2 as the search leaves it (each
// candidate after itself), which is not as the plan leaves it. The heuristic's first (what cuBLASLt runs without
// a search, and what PyTorch's GEMMs run) joins them where the search ranked it lower, so the plan's own timing
// can still choose it.
constexpr std::size_t kFinalistsKept = 3;
// A candidate whose fastest run after this many timed rounds is more than kPruneMargin times the
// kFinalistsKept-th best median stops being timed (pruned_interleaved_medians, timing_rules.h): its median
// could not fall below that run, so it could become a finalist only if theirs rose by 10%, beyond the spread
// of runs timed back to back in interleaved rounds.
constexpr int kPruneAfterRounds = 5;
constexpr double kPruneMargin = 1.1;
constexpr std::size_t kMaxVariants = 256;

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
CInput c_input(const void* residual, const void* y) { return residual ? CInput{residual, 1.0f} : CInput{y, 0.0f}; }

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& value) {
  FX_CUDA_CALL(cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof(value)));
}

// A row-major [rows, cols] matrix with row stride ld is column-major [cols, rows] with the same ld.
LayoutPtr make_layout(DType t, std::int64_t rows, std::int64_t cols, std::int64_t ld, std::int64_t batch,
                      std::int64_t stride) {
  cublasLtMatrixLayout_t raw = nullptr;
  FX_CUDA_CALL(cublasLtMatrixLayoutCreate(&raw, cuda_type(t), static_cast<std::uint64_t>(cols),
                                          static_cast<std::uint64_t>(rows), ld));
  LayoutPtr layout(raw);
  if (batch > 1) {
    const auto count = static_cast<std::int32_t>(batch);
    FX_CUDA_CALL(cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    FX_CUDA_CALL(
        cublasLtMatrixLayoutSetAttribute(raw, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return layout;
}

cublasComputeType_t compute_type(const MatmulProblem& p) {
  return p.a_type == DType::f32 && p.allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

DescPtr make_desc(const MatmulProblem& p) {
  cublasLtMatmulDesc_t raw = nullptr;
  FX_CUDA_CALL(cublasLtMatmulDescCreate(&raw, compute_type(p), CUDA_R_32F));
  DescPtr desc(raw);
  // cuBLAS A is W and cuBLAS B is X (Y^T = W^T X^T): each is transposed exactly when the caller's is.
  set_desc<std::int32_t>(raw, CUBLASLT_MATMUL_DESC_TRANSA, p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc<std::int32_t>(raw, CUBLASLT_MATMUL_DESC_TRANSB, p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc<std::uint32_t>(raw, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(p.epilogue));
  if (epilogue_has_bias(p.epilogue)) {
    set_desc<std::int32_t>(raw, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(p.c_type));
    set_desc<std::int64_t>(raw, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 0);  // one bias for every batch entry
  }
  return desc;
}

// cuBLASLt's tile, stage and cluster-shape ids as its enums name them (cublasLt.h), for the reports; ids past
// the tables print as numbers.
constexpr const char* kTileNames[] = {
    "undefined", "8x8",     "8x16",    "16x8",    "8x32",    "16x16",   "32x8",    "8x64",    "16x32",
    "32x16",     "64x8",    "32x32",   "32x64",   "64x32",   "32x128",  "64x64",   "128x32",  "64x128",
    "128x64",    "64x256",  "128x128", "256x64",  "64x512",  "128x256", "256x128", "512x64",  "64x96",
    "96x64",     "96x128",  "128x160", "160x128", "192x128", "128x192", "128x96",  "32x256",  "256x32"};
static_assert(CUBLASLT_MATMUL_TILE_64x256 == 19 && CUBLASLT_MATMUL_TILE_256x32 == 35 &&
              std::size(kTileNames) == CUBLASLT_MATMUL_TILE_256x32 + 1);
constexpr const char* kStageNames[] = {
    "undefined", "16x1",  "16x2",  "16x3",   "16x4",   "16x5",   "16x6",   "32x1",    "32x2",    "32x3",
    "32x4",      "32x5",  "32x6",  "64x1",   "64x2",   "64x3",   "64x4",   "64x5",    "64x6",    "128x1",
    "128x2",     "128x3", "128x4", "128x5",  "128x6",  "32x10",  "8x4",    "16x10",   "8x5",     "id 29",
    "id 30",     "8x3",   "8xAUTO", "16xAUTO", "32xAUTO", "64xAUTO", "128xAUTO", "256xAUTO", "768xAUTO"};
static_assert(CUBLASLT_MATMUL_STAGES_8x3 == 31 && CUBLASLT_MATMUL_STAGES_768xAUTO == 38 &&
              std::size(kStageNames) == CUBLASLT_MATMUL_STAGES_END);
constexpr const char* kClusterNames[] = {
    "auto",  "id 1",  "1x1x1", "2x1x1", "4x1x1", "1x2x1", "2x2x1", "4x2x1",  "1x4x1",  "2x4x1",  "4x4x1",
    "8x1x1", "1x8x1", "8x2x1", "2x8x1", "16x1x1", "1x16x1", "3x1x1", "5x1x1", "6x1x1", "7x1x1", "9x1x1"};
static_assert(CUBLASLT_CLUSTER_SHAPE_1x1x1 == 2 && CUBLASLT_CLUSTER_SHAPE_9x1x1 == 21 &&
              std::size(kClusterNames) == CUBLASLT_CLUSTER_SHAPE_9x1x1 + 1);

template <class T>
T algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  std::size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written);
  return value;
}

// Every configuration field of an algorithm: two algorithms with the same key are the same configuration.
struct AlgoKey {
  std::int32_t id, splitk;
  std::uint32_t tile, stages, reduction, swizzle, custom;
  std::uint16_t inner, cluster;
  explicit AlgoKey(const cublasLtMatmulAlgo_t& a)
      : id(algo_config<std::int32_t>(a, CUBLASLT_ALGO_CONFIG_ID)),
        splitk(algo_config<std::int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)),
        tile(algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID)),
        stages(algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID)),
        reduction(algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME)),
        swizzle(algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)),
        custom(algo_config<std::uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION)),
        inner(algo_config<std::uint16_t>(a, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID)),
        cluster(algo_config<std::uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)) {}
  auto tie() const { return std::tie(id, splitk, tile, stages, reduction, swizzle, custom, inner, cluster); }
  bool operator==(const AlgoKey& o) const { return tie() == o.tie(); }
};

// "algorithm 43, tile 128x64, stages 32xAUTO, cluster auto" (and the split-K, swizzle and option when set).
std::string describe_algo(const cublasLtMatmulAlgo_t& algo) {
  const AlgoKey k(algo);
  auto name = [](const auto& names, std::uint32_t i) {
    return i < std::size(names) ? std::string(names[i]) : "id " + std::to_string(i);
  };
  std::string text = "algorithm " + std::to_string(k.id) + ", tile " + name(kTileNames, k.tile) + ", stages " +
                     name(kStageNames, k.stages) + ", cluster " + name(kClusterNames, k.cluster);
  if (k.splitk > 1) text += ", split-K " + std::to_string(k.splitk);
  if (k.swizzle) text += ", swizzle " + std::to_string(k.swizzle);
  if (k.custom) text += ", option " + std::to_string(k.custom);
  return text;
}

template <class T>
std::vector<T> algo_caps(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  std::size_t bytes = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) != CUBLAS_STATUS_SUCCESS || bytes == 0) return {};
  std::vector<T> v(bytes / sizeof(T));
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v.data(), bytes, &bytes) != CUBLAS_STATUS_SUCCESS) return {};
  return v;
}

}  // namespace

struct Matmul::Impl {
  cublasLtHandle_t handle = nullptr;
  DeviceMemory workspace;
  std::map<PlanKey, Plan> plans;
  TuningCache* tuning = nullptr;  // where searches are kept across runs (set_tuning_cache); not owned
  bool reuse_tuning = true;

  ~Impl() {
    if (handle) cublasLtDestroy(handle);
  }
  const Plan& plan_for(const MatmulProblem& p, const Operands& ops, const void* bias);
  void launch(const Plan& plan, const cublasLtMatmulAlgo_t& algo, float alpha, const void* a, const void* b,
              EpilogueInputs in, void* c, CUstream_st* stream);
  Plan build_plan(const PlanKey& key, const void* bias, const Operands& ops);
  // The search's result kept by an earlier run (TuningCache), if every configuration in it is still accepted.
  bool reuse_search(Plan& plan, const PlanKey& key, const TuningKey& tkey);
  void keep_search(const Plan& plan, const TuningKey& tkey);
  // Milliseconds of one launch of `algo`; nullopt if cuBLASLt refuses it.
  std::optional<double> time_algo(const Plan& plan, const cublasLtMatmulAlgo_t& algo, const Operands& ops);
  // Median milliseconds of each algorithm in interleaved rounds (interleaved_medians); nullopt for one that
  // failed to launch.
  std::vector<std::optional<double>> time_rounds(const Plan& plan, const std::vector<cublasLtMatmulAlgo_t>& algos,
                                                 const Operands& ops, int warmup, int rounds) {
    return interleaved_medians(algos.size(), warmup, rounds, [&](std::size_t i) { return time_algo(plan, algos[i], ops); });
  }
  // Whether cuBLASLt accepts `algo` for the plan's problem (cublasLtMatmulAlgoCheck), its workspace fits ours,
  // and the operands meet its minimum alignments.
  bool accepts(const Plan& plan, const PlanKey& key, const cublasLtMatmulAlgo_t& algo);
  // For a batched problem, the heuristic's candidates for one member of the batch that it accepts for the whole
  // and that are not in `have` (see member_candidates' definition).
  std::vector<cublasLtMatmulAlgo_t> member_candidates(const Plan& plan, const PlanKey& key,
                                                      cublasLtMatmulPreference_t pref,
                                                      const std::vector<cublasLtMatmulAlgo_t>& have);
  // The heuristic's algorithms with the cluster shape left to cuBLASLt, and every (tile, stages) configuration of
  // each algorithm it offered (see kCandidates).
  std::vector<cublasLtMatmulAlgo_t> tile_variants(const Plan& plan, const PlanKey& key,
                                                  const std::vector<cublasLtMatmulAlgo_t>& offered);
};

std::optional<double> Matmul::Impl::time_algo(const Plan& plan, const cublasLtMatmulAlgo_t& algo, const Operands& ops) {
  const float alpha = 1.0f;
  const CInput in = c_input(ops.residual, ops.c);  // a residual is timed as it runs: C read with beta = 1
  auto launch = [&] {
    return cublasLtMatmul(handle, plan.desc.get(), &alpha, ops.b, plan.w_layout.get(), ops.a, plan.x_layout.get(),
                          &in.beta, in.c, plan.y_layout.get(), ops.c, plan.y_layout.get(), &algo, workspace.get(),
                          workspace.bytes(), ops.stream);
  };
  // A candidate cuBLASLt refuses at launch is skipped; its status is not an error of the run.
  // The timed launch follows an untimed one of the same algorithm, so the GPU is busy and the operands are in the
  // L2 as for a GEMM whose inputs the previous step just wrote (the cache flush of --cold-l2 is the executor's,
  // not known here). Alone after the host's wait, gpt2_block's 768 -> 768 projections timed 0.053-0.054 ms that
  // the plan then ran in 0.042-0.048.
  if (launch() != CUBLAS_STATUS_SUCCESS) return std::nullopt;
  bool failed = false;
  const double ms = median_event_ms(ops.stream, 1, [&] { failed |= launch() != CUBLAS_STATUS_SUCCESS; });
  if (failed) return std::nullopt;
  return ms;
}

bool Matmul::Impl::accepts(const Plan& plan, const PlanKey& key, const cublasLtMatmulAlgo_t& algo) {
  cublasLtMatmulHeuristicResult_t check{};
  if (cublasLtMatmulAlgoCheck(handle, plan.desc.get(), plan.w_layout.get(), plan.x_layout.get(), plan.y_layout.get(),
                              plan.y_layout.get(), &algo, &check) != CUBLAS_STATUS_SUCCESS ||
      check.workspaceSize > workspace.bytes()) {
    return false;
  }
  const auto have = key.cublas_alignments();
  const cublasLtMatmulAlgoCapAttributes_t alignment_caps[] = {
      CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES};
  for (std::size_t i = 0; i < have.size(); ++i) {
    const auto need = algo_caps<std::uint32_t>(algo, alignment_caps[i]);
    if (!need.empty() && need[0] > have[i]) return false;
  }
  return true;
}

// cuBLASLt's heuristic ranks a batched problem's configurations otherwise than one member's. For qkv_bf16's three
// projections as one strided-batched GEMM (x broadcast, 3 x [8192, 4096] x [4096, 1024] bf16) it offered a 128x128
// tile where each projection alone gets 256x128 (cluster 1x2x1), and the member's tile ran the projections
// faster than the merged call's. The member's candidates join
// the pool where cuBLASLt accepts them for the whole batch; a refusal of the member's query only means fewer
// candidates, never an error.
std::vector<cublasLtMatmulAlgo_t> Matmul::Impl::member_candidates(const Plan& plan, const PlanKey& key,
                                                                  cublasLtMatmulPreference_t pref,
                                                                  const std::vector<cublasLtMatmulAlgo_t>& have) {
  const MatmulProblem& p = key.problem;
  if (p.batch <= 1) return {};
  const MatmulLayout l = resolve_layout(p);
  const LayoutPtr w =
      p.transpose_b ? make_layout(p.b_type, p.n, p.k, l.ldb, 1, 0) : make_layout(p.b_type, p.k, p.n, l.ldb, 1, 0);
  const LayoutPtr x =
      p.transpose_a ? make_layout(p.a_type, p.k, p.m, l.lda, 1, 0) : make_layout(p.a_type, p.m, p.k, l.lda, 1, 0);
  const LayoutPtr y = make_layout(p.c_type, p.m, p.n, l.ldc, 1, 0);
  cublasLtMatmulHeuristicResult_t results[kHeuristicRequest]{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(handle, plan.desc.get(), w.get(), x.get(), y.get(), y.get(), pref,
                                     kHeuristicRequest, results, &found) != CUBLAS_STATUS_SUCCESS) {
    return {};
  }
  std::vector<AlgoKey> seen;
  for (const auto& algo : have) seen.emplace_back(algo);
  std::vector<cublasLtMatmulAlgo_t> out;
  for (int i = 0; i < found; ++i) {
    const AlgoKey k(results[i].algo);
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) continue;
    seen.push_back(k);
    if (accepts(plan, key, results[i].algo)) out.push_back(results[i].algo);
  }
  return out;
}

std::vector<cublasLtMatmulAlgo_t> Matmul::Impl::tile_variants(const Plan& plan, const PlanKey& key,
                                                              const std::vector<cublasLtMatmulAlgo_t>& offered) {
  const MatmulProblem& p = key.problem;
  const cudaDataType_t a_type = cuda_type(p.b_type), b_type = cuda_type(p.a_type), c_type = cuda_type(p.c_type);
  std::vector<AlgoKey> seen;
  for (const auto& algo : offered) seen.emplace_back(algo);
  std::vector<cublasLtMatmulAlgo_t> variants;
  // Kept when new and accepted for this problem (accepts).
  auto consider = [&](const cublasLtMatmulAlgo_t& algo) {
    const AlgoKey k(algo);
    if (variants.size() >= kMaxVariants || std::find(seen.begin(), seen.end(), k) != seen.end()) return;
    seen.push_back(k);
    if (accepts(plan, key, algo)) variants.push_back(algo);
  };
  // The heuristic's own algorithms with the cluster shape left to cuBLASLt (it names explicit ones).
  for (cublasLtMatmulAlgo_t algo : offered) {
    const std::uint16_t automatic = CUBLASLT_CLUSTER_SHAPE_AUTO;
    if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &automatic,
                                             sizeof automatic) == CUBLAS_STATUS_SUCCESS) {
      consider(algo);
    }
  }
  // Every (tile, stages) pair of each algorithm id offered, the other fields at cublasLtMatmulAlgoInit's defaults.
  std::vector<std::int32_t> ids;
  for (const auto& algo : offered) {
    const std::int32_t id = AlgoKey(algo).id;
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  for (std::int32_t id : ids) {
    cublasLtMatmulAlgo_t base{};
    if (cublasLtMatmulAlgoInit(handle, compute_type(p), CUDA_R_32F, a_type, b_type, c_type, c_type, id, &base) !=
        CUBLAS_STATUS_SUCCESS) {
      continue;
    }
    std::vector<std::uint32_t> tiles = algo_caps<std::uint32_t>(base, CUBLASLT_ALGO_CAP_TILE_IDS);
    std::vector<std::uint32_t> stages = algo_caps<std::uint32_t>(base, CUBLASLT_ALGO_CAP_STAGES_IDS);
    if (tiles.empty()) tiles.push_back(CUBLASLT_MATMUL_TILE_UNDEFINED);
    if (stages.empty()) stages.push_back(CUBLASLT_MATMUL_STAGES_UNDEFINED);
    for (std::uint32_t tile : tiles) {
      for (std::uint32_t stage : stages) {
        cublasLtMatmulAlgo_t algo = base;
        if (cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile) ==
                CUBLAS_STATUS_SUCCESS &&
            cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stage, sizeof stage) ==
                CUBLAS_STATUS_SUCCESS) {
          consider(algo);
        }
      }
    }
  }
  return variants;
}

Plan Matmul::Impl::build_plan(const PlanKey& key, const void* bias, const Operands& ops) {
  const MatmulProblem& p = key.problem;
  const MatmulLayout l = resolve_layout(p);
  Plan plan;
  plan.desc = make_desc(p);
  // The heuristic reads the bias pointer's value to learn its alignment, so it must be set before the query.
  if (epilogue_has_bias(p.epilogue)) set_desc<const void*>(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  plan.w_layout = p.transpose_b ? make_layout(p.b_type, p.n, p.k, l.ldb, p.batch, l.stride_b)
                                : make_layout(p.b_type, p.k, p.n, l.ldb, p.batch, l.stride_b);
  plan.x_layout = p.transpose_a ? make_layout(p.a_type, p.k, p.m, l.lda, p.batch, l.stride_a)
                                : make_layout(p.a_type, p.m, p.k, l.lda, p.batch, l.stride_a);
  plan.y_layout = make_layout(p.c_type, p.m, p.n, l.ldc, p.batch, l.stride_c);

  cublasLtMatmulPreference_t raw_pref = nullptr;
  FX_CUDA_CALL(cublasLtMatmulPreferenceCreate(&raw_pref));
  PrefPtr pref(raw_pref);
  const std::uint64_t workspace_bytes = kWorkspaceBytes;
  FX_CUDA_CALL(cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_bytes, sizeof(workspace_bytes)));
  const cublasLtMatmulPreferenceAttributes_t alignment_prefs[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const auto alignments = key.cublas_alignments();
  for (std::size_t i = 0; i < alignments.size(); ++i) {
    FX_CUDA_CALL(cublasLtMatmulPreferenceSetAttribute(raw_pref, alignment_prefs[i], &alignments[i], sizeof(alignments[i])));
  }

  cublasLtMatmulHeuristicResult_t results[kHeuristicRequest]{};
  int found = 0;
  FX_CUDA_CALL(cublasLtMatmulAlgoGetHeuristic(handle, plan.desc.get(), plan.w_layout.get(), plan.x_layout.get(),
                                              plan.y_layout.get(), plan.y_layout.get(), raw_pref, kHeuristicRequest,
                                              results, &found));
  if (found == 0) {
    throw GpuError("cuBLASLt", CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED",
                   "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__,
                   "cuBLASLt offers no algorithm for " + describe_matmul(p) + " (m=" + std::to_string(p.m) +
                       " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) + ")");
  }
  plan.algo = results[0].algo;
  plan.choice = "cuBLASLt heuristic's first algorithm";
  // Nothing may be synchronised while a CUDA graph is being captured: there the heuristic's choice stands.
  if (capturing(ops.stream)) return plan;
  const TuningKey tkey{"gemm_search", search_key_text(key, results[0].algo)};
  if (tuning && reuse_tuning && reuse_search(plan, key, tkey)) return plan;
  // The pool: the heuristic's algorithms in its order, then, for a batched problem, its candidates for one member
  // (member_candidates), then the variants of all of them (tile_variants).
  std::vector<cublasLtMatmulAlgo_t> pool;
  for (int i = 0; i < found; ++i) pool.push_back(results[i].algo);
  const std::size_t offered = pool.size();
  for (const auto& m : member_candidates(plan, key, raw_pref, pool)) pool.push_back(m);
  const std::size_t listed = pool.size();  // offered, then the member's
  for (const auto& v : tile_variants(plan, key, pool)) pool.push_back(v);
  if (pool.size() == 1) return plan;
  // Screening: the heuristic's first always goes on (the report compares with it), with the fastest others.
  std::vector<std::size_t> finalists(pool.size());
  for (std::size_t i = 0; i < pool.size(); ++i) finalists[i] = i;
  if (pool.size() > static_cast<std::size_t>(kCandidates)) {
    const auto screened = screened_medians(pool.size(), kScreenRounds, kCandidates - 1, kScreenMargin,
                                           [&](std::size_t i) { return time_algo(plan, pool[i], ops); });
    std::vector<std::size_t> ran;
    for (std::size_t i = 1; i < pool.size(); ++i) {
      if (screened[i]) ran.push_back(i);
    }
    const std::size_t keep = std::min<std::size_t>(ran.size(), kCandidates - 1);
    std::partial_sort(ran.begin(), ran.begin() + static_cast<std::ptrdiff_t>(keep), ran.end(),
                      [&](std::size_t a, std::size_t b) { return *screened[a] < *screened[b]; });
    finalists.assign(1, 0);
    finalists.insert(finalists.end(), ran.begin(), ran.begin() + static_cast<std::ptrdiff_t>(keep));
  }
  std::vector<cublasLtMatmulAlgo_t> timed;
  for (std::size_t i : finalists) timed.push_back(pool[i]);
  // Only the kFinalistsKept fastest go on (the executor times them again in its plan) and only the fastest runs
  // where it does not: a candidate clearly behind those after kPruneAfterRounds rounds is timed no more.
  const auto medians =
      pruned_interleaved_medians(timed.size(), kWarmupRounds, kTimedRounds, Pruning{kFinalistsKept, kPruneAfterRounds, kPruneMargin},
                                 [&](std::size_t i) { return time_algo(plan, timed[i], ops); });
  int best = -1;
  for (std::size_t i = 0; i < timed.size(); ++i) {
    if (medians[i] && (best < 0 || *medians[i] < *medians[static_cast<std::size_t>(best)])) best = static_cast<int>(i);
  }
  if (best < 0) return plan;  // none ran; the first is launched (and its error reported) by the caller
  const std::size_t chosen = finalists[static_cast<std::size_t>(best)];
  plan.algo = pool[chosen];
  const std::string times = " (" + ms_text(*medians[static_cast<std::size_t>(best)]) + "; the heuristic's first: " +
                            (medians[0] ? ms_text(*medians[0]) : std::string("failed to launch")) + ")";
  plan.choice = describe_search_origin(chosen, offered, listed, pool.size()) + describe_algo(plan.algo) + times;
  plan.search_choice = plan.choice;
  std::vector<std::size_t> ranked;  // the timed configurations that ran, fastest first
  for (std::size_t i = 0; i < timed.size(); ++i) {
    if (medians[i]) ranked.push_back(i);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) { return *medians[a] < *medians[b]; });
  for (std::size_t i = 0; i < ranked.size() && i < kFinalistsKept; ++i) plan.finalists.push_back(timed[ranked[i]]);
  // timed[0] is the heuristic's first (the screening always keeps it).
  const auto kept = ranked.begin() + static_cast<std::ptrdiff_t>(std::min(ranked.size(), kFinalistsKept));
  if (medians[0] && std::find(ranked.begin(), kept, std::size_t{0}) == kept) {
    plan.finalists.push_back(timed[0]);
    plan.last_finalist_is_heuristics_first = true;
  }
  if (tuning) keep_search(plan, tkey);
  return plan;
}

bool Matmul::Impl::reuse_search(Plan& plan, const PlanKey& key, const TuningKey& tkey) try {
  const auto entry = tuning->find(tkey);
  if (!entry) return false;
  const nlohmann::json& c = entry->choice;
  auto refuse = [&](const std::string& why) {
    tuning->warn("the kept search for " + describe_matmul(key.problem) + " (m=" + std::to_string(key.problem.m) +
                 " n=" + std::to_string(key.problem.n) + " k=" + std::to_string(key.problem.k) + ") " + why +
                 "; searched again");
    return false;
  };
  const auto algo = algo_from_json(c.value("algo", nlohmann::json()));
  if (!algo || !c.contains("finalists") || !c["finalists"].is_array()) return refuse("is not a search");
  if (!accepts(plan, key, *algo)) return refuse("chose a configuration cuBLASLt no longer accepts");
  std::vector<cublasLtMatmulAlgo_t> finalists;
  for (const nlohmann::json& f : c["finalists"]) {
    const auto a = algo_from_json(f);
    if (!a) return refuse("is not a search");
    if (!accepts(plan, key, *a)) return refuse("keeps a finalist cuBLASLt no longer accepts");
    finalists.push_back(*a);
  }
  plan.algo = *algo;
  plan.finalists = std::move(finalists);
  plan.last_finalist_is_heuristics_first = c.value("last_is_heuristics_first", false);
  plan.search_choice = plan.choice = "reused from the tuning cache (searched " + entry->tuned_at + "): " +
                                     c.value("choice", std::string("?"));
  return true;
} catch (const nlohmann::json::exception&) {
  return false;  // an entry of the right form with a field of another type: searched again
}

void Matmul::Impl::keep_search(const Plan& plan, const TuningKey& tkey) {
  nlohmann::json finalists = nlohmann::json::array();
  for (const auto& f : plan.finalists) finalists.push_back(algo_json(f));
  tuning->store(tkey, {{"algo", algo_json(plan.algo)},
                       {"finalists", std::move(finalists)},
                       {"last_is_heuristics_first", plan.last_finalist_is_heuristics_first},
                       {"choice", plan.search_choice}});
}

namespace {

// A plan serves one problem at one alignment class of its pointers.
PlanKey key_of(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in, const void* c) {
  return PlanKey{p, alignment_of(a), alignment_of(b), alignment_of(c),
                 epilogue_has_bias(p.epilogue) ? alignment_of(in.bias) : 0u,
                 p.residual ? alignment_of(in.residual) : 0u};
}

}  // namespace

const Plan& Matmul::Impl::plan_for(const MatmulProblem& p, const Operands& ops, const void* bias) {
  PlanKey key = key_of(p, ops.a, ops.b, {bias, ops.residual}, ops.c);
  auto it = plans.find(key);
  if (it == plans.end()) {
    Plan plan = build_plan(key, bias, ops);
    it = plans.emplace(std::move(key), std::move(plan)).first;
  }
  return it->second;
}

Matmul::Matmul() : impl_(std::make_unique<Impl>()) {
  contraction_detail::require_cuda_device();
  FX_CUDA_CALL(cublasLtCreate(&impl_->handle));
  impl_->workspace = DeviceMemory(kWorkspaceBytes);
}

Matmul::~Matmul() = default;
Matmul::Matmul(Matmul&&) noexcept = default;
Matmul& Matmul::operator=(Matmul&&) noexcept = default;

void Matmul::run(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in, void* c,
                 CUstream_st* stream) {
  if (std::string error = validate_matmul(p); !error.empty()) throw std::invalid_argument("matmul: " + error);
  if (epilogue_has_bias(p.epilogue) != (in.bias != nullptr)) {
    throw std::invalid_argument(std::string("matmul: epilogue ") + std::string(matmul_epilogue_name(p.epilogue)) +
                                (in.bias ? " takes no bias" : " needs a bias pointer"));
  }
  if (p.residual != (in.residual != nullptr)) {
    throw std::invalid_argument(p.residual ? "matmul: a problem with a residual needs its pointer"
                                           : "matmul: a residual pointer for a problem without one");
  }
  if (!a || !b || !c) throw std::invalid_argument("matmul: null operand pointer");
  // The search launches the product many times: a residual in Y's own buffer would be added again each time.
  if (in.residual == c) throw std::invalid_argument("matmul: the residual must not be the output's buffer");
  const Plan& plan = impl_->plan_for(p, Operands{a, b, in.residual, c, stream}, in.bias);
  impl_->launch(plan, plan.algo, p.alpha, a, b, in, c, stream);
}

void Matmul::run_finalist(std::size_t i, const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                          void* c, CUstream_st* stream) {
  if (!a || !b || !c) throw std::invalid_argument("matmul: null operand pointer");
  const auto it = impl_->plans.find(key_of(p, a, b, in, c));
  if (it == impl_->plans.end() || i >= it->second.finalists.size()) {
    throw std::logic_error("matmul: finalist " + std::to_string(i) + " of a problem whose search kept " +
                           std::to_string(it == impl_->plans.end() ? 0 : it->second.finalists.size()));
  }
  impl_->launch(it->second, it->second.finalists[i], p.alpha, a, b, in, c, stream);
}

void Matmul::Impl::launch(const Plan& plan, const cublasLtMatmulAlgo_t& algo, float alpha, const void* a, const void* b,
                          EpilogueInputs in, void* c, CUstream_st* stream) {
  // The bias pointer is per call; the plan's descriptor only fixed its alignment class.
  if (in.bias) set_desc<const void*>(plan.desc.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, in.bias);
  // C has Y's layout (row-major Y is column-major Y^T, and so is the residual), so one descriptor serves both.
  const CInput cin = c_input(in.residual, c);
  FX_CUDA_CALL(cublasLtMatmul(handle, plan.desc.get(), &alpha, b, plan.w_layout.get(), a, plan.x_layout.get(),
                              &cin.beta, cin.c, plan.y_layout.get(), c, plan.y_layout.get(), &algo, workspace.get(),
                              workspace.bytes(), stream));
}

std::size_t Matmul::cached_plan_count() const { return impl_->plans.size(); }

void Matmul::set_tuning_cache(TuningCache* cache, bool reuse) {
  impl_->tuning = cache;
  impl_->reuse_tuning = reuse;
}

std::string Matmul::algorithm_choice(const MatmulProblem& p) const {
  for (const auto& [key, plan] : impl_->plans) {
    if (key.problem == p) return plan.choice;
  }
  return {};
}

std::size_t Matmul::finalist_count(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                                   const void* c) const {
  const auto it = impl_->plans.find(key_of(p, a, b, in, c));
  return it == impl_->plans.end() ? 0 : it->second.finalists.size();
}

std::string Matmul::finalists_id(const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                                 const void* c) const {
  const auto it = impl_->plans.find(key_of(p, a, b, in, c));
  if (it == impl_->plans.end() || it->second.finalists.empty()) return {};
  std::string words;
  for (const auto& f : it->second.finalists) words += algo_json(f).dump();
  return hex64(fnv1a64(words));
}

void Matmul::choose_finalist(std::size_t i, const MatmulProblem& p, const void* a, const void* b, EpilogueInputs in,
                             const void* c, const std::vector<double>& plan_ms, const std::string& timed_as) {
  const auto it = impl_->plans.find(key_of(p, a, b, in, c));
  if (it == impl_->plans.end() || i >= it->second.finalists.size()) {
    throw std::logic_error("matmul: no finalist " + std::to_string(i) + " to choose");
  }
  Plan& plan = it->second;
  plan.algo = plan.finalists[i];
  plan.choice = plan.search_choice + "; " +
                describe_finalist_choice(i, describe_algo(plan.algo), plan_ms, timed_as,
                                         plan.last_finalist_is_heuristics_first);
}

}  // namespace fx::gpu
