// cuBLASLt matmul with each epilogue and type against a float64 CPU reference; layouts (transposes, batch
// broadcast, column views); the plan cache; horizontal QKV against three separate matmuls.
#include <gtest/gtest.h>

#include "kernels/common/gpu_error.h"
#include "kernels/contraction/horizontal_matmul.h"
#include "kernels/contraction/matmul.h"
#include "tests/gpu/test_contraction_support.h"
#include "tests/kernels/test_contraction_reference.h"

namespace {

using fx::DType;
using fx::gpu::Matmul;
using fx::gpu::MatmulEpilogue;
using fx::gpu::MatmulProblem;
using fx::test::Operand;

struct Precision {
  const char* name;
  DType type;
  bool tf32;
  double tolerance;  // on ||gpu - ref|| / ||ref||
};
const Precision kF32{"f32", DType::f32, false, 1e-5};
const Precision kTf32{"tf32", DType::f32, true, 1e-3};
const Precision kBf16{"bf16", DType::bf16, false, 1e-2};
const Precision kF16{"f16", DType::f16, false, 1e-2};

double apply_epilogue(MatmulEpilogue e, double v, double bias) {
  if (fx::gpu::epilogue_has_bias(e)) v += bias;
  if (e == MatmulEpilogue::relu || e == MatmulEpilogue::relu_bias) return fx::test::relu_ref(v);
  if (e == MatmulEpilogue::gelu_tanh || e == MatmulEpilogue::gelu_tanh_bias) return fx::test::gelu_tanh_ref(v);
  return v;
}

// Row-major slice [rows, cols] of a flat host array with row stride ld starting at offset.
std::vector<double> slice(const std::vector<double>& v, std::size_t offset, std::int64_t rows, std::int64_t cols,
                          std::int64_t ld) {
  std::vector<double> out;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j) out.push_back(v[offset + static_cast<std::size_t>(i * ld + j)]);
  return out;
}

// The reference for a packed, non-transposed problem; batch strides of 0 broadcast. A residual (packed like Y)
// is added before the epilogue, as cuBLASLt adds C.
std::vector<double> reference(const MatmulProblem& p, const std::vector<double>& a, const std::vector<double>& b,
                              const std::vector<double>& bias, const std::vector<double>& residual = {}) {
  const auto l = fx::gpu::resolve_layout(p);
  std::vector<double> y;
  for (std::int64_t i = 0; i < p.batch; ++i) {
    const auto ai = slice(a, static_cast<std::size_t>(i * l.stride_a), p.m, p.k, l.lda);
    const auto bi = slice(b, static_cast<std::size_t>(i * l.stride_b), p.k, p.n, l.ldb);
    std::vector<double> yi = fx::test::matmul_ref(ai, bi, p.m, p.n, p.k);
    for (std::size_t e = 0; e < yi.size(); ++e) {
      const double bv = bias.empty() ? 0.0 : bias[e % static_cast<std::size_t>(p.n)];
      const double rv = residual.empty() ? 0.0 : residual[y.size()];
      y.push_back(apply_epilogue(p.epilogue, yi[e] + rv, bv));
    }
  }
  return y;
}

struct EpilogueCase {
  Precision precision;
  MatmulEpilogue epilogue;
};

class ContractionMatmulEpilogueTest : public ::testing::TestWithParam<EpilogueCase> {};

TEST_P(ContractionMatmulEpilogueTest, MatchesFloat64Reference) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  const auto& [prec, epilogue] = GetParam();
  MatmulProblem p{.batch = 3, .m = 64, .n = 96, .k = 128};
  p.a_type = p.b_type = p.c_type = prec.type;
  p.allow_tf32 = prec.tf32;
  p.epilogue = epilogue;
  const Operand a = fx::test::random_operand(3 * 64 * 128, prec.type, 1.0f, 11);
  const Operand b = fx::test::random_operand(3 * 128 * 96, prec.type, 0.2f, 12);
  const Operand bias = fx::test::random_operand(96, prec.type, 1.0f, 13);
  fx::test::DeviceArray c(3 * 64 * 96 * static_cast<std::size_t>(fx::dtype_size(prec.type)));
  const bool has_bias = fx::gpu::epilogue_has_bias(epilogue);

  Matmul matmul;
  matmul.run(p, a.device.get(), b.device.get(), has_bias ? bias.device.get() : nullptr, c.get(), nullptr);
  const auto got = fx::test::download(c.get(), 3 * 64 * 96, prec.type);
  const auto want = reference(p, a.host, b.host, has_bias ? bias.host : std::vector<double>{});
  EXPECT_LT(fx::test::relative_error(got, want), prec.tolerance) << fx::gpu::describe_matmul(p);
}

