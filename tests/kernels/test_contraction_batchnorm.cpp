// Batchnorm folding checked against the unfolded computation: bn(conv(x, w) + b) vs conv(x, w') + b'.
#include <gtest/gtest.h>

#include <random>

#include "kernels/contraction/batchnorm_fold.h"
#include "tests/kernels/test_contraction_reference.h"

namespace {

using fx::gpu::BatchNormParams;
using fx::gpu::fold_batchnorm;

std::vector<float> random_floats(std::size_t count, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& f : v) f = dist(rng);
  return v;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

struct BnCase {
  fx::test::ConvShape shape;
  bool conv_bias;
};

class ContractionBatchNormFold : public ::testing::TestWithParam<BnCase> {};

TEST_P(ContractionBatchNormFold, MatchesConvThenBatchnorm) {
  const auto& [p, with_bias] = GetParam();
  const auto weight_count = static_cast<std::size_t>(p.k * (p.c / p.groups) * p.r * p.s);
  const auto k = static_cast<std::size_t>(p.k);
  const std::vector<float> x = random_floats(static_cast<std::size_t>(p.n * p.c * p.h * p.w), -1, 1, 1);
  const std::vector<float> w = random_floats(weight_count, -0.5f, 0.5f, 2);
  const std::vector<float> b = with_bias ? random_floats(k, -1, 1, 3) : std::vector<float>{};
  const std::vector<float> mean = random_floats(k, -0.5f, 0.5f, 4);
  const std::vector<float> var = random_floats(k, 0.1f, 2.0f, 5);
  const std::vector<float> gamma = random_floats(k, 0.5f, 1.5f, 6);
  const std::vector<float> beta = random_floats(k, -0.5f, 0.5f, 7);
  const double eps = 1e-3;

  const fx::gpu::FoldedConv folded = fold_batchnorm(w, p.k, b, BatchNormParams{mean, var, gamma, beta, eps});

  std::vector<double> expected = fx::test::conv2d_ref(p, widen(x), widen(w), widen(b));
  const auto plane = static_cast<std::size_t>(p.out_h() * p.out_w());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const std::size_t o = (i / plane) % k;
    expected[i] = (expected[i] - mean[o]) / std::sqrt(double(var[o]) + eps) * gamma[o] + beta[o];
  }
  const std::vector<double> actual = fx::test::conv2d_ref(p, widen(x), widen(folded.weight), widen(folded.bias));
  // Only the folded parameters are rounded to float: about 1e-7 relative.
  EXPECT_LT(fx::test::relative_error(actual, expected), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ContractionBatchNormFold,
                         ::testing::Values(BnCase{{2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1}, true},
                                           BnCase{{1, 4, 9, 9, 6, 3, 3, 2, 2, 0, 0, 1, 1, 2}, false},
                                           BnCase{{1, 2, 5, 5, 2, 1, 1, 1, 1, 0, 0, 1, 1, 1}, true}));

TEST(ContractionBatchNormFold, PerChannelValues) {
  // One output channel of two weights: scale = 2 / sqrt(3 + 1) = 1.
  const std::vector<float> w{1.0f, -2.0f}, b{5.0f}, mean{1.0f}, var{3.0f}, gamma{2.0f}, beta{0.5f};
  const auto folded = fold_batchnorm(w, 1, b, {mean, var, gamma, beta, 1.0});
  EXPECT_FLOAT_EQ(folded.weight[0], 1.0f);
  EXPECT_FLOAT_EQ(folded.weight[1], -2.0f);
  EXPECT_FLOAT_EQ(folded.bias[0], 4.5f);  // (5 - 1) * 1 + 0.5
}

TEST(ContractionBatchNormFold, RejectsMismatchedSizes) {
  const std::vector<float> w(12, 1.0f), two(2, 1.0f), three(3, 1.0f);
  EXPECT_THROW(fold_batchnorm(w, 5, {}, {two, two, two, two, 1e-5}), std::invalid_argument);
  EXPECT_THROW(fold_batchnorm(w, 2, {}, {two, three, two, two, 1e-5}), std::invalid_argument);
  EXPECT_THROW(fold_batchnorm(w, 2, three, {two, two, two, two, 1e-5}), std::invalid_argument);
  const std::vector<float> negative{-1.0f, 1.0f};
  EXPECT_THROW(fold_batchnorm(w, 2, {}, {two, negative, two, two, 0.0}), std::invalid_argument);
}

}  // namespace
