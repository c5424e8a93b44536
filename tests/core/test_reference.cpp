// The float64 reference evaluator: each op family against values worked out by hand, the numerics shared
// with the generated kernels (Philox, f16/bf16 rounding) against published and hand-derived values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/graph/graph_io.h"
#include "core/reference/numerics.h"
#include "core/reference/reference.h"

namespace fx {
namespace {

// A graph from inputs/nodes JSON fragments; the last node is the output.
Graph graph(const std::string& inputs, const std::string& nodes, const std::string& output) {
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "t", "inputs": [)" + inputs +
                      R"(], "nodes": [)" + nodes + R"(], "outputs": [")" + output + R"("]})");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : format_diagnostics(g.errors()));
  return std::move(g).value();
}

std::string in(const std::string& name, const std::string& shape, const std::string& dtype = "f32") {
  return R"({"name": ")" + name + R"(", "shape": )" + shape + R"(, "dtype": ")" + dtype + R"("})";
}

// Evaluates and returns the named value.
std::vector<double> eval(const Graph& g, const std::vector<std::vector<double>>& inputs, const std::string& value) {
  std::vector<HostTensor> host;
  for (std::size_t i = 0; i < inputs.size(); ++i) host.push_back({g.inputs()[i].type, inputs[i]});
  auto r = evaluate_reference(g, host);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : format_diagnostics(r.errors()));
  if (!r.ok()) return {};
  return (*r)[static_cast<std::size_t>(*g.find_value(value))].values;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(ReferenceNumerics, PhiloxMatchesTheRandom123KnownAnswer) {
  // Random123's kat_vectors: philox4x32-10, counter 0 and key 0 give 6627e8d5 as the first word.
  EXPECT_EQ(philox_bits24(0, 0), 0x6627e8u);
  EXPECT_NE(philox_bits24(0, 1), philox_bits24(0, 0));
  EXPECT_NE(philox_bits24(1, 0), philox_bits24(0, 0));
  EXPECT_EQ(dropout_threshold(0.1), 1677722u);  // the constant the generated dropout compares with
}

TEST(ReferenceNumerics, HalfAndBfloatRoundToNearestEven) {
  const double u16 = std::ldexp(1.0, -10), u8 = std::ldexp(1.0, -7);  // ulp at 1.0
  EXPECT_EQ(round_to_dtype(1.0 + u16 / 2, DType::f16), 1.0);                  // tie: to the even mantissa
  EXPECT_EQ(round_to_dtype(1.0 + 3 * u16 / 2, DType::f16), 1.0 + 2 * u16);    // tie: up to the even one
  EXPECT_EQ(round_to_dtype(1.0 + 0.6 * u16, DType::f16), 1.0 + u16);
  EXPECT_EQ(round_to_dtype(65519.0, DType::f16), 65504.0);
  EXPECT_TRUE(std::isinf(round_to_dtype(65520.0, DType::f16)));
  EXPECT_EQ(round_to_dtype(std::ldexp(1.0, -25), DType::f16), 0.0);                      // subnormal tie to 0
  EXPECT_EQ(round_to_dtype(std::ldexp(3.0, -26), DType::f16), std::ldexp(1.0, -24));     // 0.75 ulp up
  EXPECT_EQ(round_to_dtype(1.0 + u8 / 2, DType::bf16), 1.0);
  EXPECT_EQ(round_to_dtype(1.0 + 3 * u8 / 2, DType::bf16), 1.0 + 2 * u8);
  EXPECT_EQ(round_to_dtype(-2.7, DType::i32), -2.0);
  EXPECT_EQ(round_to_dtype(0.1, DType::f32), static_cast<double>(0.1f));
}

TEST(Reference, ElementwiseBroadcastsAndScalars) {
  const Graph g = graph(in("x", "[2, 3]") + "," + in("b", "[3]"),
                        R"({"name": "a", "op": "add", "inputs": ["x", "b"]},
                           {"name": "m", "op": "mul", "inputs": ["a", -2]},
                           {"name": "y", "op": "relu", "inputs": ["m"]},
                           {"name": "w", "op": "where", "inputs": ["c", "x", "b"]},
                           {"name": "c", "op": "gt", "inputs": ["x", 0]})",
                        "y");
  const std::vector<std::vector<double>> x = {{1, -2, 3, -4, 5, -6}, {10, 20, 30}};
  expect_near(eval(g, x, "a"), {11, 18, 33, 6, 25, 24});
  expect_near(eval(g, x, "y"), {0, 0, 0, 0, 0, 0});
  expect_near(eval(g, x, "m"), {-22, -36, -66, -12, -50, -48});
  expect_near(eval(g, x, "w"), {1, 20, 3, 10, 5, 30});
}

