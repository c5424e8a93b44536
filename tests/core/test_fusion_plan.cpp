// Plans: state/restore round trips (what an undo history records), accept by id, fused graph files (round trip and rejection of invalid
// sections), the decision log, what-if limits, determinism.
#include <nlohmann/json.hpp>

#include "core/fusion/kernel_names.h"
#include "core/generate/transformer.h"
#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

using testing::sample;
using testing::test_device;

TEST(FusionPlan, UnfusedPlanHasOneGroupPerNode) {
  FusionEngine engine(sample("relu_mul_add.json"), test_device());
  EXPECT_EQ(engine.plan().kernel_count(), 3);
  EXPECT_EQ(engine.plan().groups()[0].id, "g:mul");
}

// A group's one name: its id on the graph and in tables, the same text in its kernels' names.
TEST(FusionPlan, KernelNamesCarryTheGroupId) {
  FusionEngine engine(sample("relu_mul_add.json"), test_device());
  EXPECT_EQ(generated_kernel_name(engine.plan(), 2), "fx_g_y");
  engine.auto_fuse();
  ASSERT_EQ(engine.plan().groups().size(), 1u);
  EXPECT_EQ(engine.plan().groups()[0].id, "g:mul");
  EXPECT_EQ(kernel_stem(engine.plan(), 0), "g_mul");
  EXPECT_EQ(group_kernel_name(engine.graph(), engine.plan(), 0), "fx_g_mul");
  FusionEngine mlp(sample("mlp_relu_f32.json"), test_device());
  mlp.auto_fuse();
  EXPECT_EQ(group_kernel_name(mlp.graph(), mlp.plan(), mlp.plan().group_of(testing::node(mlp.graph(), "mm"))), "cublaslt_g_mm");
  FusionEngine conv(sample("conv_bn_relu.json"), test_device());
  conv.auto_fuse();
  EXPECT_EQ(group_kernel_name(conv.graph(), conv.plan(), conv.plan().group_of(testing::node(conv.graph(), "conv"))), "cudnn_g_conv");
}

// Ids that become the same C identifier ("g:a.b", "g:a_b") keep kernel names apart by the later group's index.
TEST(FusionPlan, KernelNamesStayApartWhereIdsMeetAsIdentifiers) {
  const Graph g = testing::graph_from(testing::graph_json(R"([{"name": "x", "shape": [4], "dtype": "f32"}])",
      R"([{"name": "a.b", "op": "relu", "inputs": ["x"]}, {"name": "a_b", "op": "exp", "inputs": ["a.b"]}])", R"(["a_b"])"));
  const Plan plan = Plan::unfused(g, CostModel(test_device()));
  ASSERT_EQ(plan.groups().size(), 2u);
  EXPECT_EQ(kernel_stem(plan, 0), "g_a_b");
  EXPECT_EQ(kernel_stem(plan, 1), "g_a_b_1");
  EXPECT_EQ(c_identifier("layers.0/q-proj"), "layers_0_q_proj");
}

TEST(FusionPlan, RestoringARecordedStateIsExact) {
  FusionEngine engine(sample("relu_mul_add.json"), test_device());
  const FusionEngine::State unfused = engine.state();
  ASSERT_TRUE(engine.accept("v:mul+add").fuse);
  const FusionEngine::State one = engine.state();
  EXPECT_EQ(one.plan.kernel_count(), 2);
  EXPECT_EQ(one.step, 1);
  ASSERT_TRUE(engine.accept("v:mul+y").fuse);  // the merged group is named after its first node
  const FusionEngine::State two = engine.state();
  EXPECT_EQ(two.plan.kernel_count(), 1);
  engine.restore(one);
  EXPECT_EQ(engine.state(), one);
  engine.restore(unfused);
  EXPECT_EQ(engine.state(), unfused);
  EXPECT_TRUE(engine.log().size() < two.log.size());
  engine.restore(two);
  EXPECT_EQ(engine.plan().kernel_count(), 1);
  EXPECT_EQ(engine.state(), two);
}

TEST(FusionPlan, RestoringTheStateBeforeARejectionLetsAutoFuseTakeItAgain) {
  FusionEngine engine(sample("relu_mul_add.json"), test_device());
  const FusionEngine::State before = engine.state();
  engine.reject("v:mul+add");
  EXPECT_NE(engine.state(), before);
  engine.auto_fuse();
  EXPECT_EQ(engine.plan().kernel_count(), 2);  // add+y still fuse
  engine.restore(before);
  EXPECT_TRUE(engine.rejected_ids().empty());
  engine.auto_fuse();
  EXPECT_EQ(engine.plan().kernel_count(), 1);
}