std::vector<EpilogueCase> all_epilogue_cases() {
  std::vector<EpilogueCase> cases;
  for (const Precision& prec : {kF32, kTf32, kBf16, kF16}) {
    for (auto e : {MatmulEpilogue::none, MatmulEpilogue::bias, MatmulEpilogue::relu, MatmulEpilogue::relu_bias,
                   MatmulEpilogue::gelu_tanh, MatmulEpilogue::gelu_tanh_bias}) {
      cases.push_back({prec, e});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, ContractionMatmulEpilogueTest, ::testing::ValuesIn(all_epilogue_cases()),
                         [](const auto& param_info) {
                           return std::string(param_info.param.precision.name) + "_" +
                                  std::string(fx::gpu::matmul_epilogue_name(param_info.param.epilogue));
                         });

// X stored [K, M] and W stored [N, K], and their row-major [M, K] and [K, N] copies for the packed reference.
struct TransposedOperands {
  Operand at, bt;
  std::vector<double> a, b;
  TransposedOperands(std::int64_t m, std::int64_t n, std::int64_t k, unsigned seed)
      : at(fx::test::random_operand(k * m, DType::f32, 1.0f, seed)),
        bt(fx::test::random_operand(n * k, DType::f32, 1.0f, seed + 1)),
        a(m * k),
        b(k * n) {
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < k; ++j) a[i * k + j] = at.host[j * m + i];
    for (std::int64_t i = 0; i < k; ++i)
      for (std::int64_t j = 0; j < n; ++j) b[i * n + j] = bt.host[j * k + i];
  }
};

TEST(ContractionMatmul, TransposedOperands) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  const std::int64_t m = 48, n = 40, k = 72;
  const TransposedOperands ops(m, n, k, 21);
  const Operand& at = ops.at;
  const Operand& bt = ops.bt;
  const std::vector<double>& a = ops.a;
  const std::vector<double>& b = ops.b;
  const Operand bias = fx::test::random_operand(n, DType::f32, 1.0f, 23);
  MatmulProblem p{.m = m, .n = n, .k = k};
  p.transpose_a = p.transpose_b = true;
  p.epilogue = MatmulEpilogue::relu_bias;
  fx::test::DeviceArray c(m * n * sizeof(float));
  Matmul matmul;
  matmul.run(p, at.device.get(), bt.device.get(), bias.device.get(), c.get(), nullptr);
  MatmulProblem packed = p;
  packed.transpose_a = packed.transpose_b = false;
  EXPECT_LT(fx::test::relative_error(fx::test::download(c.get(), m * n, DType::f32),
                                     reference(packed, a, b, bias.host)),
            kF32.tolerance);
}

// A residual R of Y's shape is cuBLASLt's C with beta = 1: Y = epilogue(alpha * X W + R + b). Batched, with
// alpha, through every search candidate (the search times each with C read, as it runs), and with the bias and
// activation applied after R, in f32 and bf16.
class ContractionMatmulResidualTest : public ::testing::TestWithParam<EpilogueCase> {};