TEST(Reference, UnaryFunctionsAndIntegerDivision) {
  const Graph g = graph(in("x", "[2]") + "," + in("i", "[2]", "i32"),
                        R"({"name": "g", "op": "gelu_tanh", "inputs": ["x"]},
                           {"name": "s", "op": "silu", "inputs": ["x"]},
                           {"name": "r", "op": "rsqrt", "inputs": ["x"]},
                           {"name": "d", "op": "div", "inputs": ["i", 2]})",
                        "g");
  const std::vector<std::vector<double>> v = {{1.0, 4.0}, {7, -7}};
  const double k = std::sqrt(2.0 / M_PI);
  expect_near(eval(g, v, "g"), {0.5 * (1 + std::tanh(k * 1.044715)), 2.0 * (1 + std::tanh(k * (4 + 0.044715 * 64)))});
  expect_near(eval(g, v, "s"), {1 / (1 + std::exp(-1.0)), 4 / (1 + std::exp(-4.0))});
  expect_near(eval(g, v, "r"), {1.0, 0.5});
  expect_near(eval(g, v, "d"), {3, -3});  // C division truncates toward zero
}

TEST(Reference, CastsRoundEveryNodeToItsDtype) {
  const Graph g = graph(in("x", "[3]"), R"({"name": "h", "op": "cast", "inputs": ["x"], "attrs": {"dtype": "f16"}},
                                           {"name": "p", "op": "add", "inputs": ["h", 1]},
                                           {"name": "i", "op": "cast", "inputs": ["x"], "attrs": {"dtype": "i32"}},
                                           {"name": "b", "op": "cast", "inputs": ["x"], "attrs": {"dtype": "bf16"}})",
                        "p");
  const std::vector<std::vector<double>> x = {{1.0 + 1.0 / 4096, 1000.3, -2.5}};
  expect_near(eval(g, x, "h"), {1.0, 1000.5, -2.5});
  expect_near(eval(g, x, "p"), {2.0, 1001.5, -1.5});  // computed in f16: each result rounded
  expect_near(eval(g, x, "i"), {1, 1000, -2});
  expect_near(eval(g, x, "b"), {1.0, 1000.0, -2.5});
}

TEST(Reference, ReductionsOverAxesWithKeepdim) {
  const Graph g = graph(in("x", "[2, 3]"),
                        R"({"name": "s0", "op": "sum", "inputs": ["x"], "attrs": {"axis": 0}},
                           {"name": "m1", "op": "mean", "inputs": ["x"], "attrs": {"axis": 1, "keepdim": true}},
                           {"name": "mx", "op": "max", "inputs": ["x"], "attrs": {"axis": [0, 1]}},
                           {"name": "mn", "op": "min", "inputs": ["x"], "attrs": {"axis": -1}})",
                        "s0");
  const std::vector<std::vector<double>> x = {{1, 2, 3, 4, 5, 9}};
  expect_near(eval(g, x, "s0"), {5, 7, 12});
  expect_near(eval(g, x, "m1"), {2, 6});
  expect_near(eval(g, x, "mx"), {9});
  expect_near(eval(g, x, "mn"), {1, 4});
}

TEST(Reference, SoftmaxOnAnyAxis) {
  const Graph g = graph(in("x", "[2, 2]"), R"({"name": "y", "op": "softmax", "inputs": ["x"], "attrs": {"axis": 0}})", "y");
  const double e = 1 / (1 + std::exp(-2.0));  // softmax of (2, 0) for the first entry
  expect_near(eval(g, {{3, 0, 1, 0}}, "y"), {e, 0.5, 1 - e, 0.5});
}

