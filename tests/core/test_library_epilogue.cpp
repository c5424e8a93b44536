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

TEST(LibraryEpilogue, CublasLtCoversResidualAndBiasThenReluOrGeluTanhOnly) {
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
      // A residual is C with beta = 1: added with the bias, in either order, before the activation.
      {{"add(residual)"}, 1, ""},
      {{"add(residual)", "relu"}, 2, ""},
      {{"add(bias)", "add(residual)", "relu"}, 3, ""},
      {{"add(residual)", "add(bias)", "gelu_tanh"}, 3, ""},
      {{"mul_scalar", "add(residual)", "add(bias)"}, 3, ""},
      {{"add(residual)", "mul_scalar"}, 1, "after the residual, bias or activation"},
      {{"relu", "add(residual)"}, 1, "residual add comes after the activation"},
      {{"add(bias)", "gelu_tanh", "add(residual)"}, 2, "residual add comes after the activation"},
      {{"add(residual)", "add(residual)"}, 1, "second residual add; cuBLASLt has one C input"},
      {{"add(broadcast)"}, 0, "broadcast to the output"},
      {{"add(bias)", "add(broadcast)"}, 1, "not a broadcast one"},
      {{"add(itself)"}, 0, "adds the value to itself"},
      {{"add(computed)"}, 0, "computed in the same group"},
      {{"add"}, 0, "no `add` epilogue"},  // an add nobody labelled by its operand
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

TEST(LibraryEpilogue, BiasResidualReluIsOneCallAndAResidualAfterTheActivationIsNot) {
  const Graph g = graph_from(graph_json(kMm, R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                                  {"name": "add", "op": "add", "inputs": ["mm", "b"]},
                                                  {"name": "res", "op": "add", "inputs": ["r", "add"]},
                                                  {"name": "act", "op": "relu", "inputs": ["res"]},
                                                  {"name": "res2", "op": "add", "inputs": ["act", "r"]}])",
                                        R"(["res2"])"));
  const LibraryEpilogue fits = of(g, {"mm", "add", "res", "act"});
  EXPECT_TRUE(fits.expressible()) << fits.message;
  EXPECT_EQ(fits.library, "cuBLASLt");
  EXPECT_EQ(fits.absorbed, (std::vector<NodeId>{node(g, "add"), node(g, "res"), node(g, "act")}));
  const MatmulTailOp res = matmul_tail_op(g, std::vector<NodeId>{node(g, "mm"), node(g, "add"), node(g, "res")},
                                          node(g, "res"), *g.find_value("add"));
  EXPECT_EQ(res.label, "add(residual)");
  EXPECT_EQ(res.operand, g.find_value("r"));  // read as C, whichever side of the add it is on
  const LibraryEpilogue after = of(g, {"mm", "add", "res", "act", "res2"});
  EXPECT_EQ(after.stop, node(g, "res2"));
  EXPECT_NE(after.message.find("res2 (add) after mm (matmul): the residual add comes after the activation"),
            std::string::npos)
      << after.message;
}

TEST(LibraryEpilogue, ResidualBeforeTheBiasAndAResidualThatIsTheMatmulsOwnInput) {
  // x @ W + x with a square W: C reads x while the GEMM reads it as A; D is a buffer of its own, so the call
  // reads x twice and writes nothing either read.
  const char* square = R"([{"name": "x", "shape": [64, 32], "dtype": "bf16"},
                           {"name": "W", "shape": [32, 32], "dtype": "bf16"},
                           {"name": "b", "shape": [32], "dtype": "bf16"}])";
  const Graph g = graph_from(graph_json(square, R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                                     {"name": "res", "op": "add", "inputs": ["mm", "x"]},
                                                     {"name": "add", "op": "add", "inputs": ["res", "b"]},
                                                     {"name": "y", "op": "gelu_tanh", "inputs": ["add"]}])",
                                        R"(["y"])"));
  const LibraryEpilogue fits = of(g, {"mm", "res", "add", "y"});
  EXPECT_TRUE(fits.expressible()) << fits.message;
  EXPECT_EQ(fits.absorbed.size(), 3u);
}

