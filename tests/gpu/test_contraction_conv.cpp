// cuDNN conv2d, unfused and fused (bias, bias + ReLU), against a float64 CPU reference over stride, padding,
// dilation and group variants; the channels-last (NHWC) problems; conv -> batchnorm -> relu through
// fold_batchnorm and the fused call.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <string>

#include "kernels/common/gpu_error.h"
#include "kernels/contraction/batchnorm_fold.h"
#include "kernels/contraction/conv.h"
#include "tests/gpu/test_contraction_support.h"
#include "tests/kernels/test_contraction_reference.h"

namespace {

using fx::DType;
using fx::gpu::Conv2d;
using fx::gpu::Conv2dProblem;
using fx::gpu::ConvEpilogue;

fx::test::ConvShape shape_of(const Conv2dProblem& p) {
  return {p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dilation_h, p.dilation_w,
          p.groups};
}

std::size_t weight_count(const Conv2dProblem& p) { return static_cast<std::size_t>(p.k * (p.c / p.groups) * p.r * p.s); }

// [outer, inner, plane] -> [outer, plane, inner]: NCHW to NHWC (inner = C, plane = H*W), OIHW to OHWI.
template <class T>
std::vector<T> channels_last(const std::vector<T>& v, std::size_t outer, std::size_t inner, std::size_t plane) {
  std::vector<T> out(v.size());
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t i = 0; i < inner; ++i) {
      for (std::size_t q = 0; q < plane; ++q) out[(o * plane + q) * inner + i] = v[(o * inner + i) * plane + q];
    }
  }
  return out;
}

// Runs p on random data and returns ||gpu - ref|| / ||ref||. A channels-last problem gets x and w permuted to
// NHWC and [K, R, S, C] on the way in and y permuted back; the reference is the NCHW one either way.
// misaligned_x: x starts one element past its allocation's start (4 or 2 bytes: too loose for a graph plan).
// in_cuda_graph: the launch is captured into a CUDA graph on a stream of its own, and the graph replayed.
double conv_error(Conv2d& conv, const Conv2dProblem& p, bool misaligned_x = false, bool in_cuda_graph = false) {
  const fx::test::ConvShape s = shape_of(p);
  const auto n = static_cast<std::size_t>(p.n), c = static_cast<std::size_t>(p.c), k = static_cast<std::size_t>(p.k);
  const auto in_plane = static_cast<std::size_t>(p.h * p.w), rs = static_cast<std::size_t>(p.r * p.s);
  const auto out_plane = static_cast<std::size_t>(s.out_h() * s.out_w());
  const std::vector<float> xv = fx::test::random_values(n * c * in_plane, 1.0f, 81);
  const std::vector<float> wv = fx::test::random_values(weight_count(p), 0.3f, 82);
  std::vector<float> x_values = p.nhwc ? channels_last(xv, n, c, in_plane) : xv;
  if (misaligned_x) x_values.insert(x_values.begin(), 0.0f);
  const auto x = fx::test::upload(x_values, p.type);
  const void* x_device = static_cast<const char*>(x.device.get()) + (misaligned_x ? fx::dtype_size(p.type) : 0);
  const auto w = fx::test::upload(p.nhwc ? channels_last(wv, k, c, rs) : wv, p.type);
  const auto bias = fx::test::random_operand(k, p.type, 1.0f, 83);
  const std::size_t out_count = n * k * out_plane;
  // The residual z (p.residual), in y's layout.
  const std::vector<float> zv = fx::test::random_values(p.residual ? out_count : 1, 1.0f, 84);
  const auto z = fx::test::upload(p.residual && p.nhwc ? channels_last(zv, n, k, out_plane) : zv, p.type);
  const void* z_device = p.residual ? z.device.get() : nullptr;
  fx::test::DeviceArray y(out_count * static_cast<std::size_t>(fx::dtype_size(p.type)));
  const bool has_bias = p.epilogue != ConvEpilogue::none;
  const void* b_device = has_bias ? bias.device.get() : nullptr;
  if (in_cuda_graph) {
    cudaStream_t stream = nullptr;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    EXPECT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    conv.run(p, x_device, w.device.get(), b_device, y.get(), stream, z_device);
    EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
    EXPECT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
    EXPECT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  } else {
    conv.run(p, x_device, w.device.get(), b_device, y.get(), nullptr, z_device);
  }
  // The values the device holds, in NCHW order for the reference (a permutation does not change a rounding).
  std::vector<double> nchw_x, nchw_w;
  fx::test::encode(xv, p.type, &nchw_x);
  fx::test::encode(wv, p.type, &nchw_w);
  std::vector<double> want = fx::test::conv2d_ref(s, nchw_x, nchw_w, has_bias ? bias.host : std::vector<double>{});
  if (p.residual) {
    std::vector<double> nchw_z;
    fx::test::encode(zv, p.type, &nchw_z);
    for (std::size_t i = 0; i < want.size(); ++i) want[i] += nchw_z[i];
  }
  if (p.epilogue == ConvEpilogue::relu_bias) {
    for (double& v : want) v = fx::test::relu_ref(v);
  }
  if (p.nhwc) want = channels_last(want, n, k, out_plane);
  return fx::test::relative_error(fx::test::download(y.get(), out_count, p.type), want);
}

