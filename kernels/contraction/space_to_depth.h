// A strided convolution over few input channels (an image model's stem: ResNet's 7x7 stride-2 convolution on
// RGB) as a stride-1 convolution over blocks of its input. Each f x f block of x (f the stride) becomes one pixel
// of C*f*f channels (space to depth), the filter is rearranged alike, and the product is the same. cuDNN's
// implicit-GEMM kernels read a filter tap's channels at a time: three channels starve its tensor-core kernels,
// sixteen feed them. The executor offers it as the channels-last way of such a convolution (its x rearranged by
// a generated kernel, its weights once at preparation) and keeps it where tuning finds it faster.
// The product is the same for finite x. A filter side that is no multiple of f gets zero taps, and those multiply
// real elements of x: an infinity or NaN there also reaches an output that the original convolution computes
// without it (0 * inf is NaN).
// No CUDA: the rules and the weights' rearrangement are tested on the CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/contraction/conv.h"

namespace fx::gpu {

struct SpaceToDepth {
  std::int64_t factor = 1;    // f: the block's side, the convolution's stride
  std::int64_t channels = 0;  // C*f*f, the rearranged pixel's real channels
  // The stride-1 convolution on the rearranged x, channels-last: x [N, P+R'-1, Q+S'-1, C'] with C' = `channels`
  // rounded up to a multiple of 8 (the rest zero), filter [K, R', S', C'] (R' = ceil(R/f)), no padding; y as
  // the original's, [N, P, Q, K].
  Conv2dProblem problem;
};

// The space-to-depth form of p, where it has one worth offering: ungrouped and undilated, one stride of 2 or more
// in both dims, a filter at least that wide, no residual, and at most 16 channels once rearranged.
std::optional<SpaceToDepth> space_to_depth_for(const Conv2dProblem& p);

// The rearranged x's element (n, i, j, ch) is x[n, c, i*f + bh - pad_h, j*f + bw - pad_w] for
// ch = (c*f + bh)*f + bw < channels, zero outside x and for the padding channels.
// Weights [K, C, R, S] (elements of `element_bytes`) as the rearranged filter [K, R', S', C']: element
// (k, a, b, ch) is w[k, c, a*f + bh, b*f + bw], zero past the filter's edge and in the padding channels.
std::vector<char> space_to_depth_weights(const Conv2dProblem& p, const SpaceToDepth& s, const void* oihw,
                                         std::size_t element_bytes);

}  // namespace fx::gpu
