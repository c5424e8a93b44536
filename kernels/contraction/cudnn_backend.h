// Internal to kernels/contraction: the pieces of cuDNN's backend (graph) API that every operation graph here uses
// (the convolution graph, the fused attention graph): owned descriptors, attribute setters, tensors, pointwise
// operations, the heuristics' engine configurations and their numerical and behaviour notes.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/cuda_call.h"

namespace fx::gpu::contraction_detail {

struct DescDeleter {
  void operator()(void* d) const { cudnnBackendDestroyDescriptor(d); }
};
using Desc = std::unique_ptr<void, DescDeleter>;

Desc make(cudnnBackendDescriptorType_t type);

template <class T>
void set(const Desc& d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t type, const T& value) {
  FX_CUDA_CALL(cudnnBackendSetAttribute(d.get(), a, type, 1, &value));
}
void set_ints(const Desc& d, cudnnBackendAttributeName_t a, const std::vector<std::int64_t>& v);
void set_desc(const Desc& d, cudnnBackendAttributeName_t a, const Desc& v);

// A finalized tensor descriptor. `by_value`: a scalar passed by its host address in the variant pack.
struct TensorSpec {
  std::int64_t uid = 0;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::vector<std::int64_t> dims, strides;
  bool is_virtual = false;
  bool by_value = false;
  std::int64_t alignment = 16;
};
Desc tensor(const TensorSpec& t);

// A finalized pointwise operation y = mode(x[, b]) computed in f32; its pointwise descriptor goes to `keep`.
Desc pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y, std::vector<Desc>& keep);

// A finalized operation graph of `ops` (they and the graph's handle must outlive it).
Desc operation_graph(cudnnHandle_t handle, const std::vector<Desc>& ops);

// The engine configurations heuristics `mode` offers for the graph, best first; none when it offers nothing.
std::vector<Desc> engine_configs(const Desc& graph, cudnnBackendHeurMode_t mode);

struct EngineInfo {
  std::int64_t index = -1;
  bool tensor_cores = false, down_converts = false, runtime_compiled = false;
};

// nullopt when the engine or its numerical notes cannot be read: a configuration whose numerics are unknown is
// not run (it might be TF32 where the problem forbids it). Behaviour notes that cannot be read count as runtime
// compilation, the case that is kept out of a CUDA graph capture.
std::optional<EngineInfo> engine_info(const Desc& config);

// The configuration finalized into an execution plan with its workspace size; nullopt when cuDNN refuses it or
// it needs more than max_workspace.
struct FinalizedPlan {
  Desc config, plan;
  EngineInfo engine;
  std::size_t workspace = 0;
};
std::optional<FinalizedPlan> finalize(cudnnHandle_t handle, Desc config, const EngineInfo& engine,
                                      std::size_t max_workspace);

// A finalized variant pack binding `pointers` to `uids` (by-value scalars by their host address).
Desc variant_pack(const std::vector<std::int64_t>& uids, const std::vector<void*>& pointers, void* workspace);

// cuDNN's own account of its last refusal (cudnnGetLastErrorString), "" when it has none.
std::string last_cudnn_error();

}  // namespace fx::gpu::contraction_detail
