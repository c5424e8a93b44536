#include "kernels/contraction/batchnorm_fold.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace fx::gpu {

FoldedConv fold_batchnorm(std::span<const float> weight, std::int64_t out_channels, std::span<const float> conv_bias,
                          const BatchNormParams& bn) {
  if (out_channels < 1) throw std::invalid_argument("fold_batchnorm: out_channels must be positive");
  const auto channels = static_cast<std::size_t>(out_channels);
  if (weight.empty() || weight.size() % channels != 0) {
    throw std::invalid_argument("fold_batchnorm: weight size " + std::to_string(weight.size()) +
                                " is not a multiple of " + std::to_string(channels) + " output channels");
  }
  for (std::size_t size : {bn.mean.size(), bn.var.size(), bn.gamma.size(), bn.beta.size()}) {
    if (size != channels) throw std::invalid_argument("fold_batchnorm: a batchnorm vector's size is not out_channels");
  }
  if (!conv_bias.empty() && conv_bias.size() != channels) {
    throw std::invalid_argument("fold_batchnorm: conv bias size is not out_channels");
  }
  const std::size_t per_channel = weight.size() / channels;
  FoldedConv folded{std::vector<float>(weight.size()), std::vector<float>(channels)};
  for (std::size_t o = 0; o < channels; ++o) {
    const double denominator = static_cast<double>(bn.var[o]) + bn.eps;
    if (!(denominator > 0.0)) {
      throw std::invalid_argument("fold_batchnorm: var + eps <= 0 for channel " + std::to_string(o));
    }
    const double scale = bn.gamma[o] / std::sqrt(denominator);
    for (std::size_t i = o * per_channel; i < (o + 1) * per_channel; ++i) {
      folded.weight[i] = static_cast<float>(weight[i] * scale);
    }
    const double b = conv_bias.empty() ? 0.0 : conv_bias[o];
    folded.bias[o] = static_cast<float>((b - bn.mean[o]) * scale + bn.beta[o]);
  }
  return folded;
}

}  // namespace fx::gpu
