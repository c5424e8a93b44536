// cuDNN's matmul graph (kernels/contraction/matmul_graph.h): a bf16/f16 matmul and the pointwise steps after it as
// one call, against a float64 reference of the values the device holds; a tail cuDNN cannot take is refused with
// its reason, never run wrong. Skips with a message where no CUDA device exists.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "kernels/contraction/matmul_graph.h"
#include "tests/gpu/test_contraction_support.h"
#include "tests/kernels/test_contraction_reference.h"

namespace {

using fx::DType;
using fx::gpu::GraphOp;
using fx::gpu::GraphStep;
using fx::gpu::MatmulGraph;
using fx::gpu::MatmulGraphProblem;

// One step on one element: v the value it applies to, operand its bias or residual element or its second value.
double apply(GraphOp op, double v, double operand, double scalar) {
  switch (op) {
    case GraphOp::add_bias:
    case GraphOp::add_tensor:
    case GraphOp::add_value: return v + operand;
    case GraphOp::mul_bias:
    case GraphOp::mul_tensor:
    case GraphOp::mul_value: return v * operand;
    case GraphOp::mul_scalar: return v * scalar;
    case GraphOp::add_scalar: return v + scalar;
    case GraphOp::relu: return fx::test::relu_ref(v);
    case GraphOp::gelu_erf: return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    case GraphOp::gelu_tanh: return fx::test::gelu_tanh_ref(v);
    case GraphOp::sigmoid: return 1.0 / (1.0 + std::exp(-v));
    case GraphOp::tanh: return std::tanh(v);
    case GraphOp::silu: return v / (1.0 + std::exp(-v));
  }
  return v;
}

// Runs p on random data: ||gpu - ref|| / ||ref||, or -1 with the reason in `why` where cuDNN refuses p.
double graph_error(MatmulGraph& graph, const MatmulGraphProblem& p, std::string& why) {
  why = graph.unsupported_reason(p);
  if (!why.empty()) return -1;
  const auto m = static_cast<std::size_t>(p.m), n = static_cast<std::size_t>(p.n), k = static_cast<std::size_t>(p.k);
  const auto a = fx::test::random_operand(m * k, p.type, 1.0f, 91);
  const auto b = fx::test::random_operand(k * n, p.type, 0.3f, 92);
  std::vector<fx::test::Operand> operands;
  std::vector<const void*> pointers;
  for (std::size_t i = 0; i < p.tail.size(); ++i) {
    const GraphOp op = p.tail[i].op;
    const bool bias = op == GraphOp::add_bias || op == GraphOp::mul_bias;
    const bool tensor = op == GraphOp::add_tensor || op == GraphOp::mul_tensor;
    operands.push_back(fx::test::random_operand(bias ? n : tensor ? m * n : 1, p.type, 1.0f, 93 + static_cast<unsigned>(i)));
    pointers.push_back(bias || tensor ? operands.back().device.get() : nullptr);
  }
  fx::test::DeviceArray y(m * n * static_cast<std::size_t>(fx::dtype_size(p.type)));
  graph.run(p, a.device.get(), b.device.get(), pointers, y.get(), nullptr);
  // The reference reads A as [M, K] and B as [K, N]: a transposed operand is stored the other way round.
  auto row_major = [](const std::vector<double>& v, std::size_t rows, std::size_t cols, bool stored_transposed) {
    if (!stored_transposed) return v;
    std::vector<double> out(v.size());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) out[r * cols + c] = v[c * rows + r];
    return out;
  };
  std::vector<double> want = fx::test::matmul_ref(row_major(a.host, m, k, p.transpose_a),
                                                  row_major(b.host, k, n, p.transpose_b), p.m, p.n, p.k);
  // Values as the graph numbers them: the product, then each step's result.
  const auto at = [](const std::vector<double>& values, int ref, std::size_t step) {
    return values[ref == GraphStep::kPrevious ? step : static_cast<std::size_t>(ref)];
  };
  for (std::size_t e = 0; e < want.size(); ++e) {
    std::vector<double> values = {want[e]};
    for (std::size_t i = 0; i < p.tail.size(); ++i) {
      const GraphStep& s = p.tail[i];
      const bool bias = s.op == GraphOp::add_bias || s.op == GraphOp::mul_bias;
      const bool tensor = s.op == GraphOp::add_tensor || s.op == GraphOp::mul_tensor;
      const double operand = bias     ? operands[i].host[e % n]
                             : tensor ? operands[i].host[e]
                             : s.op == GraphOp::add_value || s.op == GraphOp::mul_value ? at(values, s.other, i)
                                                                                       : 0.0;
      values.push_back(apply(s.op, at(values, s.input, i), operand, s.scalar));
    }
    want[e] = values.back();
  }
  return fx::test::relative_error(fx::test::download(y.get(), m * n, p.type), want);
}

MatmulGraphProblem problem(DType type, std::vector<GraphStep> tail) {
  MatmulGraphProblem p;
  p.m = 128, p.n = 64, p.k = 96;
  p.type = type;
  p.tail = std::move(tail);
  return p;
}

// The erf GELU MLP (mlp_gelu_erf_bf16's epilogue): cuDNN must run it, exactly to the half type's rounding.
TEST(MatmulGraph, BiasThenErfGeluMatchesTheFloat64Reference) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  MatmulGraph graph;
  for (const DType type : {DType::bf16, DType::f16}) {
    const MatmulGraphProblem p = problem(type, {{GraphOp::add_bias}, {GraphOp::gelu_erf}});
    std::string why;
    const double error = graph_error(graph, p, why);
    ASSERT_TRUE(why.empty()) << fx::gpu::describe_matmul_graph(p) << ": " << why;
    EXPECT_LT(error, type == DType::bf16 ? 1e-2 : 2e-3) << fx::gpu::describe_matmul_graph(p);
    EXPECT_NE(graph.engine(p).find("cuDNN engine"), std::string::npos) << graph.engine(p);
    std::printf("%s: %s, rel. error %.2e\n", fx::gpu::describe_matmul_graph(p).c_str(), graph.engine(p).c_str(), error);
  }
}

