#include "kernels/contraction/cudnn_backend.h"

#include <algorithm>

#include <cuda_runtime_api.h>

namespace fx::gpu::contraction_detail {

Desc make(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = nullptr;
  FX_CUDA_CALL(cudnnBackendCreateDescriptor(type, &d));
  return Desc(d);
}

void set_ints(const Desc& d, cudnnBackendAttributeName_t a, const std::vector<std::int64_t>& v) {
  FX_CUDA_CALL(cudnnBackendSetAttribute(d.get(), a, CUDNN_TYPE_INT64, static_cast<std::int64_t>(v.size()), v.data()));
}

void set_desc(const Desc& d, cudnnBackendAttributeName_t a, const Desc& v) {
  cudnnBackendDescriptor_t raw = v.get();
  FX_CUDA_CALL(cudnnBackendSetAttribute(d.get(), a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw));
}

Desc tensor(const TensorSpec& spec) {
  Desc t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, spec.type);
  set_ints(t, CUDNN_ATTR_TENSOR_DIMENSIONS, spec.dims);
  set_ints(t, CUDNN_ATTR_TENSOR_STRIDES, spec.strides);
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, spec.uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, spec.alignment);
  set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, spec.is_virtual);
  if (spec.by_value) set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, true);
  FX_CUDA_CALL(cudnnBackendFinalize(t.get()));
  return t;
}

Desc pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y, std::vector<Desc>& keep) {
  Desc pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode);
  set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  FX_CUDA_CALL(cudnnBackendFinalize(pw.get()));
  Desc op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  FX_CUDA_CALL(cudnnBackendFinalize(op.get()));
  keep.push_back(std::move(pw));
  return op;
}

Desc operation_graph(cudnnHandle_t handle, const std::vector<Desc>& ops) {
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const Desc& op : ops) raw.push_back(op.get());
  Desc graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  FX_CUDA_CALL(cudnnBackendSetAttribute(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                        static_cast<std::int64_t>(raw.size()), raw.data()));
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, handle);
  FX_CUDA_CALL(cudnnBackendFinalize(graph.get()));
  return graph;
}

std::vector<Desc> engine_configs(const Desc& graph, cudnnBackendHeurMode_t mode) {
  Desc heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode);
  if (cudnnBackendFinalize(heur.get()) != CUDNN_STATUS_SUCCESS) return {};
  std::int64_t count = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0) {
    return {};
  }
  std::vector<Desc> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.push_back(make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
    raw.push_back(configs.back().get());
  }
  std::int64_t got = 0;
  if (cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                               raw.data()) != CUDNN_STATUS_SUCCESS) {
    return {};
  }
  configs.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(got, 0, count)));
  return configs;
}

std::optional<EngineInfo> engine_info(const Desc& config) {
  EngineInfo info;
  Desc engine = make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  std::int64_t got = 0;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                               &raw) != CUDNN_STATUS_SUCCESS) {
    return std::nullopt;
  }
  cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, &info.index);
  cudnnBackendNumericalNote_t numerical[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &got, numerical) != CUDNN_STATUS_SUCCESS) {
    return std::nullopt;
  }
  for (std::int64_t i = 0; i < got; ++i) {
    info.tensor_cores |= numerical[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
    info.down_converts |= numerical[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS;
  }
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                               CUDNN_BEHAVIOR_NOTE_TYPE_COUNT, &got, behavior) != CUDNN_STATUS_SUCCESS) {
    info.runtime_compiled = true;
    return info;
  }
  for (std::int64_t i = 0; i < got; ++i) info.runtime_compiled |= behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  return info;
}

std::optional<FinalizedPlan> finalize(cudnnHandle_t handle, Desc config, const EngineInfo& engine,
                                      std::size_t max_workspace) {
  FinalizedPlan c;
  c.engine = engine;
  c.plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(c.plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, handle);
  set_desc(c.plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
  if (cudnnBackendFinalize(c.plan.get()) != CUDNN_STATUS_SUCCESS) return std::nullopt;
  std::int64_t need = 0, got = 0;
  if (cudnnBackendGetAttribute(c.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got,
                               &need) != CUDNN_STATUS_SUCCESS ||
      need < 0 || static_cast<std::size_t>(need) > max_workspace) {
    return std::nullopt;
  }
  c.workspace = static_cast<std::size_t>(need);
  c.config = std::move(config);
  return c;
}

Desc variant_pack(const std::vector<std::int64_t>& uids, const std::vector<void*>& pointers, void* workspace) {
  Desc pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  FX_CUDA_CALL(cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
                                        static_cast<std::int64_t>(uids.size()), uids.data()));
  FX_CUDA_CALL(cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
                                        static_cast<std::int64_t>(pointers.size()), pointers.data()));
  FX_CUDA_CALL(cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
                                        &workspace));
  FX_CUDA_CALL(cudnnBackendFinalize(pack.get()));
  return pack;
}