TEST(FusionPlan, AcceptOfAnUnknownOrIllegalCandidateChangesNothing) {
  const Graph g = testing::graph_from(testing::graph_json(
      R"([{"name": "x", "shape": [64, 64], "dtype": "f32"}, {"name": "W", "shape": [64, 64], "dtype": "f32"}])",
      R"([{"name": "m1", "op": "matmul", "inputs": ["x", "W"]}, {"name": "m2", "op": "matmul", "inputs": ["m1", "W"]}])",
      R"(["m2"])"));
  FusionEngine engine(g, test_device());
  EXPECT_EQ(engine.accept("v:nothing+here").reason, Reason::not_related);
  const auto d = engine.accept("e:m1+m2");
  EXPECT_FALSE(d.fuse);
  EXPECT_EQ(d.reason, Reason::two_contractions);
  EXPECT_EQ(engine.state(), FusionEngine(g, test_device()).state());
}

TEST(FusionPlan, FusedGraphFileRoundTrip) {
  FusionEngine engine(sample("softmax_decomposed.json"), test_device());
  engine.auto_fuse();
  const std::string text = engine.save_fused_graph();
  auto loaded = FusionEngine::load_fused_graph(text, test_device());
  ASSERT_TRUE(loaded.ok()) << format_diagnostics(loaded.errors());
  EXPECT_EQ(loaded->plan(), engine.plan());
  EXPECT_EQ(loaded->log().size(), engine.log().size());
  EXPECT_EQ(loaded->save_fused_graph(), text);  // stable byte for byte
  const auto doc = nlohmann::json::parse(text);
  ASSERT_EQ(doc["fusion"]["groups"].size(), 1u);
  EXPECT_EQ(doc["fusion"]["groups"][0]["nodes"].size(), 5u);
  EXPECT_EQ(doc["fusion"]["groups"][0]["bytes_read"], 16384LL * 4096 * 4);
}

std::string with_groups(const std::string& groups) {
  FusionEngine engine(sample("softmax_decomposed.json"), test_device());
  auto doc = nlohmann::json::parse(engine.save_fused_graph());
  doc["fusion"]["groups"] = nlohmann::json::parse(groups);
  return doc.dump();
}

TEST(FusionPlan, RejectsANodeInTwoGroups) {
  auto r = FusionEngine::load_fused_graph(
      with_groups(R"([{"nodes": ["mx", "sub", "e"]}, {"nodes": ["e", "s", "y"]}])"), test_device());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].pointer, "/fusion/groups/1/nodes/0");
  EXPECT_NE(r.errors()[0].message.find("two groups"), std::string::npos) << r.errors()[0].message;
}

TEST(FusionPlan, RejectsAnIllegalGroupAndAMissingNode) {
  auto r = FusionEngine::load_fused_graph(
      with_groups(R"([{"nodes": ["mx", "sub", "e", "s"]}, {"nodes": ["nope"]}])"), test_device());
  ASSERT_FALSE(r.ok());
  const std::string all = format_diagnostics(r.errors());
  EXPECT_NE(all.find("no node named 'nope'"), std::string::npos) << all;
  EXPECT_NE(all.find("'y' is in no group"), std::string::npos) << all;

  FusionEngine engine(sample("swiglu_bf16.json"), test_device());
  auto doc = nlohmann::json::parse(engine.save_fused_graph());
  doc["fusion"]["groups"] = nlohmann::json::parse(R"([{"nodes": ["g", "u", "act", "y"]}])");
  auto illegal = FusionEngine::load_fused_graph(doc.dump(), test_device());
  ASSERT_FALSE(illegal.ok());
  EXPECT_EQ(illegal.errors()[0].pointer, "/fusion/groups/0");
  EXPECT_NE(illegal.errors()[0].message.find("illegal group"), std::string::npos) << illegal.errors()[0].message;
}

TEST(FusionPlan, RejectsGroupsInACycle) {
  // a -> m -> y with a and y in one group and m alone: the two kernels would wait on each other.
  const std::string graph = testing::graph_json(
      R"([{"name": "x", "shape": [64, 64], "dtype": "f32"}, {"name": "W", "shape": [64, 64], "dtype": "f32"}])",
      R"([{"name": "a", "op": "exp", "inputs": ["x"]}, {"name": "m", "op": "matmul", "inputs": ["a", "W"]},
          {"name": "y", "op": "add", "inputs": ["a", "m"]}])",
      R"(["y"])");
  auto doc = nlohmann::json::parse(graph);
  doc["fusion"] = nlohmann::json::parse(R"({"groups": [{"nodes": ["a", "y"]}, {"nodes": ["m"]}]})");
  auto r = FusionEngine::load_fused_graph(doc.dump(), test_device());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("cycle"), std::string::npos) << r.errors()[0].message;
}

