// No-GPU tests of the contraction library's decisions: which epilogue a tail maps to, layout defaults,
// validation messages and the report lines.
#include <gtest/gtest.h>

#include "kernels/contraction/conv.h"
#include "kernels/contraction/epilogue_choice.h"

namespace {

using fx::DType;
using fx::gpu::choose_matmul_epilogue;
using fx::gpu::EpilogueStop;
using fx::gpu::MatmulEpilogue;
using fx::gpu::MatmulProblem;

struct TailCase {
  std::vector<std::string> tail;
  MatmulEpilogue epilogue;
  std::size_t absorbed;
  EpilogueStop stop;
  bool residual = false;  // cuBLASLt's C with beta = 1
};

class ContractionEpilogueChoiceTest : public ::testing::TestWithParam<TailCase> {};

TEST_P(ContractionEpilogueChoiceTest, ChoosesEpilogueAndStop) {
  const TailCase& c = GetParam();
  const auto choice = choose_matmul_epilogue(c.tail);
  EXPECT_EQ(choice.epilogue, c.epilogue) << choice.message;
  EXPECT_EQ(choice.absorbed, c.absorbed) << choice.message;
  EXPECT_EQ(choice.stop, c.stop) << choice.message;
  EXPECT_EQ(choice.residual, c.residual) << choice.message;
  EXPECT_EQ(choice.fully_expressible(), c.absorbed == c.tail.size());
}

INSTANTIATE_TEST_SUITE_P(
    Tails, ContractionEpilogueChoiceTest,
    ::testing::Values(TailCase{{}, MatmulEpilogue::none, 0, EpilogueStop::none},
                      TailCase{{"add(bias)"}, MatmulEpilogue::bias, 1, EpilogueStop::none},
                      TailCase{{"add(bias)", "relu"}, MatmulEpilogue::relu_bias, 2, EpilogueStop::none},
                      TailCase{{"bias_add", "gelu_tanh"}, MatmulEpilogue::gelu_tanh_bias, 2, EpilogueStop::none},
                      TailCase{{"relu"}, MatmulEpilogue::relu, 1, EpilogueStop::none},
                      TailCase{{"gelu_tanh"}, MatmulEpilogue::gelu_tanh, 1, EpilogueStop::none},
                      TailCase{{"add(bias)", "gelu"}, MatmulEpilogue::bias, 1, EpilogueStop::erf_gelu},
                      TailCase{{"relu", "add(bias)"}, MatmulEpilogue::relu, 1, EpilogueStop::activation_then_bias},
                      TailCase{{"add(bias)", "add(bias)"}, MatmulEpilogue::bias, 1, EpilogueStop::second_bias},
                      TailCase{{"relu", "gelu_tanh"}, MatmulEpilogue::relu, 1, EpilogueStop::second_activation},
                      TailCase{{"add(residual)", "relu"}, MatmulEpilogue::relu, 2, EpilogueStop::none, true},
                      TailCase{{"add(bias)", "add(residual)", "relu"}, MatmulEpilogue::relu_bias, 3,
                               EpilogueStop::none, true},
                      TailCase{{"add(residual)", "add(bias)", "gelu_tanh"}, MatmulEpilogue::gelu_tanh_bias, 3,
                               EpilogueStop::none, true},
                      TailCase{{"add(residual)"}, MatmulEpilogue::none, 1, EpilogueStop::none, true},
                      TailCase{{"relu", "add(residual)"}, MatmulEpilogue::relu, 1,
                               EpilogueStop::residual_after_activation},
                      TailCase{{"add(residual)", "add(residual)"}, MatmulEpilogue::none, 1,
                               EpilogueStop::second_residual, true},
                      TailCase{{"add(residual)", "mul_scalar"}, MatmulEpilogue::none, 1,
                               EpilogueStop::scale_after_epilogue, true},
                      TailCase{{"add(broadcast)"}, MatmulEpilogue::none, 0, EpilogueStop::broadcast_add},
                      TailCase{{"add(itself)"}, MatmulEpilogue::none, 0, EpilogueStop::self_add},
                      TailCase{{"add(computed)"}, MatmulEpilogue::none, 0, EpilogueStop::computed_add},
                      TailCase{{"add(bias)", "relu", "mul"}, MatmulEpilogue::relu_bias, 2,
                               EpilogueStop::unsupported_op},
                      TailCase{{"sigmoid"}, MatmulEpilogue::none, 0, EpilogueStop::unsupported_op},
                      TailCase{{"mul_scalar"}, MatmulEpilogue::none, 1, EpilogueStop::none},
                      TailCase{{"mul_scalar", "add(bias)", "gelu_tanh"}, MatmulEpilogue::gelu_tanh_bias, 3,
                               EpilogueStop::none},
                      TailCase{{"add(bias)", "mul_scalar"}, MatmulEpilogue::bias, 1,
                               EpilogueStop::scale_after_epilogue}));

TEST(ContractionEpilogueChoice, ErfGeluMessageNamesTheApproximation) {
  const auto choice = choose_matmul_epilogue({"add(bias)", "gelu"});
  EXPECT_NE(choice.message.find("tanh approximation"), std::string::npos) << choice.message;
  EXPECT_NE(choice.message.find("second kernel"), std::string::npos) << choice.message;
  EXPECT_NE(choice.message.find("BIAS"), std::string::npos) << choice.message;
}

TEST(ContractionEpilogueChoice, ResidualMessageNamesTheCInput) {
  const auto whole = choose_matmul_epilogue({"add(bias)", "add(residual)", "relu"});
  EXPECT_EQ(whole.message, "cuBLASLt RELU_BIAS epilogue with the residual as C (beta = 1) covers the whole tail");
  const auto after = choose_matmul_epilogue({"add(bias)", "relu", "add(residual)"});
  EXPECT_NE(after.message.find("residual add comes after the activation"), std::string::npos) << after.message;
}

TEST(ContractionMatmulDescribe, NamesEpilogueAndMath) {
  MatmulProblem p{.m = 8192, .n = 4096, .k = 4096};
  p.allow_tf32 = true;
  p.epilogue = MatmulEpilogue::gelu_tanh_bias;
  EXPECT_EQ(fx::gpu::describe_matmul(p), "cuBLASLt GELU_BIAS epilogue (tanh approximation), TF32 tensor cores");
  p.allow_tf32 = false;
  p.epilogue = MatmulEpilogue::relu_bias;
  EXPECT_EQ(fx::gpu::describe_matmul(p), "cuBLASLt RELU_BIAS epilogue, FP32 (no TF32)");
  p.residual = true;
  EXPECT_EQ(fx::gpu::describe_matmul(p), "cuBLASLt RELU_BIAS epilogue, residual added as C (beta = 1), FP32 (no TF32)");
  p.epilogue = MatmulEpilogue::none;
  EXPECT_EQ(fx::gpu::describe_matmul(p), "cuBLASLt GEMM, residual added as C (beta = 1), FP32 (no TF32)");
  p.residual = false;
  p.a_type = p.b_type = p.c_type = DType::bf16;
  p.epilogue = MatmulEpilogue::none;
  p.batch = 3;
  p.batch_stride_b = 0;
  EXPECT_EQ(fx::gpu::describe_matmul(p),
            "cuBLASLt GEMM, no epilogue, BF16 tensor cores, FP32 accumulation, batch 3 (B broadcast)");
}

// The search's report says where its choice came from: the heuristic's own list, its list for one member of a
// batched problem (qkv_bf16's merged GEMM), or the variants beyond both.
TEST(ContractionMatmulDescribe, NamesWhereTheSearchsChoiceCameFrom) {
  using fx::gpu::describe_search_origin;
  EXPECT_EQ(describe_search_origin(5, 8, 8, 8), "algorithm 6 of the heuristic's 8 by timing: ");
  EXPECT_EQ(describe_search_origin(0, 8, 8, 36),
            "the fastest of 36 configurations by timing (the heuristic's 8 and 28 more: their algorithms with the "
            "cluster shape left to cuBLASLt, and with each tile and stage count): the heuristic's #1, ");
  EXPECT_EQ(describe_search_origin(9, 8, 10, 10),
            "the fastest of 10 configurations by timing (the heuristic's 8, 2 more that it offers one member of the "
            "batch): one the heuristic offers one member of the batch, ");
  EXPECT_EQ(describe_search_origin(12, 8, 10, 20),
            "the fastest of 20 configurations by timing (the heuristic's 8, 2 more that it offers one member of the "
            "batch and 10 more: their algorithms with the cluster shape left to cuBLASLt, and with each tile and "
            "stage count): not among the heuristic's, ");
}

// The end of the report line once the executor timed the search's finalists again in its plan.
TEST(ContractionMatmulDescribe, SaysWhatTimingTheFinalistsInThePlanKept) {
  using fx::gpu::describe_finalist_choice;
  const std::string algo = "algorithm 66, tile 256x128, stages 64xAUTO, cluster 1x2x1";
  EXPECT_EQ(describe_finalist_choice(0, algo, {0.2812, 0.2901, 0.2950}, ""),
            "the search's 3 best timed again in the plan: its pick stays (0.2812 ms; its #2 0.2901 ms, its #3 0.2950 ms)");
  EXPECT_EQ(describe_finalist_choice(1, algo, {0.2860, 0.2590, 0.2870}, ""),
            "the search's 3 best timed again in the plan: its #2 runs, " + algo +
                " (0.2590 ms; the search's pick 0.2860 ms, its #3 0.2870 ms)");
  EXPECT_EQ(describe_finalist_choice(1, algo, {0.2822, 0.2655}, "its 3 GEMMs together"),
            "the search's 2 best timed again in the plan: its #2 runs, " + algo +
                " (0.2655 ms, its 3 GEMMs together; the search's pick 0.2822 ms)");
  // The heuristic's first joins the finalists where the search ranked it lower.
  EXPECT_EQ(describe_finalist_choice(3, algo, {0.2912, 0.2962, 0.2944, 0.2641}, "", true),
            "the search's 3 best and the heuristic's first timed again in the plan: the heuristic's first runs, " +
                algo + " (0.2641 ms; the search's pick 0.2912 ms, its #2 0.2962 ms, its #3 0.2944 ms)");
  EXPECT_EQ(describe_finalist_choice(0, algo, {0.2812, 0.2901}, "", true),
            "the search's 1 best and the heuristic's first timed again in the plan: its pick stays (0.2812 ms; "
            "the heuristic's first 0.2901 ms)");
}

// The tuning cache keys searches by this text: a residual changes the problem (C is read), and the text of a
// problem without one is what it was before residuals existed, so kept searches stay valid.
TEST(ContractionMatmulDescribe, ProblemTextNamesAResidualOnlyWhereThereIsOne) {
  MatmulProblem p{.m = 4, .n = 8, .k = 16};
  const std::string plain = fx::gpu::matmul_problem_text(p);
  EXPECT_EQ(plain.find("residual"), std::string::npos) << plain;
  p.residual = true;
  EXPECT_EQ(fx::gpu::matmul_problem_text(p), plain + " residual 1");
}

TEST(ContractionMatmulLayout, DefaultsArePacked) {
  MatmulProblem p{.batch = 2, .m = 5, .n = 7, .k = 3};
  auto l = fx::gpu::resolve_layout(p);
  EXPECT_EQ(l.lda, 3);
  EXPECT_EQ(l.ldb, 7);
  EXPECT_EQ(l.ldc, 7);
  EXPECT_EQ(l.stride_a, 15);
  EXPECT_EQ(l.stride_b, 21);
  EXPECT_EQ(l.stride_c, 35);
  p.transpose_a = p.transpose_b = true;  // A stored [K, M], B stored [N, K]
  p.ldc = 20;
  p.batch_stride_b = 0;
  l = fx::gpu::resolve_layout(p);
  EXPECT_EQ(l.lda, 5);
  EXPECT_EQ(l.ldb, 3);
  EXPECT_EQ(l.stride_a, 15);
  EXPECT_EQ(l.stride_b, 0);
  EXPECT_EQ(l.stride_c, 100);
}

TEST(ContractionMatmulValidate, ReportsTheFirstProblem) {
  const MatmulProblem ok{.m = 4, .n = 4, .k = 4};
  EXPECT_EQ(fx::gpu::validate_matmul(ok), "");
  MatmulProblem p = ok;
  p.k = 0;
  EXPECT_NE(fx::gpu::validate_matmul(p).find("positive"), std::string::npos);
  p = ok;
  p.b_type = DType::bf16;
  EXPECT_NE(fx::gpu::validate_matmul(p).find("one type"), std::string::npos);
  p = ok;
  p.a_type = p.b_type = DType::bf16;
  p.c_type = DType::f16;
  EXPECT_NE(fx::gpu::validate_matmul(p).find("cannot be written as f16"), std::string::npos);
  p.c_type = DType::f32;
  EXPECT_EQ(fx::gpu::validate_matmul(p), "");
  p = ok;
  p.ldc = 3;
  EXPECT_NE(fx::gpu::validate_matmul(p).find("ldc = 3"), std::string::npos);
  p = ok;
  p.a_type = p.b_type = p.c_type = DType::i32;
  EXPECT_NE(fx::gpu::validate_matmul(p), "");
}

TEST(ContractionConvProblem, OutputShapeAndValidation) {
  fx::gpu::Conv2dProblem p{.n = 32, .c = 64, .h = 56, .w = 56, .k = 64, .r = 3, .s = 3};
  p.pad_h = p.pad_w = 1;
  auto out = fx::gpu::conv2d_output_shape(p);
  EXPECT_EQ(out.p, 56);
  EXPECT_EQ(out.q, 56);
  p.stride_h = 2;
  p.dilation_w = 2;
  out = fx::gpu::conv2d_output_shape(p);
  EXPECT_EQ(out.p, 28);  // (56 + 2 - 2 - 1) / 2 + 1
  EXPECT_EQ(out.q, 54);  // (56 + 2 - 4 - 1) / 1 + 1
  EXPECT_EQ(fx::gpu::validate_conv2d(p), "");
  p.groups = 3;
  EXPECT_NE(fx::gpu::validate_conv2d(p).find("must divide"), std::string::npos);
  p.groups = 1;
  p.r = 80;
  EXPECT_NE(fx::gpu::validate_conv2d(p).find("larger than"), std::string::npos);
}

TEST(ContractionConvProblem, Describe) {
  fx::gpu::Conv2dProblem p{.n = 1, .c = 8, .h = 8, .w = 8, .k = 8, .r = 3, .s = 3};
  p.epilogue = fx::gpu::ConvEpilogue::relu_bias;
  EXPECT_EQ(fx::gpu::describe_conv2d(p), "cuDNN fused conv + bias + ReLU, FP32 (no TF32)");
}

}  // namespace