TEST_P(ContractionMatmulResidualTest, AddsTheResidualBeforeTheBiasAndActivation) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  const auto& [prec, epilogue] = GetParam();
  MatmulProblem p{.batch = 3, .m = 64, .n = 96, .k = 128};
  p.a_type = p.b_type = p.c_type = prec.type;
  p.epilogue = epilogue;
  p.residual = true;
  p.alpha = 0.5f;
  const Operand a = fx::test::random_operand(3 * 64 * 128, prec.type, 1.0f, 111);
  const Operand b = fx::test::random_operand(3 * 128 * 96, prec.type, 0.2f, 112);
  const Operand bias = fx::test::random_operand(96, prec.type, 1.0f, 113);
  const Operand r = fx::test::random_operand(3 * 64 * 96, prec.type, 1.0f, 114);
  fx::test::DeviceArray c(3 * 64 * 96 * static_cast<std::size_t>(fx::dtype_size(prec.type)));
  const bool has_bias = fx::gpu::epilogue_has_bias(epilogue);
  Matmul matmul;
  matmul.run(p, a.device.get(), b.device.get(), {has_bias ? bias.device.get() : nullptr, r.device.get()}, c.get(),
             nullptr);
  std::vector<double> scaled = a.host;  // alpha scales the product only, not R
  for (double& v : scaled) v *= 0.5;
  MatmulProblem plain = p;
  plain.alpha = 1.0f;
  const auto want = reference(plain, scaled, b.host, has_bias ? bias.host : std::vector<double>{}, r.host);
  EXPECT_LT(fx::test::relative_error(fx::test::download(c.get(), 3 * 64 * 96, prec.type), want), prec.tolerance)
      << fx::gpu::describe_matmul(p) << "; " << matmul.algorithm_choice(p);
  // R is read, never written.
  EXPECT_EQ(fx::test::download(r.device.get(), 3 * 64 * 96, prec.type), r.host);
}

INSTANTIATE_TEST_SUITE_P(Types, ContractionMatmulResidualTest,
                         ::testing::Values(EpilogueCase{kF32, MatmulEpilogue::none},
                                           EpilogueCase{kF32, MatmulEpilogue::relu_bias},
                                           EpilogueCase{kBf16, MatmulEpilogue::none},
                                           EpilogueCase{kBf16, MatmulEpilogue::relu_bias},
                                           EpilogueCase{kBf16, MatmulEpilogue::gelu_tanh_bias}),
                         [](const auto& param_info) {
                           return std::string(param_info.param.precision.name) + "_" +
                                  std::string(fx::gpu::matmul_epilogue_name(param_info.param.epilogue));
                         });

// With X and W read transposed, R still has Y's row-major layout: cuBLASLt's C takes Y's descriptor, which the
// transpose flags of A and B do not touch.
TEST(ContractionMatmul, ResidualWithTransposedOperandsHasTheOutputsLayout) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  const std::int64_t m = 48, n = 40, k = 72;
  const TransposedOperands ops(m, n, k, 121);
  const Operand r = fx::test::random_operand(m * n, DType::f32, 1.0f, 123);
  MatmulProblem p{.m = m, .n = n, .k = k};
  p.transpose_a = p.transpose_b = true;
  p.residual = true;
  fx::test::DeviceArray c(m * n * sizeof(float));
  Matmul matmul;
  matmul.run(p, ops.at.device.get(), ops.bt.device.get(), {nullptr, r.device.get()}, c.get(), nullptr);
  MatmulProblem packed = p;
  packed.transpose_a = packed.transpose_b = false;
  EXPECT_LT(fx::test::relative_error(fx::test::download(c.get(), m * n, DType::f32),
                                     reference(packed, ops.a, ops.b, {}, r.host)),
            kF32.tolerance);
}

TEST(ContractionMatmul, RejectsAResidualInTheOutputsBufferOrWithoutItsPointer) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  fx::test::DeviceArray buf(64 * 64 * sizeof(float)), y(64 * 64 * sizeof(float));
  MatmulProblem p{.m = 64, .n = 64, .k = 64};
  p.residual = true;
  Matmul matmul;
  EXPECT_THROW(matmul.run(p, buf.get(), buf.get(), nullptr, y.get(), nullptr), std::invalid_argument);
  EXPECT_THROW(matmul.run(p, buf.get(), buf.get(), {nullptr, y.get()}, y.get(), nullptr), std::invalid_argument);
  p.residual = false;
  EXPECT_THROW(matmul.run(p, buf.get(), buf.get(), {nullptr, buf.get()}, y.get(), nullptr), std::invalid_argument);
}

