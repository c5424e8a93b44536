// The matmul graph through cuDNN's backend API: matmul(A, B) into an f32 product, then each tail step a pointwise
// operation on earlier values into a virtual f32 tensor of its own, the last writing Y; the first configuration heuristics mode A (then
// FALLBACK) offers that finalizes is kept, as for attention (kernels/contraction/attention.cpp).
#include "kernels/contraction/matmul_graph.h"

#include <stdexcept>
#include <utility>
#include <variant>

#include "kernels/contraction/conv_graph.h"
#include "kernels/contraction/cudnn_backend.h"
#include "kernels/contraction/device_memory.h"

namespace fx::gpu {
namespace {

using namespace contraction_detail;

// The largest workspace a plan may ask for; the run-time fusion engines measured needed none.
constexpr std::size_t kMaxWorkspace = std::size_t{256} << 20;

enum Uid : std::int64_t { kA = 1, kB, kY, kFirstOperand = 10, kFirstVirtual = 100 };

cudnnPointwiseMode_t mode_of(GraphOp op) {
  switch (op) {
    case GraphOp::add_bias:
    case GraphOp::add_tensor: return CUDNN_POINTWISE_ADD;
    case GraphOp::add_scalar:
    case GraphOp::add_value: return CUDNN_POINTWISE_ADD;
    case GraphOp::mul_bias:
    case GraphOp::mul_tensor:
    case GraphOp::mul_scalar:
    case GraphOp::mul_value: return CUDNN_POINTWISE_MUL;
    case GraphOp::relu: return CUDNN_POINTWISE_RELU_FWD;
    case GraphOp::gelu_erf: return CUDNN_POINTWISE_GELU_FWD;
    case GraphOp::gelu_tanh: return CUDNN_POINTWISE_GELU_APPROX_TANH_FWD;
    case GraphOp::sigmoid: return CUDNN_POINTWISE_SIGMOID_FWD;
    case GraphOp::tanh: return CUDNN_POINTWISE_TANH_FWD;
    case GraphOp::silu: return CUDNN_POINTWISE_SWISH_FWD;  // x * sigmoid(beta x), beta 1 unless set
  }
  return CUDNN_POINTWISE_ADD;
}

bool reads_bias(GraphOp op) { return op == GraphOp::add_bias || op == GraphOp::mul_bias; }
bool reads_tensor(GraphOp op) { return reads_bias(op) || op == GraphOp::add_tensor || op == GraphOp::mul_tensor; }
bool reads_scalar(GraphOp op) { return op == GraphOp::mul_scalar || op == GraphOp::add_scalar; }
const Desc& value_at(const std::vector<const Desc*>& values, int ref, std::size_t step) {
  return *values[ref == GraphStep::kPrevious ? step : static_cast<std::size_t>(ref)];
}

// The operation graph of p; its descriptors go to b.
Desc matmul_graph(GraphBuilder& b, const MatmulGraphProblem& p) {
  const cudnnDataType_t io = dnn_type(p.type);
  const std::int64_t M = p.m, N = p.n, K = p.k;
  const Desc& a = b.io_tensor(kA, io, {1, M, K}, p.transpose_a ? std::vector<std::int64_t>{M * K, 1, M}
                                                               : std::vector<std::int64_t>{M * K, K, 1});
  const Desc& w = b.io_tensor(kB, io, {1, K, N}, p.transpose_b ? std::vector<std::int64_t>{K * N, 1, K}
                                                               : std::vector<std::int64_t>{K * N, N, 1});
  const Desc& y = b.io_tensor(kY, io, {1, M, N}, {M * N, N, 1});
  const std::vector<std::int64_t> out = {1, M, N};
  // values[0] is the product, values[i + 1] step i's result (validate_matmul_graph checked the references).
  std::vector<const Desc*> values = {p.tail.empty() ? &y : &b.virtual_tensor(CUDNN_DATA_FLOAT, out)};
  b.matmul(a, w, *values[0]);
  for (std::size_t i = 0; i < p.tail.size(); ++i) {
    const GraphStep& step = p.tail[i];
    const auto uid = kFirstOperand + static_cast<std::int64_t>(i);
    const Desc* operand = nullptr;
    if (reads_tensor(step.op)) {
      operand = reads_bias(step.op) ? &b.io_tensor(uid, io, {1, 1, N}, {N, N, 1}) : &b.io_tensor(uid, io, out, {M * N, N, 1});
    }
    if (reads_scalar(step.op)) operand = &b.by_value_scalar(uid, 3);
    if (step.op == GraphOp::add_value || step.op == GraphOp::mul_value) operand = &value_at(values, step.other, i);
    const Desc& next = i + 1 == p.tail.size() ? y : b.virtual_tensor(CUDNN_DATA_FLOAT, out);
    b.pw(mode_of(step.op), value_at(values, step.input, i), operand, next);
    values.push_back(&next);
  }
  return operation_graph(b.handle, b.ops);
}

using Plan = FirstPlan;

// The plan for p, or why cuDNN has none; no engine that down-converts the half-precision inputs, or whose
// numerical notes cannot be read.
std::variant<Plan, std::string> build(cudnnHandle_t handle, const MatmulGraphProblem& p) {
  return first_plan(handle, kFirstVirtual, [&p](GraphBuilder& b) { return matmul_graph(b, p); }, "matmul graph",
                    kMaxWorkspace, [](const std::optional<EngineInfo>& e) { return e && !e->down_converts; });
}

}  // namespace

struct MatmulGraph::Impl {
  cudnnHandle_t handle = nullptr;
  std::vector<std::pair<MatmulGraphProblem, std::variant<Plan, std::string>>> plans;

