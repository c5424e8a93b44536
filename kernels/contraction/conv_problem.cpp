// The vendor-free half of conv.h: output shape, validation and the report line.
#include <climits>
#include <sstream>

#include "kernels/contraction/conv.h"

namespace fx::gpu {
namespace {

std::int64_t output_extent(std::int64_t in, std::int64_t pad, std::int64_t dilation, std::int64_t filter,
                           std::int64_t stride) {
  const std::int64_t span = in + 2 * pad - dilation * (filter - 1) - 1;
  return span < 0 ? 0 : span / stride + 1;
}

}  // namespace

Conv2dOutputShape conv2d_output_shape(const Conv2dProblem& p) {
  return {p.n, p.k, output_extent(p.h, p.pad_h, p.dilation_h, p.r, p.stride_h),
          output_extent(p.w, p.pad_w, p.dilation_w, p.s, p.stride_w)};
}

std::string validate_conv2d(const Conv2dProblem& p) {
  for (std::int64_t v : {p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.stride_h, p.stride_w, p.dilation_h, p.dilation_w,
                         p.groups}) {
    if (v < 1) return "sizes, strides, dilations and groups must be positive";
    // The legacy descriptors take int.
    if (v > INT_MAX) return "a size exceeds the int range of cuDNN's legacy descriptors";
  }
  if (p.pad_h < 0 || p.pad_w < 0) return "padding must not be negative";
  if (p.c % p.groups != 0 || p.k % p.groups != 0) {
    std::ostringstream s;
    s << "groups = " << p.groups << " must divide both input channels " << p.c << " and filters " << p.k;
    return s.str();
  }
  if (p.type != DType::f32 && p.type != DType::f16 && p.type != DType::bf16) return "conv2d takes f32, f16 or bf16";
  if (p.nhwc && p.groups != 1) return "the channels-last (NHWC) path takes ungrouped convolutions only";
  if (p.residual && p.epilogue == ConvEpilogue::none) return "a residual is added in the fused epilogue: it needs the bias";
  const Conv2dOutputShape out = conv2d_output_shape(p);
  if (out.p < 1 || out.q < 1) return "the dilated filter is larger than the padded input";
  return {};
}

std::string describe_conv2d(const Conv2dProblem& p) {
  std::ostringstream s;
  switch (p.epilogue) {
    case ConvEpilogue::none: s << "cuDNN convolution"; break;
    case ConvEpilogue::bias: s << "cuDNN fused conv + bias" << (p.residual ? " + residual" : ""); break;
    case ConvEpilogue::relu_bias: s << "cuDNN fused conv + bias" << (p.residual ? " + residual" : "") << " + ReLU"; break;
  }
  if (p.type == DType::f32) {
    s << (p.allow_tf32 ? ", TF32 tensor cores allowed" : ", FP32 (no TF32)");
  } else {
    s << ", " << (p.type == DType::bf16 ? "BF16" : "FP16") << " tensor cores, FP32 accumulation";
  }
  if (p.groups > 1) s << ", " << p.groups << " groups";
  if (p.nhwc) s << ", NHWC";
  return s.str();
}

}  // namespace fx::gpu
