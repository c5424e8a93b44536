// Every reason code has a graph that triggers it, checked through explain() on the unfused plan.
#include "core/fusion/legality.h"
#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

using testing::graph_from;
using testing::graph_json;
using testing::node;
using testing::test_device;

FusionDecision explain(const std::string& json, const std::string& a, const std::string& b, EngineOptions o = {}) {
  const Graph g = graph_from(json);
  FusionEngine engine(g, test_device(), o);
  return engine.explain(node(g, a), node(g, b));
}

const char* kX = R"([{"name": "x", "shape": [1024, 1024], "dtype": "f32"},
                     {"name": "W", "shape": [1024, 1024], "dtype": "f32", "role": "weight"}])";

TEST(FusionReasons, FusibleChainSavesTime) {
  auto d = explain(graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                      {"name": "y", "op": "relu", "inputs": ["a"]}])", R"(["y"])"), "a", "y");
  EXPECT_TRUE(d.fuse);
  EXPECT_EQ(d.reason, Reason::fusible);
  EXPECT_GT(d.numbers.at("saved_us"), 0);
}

TEST(FusionReasons, Cycle) {
  auto d = explain(graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                      {"name": "m", "op": "matmul", "inputs": ["a", "W"]},
                                      {"name": "y", "op": "add", "inputs": ["a", "m"]}])", R"(["y"])"), "a", "y");
  EXPECT_EQ(d.reason, Reason::cycle) << d.message;
  EXPECT_NE(d.message.find("g:a -> g:m -> g:y"), std::string::npos) << d.message;
}

TEST(FusionReasons, OpaqueOp) {
  auto d = explain(graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                      {"name": "s", "op": "sort", "inputs": ["a"]}])", R"(["s"])"), "a", "s");
  EXPECT_EQ(d.reason, Reason::opaque_op) << d.message;
}

TEST(FusionReasons, RandomOpInsideAReduction) {
  auto d = explain(graph_json(kX, R"([{"name": "d", "op": "dropout", "inputs": ["x"], "attrs": {"p": 0.1}},
                                      {"name": "s", "op": "sum", "inputs": ["d"], "attrs": {"axis": -1}}])",
                              R"(["s"])"),
                   "d", "s");
  EXPECT_EQ(d.reason, Reason::random_op) << d.message;
}

TEST(FusionReasons, TwoContractions) {
  auto d = explain(graph_json(kX, R"([{"name": "m1", "op": "matmul", "inputs": ["x", "W"]},
                                      {"name": "m2", "op": "matmul", "inputs": ["m1", "W"]}])", R"(["m2"])"),
                   "m1", "m2");
  EXPECT_EQ(d.reason, Reason::two_contractions) << d.message;
}

// A transpose of the last two dims read only by a matmul is read by the library with a transpose flag: it
// joins the matmul's group and is never written. Any other transpose there, or one stored for another
// consumer, is still work before the operand.
TEST(FusionReasons, TransposeOfTheLastTwoDimsFoldsIntoTheMatmulOperand) {
  const char* inputs = R"([{"name": "q", "shape": [2, 64, 32], "dtype": "f32"},
                           {"name": "k", "shape": [2, 64, 32], "dtype": "f32"}])";
  auto folded = explain(graph_json(inputs, R"([{"name": "kt", "op": "transpose", "inputs": ["k"], "attrs": {"perm": [0, 2, 1]}},
                                               {"name": "s", "op": "matmul", "inputs": ["q", "kt"]}])", R"(["s"])"),
                        "kt", "s");
  EXPECT_TRUE(folded.fuse) << folded.message;
  const char* cubes = R"([{"name": "q", "shape": [8, 8, 8], "dtype": "f32"}, {"name": "k", "shape": [8, 8, 8], "dtype": "f32"}])";
  auto batch_moved = explain(graph_json(cubes, R"([{"name": "kt", "op": "transpose", "inputs": ["k"], "attrs": {"perm": [1, 0, 2]}},
                                                    {"name": "s", "op": "matmul", "inputs": ["q", "kt"]}])", R"(["s"])"),
                             "kt", "s");
  EXPECT_EQ(batch_moved.reason, Reason::contraction_prologue) << batch_moved.message;
  auto stored = explain(graph_json(inputs, R"([{"name": "kt", "op": "transpose", "inputs": ["k"], "attrs": {"perm": [0, 2, 1]}},
                                               {"name": "s", "op": "matmul", "inputs": ["q", "kt"]}])", R"(["s", "kt"])"),
                        "kt", "s");
  EXPECT_EQ(stored.reason, Reason::contraction_prologue) << stored.message;
}

