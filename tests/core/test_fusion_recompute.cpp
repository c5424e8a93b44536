// Recompute against one kernel with several outputs, weighed over all consumers of a cheap producer at once.
#include <algorithm>

#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

using testing::graph_from;
using testing::graph_json;
using testing::node;
using testing::test_device;

bool recomputes(const Group& g, NodeId n) { return std::find(g.recomputed.begin(), g.recomputed.end(), n) != g.recomputed.end(); }

// p = exp(x) read by two row reductions of different extents (rows of 1024, rows of 1024 x 1024): they
// cannot share a row kernel, so one kernel with several outputs would still write p for the other and read
// it back; recomputing p inside both reads x twice and never writes p.
const char* kTwoReductions = R"([{"name": "p", "op": "exp", "inputs": ["x"]},
                                 {"name": "rows", "op": "sum", "inputs": ["p"], "attrs": {"axis": -1}},
                                 {"name": "planes", "op": "sum", "inputs": ["p"], "attrs": {"axis": [-2, -1]}}])";
const char* kX3 = R"([{"name": "x", "shape": [64, 1024, 1024], "dtype": "f32"}])";

TEST(FusionRecompute, CheapProducerOfTwoDifferentReductionsIsRecomputedInBoth) {
  const Graph g = graph_from(graph_json(kX3, kTwoReductions, R"(["rows", "planes"])"));
  FusionEngine engine(g, test_device());
  const Candidate c = *engine.candidate("e:p+rows");
  EXPECT_EQ(c.strategy, Strategy::recompute) << c.decision.message;
  EXPECT_EQ(c.recompute_in, (std::vector<std::string>{"g:rows", "g:planes"}));
  EXPECT_NE(c.decision.message.find("g:p is no longer launched"), std::string::npos) << c.decision.message;

  engine.auto_fuse();
  const Plan& plan = engine.plan();
  EXPECT_EQ(plan.kernel_count(), 2) << engine.decision_log_json();
  EXPECT_TRUE(plan.group_of_node(node(g, "p")).eliminated());
  EXPECT_TRUE(recomputes(plan.group_of_node(node(g, "rows")), node(g, "p")));
  EXPECT_TRUE(recomputes(plan.group_of_node(node(g, "planes")), node(g, "p")));
  // x read twice, p never written: the two outputs are small.
  const std::int64_t x_bytes = 64LL * 1024 * 1024 * 4;
  EXPECT_LT(plan.bytes_moved(), 2 * x_bytes + x_bytes / 100);

  // Without recompute the same graph pays for p's round trip.
  EngineOptions no_recompute;
  no_recompute.allow_recompute = false;
  FusionEngine multi(g, test_device(), no_recompute);
  multi.auto_fuse();
  EXPECT_GT(multi.plan().bytes_moved(), 3 * x_bytes);
  EXPECT_LT(plan.predicted_time_s(), multi.plan().predicted_time_s());

  // The plan round-trips through a fused graph file, recomputation included.
  auto loaded = FusionEngine::load_fused_graph(engine.save_fused_graph(), test_device());
  ASSERT_TRUE(loaded.ok()) << format_diagnostics(loaded.errors());
  EXPECT_EQ(loaded->plan(), plan);
}

TEST(FusionRecompute, ConsumersThatFitOneKernelStayOneMultiOutputKernel) {
  // exp_two_consumers: a = exp(x) read by a*2 and a+1. All three fit one kernel that reads x once.
  FusionEngine engine(testing::sample("exp_two_consumers.json"), test_device());
  const auto candidates = engine.candidates();
  ASSERT_FALSE(candidates.empty());
  for (const Candidate& c : candidates) {
    EXPECT_NE(c.strategy, Strategy::recompute) << c.id << ": " << c.decision.message;
  }
  engine.auto_fuse();
  ASSERT_EQ(engine.plan().groups().size(), 1u);
  EXPECT_TRUE(engine.plan().groups()[0].recomputed.empty());
}

TEST(FusionRecompute, AGemmCannotRecomputeItsOperandSoTheProducerIsWritten) {
  // p feeds a row reduction and a matmul's operand. Recomputing p inside the GEMM would be a prologue
  // (libraries read operands from memory), so p is written once and shared.
  const Graph g = graph_from(graph_json(
      R"([{"name": "x", "shape": [4096, 4096], "dtype": "f32"},
          {"name": "W", "shape": [4096, 4096], "dtype": "f32", "role": "weight"}])",
      R"([{"name": "p", "op": "exp", "inputs": ["x"]},
          {"name": "rows", "op": "sum", "inputs": ["p"], "attrs": {"axis": -1}},
          {"name": "mm", "op": "matmul", "inputs": ["p", "W"]}])",
      R"(["rows", "mm"])"));
  FusionEngine engine(g, test_device());
  EXPECT_EQ(engine.explain(node(g, "p"), node(g, "mm")).reason, Reason::contraction_prologue);
  engine.auto_fuse();
  const Plan& plan = engine.plan();
  EXPECT_FALSE(recomputes(plan.group_of_node(node(g, "mm")), node(g, "p")));
  EXPECT_FALSE(plan.group_of_node(node(g, "p")).eliminated());
  EXPECT_EQ(plan.group_of(node(g, "p")), plan.group_of(node(g, "rows")));
}

TEST(FusionRecompute, WeighingLooksAtEveryConsumerOfAWideProducer) {
  // One producer, eight reductions of two extents: recompute wins, every consumer takes p, and the
  // reductions of one extent then share a kernel (each consumer touched by the recompute is reconsidered).
  std::string nodes = R"([{"name": "p", "op": "exp", "inputs": ["x"]})";
  for (int i = 0; i < 8; ++i) {
    nodes += R"(, {"name": "r)" + std::to_string(i) + R"(", "op": "sum", "inputs": ["p"], "attrs": {"axis": )" +
             (i < 4 ? std::string("-1") : std::string("[-2, -1]")) + "}}";
  }
  std::string outputs = "[";
  for (int i = 0; i < 8; ++i) outputs += std::string(i ? ", " : "") + "\"r" + std::to_string(i) + "\"";
  const Graph g = graph_from(graph_json(kX3, nodes + "]", outputs + "]"));
  FusionEngine engine(g, test_device());
  engine.auto_fuse();
  EXPECT_TRUE(engine.plan().group_of_node(node(g, "p")).eliminated()) << engine.decision_log_json();
  EXPECT_EQ(engine.plan().kernel_count(), 2);
}

}  // namespace
}  // namespace fx