TEST(Reference, LayernormOverTrailingDimsRmsnormAndBatchnorm) {
  const Graph g = graph(in("x", "[1, 2, 2]") + "," + in("g", "[2, 2]") + "," + in("b", "[2, 2]") + "," + in("v", "[2]"),
                        R"({"name": "ln", "op": "layernorm", "inputs": ["x", "g", "b"], "attrs": {"axis": 1, "eps": 1e-300}},
                           {"name": "rn", "op": "rmsnorm", "inputs": ["x", "v"], "attrs": {"eps": 1e-300}},
                           {"name": "bn", "op": "batchnorm", "inputs": ["x", "v", "v", "v", "v"], "attrs": {"eps": 1e-300}})",
                        "ln");
  const std::vector<std::vector<double>> v = {{1, 3, 5, 7}, {1, 1, 1, 2}, {0, 0, 0, 10}, {1, 4}};
  // mean 4, population variance 5: (x - 4) / sqrt(5) * g + b
  const double s5 = std::sqrt(5.0);
  expect_near(eval(g, v, "ln"), {-3 / s5, -1 / s5, 1 / s5, 2 * 3 / s5 + 10});
  // rows (1, 3) and (5, 7): rms sqrt(5) and sqrt(37); gamma (1, 4)
  expect_near(eval(g, v, "rn"), {1 / s5, 12 / s5, 5 / std::sqrt(37.0), 28 / std::sqrt(37.0)});
  // channel axis 1 (size 2): channel 0 has mean 1, var 1, gamma 1, beta 1; channel 1 has 4, 4, 4, 4
  expect_near(eval(g, v, "bn"), {1, 3, 4 + 4 * (5 - 4) / 2.0, 4 + 4 * (7 - 4) / 2.0});
}

TEST(Reference, BatchedMatmulWithTransposesAndBroadcastBatch) {
  const Graph g = graph(in("a", "[2, 2, 3]") + "," + in("b", "[2, 3]"),
                        R"({"name": "y", "op": "matmul", "inputs": ["a", "b"], "attrs": {"transpose_b": true}},
                           {"name": "t", "op": "matmul", "inputs": ["b", "b"], "attrs": {"transpose_a": true}})",
                        "y");
  const std::vector<std::vector<double>> v = {{1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 1, 1}, {1, 2, 3, 4, 5, 6}};
  // batch 0 rows pick columns of b^T; batch 1 rows (0,0,1) and (1,1,1)
  expect_near(eval(g, v, "y"), {1, 4, 2, 5, 3, 6, 6, 15});
  // b^T b: [3, 3]
  expect_near(eval(g, v, "t"), {17, 22, 27, 22, 29, 36, 27, 36, 45});
}

TEST(Reference, Conv2dStridePaddingDilationGroups) {
  const Graph g = graph(in("x", "[1, 2, 3, 3]") + "," + in("w", "[2, 1, 2, 2]") + "," + in("bias", "[2]"),
                        R"({"name": "y", "op": "conv2d", "inputs": ["x", "w", "bias"],
                            "attrs": {"padding": 1, "stride": 2, "groups": 2}},
                           {"name": "d", "op": "conv2d", "inputs": ["x", "w"], "attrs": {"dilation": 2, "groups": 2}})",
                        "y");
  std::vector<double> x(18);
  for (int i = 0; i < 18; ++i) x[static_cast<std::size_t>(i)] = i;  // channel 0: 0..8, channel 1: 9..17
  const std::vector<std::vector<double>> v = {x, {1, 0, 0, 0, 0, 0, 0, 1}, {100, 200}};
  // Channel 0 weight picks the top-left tap, channel 1 the bottom-right; padded input, stride 2: 2x2 outputs.
  // out0[p][q] = x0[2p-1][2q-1] (0 outside); out1[p][q] = x1[2p][2q].
  expect_near(eval(g, v, "y"), {100, 100, 100, 104, 209, 211, 215, 217});
  // Dilation 2 on 3x3: one output per channel: x0[0][0] and x1[2][2].
  expect_near(eval(g, v, "d"), {0, 17});
}

