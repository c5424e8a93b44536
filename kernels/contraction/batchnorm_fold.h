// Folding an inference batchnorm into the convolution before it: pure host math, no GPU.
// bn(conv(x, w) + b) = conv(x, w') + b' with, per output channel o,
//   scale_o = gamma_o / sqrt(var_o + eps),  w'[o] = w[o] * scale_o,  b'_o = (b_o - mean_o) * scale_o + beta_o.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fx::gpu {

struct BatchNormParams {
  std::span<const float> mean, var, gamma, beta;  // one per output channel
  double eps = 1e-5;
};

struct FoldedConv {
  std::vector<float> weight;  // same OIHW layout as the input weight
  std::vector<float> bias;    // one per output channel
};

// weight: OIHW with `out_channels` leading; conv_bias: empty for a convolution without bias.
// Computed in double, rounded once to float. Throws std::invalid_argument on mismatched sizes or var + eps <= 0.
FoldedConv fold_batchnorm(std::span<const float> weight, std::int64_t out_channels, std::span<const float> conv_bias,
                          const BatchNormParams& bn);

}  // namespace fx::gpu