// The search goes beyond the heuristic's list: the attention-scores shape of gpt2_block, scaled down (q k^T over
// 8 heads, TF32), is screened over the heuristic's algorithms with the cluster shape left to cuBLASLt and over
// their tiles and stage counts too (on sm_90 cuBLASLt accepts dozens), and whichever configuration wins by
// timing computes the product.
TEST(ContractionMatmul, SearchesTileConfigurationsBeyondTheHeuristic) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  MatmulProblem p{.batch = 8, .m = 256, .n = 256, .k = 64};
  p.transpose_b = true;
  p.allow_tf32 = true;
  const Operand q = fx::test::random_operand(p.batch * p.m * p.k, DType::f32, 1.0f, 61);
  const Operand k = fx::test::random_operand(p.batch * p.n * p.k, DType::f32, 1.0f, 62);
  fx::test::DeviceArray c(p.batch * p.m * p.n * sizeof(float));
  Matmul matmul;
  matmul.run(p, q.device.get(), k.device.get(), nullptr, c.get(), nullptr);
  const std::string choice = matmul.algorithm_choice(p);
  EXPECT_NE(choice.find("configurations by timing (the heuristic's"), std::string::npos) << choice;
  EXPECT_NE(choice.find(", tile "), std::string::npos) << choice;
  EXPECT_NE(choice.find(", cluster "), std::string::npos) << choice;
  // k^T per batch entry, then the packed reference.
  std::vector<double> kt(k.host.size());
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t i = 0; i < p.n; ++i)
      for (std::int64_t j = 0; j < p.k; ++j) kt[(b * p.k + j) * p.n + i] = k.host[(b * p.n + i) * p.k + j];
  MatmulProblem packed = p;
  packed.transpose_b = false;
  EXPECT_LT(fx::test::relative_error(fx::test::download(c.get(), p.batch * p.m * p.n, DType::f32),
                                     reference(packed, q.host, kt, {})),
            kTf32.tolerance)
      << choice;
}

TEST(ContractionMatmul, BroadcastBatch) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  // One weight shared by 4 batch entries (stride 0), as x[4, M, K] @ W[K, N].
  MatmulProblem p{.batch = 4, .m = 32, .n = 64, .k = 80};
  p.batch_stride_b = 0;
  p.epilogue = MatmulEpilogue::gelu_tanh_bias;
  const Operand a = fx::test::random_operand(4 * 32 * 80, DType::f32, 1.0f, 31);
  const Operand b = fx::test::random_operand(80 * 64, DType::f32, 0.3f, 32);
  const Operand bias = fx::test::random_operand(64, DType::f32, 1.0f, 33);
  fx::test::DeviceArray c(4 * 32 * 64 * sizeof(float));
  Matmul matmul;
  matmul.run(p, a.device.get(), b.device.get(), bias.device.get(), c.get(), nullptr);
  EXPECT_LT(fx::test::relative_error(fx::test::download(c.get(), 4 * 32 * 64, DType::f32),
                                     reference(p, a.host, b.host, bias.host)),
            kF32.tolerance);
}

// The executor's horizontal matmul (qkv_bf16's shape class, scaled down): three projections of one x as one
// strided-batched bf16 GEMM with x broadcast. Its search also tries the heuristic's candidates for one member of
// the batch (cuBLASLt ranks the batched problem's otherwise; which of them it accepts for the batch is its own
// business, so the test does not insist on one); whichever wins computes every member's product.
TEST(ContractionMatmul, BroadcastInputBatchMatchesTheReferenceWhicheverCandidateWins) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  MatmulProblem p{.batch = 3, .m = 512, .n = 256, .k = 384};
  p.a_type = p.b_type = p.c_type = DType::bf16;
  p.batch_stride_a = 0;
  const Operand x = fx::test::random_operand(p.m * p.k, DType::bf16, 1.0f, 81);
  const Operand w = fx::test::random_operand(p.batch * p.k * p.n, DType::bf16, 0.1f, 82);
  fx::test::DeviceArray y(p.batch * p.m * p.n * 2);
  Matmul matmul;
  matmul.run(p, x.device.get(), w.device.get(), nullptr, y.get(), nullptr);
  const std::string choice = matmul.algorithm_choice(p);
  EXPECT_NE(choice.find(" by timing"), std::string::npos) << choice;
  EXPECT_NE(choice.find(", tile "), std::string::npos) << choice;
  EXPECT_LT(fx::test::relative_error(fx::test::download(y.get(), p.batch * p.m * p.n, DType::bf16),
                                     reference(p, x.host, w.host, {})),
            kBf16.tolerance)
      << choice;
}

