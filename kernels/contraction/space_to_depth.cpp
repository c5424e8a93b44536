#include "kernels/contraction/space_to_depth.h"

#include <algorithm>

namespace fx::gpu {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::optional<SpaceToDepth> space_to_depth_for(const Conv2dProblem& p) {
  const std::int64_t f = p.stride_h;
  if (!validate_conv2d(p).empty() || p.groups != 1 || p.dilation_h != 1 || p.dilation_w != 1 || p.residual ||
      f < 2 || p.stride_w != f || p.r < f || p.s < f || p.c * f * f > 16) {
    return std::nullopt;
  }
  SpaceToDepth s;
  s.factor = f;
  s.channels = p.c * f * f;
  const Conv2dOutputShape out = conv2d_output_shape(p);
  Conv2dProblem& q = s.problem;
  q = p;
  q.nhwc = true;
  q.r = ceil_div(p.r, f);
  q.s = ceil_div(p.s, f);
  q.c = ceil_div(s.channels, 8) * 8;
  q.h = out.p + q.r - 1;
  q.w = out.q + q.s - 1;
  q.stride_h = q.stride_w = 1;
  q.pad_h = q.pad_w = 0;
  return s;
}

std::vector<char> space_to_depth_weights(const Conv2dProblem& p, const SpaceToDepth& s, const void* oihw,
                                         std::size_t element_bytes) {
  const Conv2dProblem& q = s.problem;
  const std::int64_t f = s.factor;
  std::vector<char> out(static_cast<std::size_t>(q.k * q.r * q.s * q.c) * element_bytes, 0);
  const char* w = static_cast<const char*>(oihw);
  for (std::int64_t k = 0; k < p.k; ++k) {
    for (std::int64_t c = 0; c < p.c; ++c) {
      for (std::int64_t r = 0; r < p.r; ++r) {
        for (std::int64_t t = 0; t < p.s; ++t) {
          const std::int64_t ch = (c * f + r % f) * f + t % f;
          const std::int64_t to = ((k * q.r + r / f) * q.s + t / f) * q.c + ch;
          const std::int64_t from = ((k * p.c + c) * p.r + r) * p.s + t;
          std::copy_n(w + from * static_cast<std::int64_t>(element_bytes), element_bytes,
                      out.data() + to * static_cast<std::int64_t>(element_bytes));
        }
      }
    }
  }
  return out;
}

}  // namespace fx::gpu
