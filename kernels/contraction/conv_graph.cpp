// A convolution through cuDNN's backend (graph) API: conv -> add bias -> (add residual) -> ReLU as one operation graph; the first
// kMaxCandidates engine configurations of heuristics mode A (FALLBACK's only when A offers none) that honour the
// problem's numerics finalized into execution plans, each timed on the caller's buffers, the fastest kept (under
// CUDA graph capture the first, untimed).
#include "kernels/contraction/conv_graph.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <type_traits>

#include "kernels/common/cuda_call.h"
#include "kernels/common/event_timing.h"
#include "kernels/contraction/cudnn_backend.h"
#include "kernels/contraction/device_memory.h"
#include "kernels/tuning/tuning_keys.h"

namespace fx::gpu::contraction_detail {
namespace {

// Configurations finalized and timed per problem: heuristics mode A ranks the likely-fast ones first, and a
// plan's finalization can compile a kernel at run time, so the search stops at this many.
constexpr std::size_t kMaxCandidates = 6;
// Timed rounds, each one untimed then one timed run of every candidate (interleaved_medians), after one warm-up.
constexpr int kRounds = 5;
// Pack descriptors kept per plan: a plan is launched on the same few pointer sets (the unfused and fused plans,
// the profile pass); an older set is rebuilt when it comes back.
constexpr std::size_t kMaxPacks = 8;

enum Uid : std::int64_t { kX = 1, kW, kY, kBias, kConvOut, kBiased, kZ, kSum };

// Strides of a 4-d tensor given in N, C, H, W order: packed NCHW, or channels-last.
std::vector<std::int64_t> strides(const std::vector<std::int64_t>& d, bool nhwc) {
  if (nhwc) return {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

Desc tensor(Uid uid, cudnnDataType_t type, const std::vector<std::int64_t>& dims, bool nhwc, bool is_virtual) {
  return contraction_detail::tensor({uid, type, dims, strides(dims, nhwc), is_virtual, false,
                                     static_cast<std::int64_t>(kConvGraphAlignment)});
}

// The operation graph of p; every descriptor it refers to goes to `keep` (a plan may refer to them).
Desc conv_graph(cudnnHandle_t handle, const Conv2dProblem& p, std::vector<Desc>& keep) {
  const cudnnDataType_t type = dnn_type(p.type);
  const Conv2dOutputShape out = conv2d_output_shape(p);
  const std::vector<std::int64_t> y_dims = {out.n, out.k, out.p, out.q};
  Desc x = tensor(kX, type, {p.n, p.c, p.h, p.w}, p.nhwc, false);
  Desc w = tensor(kW, type, {p.k, p.c / p.groups, p.r, p.s}, p.nhwc, false);
  Desc y = tensor(kY, type, y_dims, p.nhwc, false);
  const bool fused = p.epilogue != ConvEpilogue::none;
  const bool relu = p.epilogue == ConvEpilogue::relu_bias;
  Desc conv_out = fused ? tensor(kConvOut, CUDNN_DATA_FLOAT, y_dims, p.nhwc, true) : Desc();

  Desc conv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  // CROSS_CORRELATION is what deep-learning "convolution" means (no filter flip).
  set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, CUDNN_CROSS_CORRELATION);
  set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, std::int64_t{2});
  set_ints(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, {p.dilation_h, p.dilation_w});
  set_ints(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, {p.stride_h, p.stride_w});
  set_ints(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, {p.pad_h, p.pad_w});
  set_ints(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, {p.pad_h, p.pad_w});
  FX_CUDA_CALL(cudnnBackendFinalize(conv.get()));

  Desc conv_op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  set_desc(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
  set_desc(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
  set_desc(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, fused ? conv_out : y);
  set_desc(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
  set(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1.0f);
  set(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 0.0f);
  FX_CUDA_CALL(cudnnBackendFinalize(conv_op.get()));

  std::vector<Desc> ops;
  ops.push_back(std::move(conv_op));
  if (fused) {
    // conv -> + bias -> (+ z) -> (ReLU) -> y: each result virtual (f32) until the last, which writes y.
    // The bias is one value per filter, broadcast over N, H and W; z has y's shape and layout.
    Desc bias = tensor(kBias, type, {1, p.k, 1, 1}, false, false);
    Desc biased = p.residual || relu ? tensor(kBiased, CUDNN_DATA_FLOAT, y_dims, p.nhwc, true) : Desc();
    Desc z = p.residual ? tensor(kZ, type, y_dims, p.nhwc, false) : Desc();
    Desc sum = p.residual && relu ? tensor(kSum, CUDNN_DATA_FLOAT, y_dims, p.nhwc, true) : Desc();
    ops.push_back(pointwise(CUDNN_POINTWISE_ADD, conv_out, &bias, biased ? biased : y, keep));
    if (p.residual) ops.push_back(pointwise(CUDNN_POINTWISE_ADD, biased, &z, relu ? sum : y, keep));
    if (relu) ops.push_back(pointwise(CUDNN_POINTWISE_RELU_FWD, p.residual ? sum : biased, nullptr, y, keep));
    for (Desc* d : {&bias, &biased, &z, &sum}) keep.push_back(std::move(*d));
  }
  Desc graph = contraction_detail::operation_graph(handle, ops);
  for (Desc* d : {&x, &w, &y, &conv_out, &conv}) keep.push_back(std::move(*d));
  for (Desc& op : ops) keep.push_back(std::move(op));
  return graph;
}

// As PyTorch filters cuDNN's configurations: never inputs down-converted to a narrower type, and for f32 no
// tensor cores (TF32) unless the problem allows them.
bool honours_numerics(const EngineInfo& e, const Conv2dProblem& p) {
  if (e.down_converts) return false;
  return !(p.type == DType::f32 && !p.allow_tf32 && e.tensor_cores);
}

// A finalized configuration and where it stands in cuDNN's heuristics, which the tuning cache keeps.
struct Candidate : FinalizedPlan {
  int mode = 0;               // 0: heuristics mode A, 1: FALLBACK (kModes)
  std::size_t position = 0;   // in that mode's configurations, best first
};

constexpr cudnnBackendHeurMode_t kModes[] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};

std::optional<Candidate> finalize_at(cudnnHandle_t handle, Desc config, const EngineInfo& engine,
                                     std::size_t max_workspace, int mode, std::size_t position) {
  std::optional<FinalizedPlan> plan = finalize(handle, std::move(config), engine, max_workspace);
  if (!plan) return std::nullopt;
  Candidate c;
  static_cast<FinalizedPlan&>(c) = std::move(*plan);
  c.mode = mode;
  c.position = position;
  return c;
}

Desc variant_pack(const ConvOperands& ops) {
  std::vector<std::int64_t> uids = {kX, kW, kY};
  std::vector<void*> pointers = {const_cast<void*>(ops.x), const_cast<void*>(ops.w), ops.y};
  if (ops.bias) uids.push_back(kBias), pointers.push_back(const_cast<void*>(ops.bias));
  if (ops.z) uids.push_back(kZ), pointers.push_back(const_cast<void*>(ops.z));
  return contraction_detail::variant_pack(uids, pointers, ops.workspace);
}

std::string engine_label(const EngineInfo& e) {
  return "cuDNN graph engine " + std::to_string(e.index) + (e.tensor_cores ? " (tensor cores)" : "") +
         (e.runtime_compiled ? " (compiled at run time)" : "");
}

// The fastest of the candidates timed on ops in interleaved rounds, and its report line in `name`; nullopt when
// every configuration failed at launch.
std::optional<std::size_t> fastest_candidate(cudnnHandle_t handle, const std::vector<Candidate>& candidates,
                                             const ConvOperands& ops, cudaStream_t stream,
                                             std::chrono::steady_clock::time_point start, std::string& name) {
  const Desc pack = variant_pack(ops);  // pointers only: one pack serves every plan
  const EventPair ev;
  // The timed run follows an untimed one of the same configuration: the operands in the L2 and the GPU busy, as
  // for a convolution whose input the step before just wrote (Matmul's search does the same).
  const auto medians = interleaved_medians(candidates.size(), 1, kRounds, [&](std::size_t i) -> std::optional<double> {
    if (cudnnBackendExecute(handle, candidates[i].plan.get(), pack.get()) != CUDNN_STATUS_SUCCESS) return std::nullopt;
    FX_CUDA_CALL(cudaEventRecord(ev.start, stream));
    const cudnnStatus_t s = cudnnBackendExecute(handle, candidates[i].plan.get(), pack.get());
    FX_CUDA_CALL(cudaEventRecord(ev.stop, stream));
    FX_CUDA_CALL(cudaEventSynchronize(ev.stop));
    if (s != CUDNN_STATUS_SUCCESS) return std::nullopt;
    float ms = 0;
    FX_CUDA_CALL(cudaEventElapsedTime(&ms, ev.start, ev.stop));
    return ms;
  });
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < medians.size(); ++i) {
    if (medians[i] && (!best || *medians[i] < *medians[*best])) best = i;
  }
  if (!best) return std::nullopt;
  const double search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  char text[96];
  std::snprintf(text, sizeof text, ", %s; fastest of %zu configurations timed (%.0f ms)",
                ms_text(*medians[*best]).c_str(), candidates.size(), search_ms);
  name = engine_label(candidates[*best].engine) + text;
  return best;
}

// The candidates: up to `wanted` configurations of heuristics mode A that honour the problem's numerics and
// finalize (FALLBACK's slow, safe configurations only when mode A offers none). While capturing (`timed`
// false), none that compiles a kernel at finalization (a module load is not safe then).
std::vector<Candidate> finalized_candidates(cudnnHandle_t handle, const Desc& graph, const Conv2dProblem& p,
                                            std::size_t max_workspace, std::size_t wanted, bool timed) {
  std::vector<Candidate> candidates;
  for (int mode = 0; mode < 2 && candidates.empty(); ++mode) {
    std::vector<Desc> configs = engine_configs(graph, kModes[mode]);
    for (std::size_t i = 0; i < configs.size() && candidates.size() < wanted; ++i) {
      try {
        const std::optional<EngineInfo> engine = engine_info(configs[i]);
        if (!engine || !honours_numerics(*engine, p) || (!timed && engine->runtime_compiled)) continue;
        if (auto c = finalize_at(handle, std::move(configs[i]), *engine, max_workspace, mode, i)) {
          candidates.push_back(std::move(*c));
        }
      } catch (const GpuError& e) {
        if (e.library() != "cuDNN") throw;  // a configuration cuDNN will not describe is skipped
      }
    }
  }
  return candidates;
}

// Where an engine choice is kept: the problem in full and the workspace its candidates could use.
TuningKey engine_key(const Conv2dProblem& p, std::size_t max_workspace) {
  return {"conv_engine", conv_problem_text(p) + ", workspace " + std::to_string(max_workspace)};
}

// An earlier run's choice (none where the run retunes or keeps none): the configuration at its place in its
// heuristics mode's list, which ranks alike for one problem in one environment (cuDNN's version is in the
// cache's environment), finalized alone, with only its own kernel compiled. Where it is another engine now, or
// no longer honours the numerics or fits, the entry is a warning and the problem is searched again.
std::optional<Candidate> kept_candidate(cudnnHandle_t handle, const Desc& graph, const Conv2dProblem& p,
                                        std::size_t max_workspace, const ChoiceSource& kept, const TuningKey& key,
                                        std::string& name) {
  if (!kept.cache || kept.retune) return std::nullopt;
  const auto entry = kept.cache->find(key);
  if (!entry) return std::nullopt;
  const nlohmann::json& c = entry->choice;
  auto number = [&c](const char* field) { return c.contains(field) && c[field].is_number_integer(); };
  std::optional<Candidate> chosen;
  if (number("mode") && number("position") && number("engine") && c.contains("name") && c["name"].is_string() &&
      c["mode"].get<int>() >= 0 && c["mode"].get<int>() < 2 && c["position"].get<std::int64_t>() >= 0) {
    const int mode = c["mode"].get<int>();
    const auto position = c["position"].get<std::size_t>();
    std::vector<Desc> configs = engine_configs(graph, kModes[mode]);
    try {
      const std::optional<EngineInfo> engine = position < configs.size() ? engine_info(configs[position]) : std::nullopt;
      if (engine && engine->index == c["engine"].get<std::int64_t>() && honours_numerics(*engine, p)) {
        chosen = finalize_at(handle, std::move(configs[position]), *engine, max_workspace, mode, position);
      }
    } catch (const GpuError& e) {
      if (e.library() != "cuDNN") throw;
    }
    if (chosen) {
      // The search's line as it was kept (its engine, time and the search's), then where it came from.
      name = c["name"].get<std::string>() + "; reused from the tuning cache (timed " + entry->tuned_at + ")";
      return chosen;
    }
  }
  kept.cache->warn("the kept cuDNN engine for " + describe_conv2d(p) + " (" + kept.cache->entry_path(key).string() +
                   ") is not one cuDNN offers now; searched again");
  return std::nullopt;
}

}  // namespace

cudnnDataType_t dnn_type(DType t) {
  switch (t) {
    case DType::f32: return CUDNN_DATA_FLOAT;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    default: throw std::invalid_argument("conv2d takes f32, f16 or bf16");
  }
}

bool graph_aligned(const ConvOperands& ops) {
  for (const void* ptr : {ops.x, ops.w, ops.bias, ops.z, static_cast<const void*>(ops.y)}) {
    if (reinterpret_cast<std::uintptr_t>(ptr) % kConvGraphAlignment != 0) return false;
  }
  return true;
}

struct ConvGraphPlan::State {
  std::vector<Desc> keep;  // tensors, operations, the graph and the configuration the plan was built from
  Candidate chosen;
  std::string name;
  struct Pack {
    ConvOperands ops;
    Desc pack;
  };
  std::vector<Pack> packs;  // the most recently used last

