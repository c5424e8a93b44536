// Fused attention through cuDNN's backend API, built as cudnn-frontend builds its SDPA forward node: matmul(Q, K^T)
// into f32 scores, a pointwise multiply by the scale (a by-value scalar), an optional pointwise add of the mask
// (cuDNN's "bias"), the softmax as max / subtract / exp / sum / divide with its statistics (max + log sum), then
// matmul(P, V); every tensor between the two matmuls is virtual. cuDNN's heuristics recognise the graph and offer its fused flash attention engines; the
// first configuration that finalizes is kept (the engines on offer for this graph are variants of one kernel).
#include "kernels/contraction/attention.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <variant>
#include <vector>

#include "kernels/contraction/conv_graph.h"
#include "kernels/contraction/cudnn_backend.h"
#include "kernels/contraction/device_memory.h"

namespace fx::gpu {
namespace {

using namespace contraction_detail;

// The largest workspace a plan may ask for; the fused forward engines need little or none.
constexpr std::size_t kMaxWorkspace = std::size_t{256} << 20;

enum Uid : std::int64_t { kQ = 1, kK, kV, kO, kMask, kScale, kFirstVirtual = 100 };

// The operation graph of p; its descriptors go to b.keep and b.ops.
Desc attention_graph(GraphBuilder& b, const AttentionProblem& p) {
  const cudnnDataType_t io = dnn_type(p.type);
  const std::int64_t B = p.batch, H = p.heads, S = p.seq_q, T = p.seq_kv, D = p.head_dim, Dv = p.value_dim;
  const Desc& q = b.io_tensor(kQ, io, {B, H, S, D}, packed_strides({B, H, S, D}));
  // The matmul reads K^T [B, H, D, T]: K [B, H, T, D] through swapped strides.
  const Desc& kt = b.io_tensor(kK, io, {B, H, D, T}, {H * T * D, T * D, 1, D});
  const Desc& v = b.io_tensor(kV, io, {B, H, T, Dv}, packed_strides({B, H, T, Dv}));
  const Desc& o = b.io_tensor(kO, io, {B, H, S, Dv}, packed_strides({B, H, S, Dv}));
  const Desc& scale = b.by_value_scalar(kScale, 4);
  const std::vector<std::int64_t> scores = {B, H, S, T}, rows = {B, H, S, 1};

  const Desc* s = &b.virtual_tensor(CUDNN_DATA_FLOAT, scores);
  b.matmul(q, kt, *s);
  const Desc& scaled = b.virtual_tensor(CUDNN_DATA_FLOAT, scores);
  b.pw(CUDNN_POINTWISE_MUL, *s, &scale, scaled);
  s = &scaled;
  if (p.mask) {
    const std::vector<std::int64_t> dims = {p.mask_batch, p.mask_heads, S, T};
    const Desc& mask = b.io_tensor(kMask, io, dims, packed_strides(dims));
    const Desc& masked = b.virtual_tensor(CUDNN_DATA_FLOAT, scores);
    b.pw(CUDNN_POINTWISE_ADD, *s, &mask, masked);
    s = &masked;
  }
  const Desc& max = b.virtual_tensor(CUDNN_DATA_FLOAT, rows);
  b.reduce(CUDNN_REDUCE_TENSOR_MAX, *s, max);
  const Desc& shifted = b.virtual_tensor(CUDNN_DATA_FLOAT, scores);
  b.pw(CUDNN_POINTWISE_SUB, *s, &max, shifted);
  const Desc& e = b.virtual_tensor(CUDNN_DATA_FLOAT, scores);
  b.pw(CUDNN_POINTWISE_EXP, shifted, nullptr, e);
  const Desc& sum = b.virtual_tensor(CUDNN_DATA_FLOAT, rows);
  b.reduce(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  // The softmax statistics max + log(sum), virtual here (inference needs none): cudnn-frontend's composite softmax
  // emits them even when no one reads them, and cuDNN's fused attention recognises the softmax by them (without
  // them it takes the ops after the softmax for a malformed dropout and offers no engine).
  const Desc& log_sum = b.virtual_tensor(CUDNN_DATA_FLOAT, rows);
  b.pw(CUDNN_POINTWISE_LOG, sum, nullptr, log_sum);
  const Desc& stats = b.virtual_tensor(CUDNN_DATA_FLOAT, rows);
  b.pw(CUDNN_POINTWISE_ADD, max, &log_sum, stats);
  // The second matmul reads P in the I/O type, as cuDNN's fused attention requires.
  const Desc& probs = b.virtual_tensor(io, scores);
  b.pw(CUDNN_POINTWISE_DIV, e, &sum, probs);
  b.matmul(probs, v, o);
  return operation_graph(b.handle, b.ops);
}

using Plan = FirstPlan;

// The plan for p, or why cuDNN has none. Any engine cuDNN offers for this graph keeps its numerics: inputs are
// already 16-bit, P is rounded to their type as the graph says, and there is no TF32 question; the notes only
// label the report.
std::variant<Plan, std::string> build(cudnnHandle_t handle, const AttentionProblem& p) {
  return first_plan(handle, kFirstVirtual, [&p](GraphBuilder& b) { return attention_graph(b, p); }, "attention graph",
                    kMaxWorkspace, [](const std::optional<EngineInfo>&) { return true; });
}

using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, float,
                       bool, std::int64_t, std::int64_t>;
Key key_of(const AttentionProblem& p) {
  return {p.batch, p.heads, p.seq_q, p.seq_kv, p.head_dim, p.value_dim, static_cast<int>(p.type), p.scale,
          p.mask, p.mask_batch, p.mask_heads};
}

}  // namespace

bool attention_available() { return true; }

struct Attention::Impl {
  cudnnHandle_t handle = nullptr;
  std::map<Key, std::variant<Plan, std::string>> plans;

