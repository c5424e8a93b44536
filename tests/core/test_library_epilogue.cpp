// The library epilogue rules core restates from kernels/contraction/epilogue_choice.h (choose_matmul_epilogue)
// and kernels/executor/contraction_plan.cpp (conv_call). The table below is the executor's list; when the
// executor learns a new epilogue, both copies and this table change together.
#include <vector>

#include "core/fusion/library_epilogue.h"
#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

using testing::graph_from;
using testing::graph_json;
using testing::node;

struct TailCase {
  std::vector<std::string> tail;
  std::size_t absorbed;  // how many ops cuBLASLt's epilogue takes
  const char* why;       // a phrase of the refusal, "" when the whole tail fits
};

TEST(LibraryEpilogue, CublasLtCoversBiasThenReluOrGeluTanhOnly) {
  const std::vector<TailCase> cases = {
      {{}, 0, ""},
      {{"add(bias)"}, 1, ""},
      {{"relu"}, 1, ""},
      {{"gelu_tanh"}, 1, ""},
      {{"add(bias)", "relu"}, 2, ""},
      {{"add(bias)", "gelu_tanh"}, 2, ""},
      {{"gelu"}, 0, "erf-based"},
      {{"add(bias)", "gelu"}, 1, "erf-based"},
      {{"silu"}, 0, "no `silu` epilogue"},
      {{"sigmoid"}, 0, "no `sigmoid` epilogue"},
      {{"mul"}, 0, "no `mul` epilogue"},
      {{"add_scalar"}, 0, "no `add_scalar` epilogue"},
      // A multiplication by a scalar right after the GEMM is its alpha; after the bias it is not.
      {{"mul_scalar"}, 1, ""},
      {{"mul_scalar", "mul_scalar", "add(bias)", "relu"}, 4, ""},
      {{"add(bias)", "mul_scalar"}, 1, "alpha scales the product before them"},
      {{"add"}, 0, "full M x N tensor"},
      {{"relu", "add(bias)"}, 1, "bias comes after the activation"},
      {{"add(bias)", "add(bias)"}, 1, "second bias"},
      {{"relu", "gelu_tanh"}, 1, "one activation"},
      {{"add(bias)", "relu", "relu"}, 2, "one activation"},
  };
  for (const TailCase& c : cases) {
    const TailFit fit = fit_cublaslt_epilogue(c.tail);
    std::string joined;
    for (const auto& op : c.tail) joined += op + " ";
    EXPECT_EQ(fit.absorbed, c.absorbed) << joined;
    EXPECT_EQ(fit.fully_expressible(c.tail.size()), std::string(c.why).empty()) << joined;
    EXPECT_NE(fit.why_not.find(c.why), std::string::npos) << joined << ": " << fit.why_not;
  }
}

const char* kMm = R"([{"name": "x", "shape": [512, 256], "dtype": "f32"},
                      {"name": "W", "shape": [256, 128], "dtype": "f32", "role": "weight"},
                      {"name": "b", "shape": [128], "dtype": "f32"},
                      {"name": "r", "shape": [512, 128], "dtype": "f32"}])";

LibraryEpilogue of(const Graph& g, const std::vector<std::string>& names) {
  std::vector<NodeId> nodes;
  for (const auto& n : names) nodes.push_back(node(g, n));
  return library_epilogue(g, nodes, nodes.front());
}

TEST(LibraryEpilogue, MatmulTailsInAGraph) {
  const Graph g = graph_from(graph_json(kMm, R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                                  {"name": "add", "op": "add", "inputs": ["mm", "b"]},
                                                  {"name": "act", "op": "relu", "inputs": ["add"]},
                                                  {"name": "res", "op": "add", "inputs": ["act", "r"]},
                                                  {"name": "s", "op": "silu", "inputs": ["mm"]}])",
                                        R"(["res", "s"])"));
  // mm also feeds s outside the group, so mm's output is stored and nothing after it joins the call.
  const LibraryEpilogue stored = of(g, {"mm", "add", "act"});
  EXPECT_FALSE(stored.expressible());
  EXPECT_NE(stored.message.find("stored for use outside"), std::string::npos) << stored.message;
  EXPECT_NE(stored.message.find("second kernel"), std::string::npos) << stored.message;

  const Graph swish = graph_from(graph_json(kMm, R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                                      {"name": "s", "op": "silu", "inputs": ["mm"]}])",
                                            R"(["s"])"));
  const LibraryEpilogue silu = of(swish, {"mm", "s"});
  EXPECT_FALSE(silu.expressible());
  EXPECT_EQ(silu.stop, node(swish, "s"));
  EXPECT_NE(silu.message.find("cuBLASLt has no `silu` epilogue"), std::string::npos) << silu.message;
}