struct ConvCase {
  const char* name;
  Conv2dProblem problem;
};

Conv2dProblem base(std::int64_t c, std::int64_t k, std::int64_t r) {
  Conv2dProblem p{.n = 2, .c = c, .h = 13, .w = 11, .k = k, .r = r, .s = r};
  return p;
}

std::vector<ConvCase> shape_cases() {
  std::vector<ConvCase> cases;
  Conv2dProblem p = base(8, 16, 3);
  p.pad_h = p.pad_w = 1;
  cases.push_back({"3x3_pad1", p});
  p.stride_h = p.stride_w = 2;
  cases.push_back({"3x3_pad1_stride2", p});
  p = base(8, 16, 3);
  p.dilation_h = p.dilation_w = 2;
  p.pad_h = 2;
  cases.push_back({"3x3_dilation2", p});
  p = base(8, 12, 3);
  p.groups = 2;
  p.pad_h = p.pad_w = 1;
  cases.push_back({"3x3_groups2", p});
  p = base(16, 16, 3);
  p.groups = 16;  // depthwise
  p.pad_h = p.pad_w = 1;
  cases.push_back({"3x3_depthwise", p});
  p = base(8, 24, 1);
  cases.push_back({"1x1", p});
  return cases;
}

struct EpilogueParam {
  ConvCase shape;
  ConvEpilogue epilogue;
};

class ContractionConvF32 : public ::testing::TestWithParam<EpilogueParam> {};

TEST_P(ContractionConvF32, MatchesFloat64Reference) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  Conv2dProblem p = GetParam().shape.problem;
  p.epilogue = GetParam().epilogue;
  Conv2d conv;
  EXPECT_LT(conv_error(conv, p), 1e-5) << fx::gpu::describe_conv2d(p) << ", algorithm " << conv.algorithm(p);
}

std::vector<EpilogueParam> f32_cases() {
  std::vector<EpilogueParam> out;
  for (const ConvCase& c : shape_cases()) {
    for (auto e : {ConvEpilogue::none, ConvEpilogue::bias, ConvEpilogue::relu_bias}) out.push_back({c, e});
  }
  return out;
}

const char* epilogue_label(ConvEpilogue e) {
  return e == ConvEpilogue::none ? "unfused" : e == ConvEpilogue::bias ? "bias" : "relu_bias";
}

// gtest names a parameterised test's value in its listing (and ctest's test names); without this it dumps bytes.
void PrintTo(const EpilogueParam& p, std::ostream* os) { *os << p.shape.name << ", " << epilogue_label(p.epilogue); }

INSTANTIATE_TEST_SUITE_P(Shapes, ContractionConvF32, ::testing::ValuesIn(f32_cases()), [](const auto& param_info) {
  return std::string(param_info.param.shape.name) + "_" + epilogue_label(param_info.param.epilogue);
});

struct TypeParam {
  const char* name;
  DType type;
  bool tf32;
  double tolerance;
  ConvEpilogue epilogue;
};

class ContractionConvReducedPrecision : public ::testing::TestWithParam<TypeParam> {};

