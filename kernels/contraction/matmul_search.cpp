// How Matmul chooses each plan's cuBLASLt algorithm: the heuristic's candidates, the variants it did not name
// (member_candidates, tile_variants), the interleaved timing that screens and ranks them on the call's own
// operands, the finalists kept for the executor's timing in its plan, and the search kept in the tuning cache.
// Apart from matmul.cpp, which builds the descriptors and launches whatever was chosen.
#include <algorithm>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/event_timing.h"
#include "kernels/contraction/matmul_plan.h"
#include "kernels/tuning/timing_rules.h"

namespace fx::gpu {

using contraction_detail::capturing;
using namespace matmul_detail;

namespace {

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

// What decides a search's result, as the tuning cache's problem: every field of the plan key, and the heuristic's
// first configuration (a cuBLASLt that offers another has another search to run), read through its attributes:
// the opaque words may hold more than the configuration, and a word that differs between runs would miss the
// cache.
std::string search_key_text(const PlanKey& key, const cublasLtMatmulAlgo_t& heuristics_first) {
  const AlgoKey h(heuristics_first);
  return matmul_problem_text(key.problem) + " align " + std::to_string(key.align_a) + "," +
         std::to_string(key.align_b) + "," + std::to_string(key.align_c) + "," + std::to_string(key.align_bias) +
         (key.problem.residual ? "," + std::to_string(key.align_residual) : std::string()) + " heuristic algo " +
         std::to_string(h.id) + " tile " + std::to_string(h.tile) + " stages " + std::to_string(h.stages) +
         " split-k " + std::to_string(h.splitk) + " reduction " + std::to_string(h.reduction) + " swizzle " +
         std::to_string(h.swizzle) + " option " + std::to_string(h.custom) + " inner " + std::to_string(h.inner) +
         " cluster " + std::to_string(h.cluster);
}

// What the heuristic may offer: algorithms within our workspace that accept the operands' alignments.
PrefPtr make_preference(const PlanKey& key) {
  cublasLtMatmulPreference_t raw_pref = nullptr;
  FX_CUDA_CALL(cublasLtMatmulPreferenceCreate(&raw_pref));
  PrefPtr pref(raw_pref);
  const std::uint64_t workspace_bytes = Matmul::kWorkspaceBytes;
  FX_CUDA_CALL(cublasLtMatmulPreferenceSetAttribute(raw_pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_bytes, sizeof(workspace_bytes)));
  const cublasLtMatmulPreferenceAttributes_t alignment_prefs[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const auto alignments = key.cublas_alignments();
  for (std::size_t i = 0; i < alignments.size(); ++i) {
    FX_CUDA_CALL(cublasLtMatmulPreferenceSetAttribute(raw_pref, alignment_prefs[i], &alignments[i], sizeof(alignments[i])));
  }
  return pref;
}

// The kFinalistsKept fastest of the timed configurations that ran, fastest first, then the heuristic's first
// (timed[0]: the screening always keeps it) where the search ranked it lower.
void keep_finalists(Plan& plan, const std::vector<cublasLtMatmulAlgo_t>& timed,
                    const std::vector<std::optional<double>>& medians) {
  std::vector<std::size_t> ranked;  // the timed configurations that ran, fastest first
  for (std::size_t i = 0; i < timed.size(); ++i) {
    if (medians[i]) ranked.push_back(i);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](std::size_t a, std::size_t b) { return *medians[a] < *medians[b]; });
  for (std::size_t i = 0; i < ranked.size() && i < kFinalistsKept; ++i) plan.finalists.push_back(timed[ranked[i]]);
  const auto kept = ranked.begin() + static_cast<std::ptrdiff_t>(std::min(ranked.size(), kFinalistsKept));
  if (medians[0] && std::find(ranked.begin(), kept, std::size_t{0}) == kept) {
    plan.finalists.push_back(timed[0]);
    plan.last_finalist_is_heuristics_first = true;
  }
}

}  // namespace

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
  // not known here); timed alone after the host's wait, a small GEMM reads slower than it runs in the plan.
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

// The pool's indices timed in full: all of a small pool; of a larger one, after a screening, the heuristic's first
// (it always goes on: the report compares with it) and the kCandidates - 1 fastest others.
std::vector<std::size_t> Matmul::Impl::screen(const Plan& plan, const std::vector<cublasLtMatmulAlgo_t>& pool,
                                              const Operands& ops) {
  std::vector<std::size_t> finalists(pool.size());
  for (std::size_t i = 0; i < pool.size(); ++i) finalists[i] = i;
  if (pool.size() <= static_cast<std::size_t>(kCandidates)) return finalists;
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
  return finalists;
}

// Chooses plan.algo: the heuristic's first where no search can run (one candidate, CUDA graph capture), else the
// fastest of the search, with the finalists kept for the executor (see kCandidates and kFinalistsKept).
void Matmul::Impl::choose_algorithm(Plan& plan, const PlanKey& key, const Operands& ops) {
  const MatmulProblem& p = key.problem;
  const PrefPtr pref = make_preference(key);
  cublasLtMatmulHeuristicResult_t results[kHeuristicRequest]{};
  int found = 0;
  FX_CUDA_CALL(cublasLtMatmulAlgoGetHeuristic(handle, plan.desc.get(), plan.w_layout.get(), plan.x_layout.get(),
                                              plan.y_layout.get(), plan.y_layout.get(), pref.get(), kHeuristicRequest,
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
  if (capturing(ops.stream)) return;
  const TuningKey tkey{"gemm_search", search_key_text(key, results[0].algo)};
  if (tuning && reuse_tuning && reuse_search(plan, key, tkey)) return;
  // The pool: the heuristic's algorithms in its order, then, for a batched problem, its candidates for one member
  // (member_candidates), then the variants of all of them (tile_variants).
  std::vector<cublasLtMatmulAlgo_t> pool;
  for (int i = 0; i < found; ++i) pool.push_back(results[i].algo);
  const std::size_t offered = pool.size();
  for (const auto& m : member_candidates(plan, key, pref.get(), pool)) pool.push_back(m);
  const std::size_t listed = pool.size();  // offered, then the member's
  for (const auto& v : tile_variants(plan, key, pool)) pool.push_back(v);
  if (pool.size() == 1) return;
  const std::vector<std::size_t> finalists = screen(plan, pool, ops);
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
  if (best < 0) return;  // none ran; the first is launched (and its error reported) by the caller
  const std::size_t chosen = finalists[static_cast<std::size_t>(best)];
  plan.algo = pool[chosen];
  const std::string times = " (" + ms_text(*medians[static_cast<std::size_t>(best)]) + "; the heuristic's first: " +
                            (medians[0] ? ms_text(*medians[0]) : std::string("failed to launch")) + ")";
  plan.choice = describe_search_origin(chosen, offered, listed, pool.size()) + describe_algo(plan.algo) + times;
  plan.search_choice = plan.choice;
  keep_finalists(plan, timed, medians);
  if (tuning) keep_search(plan, tkey);
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

}  // namespace fx::gpu