TEST(FusionReasons, ContractionPrologue) {
  auto d = explain(graph_json(kX, R"([{"name": "a", "op": "relu", "inputs": ["x"]},
                                      {"name": "m", "op": "matmul", "inputs": ["a", "W"]}])", R"(["m"])"), "a", "m");
  EXPECT_EQ(d.reason, Reason::contraction_prologue) << d.message;
  EXPECT_EQ(d.message.find("layout op"), std::string::npos) << d.message;  // relu is no layout op
  // A reshape standing first in the group is a view: the answer names the work after it.
  auto v = explain(graph_json(kX, R"([{"name": "r", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [1024, 1024]}},
                                      {"name": "a", "op": "relu", "inputs": ["r"]},
                                      {"name": "m", "op": "matmul", "inputs": ["a", "W"]}])", R"(["m"])"), "r", "m");
  EXPECT_EQ(v.reason, Reason::contraction_prologue) << v.message;
  EXPECT_NE(v.message.find("a (relu) is work before an operand"), std::string::npos) << v.message;
}

// A node beside the contraction (sharing its input) is not said to be its operand's producer.
TEST(FusionReasons, AnOpBesideAContractionIsNotCalledItsOperand) {
  auto d = explain(graph_json(kX, R"([{"name": "s", "op": "sum", "inputs": ["x"], "attrs": {"axis": [-1]}},
                                      {"name": "m", "op": "matmul", "inputs": ["x", "W"]}])", R"(["s", "m"])"),
                   "s", "m");
  EXPECT_FALSE(d.fuse);
  EXPECT_EQ(d.message.find("reads the output of"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("s (sum) is neither before nor after m (matmul)"), std::string::npos) << d.message;
}

// A reshape of a row-wise kernel's input that keeps the rows regroups none of them: the answer does not say so.
TEST(FusionReasons, AReshapeThatKeepsTheRowsIsNotSaidToRegroupThem) {
  auto d = explain(graph_json(R"([{"name": "x", "shape": [64, 32], "dtype": "f32"}])",
                              R"([{"name": "v", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [4, 16, 32]}},
                                  {"name": "n", "op": "softmax", "inputs": ["v"], "attrs": {"axis": -1}}])",
                              R"(["n"])"),
                   "v", "n");
  EXPECT_FALSE(d.fuse);
  EXPECT_EQ(d.message.find("changes which elements form a row"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("alone, the reshape is a view and moves no byte"), std::string::npos) << d.message;
}

TEST(FusionReasons, LayoutEpilogue) {
  auto d = explain(graph_json(kX, R"([{"name": "m", "op": "matmul", "inputs": ["x", "W"]},
                                      {"name": "t", "op": "transpose", "inputs": ["m"], "attrs": {"perm": [1, 0]}}])",
                              R"(["t"])"),
                   "m", "t");
  EXPECT_EQ(d.reason, Reason::layout_epilogue) << d.message;
  EXPECT_NE(d.message.find("t (transpose) moves elements"), std::string::npos) << d.message;
  // A reshape moves no element: the answer says what it does keep apart, not that it moves anything.
  auto r = explain(graph_json(kX, R"([{"name": "m", "op": "matmul", "inputs": ["x", "W"]},
                                      {"name": "v", "op": "reshape", "inputs": ["m"], "attrs": {"shape": [-1]}},
                                      {"name": "y", "op": "relu", "inputs": ["v"]}])",
                              R"(["y"])"),
                   "m", "y");
  EXPECT_EQ(r.reason, Reason::layout_epilogue) << r.message;
  EXPECT_EQ(r.message.find("moves elements"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("the reshape itself moves no byte"), std::string::npos) << r.message;
}

TEST(FusionReasons, EpilogueNotExpressible) {
  // erf gelu and silu have no cuBLASLt epilogue: the executor would run them as a second kernel.
  for (const char* op : {"gelu", "silu"}) {
    auto d = explain(graph_json(kX, std::string(R"([{"name": "m", "op": "matmul", "inputs": ["x", "W"]},
                                                    {"name": "a", "op": ")") + op + R"(", "inputs": ["m"]}])",
                                R"(["a"])"),
                     "m", "a");
    EXPECT_EQ(d.reason, Reason::epilogue_not_expressible) << d.message;
    EXPECT_NE(d.message.find("second kernel"), std::string::npos) << d.message;
  }
  auto tanh = explain(graph_json(kX, R"([{"name": "m", "op": "matmul", "inputs": ["x", "W"]},
                                         {"name": "a", "op": "gelu_tanh", "inputs": ["m"]}])", R"(["a"])"),
                      "m", "a");
  EXPECT_TRUE(tanh.fuse) << tanh.message;
}