// The search keeps its best few configurations for the executor to time again in its plan: each computes the
// product, and the one chosen is what run() launches after, named in the report line.
TEST(ContractionMatmul, EachFinalistComputesTheProductAndTheChosenOneRunsAfter) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  MatmulProblem p{.m = 512, .n = 384, .k = 256};
  p.a_type = p.b_type = p.c_type = DType::bf16;
  const Operand x = fx::test::random_operand(p.m * p.k, DType::bf16, 1.0f, 91);
  const Operand w = fx::test::random_operand(p.k * p.n, DType::bf16, 0.1f, 92);
  fx::test::DeviceArray y(p.m * p.n * 2);
  Matmul matmul;
  EXPECT_EQ(matmul.finalist_count(p, x.device.get(), w.device.get(), nullptr, y.get()), 0u);  // nothing searched yet
  matmul.run(p, x.device.get(), w.device.get(), nullptr, y.get(), nullptr);
  const std::size_t n = matmul.finalist_count(p, x.device.get(), w.device.get(), nullptr, y.get());
  ASSERT_GE(n, 1u) << matmul.algorithm_choice(p);
  ASSERT_LE(n, 4u);  // the 3 fastest, and the heuristic's first where the search ranked it lower
  const std::vector<double> want = reference(p, x.host, w.host, {});
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(cudaMemset(y.get(), 0, static_cast<std::size_t>(p.m * p.n * 2)), cudaSuccess);
    matmul.run_finalist(i, p, x.device.get(), w.device.get(), nullptr, y.get(), nullptr);
    EXPECT_LT(fx::test::relative_error(fx::test::download(y.get(), p.m * p.n, DType::bf16), want), kBf16.tolerance)
        << "finalist " << i;
  }
  EXPECT_THROW(matmul.run_finalist(n, p, x.device.get(), w.device.get(), nullptr, y.get(), nullptr), std::logic_error);
  const std::string searched = matmul.algorithm_choice(p);
  std::vector<double> ms(n, 0.5);
  ms[n - 1] = 0.25;
  EXPECT_THROW(matmul.choose_finalist(n, p, x.device.get(), w.device.get(), nullptr, y.get(), ms), std::logic_error);
  matmul.choose_finalist(n - 1, p, x.device.get(), w.device.get(), nullptr, y.get(), ms);
  const std::string chosen = matmul.algorithm_choice(p);
  EXPECT_EQ(chosen.rfind(searched, 0), 0u) << chosen;  // the search's line, then what the plan's timing kept
  EXPECT_NE(chosen.find(n == 1 ? "its pick stays (0.2500 ms" : " runs, algorithm "), std::string::npos) << chosen;
  ASSERT_EQ(cudaMemset(y.get(), 0, static_cast<std::size_t>(p.m * p.n * 2)), cudaSuccess);
  matmul.run(p, x.device.get(), w.device.get(), nullptr, y.get(), nullptr);
  EXPECT_LT(fx::test::relative_error(fx::test::download(y.get(), p.m * p.n, DType::bf16), want), kBf16.tolerance);
  EXPECT_EQ(matmul.cached_plan_count(), 1u);
}

TEST(ContractionMatmul, ColumnViewOutputLeavesOtherColumnsAlone) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  // Y is columns [8, 8 + 24) of a [16, 40] matrix that holds a sentinel everywhere else.
  const std::int64_t m = 16, n = 24, k = 32, ld = 40, offset = 8;
  const Operand a = fx::test::random_operand(m * k, DType::f32, 1.0f, 41);
  const Operand b = fx::test::random_operand(k * n, DType::f32, 1.0f, 42);
  const Operand wide = fx::test::upload(std::vector<float>(m * ld, 7.0f), DType::f32);
  MatmulProblem p{.m = m, .n = n, .k = k};
  p.ldc = ld;
  Matmul matmul;
  matmul.run(p, a.device.get(), b.device.get(), nullptr, static_cast<float*>(wide.device.get()) + offset, nullptr);
  const auto got = fx::test::download(wide.device.get(), m * ld, DType::f32);
  EXPECT_LT(fx::test::relative_error(slice(got, offset, m, n, ld), reference(MatmulProblem{.m = m, .n = n, .k = k},
                                                                             a.host, b.host, {})),
            kF32.tolerance);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < ld; ++j) {
      if (j < offset || j >= offset + n) {
        ASSERT_EQ(got[i * ld + j], 7.0) << "row " << i << " col " << j;
      }
    }
  }
}

