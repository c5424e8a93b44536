// A strided convolution over few channels in its space-to-depth form (kernels/contraction/space_to_depth.h),
// without a GPU: which problems have one, its shape, and that the stride-1 convolution over the rearranged x and
// the rearranged weights computes what the original does (float64, several strides, filters, paddings and odd
// sizes). The rearrangement of x is written here from its definition; the GPU tests run the generated kernel.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/contraction/space_to_depth.h"
#include "tests/kernels/test_contraction_reference.h"

namespace fx::gpu {
namespace {

Conv2dProblem stem() {
  Conv2dProblem p;
  p.n = 32, p.c = 3, p.h = 224, p.w = 224, p.k = 64, p.r = 7, p.s = 7;
  p.stride_h = p.stride_w = 2, p.pad_h = p.pad_w = 3;
  p.allow_tf32 = true;
  p.epilogue = ConvEpilogue::relu_bias;
  return p;
}

TEST(SpaceToDepth, ResNetsStemBecomesAFourByFourConvolutionOverSixteenChannels) {
  const auto s = space_to_depth_for(stem());
  ASSERT_TRUE(s);
  EXPECT_EQ(s->factor, 2);
  EXPECT_EQ(s->channels, 12);
  const Conv2dProblem& q = s->problem;
  EXPECT_EQ(q.c, 16);
  EXPECT_EQ(q.r, 4);
  EXPECT_EQ(q.s, 4);
  EXPECT_EQ(q.h, 115);  // 112 outputs + 4 taps - 1
  EXPECT_EQ(q.w, 115);
  EXPECT_EQ(q.stride_h, 1);
  EXPECT_EQ(q.pad_h, 0);
  EXPECT_TRUE(q.nhwc);
  EXPECT_EQ(q.epilogue, ConvEpilogue::relu_bias);
  EXPECT_TRUE(q.allow_tf32);
  const Conv2dOutputShape a = conv2d_output_shape(stem()), b = conv2d_output_shape(q);
  EXPECT_EQ(std::tie(a.n, a.k, a.p, a.q), std::tie(b.n, b.k, b.p, b.q));
  EXPECT_TRUE(validate_conv2d(q).empty()) << validate_conv2d(q);
}

TEST(SpaceToDepth, OnlyStridedConvolutionsOverFewChannelsHaveOne) {
  auto with = [](auto change) {
    Conv2dProblem p = stem();
    change(p);
    return space_to_depth_for(p).has_value();
  };
  EXPECT_FALSE(with([](Conv2dProblem& p) { p.stride_h = p.stride_w = 1; }));
  EXPECT_FALSE(with([](Conv2dProblem& p) { p.stride_w = 1; }));
  EXPECT_FALSE(with([](Conv2dProblem& p) { p.c = 8; })) << "32 channels once rearranged";
  EXPECT_TRUE(with([](Conv2dProblem& p) { p.c = 4; }));
  EXPECT_FALSE(with([](Conv2dProblem& p) { p.r = p.s = 1, p.pad_h = p.pad_w = 0; })) << "a filter narrower than a block";
  EXPECT_FALSE(with([](Conv2dProblem& p) { p.dilation_h = 2; }));
  EXPECT_FALSE(with([](Conv2dProblem& p) { p.c = 4, p.k = 4, p.groups = 2; }));
  EXPECT_FALSE(with([](Conv2dProblem& p) { p.residual = true; }));
  EXPECT_FALSE(with([](Conv2dProblem& p) { p.h = 2, p.pad_h = 0; })) << "malformed: no output";
  EXPECT_TRUE(with([](Conv2dProblem& p) { p.c = 1, p.stride_h = p.stride_w = 4, p.r = p.s = 4, p.pad_h = p.pad_w = 0; }));
}

// x [N, C, H, W] rearranged as the generated kernel does: [N, H', W', C'], element (n, i, j, (c*f + bh)*f + bw)
// = x[n, c, i*f + bh - pad_h, j*f + bw - pad_w], zero elsewhere.
std::vector<double> rearranged(const Conv2dProblem& p, const SpaceToDepth& s, const std::vector<double>& x) {
  const Conv2dProblem& q = s.problem;
  const std::int64_t f = s.factor;
  std::vector<double> out(static_cast<std::size_t>(q.n * q.h * q.w * q.c), 0.0);
  for (std::int64_t n = 0; n < q.n; ++n)
    for (std::int64_t i = 0; i < q.h; ++i)
      for (std::int64_t j = 0; j < q.w; ++j)
        for (std::int64_t ch = 0; ch < s.channels; ++ch) {
          const std::int64_t c = ch / (f * f), h = i * f + (ch / f) % f - p.pad_h, w = j * f + ch % f - p.pad_w;
          if (h < 0 || h >= p.h || w < 0 || w >= p.w) continue;
          out[static_cast<std::size_t>(((n * q.h + i) * q.w + j) * q.c + ch)] =
              x[static_cast<std::size_t>(((n * p.c + c) * p.h + h) * p.w + w)];
        }
  return out;
}

// A stride-1, unpadded convolution over NHWC x and [K, R, S, C] weights, y as [N, K, P, Q].
std::vector<double> conv_nhwc(const Conv2dProblem& q, const std::vector<double>& x, const std::vector<double>& w) {
  const Conv2dOutputShape o = conv2d_output_shape(q);
  std::vector<double> y(static_cast<std::size_t>(o.n * o.k * o.p * o.q), 0.0);
  for (std::int64_t n = 0; n < o.n; ++n)
    for (std::int64_t k = 0; k < o.k; ++k)
      for (std::int64_t i = 0; i < o.p; ++i)
        for (std::int64_t j = 0; j < o.q; ++j) {
          double acc = 0.0;
          for (std::int64_t a = 0; a < q.r; ++a)
            for (std::int64_t b = 0; b < q.s; ++b)
              for (std::int64_t c = 0; c < q.c; ++c) {
                acc += x[static_cast<std::size_t>(((n * q.h + i + a) * q.w + j + b) * q.c + c)] *
                       w[static_cast<std::size_t>(((k * q.r + a) * q.s + b) * q.c + c)];
              }
          y[static_cast<std::size_t>(((n * o.k + k) * o.p + i) * o.q + j)] = acc;
        }
  return y;
}

TEST(SpaceToDepth, TheRearrangedConvolutionComputesTheOriginal) {
  struct Case {
    std::int64_t c, h, w, k, r, s, stride, pad_h, pad_w;
  };
  const Case cases[] = {
      {3, 17, 17, 5, 7, 7, 2, 3, 3},  // ResNet's stem, small
      {1, 9, 11, 3, 5, 5, 2, 2, 2},   // odd sizes
      {4, 10, 7, 2, 3, 3, 2, 1, 0},   // a 3x3 filter: its blocks' last taps zero
      {1, 12, 12, 2, 4, 4, 4, 0, 0},  // patches: a 4x4 stride-4 filter is one tap
      {2, 8, 8, 3, 3, 4, 2, 0, 1},    // unequal filter sides and paddings
  };
  std::mt19937 rng(7);
  std::normal_distribution<double> normal;
  for (const Case& t : cases) {
    Conv2dProblem p;
    p.n = 2, p.c = t.c, p.h = t.h, p.w = t.w, p.k = t.k, p.r = t.r, p.s = t.s;
    p.stride_h = p.stride_w = t.stride, p.pad_h = t.pad_h, p.pad_w = t.pad_w;
    SCOPED_TRACE(testing::Message() << "c " << t.c << ", " << t.r << "x" << t.s << " stride " << t.stride);
    const auto s = space_to_depth_for(p);
    ASSERT_TRUE(s);
    std::vector<double> x(static_cast<std::size_t>(p.n * p.c * p.h * p.w)), w(static_cast<std::size_t>(p.k * p.c * p.r * p.s));
    for (double& v : x) v = normal(rng);
    for (double& v : w) v = normal(rng);
    const test::ConvShape shape{p.n, p.c, p.h, p.w, p.k, p.r, p.s, t.stride, t.stride, t.pad_h, t.pad_w, 1, 1, 1};
    const std::vector<double> want = test::conv2d_ref(shape, x, w, {});
    const std::vector<char> bytes = space_to_depth_weights(p, *s, w.data(), sizeof(double));
    ASSERT_EQ(bytes.size(), static_cast<std::size_t>(s->problem.k * s->problem.r * s->problem.s * s->problem.c) * sizeof(double));
    std::vector<double> ws(bytes.size() / sizeof(double));
    std::memcpy(ws.data(), bytes.data(), bytes.size());
    const std::vector<double> got = conv_nhwc(s->problem, rearranged(p, *s, x), ws);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(test::relative_error(got, want), 1e-12);
  }
}

}  // namespace
}  // namespace fx::gpu