TEST(FusionReasons, ReductionAxisOfAColumnReduction) {
  auto d = explain(graph_json(kX, R"([{"name": "s", "op": "sum", "inputs": ["x"], "attrs": {"axis": 0, "keepdim": true}},
                                      {"name": "y", "op": "sub", "inputs": ["x", "s"]}])", R"(["y"])"), "s", "y");
  EXPECT_EQ(d.reason, Reason::reduction_axis) << d.message;
}

TEST(FusionReasons, ReductionAxisAfterAMatmul) {
  auto d = explain(graph_json(kX, R"([{"name": "m", "op": "matmul", "inputs": ["x", "W"]},
                                      {"name": "p", "op": "softmax", "inputs": ["m"]}])", R"(["p"])"), "m", "p");
  EXPECT_EQ(d.reason, Reason::reduction_axis) << d.message;
}

// A reshape of a row-wise kernel's result that is only stored keeps every element's flat index: it joins the
// kernel (the exported GPT-2 block's layernorm -> view). Read again inside the group, or reshaping the
// kernel's input, it would index another shape against the rows: refused, with the reason.
TEST(FusionReasons, StoredReshapeJoinsARowKernelOtherReshapesDoNot) {
  const char* in = R"([{"name": "x", "shape": [4, 256, 64], "dtype": "f32"}])";
  auto stored = explain(graph_json(in, R"([{"name": "n", "op": "layernorm", "inputs": ["x"]},
                                           {"name": "v", "op": "reshape", "inputs": ["n"], "attrs": {"shape": [1024, 64]}}])",
                                   R"(["v"])"),
                        "n", "v");
  EXPECT_TRUE(stored.fuse) << stored.message;
  const Graph again = graph_from(graph_json(in, R"([{"name": "n", "op": "layernorm", "inputs": ["x"]},
                                                     {"name": "v", "op": "reshape", "inputs": ["n"], "attrs": {"shape": [1024, 64]}},
                                                     {"name": "y", "op": "relu", "inputs": ["v"]}])",
                                             R"(["y"])"));
  const std::vector<NodeId> all = {node(again, "n"), node(again, "v"), node(again, "y")};
  const FusionDecision read_again = check_group(again, all, EngineOptions{});
  EXPECT_FALSE(read_again.fuse);
  EXPECT_EQ(read_again.reason, Reason::reduction_axis) << read_again.message;
  EXPECT_NE(read_again.message.find("stored output"), std::string::npos) << read_again.message;
  auto before = explain(graph_json(in, R"([{"name": "v", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [1024, 64]}},
                                           {"name": "n", "op": "layernorm", "inputs": ["v"]}])",
                                   R"(["n"])"),
                        "v", "n");
  EXPECT_FALSE(before.fuse);
  EXPECT_EQ(before.reason, Reason::reduction_axis) << before.message;
}

TEST(FusionReasons, ReductionFollowedByReduction) {
  auto d = explain(graph_json(R"([{"name": "x", "shape": [8, 64, 32], "dtype": "f32"}])",
                              R"([{"name": "s1", "op": "sum", "inputs": ["x"], "attrs": {"axis": -1}},
                                  {"name": "s2", "op": "sum", "inputs": ["s1"], "attrs": {"axis": -1}}])", R"(["s2"])"),
                   "s1", "s2");
  EXPECT_EQ(d.reason, Reason::reduction_followed_by_reduction) << d.message;
}

TEST(FusionReasons, ShapeMismatch) {
  auto d = explain(graph_json(R"([{"name": "x", "shape": [1024, 1024], "dtype": "f32"},
                                  {"name": "b", "shape": [1024], "dtype": "f32"}])",
                              R"([{"name": "a", "op": "exp", "inputs": ["b"]},
                                  {"name": "y", "op": "add", "inputs": ["x", "a"]}])", R"(["y"])"),
                   "a", "y");
  EXPECT_EQ(d.reason, Reason::shape_mismatch) << d.message;
}

