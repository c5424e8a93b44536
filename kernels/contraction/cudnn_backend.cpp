#include "kernels/contraction/cudnn_backend.h"

#include <algorithm>

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

}  // namespace fx::gpu::contraction_detail