TEST(FusionPlan, DecisionLogRecordsAcceptedAndRejectedPairs) {
  FusionEngine engine(sample("swiglu_bf16.json"), test_device());
  engine.auto_fuse();
  const auto log = nlohmann::json::parse(engine.decision_log_json());
  EXPECT_EQ(log["graph"], "swiglu_bf16");
  EXPECT_EQ(log["device"], "H200");
  int accepted = 0, not_expressible = 0;
  for (const auto& e : log["entries"]) {
    accepted += e["action"] == "accepted";
    not_expressible += e["reason"] == "EPILOGUE_NOT_EXPRESSIBLE";
    EXPECT_TRUE(e.contains("time_before_us") && e.contains("time_after_us") && e.contains("message"));
    if (e["action"] == "accepted") {
      EXPECT_LT(e["time_after_us"].get<double>(), e["time_before_us"].get<double>());
    }
  }
  EXPECT_EQ(accepted, 2);
  EXPECT_GE(not_expressible, 1);  // silu after a GEMM, and anything after the horizontal GEMM
}

TEST(FusionPlan, WhatIfLimitsChangeThePlan) {
  FusionEngine engine(sample("gelu_tanh_decomposed.json"), test_device());
  engine.auto_fuse();
  EXPECT_EQ(engine.plan().kernel_count(), 1);
  EngineOptions small;
  small.max_fusion_size = 3;
  engine.set_options(small);
  engine.reset();
  engine.auto_fuse();
  EXPECT_GT(engine.plan().kernel_count(), 1);
  for (const Group& g : engine.plan().groups()) EXPECT_LE(g.nodes.size(), 3u);
  EngineOptions no_vertical;
  no_vertical.disabled_kinds = {FusionKind::vertical};
  engine.set_options(no_vertical);
  engine.reset();
  engine.auto_fuse();
  EXPECT_GT(engine.plan().kernel_count(), 1);
  for (const Group& g : engine.plan().groups()) {
    EXPECT_EQ(std::count(g.kinds.begin(), g.kinds.end(), FusionKind::vertical), 0) << g.id;
  }
}

TEST(FusionPlan, GeneratedTransformerIsDeterministicAndLegal) {
  TransformerShape shape;
  shape.layers = 4;
  auto g = build_graph(transformer_spec(shape));
  ASSERT_TRUE(g.ok());
  FusionEngine a(*g, test_device()), b(*g, test_device());
  a.auto_fuse();
  b.auto_fuse();
  EXPECT_EQ(a.plan(), b.plan());
  const std::string log_a = a.decision_log_json(), log_b = b.decision_log_json();
  EXPECT_TRUE(log_a == log_b) << "decision logs differ";
  EXPECT_LT(a.plan().kernel_count(), g->num_nodes() * 2 / 3);
  for (const Group& grp : a.plan().groups()) {
    EXPECT_TRUE(check_group(*g, grp.nodes, a.options()).fuse) << grp.id;
  }
  auto reloaded = FusionEngine::load_fused_graph(a.save_fused_graph(), test_device());
  ASSERT_TRUE(reloaded.ok()) << format_diagnostics(reloaded.errors());
  EXPECT_EQ(reloaded->plan(), a.plan());
}

}  // namespace
}  // namespace fx

namespace fx {
namespace {

TEST(FusionPlan, FusedTransformerOf333LayersLoads) {
  // About 10,000 nodes: loading sorts every group by topological position (no search of the whole order
  // per comparison), so this takes milliseconds; no timing is asserted, only that the plan comes back.
  TransformerShape shape;
  shape.layers = 333;
  auto g = build_graph(transformer_spec(shape));
  ASSERT_TRUE(g.ok());
  FusionEngine engine(*g, test_device());
  engine.auto_fuse();
  auto loaded = FusionEngine::load_fused_graph(engine.save_fused_graph(), test_device());
  ASSERT_TRUE(loaded.ok()) << format_diagnostics(loaded.errors());
  EXPECT_EQ(loaded->plan(), engine.plan());
  EXPECT_EQ(loaded->plan().kernel_count(), engine.plan().kernel_count());
}

}  // namespace
}  // namespace fx