// A reshape read only by slices of it (a GEMM output viewed as [B, S, 3D] and split into q, k, v) joins them:
// the kernel iterates over the slices and reads the reshape's input at their flat indices. Stored as an output
// too, it would need its own iteration space, and that stays a SHAPE_MISMATCH.
TEST(FusionReasons, ReshapeReadOnlyBySlicesJoinsThem) {
  const char* inputs = R"([{"name": "x", "shape": [64, 96], "dtype": "f32"}])";
  const char* nodes = R"([{"name": "r", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [8, 8, 96]}},
                          {"name": "q", "op": "slice", "inputs": ["r"], "attrs": {"axis": 2, "start": 0, "end": 48}},
                          {"name": "k", "op": "slice", "inputs": ["r"], "attrs": {"axis": 2, "start": 48, "end": 96}}])";
  const Graph g = graph_from(graph_json(inputs, nodes, R"(["q", "k"])"));
  FusionEngine engine(g, test_device());
  engine.auto_fuse();
  EXPECT_EQ(engine.plan().kernel_count(), 1) << engine.decision_log_json();
  EXPECT_EQ(engine.plan().group_of(node(g, "r")), engine.plan().group_of(node(g, "k")));
  auto stored = explain(graph_json(inputs, nodes, R"(["r", "q", "k"])"), "r", "q");
  EXPECT_FALSE(stored.fuse);
  EXPECT_EQ(stored.reason, Reason::shape_mismatch) << stored.message;
}

TEST(FusionReasons, OutputNeededElsewhereStillFusesWithSeveralOutputs) {
  const std::string json = graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                              {"name": "y", "op": "add", "inputs": ["a", 1.0]},
                                              {"name": "m", "op": "matmul", "inputs": ["a", "W"]}])", R"(["y", "m"])");
  auto d = explain(json, "a", "y");
  EXPECT_TRUE(d.fuse);
  EXPECT_EQ(d.reason, Reason::output_needed_elsewhere) << d.message;
  EXPECT_NE(d.message.find("several outputs"), std::string::npos) << d.message;
}

TEST(FusionReasons, RegisterPressure) {
  EngineOptions o;
  o.register_budget = 2;
  auto d = explain(graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                      {"name": "y", "op": "mul", "inputs": ["a", "W"]}])", R"(["y"])"), "a", "y", o);
  EXPECT_EQ(d.reason, Reason::register_pressure) << d.message;
  EXPECT_GT(d.numbers.at("live_values"), 2);
}

TEST(FusionReasons, MaxFusionSize) {
  EngineOptions o;
  o.max_fusion_size = 1;
  auto d = explain(graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                      {"name": "y", "op": "relu", "inputs": ["a"]}])", R"(["y"])"), "a", "y", o);
  EXPECT_EQ(d.reason, Reason::max_fusion_size) << d.message;
}

TEST(FusionReasons, NotProfitable) {
  // Two compute-bound GEMMs of one x: on a device with free launches, one GEMM on concatenated weights does
  // the same math in the same time, so the model predicts no saving (as Q, K and V projections measure on the GPU).
  const Graph g = graph_from(graph_json(kX, R"([{"name": "q", "op": "matmul", "inputs": ["x", "W"]},
                                              {"name": "k", "op": "matmul", "inputs": ["x", "W"]}])", R"(["q", "k"])"));
  DeviceDescription d = test_device();
  d.launch_overhead_s = 0;
  FusionEngine engine(g, d);
  auto verdict = engine.explain(node(g, "q"), node(g, "k"));
  EXPECT_EQ(verdict.reason, Reason::not_profitable) << verdict.message;
  EXPECT_EQ(verdict.numbers.at("compute_bound"), 1);
}

TEST(FusionReasons, UserRejectedAndKindDisabled) {
  const Graph g = graph_from(graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                              {"name": "y", "op": "relu", "inputs": ["a"]}])", R"(["y"])"));
  FusionEngine engine(g, test_device());
  EXPECT_EQ(engine.reject("v:a+y", "keep them apart").reason, Reason::user_rejected);
  EXPECT_EQ(engine.explain(node(g, "a"), node(g, "y")).reason, Reason::user_rejected);
  EXPECT_EQ(engine.auto_fuse(), 0);

  EngineOptions o;
  o.disabled_kinds = {FusionKind::vertical};
  FusionEngine off(g, test_device(), o);
  EXPECT_EQ(off.explain(node(g, "a"), node(g, "y")).reason, Reason::kind_disabled);
}

TEST(FusionReasons, EveryCodeHasAName) {
  for (int r = 0; r <= static_cast<int>(Reason::not_related); ++r) {
    const auto reason = static_cast<Reason>(r);
    EXPECT_EQ(parse_reason(to_string(reason)), reason);
  }
}

}  // namespace
}  // namespace fx