TEST(LibraryEpilogue, BiasReluIsOneCallAndAResidualAddIsNot) {
  const Graph g = graph_from(graph_json(kMm, R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                                  {"name": "add", "op": "add", "inputs": ["mm", "b"]},
                                                  {"name": "act", "op": "relu", "inputs": ["add"]},
                                                  {"name": "res", "op": "add", "inputs": ["act", "r"]}])",
                                        R"(["res"])"));
  const LibraryEpilogue fits = of(g, {"mm", "add", "act"});
  EXPECT_TRUE(fits.expressible()) << fits.message;
  EXPECT_EQ(fits.library, "cuBLASLt");
  EXPECT_EQ(fits.absorbed, (std::vector<NodeId>{node(g, "add"), node(g, "act")}));
  const LibraryEpilogue residual = of(g, {"mm", "add", "act", "res"});
  EXPECT_EQ(residual.stop, node(g, "res"));
  EXPECT_NE(residual.message.find("full M x N tensor"), std::string::npos) << residual.message;
}

std::string conv_graph(const char* dtype, const std::string& tail) {
  const std::string d = dtype;
  return graph_json(R"([{"name": "x", "shape": [2, 8, 16, 16], "dtype": ")" + d + R"("},
                        {"name": "w", "shape": [8, 8, 3, 3], "dtype": ")" + d + R"(", "role": "weight"},
                        {"name": "bias", "shape": [8], "dtype": ")" + d + R"("},
                        {"name": "mean", "shape": [8], "dtype": ")" + d + R"("},
                        {"name": "var", "shape": [8], "dtype": ")" + d + R"("},
                        {"name": "gamma", "shape": [8], "dtype": ")" + d + R"("},
                        {"name": "beta", "shape": [8], "dtype": ")" + d + R"("}])",
                    R"([{"name": "conv", "op": "conv2d", "inputs": ["x", "w", "bias"], "attrs": {"padding": 1}},
                        {"name": "bn", "op": "batchnorm", "inputs": ["conv", "mean", "var", "gamma", "beta"],
                         "attrs": {"axis": 1}},
                        {"name": "y", "op": "relu", "inputs": ["bn"]})" + tail + "]",
                    tail.empty() ? R"(["y"])" : R"(["z"])");
}

TEST(LibraryEpilogue, CudnnFusesConvBiasFoldedBatchnormReluInF32Only) {
  const Graph f32 = graph_from(conv_graph("f32", ""));
  const LibraryEpilogue fits = of(f32, {"conv", "bn", "y"});
  EXPECT_TRUE(fits.expressible()) << fits.message;
  EXPECT_EQ(fits.library, "cuDNN");

  const Graph bf16 = graph_from(conv_graph("bf16", ""));
  const LibraryEpilogue no_bf16 = of(bf16, {"conv", "bn", "y"});
  EXPECT_FALSE(no_bf16.expressible());
  EXPECT_NE(no_bf16.message.find("f32 only"), std::string::npos) << no_bf16.message;

  const Graph after_relu = graph_from(conv_graph("f32", R"(, {"name": "z", "op": "sigmoid", "inputs": ["y"]})"));
  const LibraryEpilogue ends = of(after_relu, {"conv", "bn", "y", "z"});
  EXPECT_EQ(ends.stop, node(after_relu, "z"));
  EXPECT_NE(ends.message.find("ends with its activation"), std::string::npos) << ends.message;
}

}  // namespace
}  // namespace fx