// Each add cuBLASLt cannot take, with its reason.
TEST(LibraryEpilogue, AddsThatAreNoResidualSayWhy) {
  const char* inputs = R"([{"name": "x", "shape": [512, 256], "dtype": "f32"},
                           {"name": "W", "shape": [256, 128], "dtype": "f32"},
                           {"name": "r", "shape": [512, 128], "dtype": "f32"},
                           {"name": "r2", "shape": [512, 128], "dtype": "f32"},
                           {"name": "rows", "shape": [512, 1], "dtype": "f32"},
                           {"name": "z", "shape": [512, 128], "dtype": "f32"}])";
  struct Case {
    const char* tail;  // nodes after mm, the last one named "t" (the one that stops the epilogue)
    const char* why;
  };
  const std::vector<Case> cases = {
      {R"({"name": "t", "op": "add", "inputs": ["mm", "rows"]})", "`add` of a tensor broadcast to the output"},
      {R"({"name": "t", "op": "add", "inputs": ["mm", "mm"]})", "adds the value to itself"},
      {R"({"name": "z2", "op": "relu", "inputs": ["z"]}, {"name": "t", "op": "add", "inputs": ["mm", "z2"]})",
       "reads a value computed in the same group"},
      {R"({"name": "a", "op": "add", "inputs": ["mm", "r"]}, {"name": "t", "op": "add", "inputs": ["a", "r2"]})",
       "a second residual add"},
      {R"({"name": "a", "op": "add", "inputs": ["mm", "r"]}, {"name": "t", "op": "mul", "inputs": ["a", 0.5]})",
       "a multiplication by a scalar after the residual"},
  };
  for (const Case& c : cases) {
    const std::string json = std::string(R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]}, )") + c.tail + "]";
    const Graph g = graph_from(graph_json(inputs, json, R"(["t"])"));
    std::vector<NodeId> nodes;
    for (NodeId n = 0; n < g.num_nodes(); ++n) nodes.push_back(n);
    const LibraryEpilogue lib = library_epilogue(g, nodes, node(g, "mm"));
    EXPECT_FALSE(lib.expressible()) << c.tail;
    EXPECT_EQ(lib.stop, node(g, "t")) << c.tail << ": " << lib.message;
    EXPECT_NE(lib.message.find(c.why), std::string::npos) << c.tail << ": " << lib.message;
  }
}

// Auto-fuse takes matmul -> bias -> residual -> relu as one group, priced as the one call it is: x, W, b and r
// read once each, only the result written (no intermediate of the chain reaches memory).
TEST(LibraryEpilogue, AResidualGroupIsPricedAsOneCallThatReadsTheResidualOnce) {
  const char* inputs = R"([{"name": "x", "shape": [4096, 1024], "dtype": "bf16"},
                           {"name": "W", "shape": [1024, 1024], "dtype": "bf16", "role": "weight"},
                           {"name": "b", "shape": [1024], "dtype": "bf16"},
                           {"name": "r", "shape": [4096, 1024], "dtype": "bf16"}])";
  const Graph g = graph_from(graph_json(inputs, R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                                    {"name": "add", "op": "add", "inputs": ["mm", "b"]},
                                                    {"name": "res", "op": "add", "inputs": ["add", "r"]},
                                                    {"name": "y", "op": "relu", "inputs": ["res"]}])",
                                        R"(["y"])"));
  FusionEngine engine(g, testing::test_device());
  const FusionDecision d = engine.explain(node(g, "add"), node(g, "res"));
  EXPECT_TRUE(d.fuse) << d.message;
  engine.auto_fuse();
  ASSERT_EQ(engine.plan().groups().size(), 1u) << engine.decision_log_json();
  const GroupCost& c = engine.plan().groups()[0].cost;
  const std::int64_t tensor = 4096LL * 1024 * 2, weight = 1024LL * 1024 * 2, bias = 1024 * 2;
  EXPECT_EQ(c.tensors_read, 4);
  EXPECT_EQ(c.bytes_read, tensor + weight + bias + tensor);
  EXPECT_EQ(c.tensors_written, 1);
  EXPECT_EQ(c.bytes_written, tensor);
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