std::string last_cudnn_error() {
  char text[1024] = {};
  cudnnGetLastErrorString(text, sizeof text);
  return text;
}

std::string cudnn_reasons(const std::string& text) {
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

std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

Desc& GraphBuilder::virtual_tensor(cudnnDataType_t type, const std::vector<std::int64_t>& dims) {
  keep.push_back(tensor({next_uid++, type, dims, packed_strides(dims), true}));
  return keep.back();
}

Desc& GraphBuilder::io_tensor(std::int64_t uid, cudnnDataType_t type, const std::vector<std::int64_t>& dims,
                              const std::vector<std::int64_t>& strides) {
  keep.push_back(tensor({uid, type, dims, strides, false}));
  return keep.back();
}

Desc& GraphBuilder::by_value_scalar(std::int64_t uid, std::size_t rank) {
  const std::vector<std::int64_t> ones(rank, 1);
  keep.push_back(tensor({uid, CUDNN_DATA_FLOAT, ones, ones, false, true}));
  return keep.back();
}

void GraphBuilder::matmul(const Desc& a, const Desc& b, const Desc& c) {
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

void GraphBuilder::reduce(cudnnReduceTensorOp_t mode, const Desc& x, const Desc& y) {
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

void GraphBuilder::pw(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y) {
  ops.push_back(pointwise(mode, x, b, y, descriptors));
}

void GraphBuilder::move_into(std::vector<Desc>& out, Desc graph) {
  for (auto* part : {&descriptors, &ops}) {
    for (Desc& d : *part) out.push_back(std::move(d));
  }
  for (Desc& d : keep) out.push_back(std::move(d));
  out.push_back(std::move(graph));
}

namespace {

void free_device(void* p) { cudaFree(p); }

}  // namespace

std::variant<FirstPlan, std::string> first_plan(cudnnHandle_t handle, std::int64_t first_virtual_uid,
                                                const std::function<Desc(GraphBuilder&)>& build, const std::string& what,
                                                std::size_t max_workspace,
                                                const std::function<bool(const std::optional<EngineInfo>&)>& usable) {
  GraphBuilder b{handle, {}, {}, {}, first_virtual_uid};
  Desc graph;
  try {
    graph = build(b);
  } catch (const GpuError& e) {
    if (e.library() != "cuDNN") throw;
    const std::string detail = cudnn_reasons(last_cudnn_error());
    return "cuDNN builds no operation graph for it (" + std::string(e.what()) + (detail.empty() ? "" : "; " + detail) +
           ")";
  }
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    for (Desc& config : engine_configs(graph, mode)) {
      try {
        const std::optional<EngineInfo> engine = engine_info(config);
        if (!usable(engine)) continue;
        auto c = finalize(handle, std::move(config), engine.value_or(EngineInfo{}), max_workspace);
        if (!c) continue;
        FirstPlan plan;
        plan.chosen = std::move(*c);
        if (plan.chosen.workspace > 0) {
          void* p = nullptr;
          FX_CUDA_CALL(cudaMalloc(&p, plan.chosen.workspace));
          plan.workspace = {p, &free_device};
        }
        plan.name = "cuDNN engine " + std::to_string(plan.chosen.engine.index) +
                    (plan.chosen.engine.tensor_cores ? " (tensor cores)" : "") +
                    (plan.chosen.engine.runtime_compiled ? " (compiled at run time)" : "") + ", workspace " +
                    std::to_string(plan.chosen.workspace) + " B";
        b.move_into(plan.keep, std::move(graph));
        return plan;
      } catch (const GpuError& e) {
        if (e.library() != "cuDNN") throw;  // a configuration cuDNN will not describe is skipped
      }
    }
  }
  const std::string detail = cudnn_reasons(last_cudnn_error());
  return "cuDNN's heuristics offer no engine for this " + what + " on this GPU" +
         (detail.empty() ? std::string() : " (" + detail + ")");
}

}  // namespace fx::gpu::contraction_detail
