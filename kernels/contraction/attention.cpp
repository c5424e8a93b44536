// Fused attention through cuDNN's backend API, built as cudnn-frontend builds its SDPA forward node: matmul(Q, K^T)
// into f32 scores, a pointwise multiply by the scale (a by-value scalar), an optional pointwise add of the mask
// (cuDNN's "bias"), the softmax as max / subtract / exp / sum / divide with its statistics (max + log sum), then
// matmul(P, V); every tensor between the two matmuls is virtual. cuDNN's heuristics recognise the graph and offer its fused flash attention engines; the
// first configuration that finalizes is kept (the engines on offer for this graph are variants of one kernel).
#include "kernels/contraction/attention.h"

#include <algorithm>
#include <cstdio>
#include <deque>
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

std::vector<std::int64_t> packed(const std::vector<std::int64_t>& d) {
  return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1};
}

struct GraphBuilder {
  cudnnHandle_t handle;
  std::deque<Desc> keep;  // a deque: the operations refer to tensors by reference while more are added
  std::vector<Desc> ops, descriptors;
  std::int64_t next_uid = kFirstVirtual;

  Desc& virtual_tensor(cudnnDataType_t type, const std::vector<std::int64_t>& dims) {
    keep.push_back(tensor({next_uid++, type, dims, packed(dims), true}));
    return keep.back();
  }
  Desc& io_tensor(Uid uid, cudnnDataType_t type, const std::vector<std::int64_t>& dims,
                  const std::vector<std::int64_t>& strides) {
    keep.push_back(tensor({uid, type, dims, strides, false}));
    return keep.back();
  }
  void matmul(const Desc& a, const Desc& b, const Desc& c) {
    Desc mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
    FX_CUDA_CALL(cudnnBackendFinalize(mm.get()));
    Desc op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
    FX_CUDA_CALL(cudnnBackendFinalize(op.get()));
    descriptors.push_back(std::move(mm));
    ops.push_back(std::move(op));
  }
  void reduce(cudnnReduceTensorOp_t mode, const Desc& x, const Desc& y) {
    Desc r = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, mode);
    set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
    FX_CUDA_CALL(cudnnBackendFinalize(r.get()));
    Desc op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r);
    FX_CUDA_CALL(cudnnBackendFinalize(op.get()));
    descriptors.push_back(std::move(r));
    ops.push_back(std::move(op));
  }
  void pw(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y) {
    ops.push_back(pointwise(mode, x, b, y, descriptors));
  }
};

// cuDNN's last error text, which lists every engine it tried with a stack of "Reason: ..." lines, as the distinct
// reasons on one line.
std::string reasons(const std::string& text) {
  constexpr std::size_t kMaxReasons = 3;
  std::vector<std::string> found;
  for (std::size_t at = text.find("Reason: "); at != std::string::npos; at = text.find("Reason: ", at + 1)) {
    const std::size_t end = text.find('\n', at);
    std::string reason = text.substr(at + 8, end == std::string::npos ? std::string::npos : end - at - 8);
    if (std::find(found.begin(), found.end(), reason) == found.end() && found.size() < kMaxReasons) {
      found.push_back(std::move(reason));
    }
  }
  std::string out;
  for (const std::string& r : found) out += (out.empty() ? "" : "; ") + r;
  return out.empty() ? text.substr(0, text.find('\n')) : out;
}