// ResNet's conv -> batchnorm -> + identity -> relu: the residual add stops the fused call, with the measured reason.
TEST(LibraryEpilogue, CudnnStopsAtAResidualAddAndSaysWhy) {
  const Graph block = graph_from(graph_json(
      R"([{"name": "x", "shape": [2, 8, 16, 16], "dtype": "f32"},
          {"name": "w", "shape": [8, 8, 3, 3], "dtype": "f32", "role": "weight"},
          {"name": "mean", "shape": [8], "dtype": "f32"}, {"name": "var", "shape": [8], "dtype": "f32"},
          {"name": "gamma", "shape": [8], "dtype": "f32"}, {"name": "beta", "shape": [8], "dtype": "f32"}])",
      R"([{"name": "conv", "op": "conv2d", "inputs": ["x", "w"], "attrs": {"padding": 1}},
          {"name": "bn", "op": "batchnorm", "inputs": ["conv", "mean", "var", "gamma", "beta"], "attrs": {"axis": 1}},
          {"name": "sum", "op": "add", "inputs": ["bn", "x"]}, {"name": "y", "op": "relu", "inputs": ["sum"]}])",
      R"(["y"])"));
  const LibraryEpilogue e = of(block, {"conv", "bn", "sum", "y"});
  EXPECT_EQ(e.absorbed.size(), 1u);
  EXPECT_EQ(e.stop, node(block, "sum"));
  EXPECT_NE(e.message.find("residual `add` stays a kernel of its own"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("legacy fused call, NCHW"), std::string::npos) << e.message;
}

// x [rows, 32] @ W [32, 16] + b -> `act`, in `dtype`.
Graph mlp(const std::string& dtype, const std::string& act, int rows = 64) {
  const std::string t = R"(, "dtype": ")" + dtype + R"("})";
  return graph_from(graph_json(
      R"([{"name": "x", "shape": [)" + std::to_string(rows) + R"(, 32])" + t + R"(, {"name": "W", "shape": [32, 16])" + t +
          R"(, {"name": "b", "shape": [16])" + t + "]",
      R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]}, {"name": "add", "op": "add", "inputs": ["mm", "b"]},
          {"name": "y", "op": ")" + act + R"(", "inputs": ["add"]}])",
      R"(["y"])"));
}

TEST(LibraryEpilogue, CudnnsMatmulGraphTakesWhatCublasLtCannotInHalfPrecision) {
  for (const char* act : {"gelu", "silu", "sigmoid", "tanh"}) {
    const Graph bf16 = mlp("bf16", act);
    const LibraryEpilogue e = of(bf16, {"mm", "add", "y"});
    EXPECT_TRUE(e.expressible()) << act << ": " << e.message;
    EXPECT_EQ(e.library, "cuDNN") << act;
  }
  // What cuBLASLt takes stays there.
  EXPECT_EQ(of(mlp("bf16", "relu"), {"mm", "add", "y"}).library, "cuBLASLt");
  // f32, or rows that are not a multiple of 8: cuBLASLt's reason, then the graph's.
  const LibraryEpilogue f32 = of(mlp("f32", "gelu"), {"mm", "add", "y"});
  EXPECT_FALSE(f32.expressible());
  EXPECT_NE(f32.message.find("erf-based"), std::string::npos) << f32.message;
  EXPECT_NE(f32.message.find("f16 and bf16 only"), std::string::npos) << f32.message;
  const LibraryEpilogue odd = of(mlp("bf16", "gelu", 60), {"mm", "add", "y"});
  EXPECT_FALSE(odd.expressible());
  EXPECT_NE(odd.message.find("multiples of 8"), std::string::npos) << odd.message;
  // A step the graph has no operation for.
  const CudnnMatmulTail exp = cudnn_matmul_tail(mlp("bf16", "exp"), std::vector<NodeId>{0, 1, 2}, 0);
  EXPECT_FALSE(exp.fits());
  EXPECT_EQ(exp.stop, NodeId{2});
  EXPECT_EQ(exp.steps.size(), 1u);  // the bias add before it
  EXPECT_NE(exp.why_not.find("no step for `exp`"), std::string::npos) << exp.why_not;
  EXPECT_EQ(cudnn_pointwise("gelu"), CudnnPointwise::gelu_erf);
  EXPECT_EQ(cudnn_pointwise("add(residual)"), CudnnPointwise::add_tensor);
  EXPECT_EQ(cudnn_pointwise("add(broadcast)"), std::nullopt);
}