  ~Impl() {
    plans.clear();  // plans were finalized on the handle: they go first
    if (handle) cudnnDestroy(handle);
  }
  std::variant<Plan, std::string>& plan_for(const MatmulGraphProblem& p) {
    for (auto& [problem, plan] : plans)
      if (problem == p) return plan;
    plans.emplace_back(p, build(handle, p));
    return plans.back().second;
  }
};

MatmulGraph::MatmulGraph() : impl_(std::make_unique<Impl>()) {
  contraction_detail::require_cuda_device();
  FX_CUDA_CALL(cudnnCreate(&impl_->handle));
}
MatmulGraph::~MatmulGraph() = default;
MatmulGraph::MatmulGraph(MatmulGraph&&) noexcept = default;
MatmulGraph& MatmulGraph::operator=(MatmulGraph&&) noexcept = default;

std::string MatmulGraph::unsupported_reason(const MatmulGraphProblem& p) {
  if (std::string e = validate_matmul_graph(p); !e.empty()) return e;
  const auto* why = std::get_if<std::string>(&impl_->plan_for(p));
  return why ? *why : std::string();
}

void MatmulGraph::run(const MatmulGraphProblem& p, const void* a, const void* b, const std::vector<const void*>& operands,
                      void* y, CUstream_st* stream) {
  if (std::string e = validate_matmul_graph(p); !e.empty()) throw std::invalid_argument("matmul graph: " + e);
  if (!a || !b || !y || operands.size() != p.tail.size()) throw std::invalid_argument("matmul graph: missing operand");
  auto& entry = impl_->plan_for(p);
  if (auto* why = std::get_if<std::string>(&entry)) throw std::runtime_error("matmul graph: " + *why);
  Plan& plan = std::get<Plan>(entry);
  std::vector<std::int64_t> uids = {kA, kB, kY};
  std::vector<void*> pointers = {const_cast<void*>(a), const_cast<void*>(b), y};
  std::vector<float> scalars(p.tail.size());  // by value: cuDNN copies them when the pack is executed
  for (std::size_t i = 0; i < p.tail.size(); ++i) {
    const auto uid = kFirstOperand + static_cast<std::int64_t>(i);
    if (reads_tensor(p.tail[i].op)) {
      if (!operands[i]) throw std::invalid_argument("matmul graph: step " + std::to_string(i + 1) + " needs its tensor");
      uids.push_back(uid), pointers.push_back(const_cast<void*>(operands[i]));
    } else if (reads_scalar(p.tail[i].op)) {
      scalars[i] = p.tail[i].scalar;
      uids.push_back(uid), pointers.push_back(&scalars[i]);
    }
  }
  FX_CUDA_CALL(cudnnSetStream(impl_->handle, stream));
  const Desc pack = variant_pack(uids, pointers, plan.workspace.get());
  FX_CUDA_CALL(cudnnBackendExecute(impl_->handle, plan.chosen.plan.get(), pack.get()));
}

std::string MatmulGraph::engine(const MatmulGraphProblem& p) const {
  for (const auto& [problem, plan] : impl_->plans) {
    if (problem == p) return std::holds_alternative<Plan>(plan) ? std::get<Plan>(plan).name : std::string();
  }
  return {};
}

}  // namespace fx::gpu