  ~Impl() {
    plans.clear();  // plans were finalized on the handle: they go first
    if (handle) cudnnDestroy(handle);
  }
  std::variant<Plan, std::string>& plan_for(const AttentionProblem& p) {
    auto it = plans.find(key_of(p));
    if (it == plans.end()) it = plans.emplace(key_of(p), build(handle, p)).first;
    return it->second;
  }
};

Attention::Attention() : impl_(std::make_unique<Impl>()) {
  contraction_detail::require_cuda_device();
  FX_CUDA_CALL(cudnnCreate(&impl_->handle));
}
Attention::~Attention() = default;
Attention::Attention(Attention&&) noexcept = default;
Attention& Attention::operator=(Attention&&) noexcept = default;

std::string Attention::unsupported_reason(const AttentionProblem& p) {
  const auto& plan = impl_->plan_for(p);
  const auto* why = std::get_if<std::string>(&plan);
  return why ? *why : std::string();
}

void Attention::run(const AttentionProblem& p, const void* q, const void* k, const void* v, const void* mask, void* o,
                    CUstream_st* stream) {
  if (!q || !k || !v || !o || (p.mask && !mask)) throw std::invalid_argument("attention: null operand pointer");
  auto& entry = impl_->plan_for(p);
  if (auto* why = std::get_if<std::string>(&entry)) throw std::runtime_error("attention: " + *why);
  Plan& plan = std::get<Plan>(entry);
  FX_CUDA_CALL(cudnnSetStream(impl_->handle, stream));
  float scale = p.scale;  // by value: cuDNN copies it when the pack is executed
  std::vector<std::int64_t> uids = {kQ, kK, kV, kO, kScale};
  std::vector<void*> pointers = {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o, &scale};
  if (p.mask) uids.push_back(kMask), pointers.push_back(const_cast<void*>(mask));
  const Desc pack = variant_pack(uids, pointers, plan.workspace.get());
  FX_CUDA_CALL(cudnnBackendExecute(impl_->handle, plan.chosen.plan.get(), pack.get()));
}

std::string Attention::engine(const AttentionProblem& p) const {
  const auto it = impl_->plans.find(key_of(p));
  if (it == impl_->plans.end()) return {};
  const auto* plan = std::get_if<Plan>(&it->second);
  return plan ? plan->name : std::string();
}

}  // namespace fx::gpu