// f16/bf16: where cuDNN refuses the configuration (NOT_SUPPORTED family, codes 3xxx)
// the test records that as a skip with cuDNN's message; where it runs, the numbers must be right.
TEST_P(ContractionConvReducedPrecision, MatchesFloat64ReferenceOrIsRefused) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  const TypeParam& t = GetParam();
  Conv2dProblem p = shape_cases()[0].problem;
  p.type = t.type;
  p.allow_tf32 = t.tf32;
  p.epilogue = t.epilogue;
  Conv2d conv;
  try {
    EXPECT_LT(conv_error(conv, p), t.tolerance) << fx::gpu::describe_conv2d(p) << ", algorithm " << conv.algorithm(p);
  } catch (const fx::gpu::GpuError& e) {
    if (e.library() == "cuDNN" && e.code() / 1000 == 3) GTEST_SKIP() << "cuDNN does not support this: " << e.what();
    throw;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, ContractionConvReducedPrecision,
    ::testing::Values(TypeParam{"tf32_unfused", DType::f32, true, 1e-3, ConvEpilogue::none},
                      TypeParam{"tf32_relu_bias", DType::f32, true, 1e-3, ConvEpilogue::relu_bias},
                      TypeParam{"f16_unfused", DType::f16, false, 1e-2, ConvEpilogue::none},
                      TypeParam{"f16_relu_bias", DType::f16, false, 1e-2, ConvEpilogue::relu_bias},
                      TypeParam{"bf16_unfused", DType::bf16, false, 1e-2, ConvEpilogue::none},
                      TypeParam{"bf16_relu_bias", DType::bf16, false, 1e-2, ConvEpilogue::relu_bias}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(ContractionConv2d, BatchnormFoldedIntoFusedReluMatchesConvBatchnormRelu) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  Conv2dProblem p = shape_cases()[0].problem;
  p.epilogue = ConvEpilogue::relu_bias;
  const fx::test::ConvShape s = shape_of(p);
  const auto k = static_cast<std::size_t>(p.k);
  const std::vector<float> w = fx::test::random_values(weight_count(p), 0.3f, 91);
  std::vector<float> mean = fx::test::random_values(k, 0.5f, 92), gamma = fx::test::random_values(k, 1.0f, 93),
                     beta = fx::test::random_values(k, 0.5f, 94), var = fx::test::random_values(k, 0.5f, 95);
  for (float& v : var) v += 1.0f;  // variances in [0.5, 1.5]
  const auto folded = fx::gpu::fold_batchnorm(w, p.k, {}, {mean, var, gamma, beta, 1e-5});

  const auto x = fx::test::random_operand(static_cast<std::size_t>(p.n * p.c * p.h * p.w), DType::f32, 1.0f, 96);
  const auto wf = fx::test::upload(folded.weight, DType::f32);
  const auto bf = fx::test::upload(folded.bias, DType::f32);
  const auto out_count = static_cast<std::size_t>(p.n * p.k * s.out_h() * s.out_w());
  fx::test::DeviceArray y(out_count * sizeof(float));
  Conv2d conv;
  conv.run(p, x.device.get(), wf.device.get(), bf.device.get(), y.get(), nullptr);

  std::vector<double> want = fx::test::conv2d_ref(s, x.host, {w.begin(), w.end()}, {});
  const auto plane = static_cast<std::size_t>(s.out_h() * s.out_w());
  for (std::size_t i = 0; i < want.size(); ++i) {
    const std::size_t o = (i / plane) % k;
    want[i] = fx::test::relu_ref((want[i] - mean[o]) / std::sqrt(double(var[o]) + 1e-5) * gamma[o] + beta[o]);
  }
  EXPECT_LT(fx::test::relative_error(fx::test::download(y.get(), out_count, DType::f32), want), 1e-5);
}

TEST(ContractionConv2d, CachesOnePlanPerShapeAndNamesTheAlgorithm) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  Conv2d conv;
  Conv2dProblem p = shape_cases()[0].problem;
  EXPECT_EQ(conv.algorithm(p), "");
  conv_error(conv, p);
  conv_error(conv, p);
  EXPECT_EQ(conv.cached_plan_count(), 1u);
  std::printf("unfused: %s\n", conv.algorithm(p).c_str());
  EXPECT_EQ(conv.algorithm(p).rfind("cuDNN graph engine", 0), 0u) << conv.algorithm(p);
  p.epilogue = ConvEpilogue::relu_bias;
  conv_error(conv, p);
  std::printf("bias + ReLU: %s\n", conv.algorithm(p).c_str());
  // Both ran through the graph API on an H100 (engines 28 and 11, FP32 without tensor cores).
  EXPECT_EQ(conv.algorithm(p).rfind("cuDNN graph engine", 0), 0u) << conv.algorithm(p);
  EXPECT_EQ(conv.cached_plan_count(), 2u);
}