TEST(Reference, LayoutOps) {
  const Graph g = graph(in("x", "[2, 3]"),
                        R"({"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [1, 0]}},
                           {"name": "r", "op": "reshape", "inputs": ["t"], "attrs": {"shape": [-1]}},
                           {"name": "c", "op": "concat", "inputs": ["x", "x"], "attrs": {"axis": 1}},
                           {"name": "s", "op": "slice", "inputs": ["c"], "attrs": {"axis": 1, "start": -5, "end": 6, "step": 2}})",
                        "r");
  const std::vector<std::vector<double>> x = {{1, 2, 3, 4, 5, 6}};
  expect_near(eval(g, x, "r"), {1, 4, 2, 5, 3, 6});
  expect_near(eval(g, x, "c"), {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  expect_near(eval(g, x, "s"), {2, 1, 3, 5, 4, 6});  // columns 1, 3, 5 of the concatenation
}

TEST(Reference, SortAndTopkAlongAnAxis) {
  const Graph g = graph(in("x", "[2, 3]"),
                        R"({"name": "s", "op": "sort", "inputs": ["x"]},
                           {"name": "d", "op": "sort", "inputs": ["x"], "attrs": {"axis": 0, "descending": true}},
                           {"name": "k", "op": "topk", "inputs": ["x"], "attrs": {"k": 2}})",
                        "s");
  const std::vector<std::vector<double>> x = {{3, 1, 2, -1, 5, 0}};
  expect_near(eval(g, x, "s"), {1, 2, 3, -1, 0, 5});
  expect_near(eval(g, x, "d"), {3, 5, 2, -1, 1, 0});
  expect_near(eval(g, x, "k"), {3, 2, 5, 0});
}

TEST(Reference, MaxPool2dTreatsPaddingAsMinusInfinityAndKeepsNaN) {
  const Graph g = graph(in("x", "[1, 2, 3, 3]"),
                        R"({"name": "y", "op": "max_pool2d", "inputs": ["x"], "attrs": {"kernel_size": 3, "stride": 2, "padding": 1}},
                           {"name": "d", "op": "max_pool2d", "inputs": ["x"], "attrs": {"kernel_size": 2, "dilation": 2}})",
                        "y");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Channel 0: all negative (padding must not turn into zeros); channel 1 holds a NaN at (1, 1).
  const std::vector<std::vector<double>> v = {{-9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, nan, 5, 6, 7, 8}};
  const auto y = eval(g, v, "y");  // 2x2 windows per channel, each centred on an even coordinate
  ASSERT_EQ(y.size(), 8u);
  const std::vector<double> ch0 = {-5, -4, -2, -1};
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(y[i], ch0[i]) << i;
  for (std::size_t i = 4; i < 8; ++i) EXPECT_TRUE(std::isnan(y[i])) << i << ": every window of channel 1 covers (1, 1)";
  // Dilation 2 on 3x3 with a 2x2 window: one output per channel, the max of the four corners.
  const auto d = eval(g, v, "d");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0], -1);
  EXPECT_EQ(d[1], 8);
}

TEST(Reference, DropoutUsesThePhiloxMaskOfTheKernels) {
  const Graph g = graph(in("x", "[4096]"), R"({"name": "y", "op": "dropout", "inputs": ["x"], "attrs": {"p": 0.25, "seed": 7}})", "y");
  const std::vector<double> x(4096, 3.0);
  const auto y = eval(g, {x}, "y");
  ASSERT_EQ(y.size(), x.size());
  int kept = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const bool keep = philox_bits24(7, i) >= dropout_threshold(0.25);
    EXPECT_EQ(y[i], keep ? 4.0 : 0.0) << i;
    kept += keep;
  }
  EXPECT_NEAR(kept / 4096.0, 0.75, 0.03);
}

TEST(Reference, RefusesCustomOpsAndMismatchedInputs) {
  const Graph g = graph(in("x", "[2]"), R"({"name": "mystery", "op": "custom", "inputs": ["x"], "shape": [2],
                                            "dtype": "f32", "attrs": {"label": "vendor op"}})",
                        "mystery");
  auto r = evaluate_reference(g, {{g.inputs()[0].type, {1, 2}}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("mystery"), std::string::npos) << r.errors()[0].message;
  auto wrong = evaluate_reference(g, {{g.inputs()[0].type, {1, 2, 3}}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.errors()[0].pointer, "/inputs/0");
  EXPECT_FALSE(evaluate_reference(g, {}).ok());
}

}  // namespace
}  // namespace fx
