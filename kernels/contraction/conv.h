// 2-D convolution on cuDNN, unfused or with bias (+ ReLU) fused, for the executor.
// NCHW activations, OIHW weights ([K, C/groups, R, S]), output [N, K, P, Q]; or all three channels-last
// (Conv2dProblem::nhwc: x [N, H, W, C], w [K, R, S, C], y [N, P, Q, K]), where cuDNN has faster kernels for
// some shapes. Runs through cuDNN's graph API (an execution plan built once
// per shape: the host's cost per launch is small) and the legacy API where the graph API has no plan for a
// problem or a pointer is too loosely aligned for one. Vendor types stay in the pimpl.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/graph/dtype.h"

struct CUstream_st;

namespace fx::gpu {

class TuningCache;  // kernels/tuning/tuning_cache.h

// False in a build without cuDNN (conv_unavailable.cpp), where constructing a Conv2d throws saying so.
bool cudnn_available();

// none: the convolution alone. bias, relu_bias: + bias [K] (+ ReLU) in the same call: one operation graph, or on
// the legacy API cudnnConvolutionBiasActivationForward (IDENTITY or RELU activation).
enum class ConvEpilogue : std::uint8_t { none, bias, relu_bias };

struct Conv2dProblem {
  std::int64_t n = 1, c = 1, h = 1, w = 1;  // input
  std::int64_t k = 1, r = 1, s = 1;         // filters
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
  DType type = DType::f32;  // x, w, y and bias; accumulation is f32 for every type
  bool allow_tf32 = false;  // f32 only
  ConvEpilogue epilogue = ConvEpilogue::none;
  bool nhwc = false;  // channels-last x, w and y (groups == 1 only); the bias stays one value per filter
  // + z, a tensor of y's shape, type and layout (a residual), added with the bias before the ReLU: the legacy
  // fused call's y = act(conv(x) + z + bias). Only with a fused epilogue (bias or relu_bias).
  bool residual = false;

  bool operator==(const Conv2dProblem&) const = default;
};

struct Conv2dOutputShape {
  std::int64_t n = 0, k = 0, p = 0, q = 0;
};

// Output extent per spatial dim: (in + 2*pad - dilation*(f-1) - 1) / stride + 1.
Conv2dOutputShape conv2d_output_shape(const Conv2dProblem& p);

// Empty when well formed; otherwise the first problem found.
std::string validate_conv2d(const Conv2dProblem& p);

// One line for reports: "cuDNN fused conv + bias + ReLU, FP32 (no TF32)"; ", NHWC" is added for a channels-last
// problem. Conv2d::algorithm names what ran.
std::string describe_conv2d(const Conv2dProblem& p);

// graph: cuDNN's graph API where it has a plan for the problem, else the legacy API. legacy: the legacy API only
// (cudnnConvolutionForward, cudnnConvolutionBiasActivationForward), which rebuilds its plan on every call: kept for
// comparison (host time per call) and as the fallback.
enum class ConvApi : std::uint8_t { graph, legacy };

// Owns a cuDNN handle, a workspace and a per-shape cache of plans and chosen algorithms.
// Not thread-safe; use one per stream.
class Conv2d {
 public:
  // The workspace the algorithm search may use (its candidates must fit); it grows only for a chosen legacy
  // algorithm that needs more.
  static constexpr std::size_t kFindWorkspaceBytes = std::size_t{64} << 20;

  explicit Conv2d(ConvApi api = ConvApi::graph);  // throws NoDeviceError without a usable CUDA device
  ~Conv2d();
  Conv2d(Conv2d&&) noexcept;
  Conv2d& operator=(Conv2d&&) noexcept;
  Conv2d(const Conv2d&) = delete;
  Conv2d& operator=(const Conv2d&) = delete;

  // Enqueues y = conv(x, w) [+ bias] [relu] on stream. The first call for a shape times cuDNN's candidate engine
  // configurations (legacy API: its algorithms, for a shape without an epilogue) on these buffers (it writes y).
  // Throws std::invalid_argument for a malformed problem, GpuError for a cuDNN refusal (e.g.
  // CUDNN_STATUS_NOT_SUPPORTED for a type the legacy fused call lacks).
  // With p.residual, `residual` is z (it must not be y).
  void run(const Conv2dProblem& p, const void* x, const void* w, const void* bias, void* y, CUstream_st* stream,
           const void* residual = nullptr);

  // What runs p, once run() has seen it ("" before): "cuDNN graph engine 67 (tensor cores), 0.0481 ms; ..."
  // or a legacy algorithm, "IMPLICIT_PRECOMP_GEMM (legacy API)".
  std::string algorithm(const Conv2dProblem& p) const;
  std::size_t cached_plan_count() const;
  // Keeps the graph API's engine choice of each problem in `cache` and, with `reuse`, takes an earlier run's
  // from it instead of finalizing and timing every candidate (the kept configuration is finalized alone, and
  // searched again where cuDNN no longer offers it). Null: every problem is searched.
  void set_tuning_cache(TuningCache* cache, bool reuse);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx::gpu