// A residual z of y's shape is added with the bias, before the ReLU, in the same call: through the graph API
// (NCHW and channels-last, FP32 and TF32) and through the legacy fused call (alpha2 = 1), which is NCHW only.
TEST(ContractionConv2d, AResidualIsAddedWithTheBiasBeforeTheRelu) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  for (const fx::gpu::ConvApi api : {fx::gpu::ConvApi::graph, fx::gpu::ConvApi::legacy}) {
    Conv2d conv(api);
    for (const ConvEpilogue e : {ConvEpilogue::bias, ConvEpilogue::relu_bias}) {
      for (const bool nhwc : {false, true}) {
        for (const bool tf32 : {false, true}) {
          if (nhwc && api == fx::gpu::ConvApi::legacy) continue;
          Conv2dProblem p = base(8, 16, 3);
          p.pad_h = p.pad_w = 1;
          p.epilogue = e;
          p.residual = true;
          p.nhwc = nhwc;
          p.allow_tf32 = tf32;
          const std::string label = std::string(api == fx::gpu::ConvApi::graph ? "graph" : "legacy") + ", " +
                                    epilogue_label(e) + (nhwc ? ", NHWC" : ", NCHW") + (tf32 ? ", TF32" : ", FP32");
          SCOPED_TRACE(label);
          EXPECT_LT(conv_error(conv, p), tf32 ? 1e-3 : 1e-5);
          const std::string algorithm = conv.algorithm(p);
          std::printf("residual conv, %s: %s\n", label.c_str(), algorithm.c_str());
          if (api == fx::gpu::ConvApi::legacy) {
            EXPECT_NE(algorithm.find("(legacy API)"), std::string::npos) << algorithm;
          }
        }
      }
    }
  }
  // A residual needs the fused epilogue.
  Conv2dProblem p = base(8, 16, 3);
  p.residual = true;
  EXPECT_NE(fx::gpu::validate_conv2d(p).find("residual"), std::string::npos);
}

// Every f32 case through the legacy API alone (the fallback of the graph API, and the host-time comparison).
TEST(ContractionConv2d, LegacyApiMatchesFloat64Reference) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  Conv2d conv(fx::gpu::ConvApi::legacy);
  for (const EpilogueParam& e : f32_cases()) {
    Conv2dProblem p = e.shape.problem;
    p.epilogue = e.epilogue;
    SCOPED_TRACE(std::string(e.shape.name) + ", " + epilogue_label(e.epilogue));
    EXPECT_LT(conv_error(conv, p), 1e-5);
    EXPECT_NE(conv.algorithm(p).find("(legacy API)"), std::string::npos) << conv.algorithm(p);
  }
}

// The executor's convolutions, resnet18's and conv_bn_relu's (f32, TF32 allowed, bias + ReLU fused, channels-last or
// not) at batch 2, must run as graph-API plans: the legacy call costs the host 110-126 us per launch on an H100
// host (bench/microbench/conv_host_time.cu). A pointer aligned to less than 16 bytes takes the legacy API, and the
// numbers stay right either way.
TEST(ContractionConv2d, TheExecutorsConvolutionsRunAsGraphPlans) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  Conv2dProblem p{.n = 2, .c = 64, .h = 28, .w = 28, .k = 64, .r = 3, .s = 3};
  p.pad_h = p.pad_w = 1;
  p.allow_tf32 = true;
  p.epilogue = ConvEpilogue::relu_bias;
  for (const bool nhwc : {true, false}) {
    p.nhwc = nhwc;
    Conv2d conv;
    EXPECT_LT(conv_error(conv, p), 1e-3);
    std::printf("%s: %s\n", nhwc ? "NHWC" : "NCHW", conv.algorithm(p).c_str());
    EXPECT_EQ(conv.algorithm(p).rfind("cuDNN graph engine", 0), 0u) << conv.algorithm(p);
    Conv2d misaligned;
    EXPECT_LT(conv_error(misaligned, p, true), 1e-3);
    EXPECT_NE(misaligned.algorithm(p).find("(legacy API)"), std::string::npos) << misaligned.algorithm(p);
    EXPECT_LT(conv_error(misaligned, p), 1e-3);  // aligned now: the same problem gets its graph plan
    EXPECT_EQ(misaligned.algorithm(p).rfind("cuDNN graph engine", 0), 0u) << misaligned.algorithm(p);
    EXPECT_EQ(misaligned.cached_plan_count(), 1u);
  }
}