TEST(ContractionMatmul, CachesOnePlanPerShape) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  const Operand a = fx::test::random_operand(64 * 64, DType::f32, 1.0f, 51);
  const Operand b = fx::test::random_operand(64 * 64, DType::f32, 1.0f, 52);
  fx::test::DeviceArray c(64 * 64 * sizeof(float));
  Matmul matmul;
  const MatmulProblem p{.m = 64, .n = 64, .k = 64};
  matmul.run(p, a.device.get(), b.device.get(), nullptr, c.get(), nullptr);
  matmul.run(p, a.device.get(), b.device.get(), nullptr, c.get(), nullptr);
  EXPECT_EQ(matmul.cached_plan_count(), 1u);
  matmul.run(MatmulProblem{.m = 32, .n = 64, .k = 64}, a.device.get(), b.device.get(), nullptr, c.get(), nullptr);
  EXPECT_EQ(matmul.cached_plan_count(), 2u);
}

TEST(ContractionMatmul, RejectsMissingBias) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  fx::test::DeviceArray buf(64 * 64 * sizeof(float));
  MatmulProblem p{.m = 64, .n = 64, .k = 64};
  p.epilogue = MatmulEpilogue::relu_bias;
  Matmul matmul;
  EXPECT_THROW(matmul.run(p, buf.get(), buf.get(), nullptr, buf.get(), nullptr), std::invalid_argument);
}

class ContractionHorizontalQkv : public ::testing::TestWithParam<Precision> {};

TEST_P(ContractionHorizontalQkv, MatchesThreeSeparateMatmuls) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  const Precision prec = GetParam();
  const std::int64_t m = 64, k = 128;
  const std::int64_t widths[] = {32, 48, 64};
  const Operand x = fx::test::random_operand(m * k, prec.type, 1.0f, 61);
  std::vector<Operand> weights, biases;
  std::vector<fx::gpu::HorizontalPart> parts;
  for (int i = 0; i < 3; ++i) {
    weights.push_back(fx::test::random_operand(k * widths[i], prec.type, 0.2f, 62 + i));
    biases.push_back(fx::test::random_operand(widths[i], prec.type, 1.0f, 72 + i));
    parts.push_back({weights.back().device.get(), widths[i], biases.back().device.get()});
  }
  const fx::gpu::HorizontalMatmul merged(parts, k, prec.type, nullptr);
  ASSERT_EQ(merged.total_n(), 144);
  MatmulProblem p = merged.problem(m);
  p.allow_tf32 = prec.tf32;
  p.epilogue = MatmulEpilogue::relu_bias;
  const auto element = static_cast<std::size_t>(fx::dtype_size(prec.type));
  fx::test::DeviceArray y(m * 144 * element);
  Matmul matmul;
  const auto views = merged.run(matmul, p, x.device.get(), y.get(), nullptr);
  ASSERT_EQ(views.size(), 3u);
  const auto merged_host = fx::test::download(y.get(), m * 144, prec.type);
  std::size_t column = 0;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(views[i].data, static_cast<char*>(y.get()) + column * element);
    EXPECT_EQ(views[i].ld, 144);
    EXPECT_EQ(views[i].cols, widths[i]);
    MatmulProblem single{.m = m, .n = widths[i], .k = k};
    single.a_type = single.b_type = single.c_type = prec.type;
    single.allow_tf32 = prec.tf32;
    single.epilogue = MatmulEpilogue::relu_bias;
    fx::test::DeviceArray yi(m * widths[i] * element);
    matmul.run(single, x.device.get(), weights[i].device.get(), biases[i].device.get(), yi.get(), nullptr);
    const auto separate = fx::test::download(yi.get(), m * widths[i], prec.type);
    const auto view = slice(merged_host, column, m, widths[i], 144);
    EXPECT_LT(fx::test::relative_error(view, separate), prec.tolerance) << "part " << i;
    EXPECT_LT(fx::test::relative_error(view, reference(single, x.host, weights[i].host, biases[i].host)),
              prec.tolerance)
        << "part " << i;
    column += widths[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ContractionHorizontalQkv, ::testing::Values(kF32, kBf16),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