// Inputs of a [64, 32] x [32, 16] matmul in `dtype`, with a bias vector and a residual.
std::string dag_inputs(const std::string& dtype) {
  const std::string t = R"(, "dtype": ")" + dtype + R"("})";
  return R"([{"name": "x", "shape": [64, 32])" + t + R"(, {"name": "W", "shape": [32, 16])" + t +
         R"(, {"name": "b", "shape": [16])" + t + R"(, {"name": "r", "shape": [64, 16])" + t + "]";
}

std::vector<NodeId> all_nodes(const Graph& g) {
  std::vector<NodeId> nodes;
  for (NodeId n = 0; n < g.num_nodes(); ++n) nodes.push_back(n);
  return nodes;
}

TEST(LibraryEpilogue, CudnnsMatmulGraphTakesADagAfterTheMatmul) {
  // SiLU written out (x * sigmoid(x)) and TVM's add(c, add(c, 1)): the product is read twice.
  const Graph silu = graph_from(graph_json(dag_inputs("bf16"), R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
      {"name": "s", "op": "sigmoid", "inputs": ["mm"]}, {"name": "y", "op": "mul", "inputs": ["mm", "s"]}])",
                                           R"(["y"])"));
  const LibraryEpilogue e = library_epilogue(silu, all_nodes(silu), node(silu, "mm"));
  EXPECT_TRUE(e.expressible()) << e.message;
  EXPECT_EQ(e.library, "cuDNN");
  EXPECT_EQ(e.absorbed, (std::vector<NodeId>{node(silu, "s"), node(silu, "y")}));
  const CudnnMatmulTail t = cudnn_matmul_tail(silu, all_nodes(silu), node(silu, "mm"));
  ASSERT_TRUE(t.fits()) << t.why_not;
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].op, CudnnPointwise::sigmoid);
  EXPECT_EQ(t.steps[0].input, 0);
  EXPECT_EQ(t.steps[1].op, CudnnPointwise::mul_value);
  EXPECT_EQ(t.steps[1].input, 0);  // mm, then the sigmoid's result (value 1)
  EXPECT_EQ(t.steps[1].other, 1);

  const Graph tvm = graph_from(graph_json(dag_inputs("f16"), R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
      {"name": "bias", "op": "add", "inputs": ["mm", "b"]}, {"name": "one", "op": "add", "inputs": ["bias", 1.0]},
      {"name": "y", "op": "add", "inputs": ["bias", "one"]}, {"name": "z", "op": "add", "inputs": ["r", "y"]}])",
                                          R"(["z"])"));
  const CudnnMatmulTail tt = cudnn_matmul_tail(tvm, all_nodes(tvm), node(tvm, "mm"));
  ASSERT_TRUE(tt.fits()) << tt.why_not;
  ASSERT_EQ(tt.steps.size(), 4u);
  EXPECT_EQ(tt.steps[0].op, CudnnPointwise::add_bias);
  EXPECT_EQ(tt.steps[0].operand, tvm.find_value("b"));
  EXPECT_EQ(tt.steps[1].op, CudnnPointwise::add_scalar);
  EXPECT_EQ(tt.steps[1].scalar, 1.0);
  EXPECT_EQ(tt.steps[2].op, CudnnPointwise::add_value);
  EXPECT_EQ(tt.steps[2].input, 1);
  EXPECT_EQ(tt.steps[2].other, 2);
  EXPECT_EQ(tt.steps[3].op, CudnnPointwise::add_tensor);  // the residual, on either side of the add
  EXPECT_EQ(tt.steps[3].input, 3);
  EXPECT_EQ(library_epilogue(tvm, all_nodes(tvm), node(tvm, "mm")).library, "cuDNN");
}

