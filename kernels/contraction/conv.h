// 2-D convolution on cuDNN's legacy API, unfused or with bias (+ ReLU) fused, for the executor.
// NCHW activations, OIHW weights ([K, C/groups, R, S]), output [N, K, P, Q]; or all three channels-last
// (Conv2dProblem::nhwc: x [N, H, W, C], w [K, R, S, C], y [N, P, Q, K]), where cuDNN has faster kernels for
// some shapes (docs/benchmarks.md, conv_bn_relu). Vendor types stay in the pimpl.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/graph/dtype.h"

struct CUstream_st;

namespace fx::gpu {

// none: cudnnConvolutionForward with the fastest algorithm cuDNN measures for the shape.
// bias, relu_bias: cudnnConvolutionBiasActivationForward (IDENTITY or RELU activation, bias [K]).
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

  bool operator==(const Conv2dProblem&) const = default;
};

struct Conv2dOutputShape {
  std::int64_t n = 0, k = 0, p = 0, q = 0;
};

// Output extent per spatial dim: (in + 2*pad - dilation*(f-1) - 1) / stride + 1.
Conv2dOutputShape conv2d_output_shape(const Conv2dProblem& p);

// Empty when well formed; otherwise the first problem found.
std::string validate_conv2d(const Conv2dProblem& p);

// One line for reports: "cuDNN fused conv + bias + ReLU (IMPLICIT_PRECOMP_GEMM), FP32 (no TF32)"; ", NHWC"
// is added for a channels-last problem.
std::string describe_conv2d(const Conv2dProblem& p);

// Owns a cuDNN handle, a workspace and a per-shape cache of descriptors and chosen algorithms.
// Not thread-safe; use one per stream.
class Conv2d {
 public:
  // The workspace cudnnFind may use (its algorithms must fit); it grows only for a chosen algorithm that needs more.
  static constexpr std::size_t kFindWorkspaceBytes = std::size_t{64} << 20;

  Conv2d();  // throws NoDeviceError without a usable CUDA device
  ~Conv2d();
  Conv2d(Conv2d&&) noexcept;
  Conv2d& operator=(Conv2d&&) noexcept;
  Conv2d(const Conv2d&) = delete;
  Conv2d& operator=(const Conv2d&) = delete;

  // Enqueues y = conv(x, w) [+ bias] [relu] on stream. The first call for a shape without an epilogue times
  // cuDNN's algorithms on these buffers (it writes y). Throws std::invalid_argument for a malformed problem,
  // GpuError for a cuDNN refusal (e.g. CUDNN_STATUS_NOT_SUPPORTED for a type the legacy fused call lacks).
  void run(const Conv2dProblem& p, const void* x, const void* w, const void* bias, void* y, CUstream_st* stream);

  // Name of the algorithm run for p, once run() has seen it ("" before).
  std::string algorithm(const Conv2dProblem& p) const;
  std::size_t cached_plan_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx::gpu
