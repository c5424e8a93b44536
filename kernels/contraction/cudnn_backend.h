// Internal to kernels/contraction: the pieces of cuDNN's backend (graph) API that every operation graph here uses
// (the convolution graph, the fused attention graph): owned descriptors, attribute setters, tensors, pointwise
// operations, the heuristics' engine configurations and their numerical and behaviour notes.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
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
// cuDNN's last error text lists every engine it tried with a stack of "Reason: ..." lines: the distinct reasons
// on one line (its first line where it has none).
std::string cudnn_reasons(const std::string& text);

// Row-major (packed) strides of dims.
std::vector<std::int64_t> packed_strides(const std::vector<std::int64_t>& dims);

// Collects an operation graph's tensors and operations as it is built: tensors are kept in a deque, since the
// operations refer to them by reference while more are added; virtual tensors are numbered from `next_uid`.
struct GraphBuilder {
  cudnnHandle_t handle;
  std::deque<Desc> keep;
  std::vector<Desc> ops, descriptors;
  std::int64_t next_uid;

  Desc& virtual_tensor(cudnnDataType_t type, const std::vector<std::int64_t>& dims);
  Desc& io_tensor(std::int64_t uid, cudnnDataType_t type, const std::vector<std::int64_t>& dims,
                  const std::vector<std::int64_t>& strides);
  // A scalar passed by its host address in the variant pack.
  Desc& by_value_scalar(std::int64_t uid, std::size_t rank);
  void matmul(const Desc& a, const Desc& b, const Desc& c);  // c = a b, accumulated in f32
  void reduce(cudnnReduceTensorOp_t mode, const Desc& x, const Desc& y);
  void pw(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc& y);
  // Everything built so far and `graph`, moved into `out` (a plan must keep them).
  void move_into(std::vector<Desc>& out, Desc graph);
};

// A plan of the first configuration heuristics mode A (then FALLBACK) offers that finalizes and that `usable`
// accepts, with the workspace it needs allocated, and everything its graph was built from kept.
struct FirstPlan {
  std::vector<Desc> keep;
  FinalizedPlan chosen;
  std::unique_ptr<void, void (*)(void*)> workspace{nullptr, nullptr};
  std::string name;  // "cuDNN engine 8 (tensor cores), workspace 0 B"
};
// The plan for the graph `build` describes, or why cuDNN has none, naming the graph as `what` ("attention
// graph"). Throws GpuError only for a failing CUDA call.
std::variant<FirstPlan, std::string> first_plan(cudnnHandle_t handle, std::int64_t first_virtual_uid,
                                                const std::function<Desc(GraphBuilder&)>& build, const std::string& what,
                                                std::size_t max_workspace,
                                                const std::function<bool(const std::optional<EngineInfo>&)>& usable);

}  // namespace fx::gpu::contraction_detail
