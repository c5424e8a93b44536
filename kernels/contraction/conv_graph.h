// Internal to kernels/contraction: a convolution (+ bias, + residual, + ReLU) as one cuDNN operation graph (the backend
// API), its engine chosen by timing and its execution plan finalized once, so that a launch costs the host one
// cudnnBackendExecute on a cached variant pack. The legacy calls rebuild that plan on every call, which costs
// the host more than the GPU spends on a small convolution and leaves a network of them host-bound. PyTorch's
// cuDNN v9 path runs convolutions this way too.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/contraction/conv.h"
#include "kernels/tuning/timed_choice.h"

namespace fx::gpu::contraction_detail {

cudnnDataType_t dnn_type(DType t);  // f32, f16, bf16; std::invalid_argument for others

// The pointers one launch binds; a plan keeps the variant packs of the last few sets it saw.
struct ConvOperands {
  const void* x = nullptr;
  const void* w = nullptr;
  const void* bias = nullptr;
  const void* z = nullptr;  // the residual (Conv2dProblem::residual)
  void* y = nullptr;
  void* workspace = nullptr;
  bool operator==(const ConvOperands&) const = default;
};

// Operands must be aligned to this many bytes for a graph plan (the tensors are described so); a launch
// with a less aligned pointer goes through the legacy API.
inline constexpr std::size_t kConvGraphAlignment = 16;
bool graph_aligned(const ConvOperands& ops);

class ConvGraphPlan {
 public:
  // The fastest engine configuration for p, timed on `ops` on `stream` (the runs write y), among those whose
  // workspace fits max_workspace and whose numerics honour p (no TF32 tensor cores for f32 without allow_tf32, no
  // inputs down-converted). nullopt when cuDNN builds no graph or no configuration for p (grouped convolutions
  // on some versions) or refuses a call on the way: the caller then uses the legacy API. While `stream` is being
  // captured into a CUDA graph nothing is timed: the heuristics' first configuration that compiles nothing at run
  // time stands (ops.workspace must then exist already). Throws GpuError only for a failing CUDA call. The
  // timed choice is kept in `kept.cache` and, unless it retunes, an earlier run's is taken from there.
  static std::optional<ConvGraphPlan> choose(cudnnHandle_t handle, const Conv2dProblem& p, const ConvOperands& ops,
                                             std::size_t max_workspace, cudaStream_t stream,
                                             const ChoiceSource& kept = {});

  ConvGraphPlan(ConvGraphPlan&&) noexcept;
  ConvGraphPlan& operator=(ConvGraphPlan&&) noexcept;
  ~ConvGraphPlan();

  // Enqueues the convolution on the handle's stream. ops.workspace must hold workspace_bytes().
  void execute(cudnnHandle_t handle, const ConvOperands& ops);
  std::size_t workspace_bytes() const;
  // "cuDNN graph engine 67 (tensor cores), 0.0481 ms; fastest of 6 configurations timed (63 ms)".
  const std::string& name() const;

 private:
  struct State;
  explicit ConvGraphPlan(std::unique_ptr<State> s);
  static std::optional<ConvGraphPlan> build(cudnnHandle_t handle, const Conv2dProblem& p, const ConvOperands& ops,
                                            std::size_t max_workspace, cudaStream_t stream, const ChoiceSource& kept);
  std::unique_ptr<State> s_;
};

}  // namespace fx::gpu::contraction_detail