  cudnnBackendDescriptor_t pack_for(const ConvOperands& ops) {
    const auto it = std::find_if(packs.begin(), packs.end(), [&](const Pack& p) { return p.ops == ops; });
    if (it != packs.end()) {
      std::rotate(it, it + 1, packs.end());
      return packs.back().pack.get();
    }
    if (packs.size() == kMaxPacks) packs.erase(packs.begin());
    packs.push_back({ops, variant_pack(ops)});
    return packs.back().pack.get();
  }
};

ConvGraphPlan::ConvGraphPlan(std::unique_ptr<State> s) : s_(std::move(s)) {}
ConvGraphPlan::ConvGraphPlan(ConvGraphPlan&&) noexcept = default;
ConvGraphPlan& ConvGraphPlan::operator=(ConvGraphPlan&&) noexcept = default;
ConvGraphPlan::~ConvGraphPlan() = default;

std::optional<ConvGraphPlan> ConvGraphPlan::choose(cudnnHandle_t handle, const Conv2dProblem& p,
                                                   const ConvOperands& ops, std::size_t max_workspace,
                                                   cudaStream_t stream, const ChoiceSource& kept) {
  try {
    return build(handle, p, ops, max_workspace, stream, kept);
  } catch (const GpuError& e) {
    if (e.library() == "cuDNN") return std::nullopt;  // no graph for this problem on this cuDNN: the legacy API
    throw;
  }
}

std::optional<ConvGraphPlan> ConvGraphPlan::build(cudnnHandle_t handle, const Conv2dProblem& p,
                                                  const ConvOperands& ops, std::size_t max_workspace,
                                                  cudaStream_t stream, const ChoiceSource& kept) {
  const auto start = std::chrono::steady_clock::now();
  FX_CUDA_CALL(cudnnSetStream(handle, stream));
  auto state = std::make_unique<State>();
  Desc graph = conv_graph(handle, p, state->keep);
  // Nothing may be synchronised while a CUDA graph is being captured: there the heuristics' first configuration
  // that finalizes stands, untimed (the executor runs every step before it captures, so its plans are timed).
  const bool timed = !capturing(stream);
  const TuningKey key = engine_key(p, max_workspace);
  if (timed) {
    if (auto reused = kept_candidate(handle, graph, p, max_workspace, kept, key, state->name)) {
      state->chosen = std::move(*reused);
      state->keep.push_back(std::move(graph));
      return ConvGraphPlan(std::move(state));
    }
  }
  std::vector<Candidate> candidates = finalized_candidates(handle, graph, p, max_workspace, timed ? kMaxCandidates : 1, timed);
  if (candidates.empty()) return std::nullopt;
  std::size_t best = 0;
  if (!timed) {
    state->name = engine_label(candidates[0].engine) +
                  ", the heuristics' first (not timed: first launched while a CUDA graph was being captured)";
  } else {
    const std::optional<std::size_t> fastest = fastest_candidate(handle, candidates, ops, stream, start, state->name);
    if (!fastest) return std::nullopt;  // every configuration failed at launch
    best = *fastest;
    const Candidate& c = candidates[best];
    if (kept.cache) {
      kept.cache->store(key, {{"mode", c.mode}, {"position", c.position}, {"engine", c.engine.index}, {"name", state->name}});
    }
  }
  state->chosen = std::move(candidates[best]);
  state->keep.push_back(std::move(graph));
  return ConvGraphPlan(std::move(state));
}

void ConvGraphPlan::execute(cudnnHandle_t handle, const ConvOperands& ops) {
  FX_CUDA_CALL(cudnnBackendExecute(handle, s_->chosen.plan.get(), s_->pack_for(ops)));
}

std::size_t ConvGraphPlan::workspace_bytes() const { return s_->chosen.workspace; }
const std::string& ConvGraphPlan::name() const { return s_->name; }

}  // namespace fx::gpu::contraction_detail