// The operation graph of p; its descriptors go to b.keep and b.ops.
Desc attention_graph(GraphBuilder& b, const AttentionProblem& p) {
  const cudnnDataType_t io = dnn_type(p.type);
  const std::int64_t B = p.batch, H = p.heads, S = p.seq_q, T = p.seq_kv, D = p.head_dim, Dv = p.value_dim;
  const Desc& q = b.io_tensor(kQ, io, {B, H, S, D}, packed({B, H, S, D}));
  // The matmul reads K^T [B, H, D, T]: K [B, H, T, D] through swapped strides.
  const Desc& kt = b.io_tensor(kK, io, {B, H, D, T}, {H * T * D, T * D, 1, D});
  const Desc& v = b.io_tensor(kV, io, {B, H, T, Dv}, packed({B, H, T, Dv}));
  const Desc& o = b.io_tensor(kO, io, {B, H, S, Dv}, packed({B, H, S, Dv}));
  b.keep.push_back(tensor({kScale, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true}));
  const Desc& scale = b.keep.back();
  const std::vector<std::int64_t> scores = {B, H, S, T}, rows = {B, H, S, 1};

  const Desc* s = &b.virtual_tensor(CUDNN_DATA_FLOAT, scores);
  b.matmul(q, kt, *s);
  const Desc& scaled = b.virtual_tensor(CUDNN_DATA_FLOAT, scores);
  b.pw(CUDNN_POINTWISE_MUL, *s, &scale, scaled);
  s = &scaled;
  if (p.mask) {
    const std::vector<std::int64_t> dims = {p.mask_batch, p.mask_heads, S, T};
    const Desc& mask = b.io_tensor(kMask, io, dims, packed(dims));
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

struct Plan {
  std::vector<Desc> keep;  // tensors, operations and the graph the plan was built from
  FinalizedPlan chosen;
  DeviceMemory workspace;
  std::string name;
};

// The plan for p, or why cuDNN has none.
std::variant<Plan, std::string> build(cudnnHandle_t handle, const AttentionProblem& p) {
  GraphBuilder b{handle, {}, {}, {}};
  Desc graph;
  try {
    graph = attention_graph(b, p);
  } catch (const GpuError& e) {
    if (e.library() != "cuDNN") throw;
    const std::string detail = reasons(last_cudnn_error());
    return "cuDNN builds no operation graph for it (" + std::string(e.what()) + (detail.empty() ? "" : "; " + detail) +
           ")";
  }
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    for (Desc& config : engine_configs(graph, mode)) {
      try {
        // Any engine cuDNN offers for this graph keeps its numerics: inputs are already 16-bit, P is rounded to
        // their type as the graph says, and there is no TF32 question; the notes only label the report.
        const EngineInfo engine = engine_info(config).value_or(EngineInfo{});
        auto c = contraction_detail::finalize(handle, std::move(config), engine, kMaxWorkspace);
        if (!c) continue;
        Plan plan;
        plan.chosen = std::move(*c);
        if (plan.chosen.workspace > 0) plan.workspace = DeviceMemory(plan.chosen.workspace);
        char text[160];
        std::snprintf(text, sizeof text, "cuDNN engine %lld%s%s, workspace %zu B",
                      static_cast<long long>(plan.chosen.engine.index),
                      plan.chosen.engine.tensor_cores ? " (tensor cores)" : "",
                      plan.chosen.engine.runtime_compiled ? " (compiled at run time)" : "", plan.chosen.workspace);
        plan.name = text;
        for (auto* part : {&b.descriptors, &b.ops}) {
          for (Desc& d : *part) plan.keep.push_back(std::move(d));
        }
        for (Desc& d : b.keep) plan.keep.push_back(std::move(d));
        plan.keep.push_back(std::move(graph));
        return plan;
      } catch (const GpuError& e) {
        if (e.library() != "cuDNN") throw;  // a configuration cuDNN will not describe is skipped
      }
    }
  }
  const std::string detail = reasons(last_cudnn_error());
  return "cuDNN's heuristics offer no engine for this attention graph on this GPU" +
         (detail.empty() ? std::string() : " (" + detail + ")");
}

using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, float,
                       bool, std::int64_t, std::int64_t>;
Key key_of(const AttentionProblem& p) {
  return {p.batch, p.heads, p.seq_q, p.seq_kv, p.head_dim, p.value_dim, static_cast<int>(p.type), p.scale,
          p.mask, p.mask_batch, p.mask_heads};
}

}  // namespace

std::string describe_attention(const AttentionProblem& p) {
  std::string type = p.type == DType::bf16 ? "BF16" : p.type == DType::f16 ? "FP16" : std::string(dtype_name(p.type));
  char text[256];
  std::snprintf(text, sizeof text, "cuDNN fused attention (flash), %s, B %lld x H %lld, Tq %lld, Tkv %lld, D %lld, scale %g",
                type.c_str(), static_cast<long long>(p.batch), static_cast<long long>(p.heads),
                static_cast<long long>(p.seq_q), static_cast<long long>(p.seq_kv), static_cast<long long>(p.head_dim),
                static_cast<double>(p.scale));
  std::string out = text;
  if (p.mask) {
    out += ", additive mask [" + std::to_string(p.seq_q) + ", " + std::to_string(p.seq_kv) + "]";
    if (p.mask_batch == 1 && p.batch > 1) out += " broadcast over batch";
    if (p.mask_heads == 1 && p.heads > 1) out += p.mask_batch == 1 && p.batch > 1 ? " and heads" : " broadcast over heads";
  }
  return out + "; the score matrix is never written";
}

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