// TVM's conv -> add(1) -> add(conv, that): the convolution's output is read twice, and the refusal says why no
// cuDNN call takes it here.
TEST(LibraryEpilogue, ADagAfterAConvolutionSaysWhyItIsASecondKernel) {
  const Graph g = graph_from(graph_json(R"([{"name": "x", "shape": [2, 8, 16, 16], "dtype": "f32"},
                                            {"name": "w", "shape": [8, 8, 3, 3], "dtype": "f32"}])",
                                        R"([{"name": "c", "op": "conv2d", "inputs": ["x", "w"], "attrs": {"padding": [1, 1]}},
                                            {"name": "one", "op": "add", "inputs": ["c", 1.0]},
                                            {"name": "y", "op": "add", "inputs": ["c", "one"]}])",
                                        R"(["y"])"));
  const LibraryEpilogue e = library_epilogue(g, all_nodes(g), node(g, "c"));
  EXPECT_FALSE(e.expressible());
  EXPECT_EQ(e.library, "cuDNN");
  EXPECT_NE(e.message.find("a DAG after a convolution is not built here"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("an f32 convolution's call only through an engine it compiles at run time"), std::string::npos)
      << e.message;
  EXPECT_NE(e.message.find("second kernel"), std::string::npos) << e.message;
  // The measurement was of f32: a bf16 convolution's refusal does not carry it over.
  std::string json = graph_json(R"([{"name": "x", "shape": [2, 8, 16, 16], "dtype": "bf16"},
                                    {"name": "w", "shape": [8, 8, 3, 3], "dtype": "bf16"}])",
                                R"([{"name": "c", "op": "conv2d", "inputs": ["x", "w"], "attrs": {"padding": [1, 1]}},
                                    {"name": "one", "op": "add", "inputs": ["c", 1.0]},
                                    {"name": "y", "op": "add", "inputs": ["c", "one"]}])",
                                R"(["y"])");
  const Graph h = graph_from(json);
  const LibraryEpilogue b = library_epilogue(h, all_nodes(h), node(h, "c"));
  EXPECT_FALSE(b.expressible());
  EXPECT_NE(b.message.find("pointwise graphs after a bf16 convolution are not measured here"), std::string::npos) << b.message;
  EXPECT_EQ(b.message.find("compiles at run time"), std::string::npos) << b.message;
}

