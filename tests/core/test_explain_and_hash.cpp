// The why-not answer for two nodes (core/fusion/explain.cpp) and the content hashes run reports carry.
#include "core/graph/content_hash.h"
#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

using testing::graph_from;
using testing::graph_json;
using testing::node;
using testing::sample;
using testing::test_device;

const char* kX = R"([{"name": "x", "shape": [1024, 1024], "dtype": "f32"},
                     {"name": "W", "shape": [1024, 1024], "dtype": "f32", "role": "weight"}])";

// A softmax feeding a matmul is one of the matmul's operands: the reason says so in that order.
TEST(Explain, AReductionBeforeAMatmulIsNamedAsTheOperandsProducer) {
  const Graph g = graph_from(graph_json(kX, R"([{"name": "s", "op": "softmax", "inputs": ["x"], "attrs": {"axis": -1}},
                                                {"name": "m", "op": "matmul", "inputs": ["s", "W"]}])", R"(["m"])"));
  FusionEngine engine(g, test_device());
  const FusionDecision d = engine.explain(node(g, "s"), node(g, "m"));
  EXPECT_EQ(d.reason, Reason::contraction_prologue) << d.message;
  EXPECT_NE(d.message.find("m (matmul) reads the output of s (softmax)"), std::string::npos) << d.message;
  EXPECT_EQ(d.message.find("s (softmax) reduces"), std::string::npos) << d.message;
}

// A reduction after the matmul: the matmul's tiles are written before the rows can be read.
TEST(Explain, AReductionAfterAMatmulNeedsItsTilesWrittenFirst) {
  const Graph g = graph_from(graph_json(kX, R"([{"name": "m", "op": "matmul", "inputs": ["x", "W"]},
                                                {"name": "s", "op": "softmax", "inputs": ["m"], "attrs": {"axis": -1}}])",
                                        R"(["s"])"));
  FusionEngine engine(g, test_device());
  const FusionDecision d = engine.explain(node(g, "m"), node(g, "s"));
  EXPECT_EQ(d.reason, Reason::reduction_axis) << d.message;
  EXPECT_NE(d.message.find("m (matmul)'s output tiles must be written before s (softmax)"), std::string::npos)
      << d.message;
}

// a and s meet only through the matmul: the answer is the path and the hop the engine refuses.
TEST(Explain, NodesJoinedThroughAnotherKernelGetThePathAndTheBlockingHop) {
  const Graph g = graph_from(graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                                {"name": "m", "op": "matmul", "inputs": ["a", "W"]},
                                                {"name": "s", "op": "softmax", "inputs": ["m"], "attrs": {"axis": -1}}])",
                                        R"(["s"])"));
  FusionEngine engine(g, test_device());
  const PairExplanation why = engine.explain_pair(node(g, "s"), node(g, "a"));
  EXPECT_EQ(why.decision.reason, Reason::contraction_prologue) << why.decision.message;
  EXPECT_EQ(why.path, (std::vector<NodeId>{node(g, "a"), node(g, "m"), node(g, "s")}));
  ASSERT_TRUE(why.blocking.has_value());
  EXPECT_EQ(why.blocking->first, node(g, "a"));
  EXPECT_EQ(why.blocking->second, node(g, "m"));
  EXPECT_NE(why.decision.message.find("a (exp) -> m (matmul) -> s"), std::string::npos) << why.decision.message;
}

// After a merge the group is named after its first node; the answer names the node the user picked.
TEST(Explain, NamesThePickedNodesAndTheirKernels) {
  const Graph g = sample("gpt2_block.json");
  FusionEngine engine(g, test_device());
  engine.auto_fuse();
  const FusionDecision d = engine.explain(node(g, "q_b"), node(g, "q_r"));
  ASSERT_FALSE(d.fuse) << d.message;
  EXPECT_EQ(d.message.rfind("q_b (in kernel g:q_mm)", 0), 0u) << d.message;
}

// A multiplication by a scalar right after a matmul is the GEMM's alpha, not a refused "mul" epilogue.
TEST(Explain, AScalarMultiplyAfterAMatmulIsTheGemmsAlpha) {
  const Graph g = sample("gpt2_block.json");
  FusionEngine engine(g, test_device());
  const FusionDecision d = engine.explain(node(g, "scores"), node(g, "scaled"));
  EXPECT_TRUE(d.fuse) << d.message;
  EXPECT_EQ(d.message.find("no `mul` epilogue"), std::string::npos) << d.message;
}

TEST(ContentHash, FollowsTheGraphAndThePlanNotTheirNames) {
  const Graph g = sample("gpt2_block.json");
  const Graph other = sample("relu_mul_add.json");
  EXPECT_EQ(graph_content_hash(g).size(), 16u);
  EXPECT_EQ(graph_content_hash(g), graph_content_hash(sample("gpt2_block.json")));
  EXPECT_NE(graph_content_hash(g), graph_content_hash(other));
  FusionEngine engine(g, test_device());
  const std::string unfused = plan_content_hash(g, engine.plan());
  engine.auto_fuse();
  const std::string fused = plan_content_hash(g, engine.plan());
  EXPECT_NE(unfused, fused);
  // The same grouping reached another way hashes the same.
  FusionEngine again(g, test_device());
  again.auto_fuse();
  EXPECT_EQ(plan_content_hash(g, again.plan()), fused);
}

}  // namespace
}  // namespace fx