// A problem first launched while its stream is captured into a CUDA graph cannot be timed (nothing may be
// synchronised then): the heuristics' first configuration runs, and its numbers are right when the graph replays.
TEST(ContractionConv2d, AProblemFirstLaunchedDuringCaptureTakesTheHeuristicsFirstConfiguration) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  Conv2dProblem p = shape_cases()[0].problem;
  p.allow_tf32 = true;
  p.epilogue = ConvEpilogue::relu_bias;
  p.nhwc = true;
  Conv2d conv;
  // Another problem first, outside the capture: the workspace then exists before it (no cudaMalloc while
  // capturing), as in the executor, whose plans run before they are captured.
  Conv2dProblem before = p;
  before.epilogue = ConvEpilogue::none;
  EXPECT_LT(conv_error(conv, before), 1e-3);
  EXPECT_LT(conv_error(conv, p, false, true), 1e-3);
  std::printf("captured: %s\n", conv.algorithm(p).c_str());
  EXPECT_NE(conv.algorithm(p).find("not timed"), std::string::npos) << conv.algorithm(p);
}

// A fresh Conv2d has no workspace, and none may be allocated while a stream is captured: the first launch there is
// refused with a message saying what to do, nothing is cached, and the capture itself stays valid.
TEST(ContractionConv2d, AFreshConv2dRefusesItsFirstLaunchUnderCaptureAndCachesNothing) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  Conv2dProblem p = shape_cases()[0].problem;
  const fx::test::DeviceArray x(static_cast<std::size_t>(p.n * p.c * p.h * p.w) * sizeof(float));
  const fx::test::DeviceArray w(weight_count(p) * sizeof(float));
  fx::test::DeviceArray y(static_cast<std::size_t>(p.n * p.k * p.h * p.w) * sizeof(float));
  Conv2d conv;
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  try {
    conv.run(p, x.get(), w.get(), nullptr, y.get(), stream);
    ADD_FAILURE() << "a first launch under capture ran";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("launch it once before capturing"), std::string::npos) << e.what();
  }
  cudaGraph_t graph = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  if (graph) cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  EXPECT_EQ(conv.cached_plan_count(), 0u);
  EXPECT_EQ(conv.algorithm(p), "");
}

class ContractionConvNhwc : public ::testing::TestWithParam<EpilogueParam> {};

// The same problems channels-last: x, w and y permuted around the call, the numbers those of the NCHW reference.
TEST_P(ContractionConvNhwc, MatchesFloat64Reference) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  Conv2dProblem p = GetParam().shape.problem;
  p.epilogue = GetParam().epilogue;
  p.nhwc = true;
  Conv2d conv;
  EXPECT_LT(conv_error(conv, p), 1e-5) << fx::gpu::describe_conv2d(p) << ", algorithm " << conv.algorithm(p);
}

std::vector<EpilogueParam> nhwc_cases() {
  std::vector<EpilogueParam> out;
  for (const EpilogueParam& e : f32_cases()) {
    if (e.shape.problem.groups == 1) out.push_back(e);
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ContractionConvNhwc, ::testing::ValuesIn(nhwc_cases()), [](const auto& param_info) {
  return std::string(param_info.param.shape.name) + "_" + epilogue_label(param_info.param.epilogue);
});

TEST(ContractionConv2d, NhwcIsItsOwnPlanAndRefusesGroups) {
  Conv2dProblem p = shape_cases()[0].problem;
  p.nhwc = true;
  EXPECT_EQ(fx::gpu::validate_conv2d(p), "");
  EXPECT_NE(fx::gpu::describe_conv2d(p).find(", NHWC"), std::string::npos);
  p.groups = 2;
  EXPECT_NE(fx::gpu::validate_conv2d(p).find("ungrouped"), std::string::npos);
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  Conv2d conv;
  Conv2dProblem nchw = shape_cases()[0].problem, nhwc = nchw;
  nhwc.nhwc = true;
  conv_error(conv, nchw);
  EXPECT_EQ(conv.algorithm(nhwc), "");  // a different problem: not run yet
  Conv2dProblem grouped = shape_cases()[3].problem;  // 3x3_groups2
  ASSERT_EQ(grouped.groups, 2);
  grouped.nhwc = true;
  EXPECT_THROW(conv.run(grouped, nullptr, nullptr, nullptr, nullptr, nullptr), std::invalid_argument);
}

}  // namespace