// Steps that read the product or an earlier step, not only the step before: SiLU written out, TVM's
// add(c, add(c, 1)), and the tanh GELU written out as Hugging Face's GPT-2 writes it (mlp_gelu_decomposed_bf16).
TEST(MatmulGraph, ADagOfStepsMatchesTheFloat64Reference) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  MatmulGraph graph;
  constexpr int kPrev = GraphStep::kPrevious;
  const std::vector<std::vector<GraphStep>> tails = {
      {{GraphOp::sigmoid}, {GraphOp::mul_value, 1.0f, 0, kPrev}},
      {{GraphOp::add_scalar, 1.0f}, {GraphOp::add_value, 1.0f, 0, kPrev}},
      {{GraphOp::add_bias},                        // v1 = h
       {GraphOp::mul_value, 1.0f, kPrev, kPrev},   // v2 = h h
       {GraphOp::mul_value, 1.0f, kPrev, 1},       // v3 = h^3
       {GraphOp::mul_scalar, 0.044715f},           // v4
       {GraphOp::add_value, 1.0f, 1, kPrev},       // v5 = h + 0.044715 h^3
       {GraphOp::mul_scalar, 0.7978845608f},       // v6
       {GraphOp::tanh},                            // v7
       {GraphOp::add_scalar, 1.0f},                // v8
       {GraphOp::mul_scalar, 0.5f, 1},             // v9 = 0.5 h
       {GraphOp::mul_value, 1.0f, kPrev, 8}},      // y = v9 v8
      // LayerScale after a bias, then the residual (ViTs' x + gamma * (h W + b)), and a gate read from memory.
      {{GraphOp::add_bias}, {GraphOp::mul_bias}, {GraphOp::add_tensor}},
      {{GraphOp::gelu_erf}, {GraphOp::mul_tensor}},
  };
  for (const auto& tail : tails) {
    const MatmulGraphProblem p = problem(DType::bf16, tail);
    ASSERT_EQ(fx::gpu::validate_matmul_graph(p), "");
    std::string why;
    const double error = graph_error(graph, p, why);
    ASSERT_TRUE(why.empty()) << fx::gpu::describe_matmul_graph(p) << ": " << why;
    EXPECT_LT(error, 1e-2) << fx::gpu::describe_matmul_graph(p);
    std::printf("%s: %s, rel. error %.2e\n", fx::gpu::describe_matmul_graph(p).c_str(), graph.engine(p).c_str(), error);
  }
}

// Other tails, each run right or refused with cuDNN's reason (printed: what this cuDNN offers).
TEST(MatmulGraph, OtherTailsRunRightOrAreRefusedWithAReason) {
  FX_SKIP_WITHOUT_CUDA_DEVICE();
  MatmulGraph graph;
  const std::vector<std::vector<GraphStep>> tails = {
      {{GraphOp::add_tensor}, {GraphOp::relu}},
      {{GraphOp::mul_scalar, 0.125f}, {GraphOp::sigmoid}},
      {{GraphOp::add_bias}, {GraphOp::silu}},
      {{GraphOp::tanh}},
      {{GraphOp::add_bias}, {GraphOp::gelu_tanh}, {GraphOp::add_tensor}},
      {},
  };
  for (const auto& tail : tails) {
    MatmulGraphProblem p = problem(DType::bf16, tail);
    std::string why;
    const double error = graph_error(graph, p, why);
    std::printf("%s: %s\n", fx::gpu::describe_matmul_graph(p).c_str(),
                why.empty() ? (graph.engine(p) + ", rel. error " + std::to_string(error)).c_str() : why.c_str());
    if (why.empty()) {
      EXPECT_LT(error, 1e-2) << fx::gpu::describe_matmul_graph(p);
    }
  }
  // Transposed operands, read through strides.
  for (const bool transpose_a : {false, true}) {
    MatmulGraphProblem t = problem(DType::bf16, {{GraphOp::gelu_erf}});
    t.transpose_a = transpose_a;
    t.transpose_b = !transpose_a;
    std::string why;
    const double error = graph_error(graph, t, why);
    std::printf("transposed %s: %s\n", transpose_a ? "A" : "B", why.empty() ? std::to_string(error).c_str() : why.c_str());
    if (why.empty()) {
      EXPECT_LT(error, 1e-2) << (transpose_a ? "A transposed" : "B transposed");
    }
  }
}

TEST(MatmulGraphProblem, MalformedProblemsAreRefusedBeforeCudnnIsAsked) {
  MatmulGraphProblem p;
  p.m = 100, p.n = 64, p.k = 64;
  EXPECT_NE(fx::gpu::validate_matmul_graph(p).find("multiples of 8"), std::string::npos);
  p.m = 64;
  p.type = DType::f32;
  EXPECT_NE(fx::gpu::validate_matmul_graph(p).find("f16 or bf16"), std::string::npos);
  p.type = DType::bf16;
  EXPECT_EQ(fx::gpu::validate_matmul_graph(p), "");
  p.tail = {{GraphOp::add_bias}, {GraphOp::gelu_erf}};
  EXPECT_EQ(fx::gpu::describe_matmul_graph(p), "cuDNN matmul graph + add_bias + gelu_erf, BF16, f32 accumulation, 64x64x64");
}

}  // namespace