TEST(LibraryEpilogue, ADagAfterTheMatmulSaysWhyNoGraphTakesIt) {
  const std::string dag = R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
      {"name": "s", "op": "sigmoid", "inputs": ["mm"]}, {"name": "y", "op": "mul", "inputs": ["mm", "s"]}])";
  // f32: cuBLASLt takes none of it and the graph is for half precision.
  const Graph f32 = graph_from(graph_json(dag_inputs("f32"), dag, R"(["y"])"));
  const LibraryEpilogue e = library_epilogue(f32, all_nodes(f32), node(f32, "mm"));
  EXPECT_FALSE(e.expressible());
  EXPECT_NE(e.message.find("not on the single chain"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("no cuDNN matmul graph takes the group: s (sigmoid): cuDNN's matmul graph is used for f16 "
                           "and bf16 only"),
            std::string::npos)
      << e.message;
  // An intermediate value stored for another reader: the graph writes one output.
  const Graph stored = graph_from(graph_json(dag_inputs("bf16"), dag, R"(["y", "s"])"));
  const CudnnMatmulTail st = cudnn_matmul_tail(stored, all_nodes(stored), node(stored, "mm"));
  EXPECT_FALSE(st.fits());
  EXPECT_EQ(st.stop, node(stored, "y"));
  EXPECT_NE(st.why_not.find("s is stored for use outside the kernel; the graph writes one output, y"),
            std::string::npos)
      << st.why_not;
  // A value nothing reads: the graph keeps it on chip for no step, so it is refused rather than dropped.
  const Graph dead = graph_from(graph_json(dag_inputs("bf16"), R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
      {"name": "s", "op": "sigmoid", "inputs": ["mm"]}, {"name": "y", "op": "relu", "inputs": ["mm"]}])",
                                           R"(["y"])"));
  const CudnnMatmulTail d = cudnn_matmul_tail(dead, all_nodes(dead), node(dead, "mm"));
  EXPECT_FALSE(d.fits());
  EXPECT_EQ(d.stop, node(dead, "s"));
  EXPECT_NE(d.why_not.find("s is read by nothing"), std::string::npos) << d.why_not;
  // A transpose folded into the matmul's operand with a DAG after it: the graph reads operands as stored.
  const Graph folded = graph_from(graph_json(R"([{"name": "xt", "shape": [32, 64], "dtype": "bf16"},
                                                 {"name": "W", "shape": [32, 16], "dtype": "bf16"}])",
                                             R"([{"name": "x", "op": "transpose", "inputs": ["xt"], "attrs": {"perm": [1, 0]}},
                                                 {"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                                 {"name": "s", "op": "sigmoid", "inputs": ["mm"]},
                                                 {"name": "y", "op": "mul", "inputs": ["mm", "s"]}])",
                                             R"(["y"])"));
  const CudnnMatmulTail ft = cudnn_matmul_tail(folded, all_nodes(folded), node(folded, "mm"));
  EXPECT_NE(ft.why_not.find("operands as stored, not transposed"), std::string::npos) << ft.why_not;
  EXPECT_FALSE(library_epilogue(folded, all_nodes(folded), node(folded, "mm")).expressible());
  // A multiply by a tensor of the output's shape (SwiGLU's gate) is refused: measured no faster.
  const Graph gate = graph_from(graph_json(dag_inputs("bf16"), R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
      {"name": "y", "op": "mul", "inputs": ["mm", "r"]}])",
                                           R"(["y"])"));
  EXPECT_NE(cudnn_matmul_tail(gate, all_nodes(gate), node(gate, "mm")).why_not.find("SwiGLU's gate"), std::string::npos);
  // A multiply by a per-column vector (LayerScale's gamma) is a step; one broadcast along rows is not.
  // [1, N] is a per-column vector too; [M, 1], [] and [1] are not.
  const std::string inputs = R"([{"name": "x", "shape": [64, 32], "dtype": "bf16"}, {"name": "W", "shape": [32, 16], "dtype": "bf16"},
                                 {"name": "gamma", "shape": [16], "dtype": "bf16"}, {"name": "rows", "shape": [64, 1], "dtype": "bf16"}])";
  const Graph scaled = graph_from(graph_json(inputs, R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
      {"name": "y", "op": "mul", "inputs": ["gamma", "mm"]}])",
                                             R"(["y"])"));
  const CudnnMatmulTail gamma = cudnn_matmul_tail(scaled, all_nodes(scaled), node(scaled, "mm"));
  ASSERT_TRUE(gamma.fits()) << gamma.why_not;
  EXPECT_EQ(gamma.steps[0].op, CudnnPointwise::mul_bias);
  EXPECT_EQ(gamma.steps[0].operand, scaled.find_value("gamma"));
  const Graph per_row = graph_from(graph_json(inputs, R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
      {"name": "y", "op": "mul", "inputs": ["mm", "rows"]}])",
                                              R"(["y"])"));
  const CudnnMatmulTail rows = cudnn_matmul_tail(per_row, all_nodes(per_row), node(per_row, "mm"));
  EXPECT_NE(rows.why_not.find("`mul` of a tensor broadcast to the output"), std::string::npos) << rows.why_not;
  EXPECT_FALSE(library_epilogue(per_row, all_nodes(per_row), node(per_row, "mm")).expressible());
  for (const auto& [shape, op] : {std::pair<std::string, CudnnPointwise>{"[1, 16]", CudnnPointwise::add_bias},
                                  {"[64, 1]", CudnnPointwise::add_value}, {"[]", CudnnPointwise::add_value},
                                  {"[1]", CudnnPointwise::add_value}}) {
    const Graph b = graph_from(graph_json(R"([{"name": "x", "shape": [64, 32], "dtype": "bf16"},
                                              {"name": "W", "shape": [32, 16], "dtype": "bf16"},
                                              {"name": "c", "shape": )" + shape + R"(, "dtype": "bf16"}])",
                                          R"([{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                              {"name": "y", "op": "add", "inputs": ["mm", "c"]}])",
                                          R"(["y"])"));
    const CudnnMatmulTail t = cudnn_matmul_tail(b, all_nodes(b), node(b, "mm"));
    if (op == CudnnPointwise::add_bias) {  // add_value stands for "refused" here
      ASSERT_TRUE(t.fits()) << shape << ": " << t.why_not;
      EXPECT_EQ(t.steps[0].op, op) << shape;
    } else {
      EXPECT_NE(t.why_not.find("broadcast to the output"), std::string::npos) << shape << ": " << t.why_not;
    }
  }
}

}  // namespace
}  // namespace fx
