// Plans as data (plan_file.h), the engine keeping a plan's source and pair reasons, and the plan diff
// (plan_diff.h, fusion-cli diff) on a crafted Inductor plan (python/tests/fixtures, made by the Python
// converter from a crafted capture) against a hand-made plan of ours.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/fusion/plan_diff.h"
#include "core/graph/graph_json.h"
#include "fusion_test_util.h"

namespace fx {
namespace {

using testing::node;
using testing::test_device;

std::string fixture(const std::string& name) {
  const std::string path = std::string(FX_SOURCE_DIR) + "/python/tests/fixtures/" + name;
  auto text = read_text_file(path, 1 << 24);
  EXPECT_TRUE(text.ok()) << path;
  return text.ok() ? *text : std::string();
}

FusionEngine engine_of(const std::string& text) {
  auto e = FusionEngine::load_fused_graph(text, test_device());
  if (!e) ADD_FAILURE() << format_diagnostics(e.errors());
  return std::move(e).value();
}

PlanFile plan_of(const Graph& g, const std::string& text) {
  auto doc = nlohmann::json::parse(text);
  auto p = read_plan_section(g, doc["fusion"]);
  if (!p) ADD_FAILURE() << format_diagnostics(p.errors());
  return std::move(p).value();
}

TEST(PlanFile, InductorPlanKeepsKernelsLibraryCallsAndReasons) {
  const std::string text = fixture("crafted_inductor_plan_mlp.json");
  const FusionEngine e = engine_of(text);
  const PlanFile p = plan_of(e.graph(), text);
  EXPECT_EQ(p.source, "inductor");
  EXPECT_NE(p.producer.find("cuda"), std::string::npos) << p.producer;
  ASSERT_EQ(p.groups.size(), 6u);
  EXPECT_TRUE(p.groups[1].library);
  EXPECT_EQ(p.groups[1].kernel, "extern_kernels.mm");
  EXPECT_FALSE(p.groups[5].launched);  // the view Inductor ran no kernel for
  ASSERT_EQ(p.pair_reasons.size(), 3u);
  EXPECT_TRUE(p.pair_reasons[1].involves(node(e.graph(), "gelu"), node(e.graph(), "linear/matmul")));
  EXPECT_FALSE(p.pair_reasons[1].involves(node(e.graph(), "gelu"), node(e.graph(), "linear")));
  EXPECT_EQ(p.pair_reasons[1].code, "OPAQUE_OP");
}

TEST(PlanFile, NodesLeftOutBecomeGroupsOfTheirOwnAndSharedNodesAreRefused) {
  const Graph g = testing::sample("relu_mul_add.json");
  const std::string first = g.node(0).name, second = g.node(1).name;
  auto p = read_plan_section(g, nlohmann::json{{"groups", {{{"nodes", {first}}}}}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->groups.size(), static_cast<std::size_t>(g.num_nodes()));
  EXPECT_EQ(p->unassigned.size(), static_cast<std::size_t>(g.num_nodes() - 1));
  auto twice = read_plan_section(g, nlohmann::json{{"groups", {{{"nodes", {first, second}}}, {{"nodes", {second}}}}}});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.errors().front().pointer, "/fusion/groups/1/nodes/0");
  auto unknown = read_plan_section(g, nlohmann::json{{"groups", {{{"nodes", {"nope"}}}}}, {"pair_reasons", {{{"a", {"x"}}}}}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.errors().front().pointer, "/fusion/pair_reasons/0");
}

TEST(PlanFile, TheEngineKeepsSourceAndPairReasonsThroughSaveAndLoad) {
  const FusionEngine e = engine_of(fixture("crafted_inductor_plan_mlp.json"));
  EXPECT_EQ(e.plan_source(), "inductor");
  ASSERT_EQ(e.pair_reasons().size(), 3u);
  const FusionEngine again = engine_of(e.save_fused_graph());
  EXPECT_EQ(again.plan_source(), "inductor");
  ASSERT_EQ(again.pair_reasons().size(), 3u);
  EXPECT_EQ(again.pair_reasons()[2].message, e.pair_reasons()[2].message);
  EXPECT_EQ(again.plan(), e.plan());
  // Our own plans stay as they were written: no source, no pair reasons.
  const FusionEngine ours = engine_of(fixture("crafted_our_plan_mlp.json"));
  const auto saved = nlohmann::json::parse(ours.save_fused_graph());
  EXPECT_FALSE(saved["fusion"].contains("source"));
  EXPECT_FALSE(saved["fusion"].contains("pair_reasons"));
}

TEST(PlanFile, NodeSourceLocationsRoundTrip) {
  const FusionEngine e = engine_of(fixture("crafted_our_plan_mlp.json"));
  EXPECT_EQ(e.graph().node(node(e.graph(), "gelu")).source, "model.py:16");
  EXPECT_NE(save_graph(e.graph()).find("\"source\": \"model.py:16\""), std::string::npos);
}

class PlanDiffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ours_text = fixture("crafted_our_plan_mlp.json");
    theirs_text = fixture("crafted_inductor_plan_mlp.json");
    ours = std::make_unique<FusionEngine>(engine_of(ours_text));
    a = {"ours.json", plan_of(ours->graph(), ours_text), ours.get()};
    b = {"inductor.json", plan_of(ours->graph(), theirs_text), nullptr};
    d = diff_plans(ours->graph(), ours->cost_model(), {}, a, b);
  }
  const DiffGroup* find(const std::vector<DiffGroup>& list, const std::string& first) const {
    for (const DiffGroup& grp : list) {
      if (ours->graph().node(grp.nodes.front()).name == first) return &grp;
    }
    return nullptr;
  }
  std::string ours_text, theirs_text;
  std::unique_ptr<FusionEngine> ours;
  PlanSideInput a, b;
  PlanDiff d;
};

TEST_F(PlanDiffTest, GroupsInBothOnlyInAAndOnlyInB) {
  EXPECT_EQ(d.both.size(), 2u);    // layer_norm, view
  EXPECT_EQ(d.only_a.size(), 3u);  // matmul+bias+gelu, matmul+bias, add
  EXPECT_EQ(d.only_b.size(), 4u);  // mm, bias+gelu, mm, bias+add
  const DiffGroup* mlp = find(d.only_a, "linear/matmul");
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->other_groups, (std::vector<std::string>{"k1", "k2"}));
  EXPECT_TRUE(mlp->cost.known);
  EXPECT_GT(mlp->cost.bytes, 0);
  EXPECT_EQ(d.a.kernels, 5);
  EXPECT_EQ(d.b.kernels, 5);  // the view is no kernel
}

TEST_F(PlanDiffTest, AGroupInductorSplitCarriesInductorsReason) {
  const DiffGroup* mlp = find(d.only_a, "linear/matmul");
  ASSERT_NE(mlp, nullptr);
  ASSERT_EQ(mlp->splits.size(), 1u);
  const SplitPair& s = mlp->splits[0];
  EXPECT_EQ(ours->graph().node(s.producer).name, "linear/matmul");
  ASSERT_EQ(s.reasons.size(), 1u);
  EXPECT_EQ(s.reasons[0].source, "inductor");
  EXPECT_NE(s.reasons[0].message.find("node1 is extern or nop"), std::string::npos);
}

TEST_F(PlanDiffTest, AGroupWeSplitCarriesOurEnginesDecisionAndVerdict) {
  const DiffGroup* residual = find(d.only_b, "linear_1");
  ASSERT_NE(residual, nullptr);
  ASSERT_TRUE(residual->our_verdict.has_value());
  EXPECT_TRUE(residual->our_verdict->fuse);  // an add after an add: legal for us too
  ASSERT_EQ(residual->splits.size(), 1u);
  ASSERT_EQ(residual->splits[0].reasons.size(), 1u);
  const ReasonNote& r = residual->splits[0].reasons[0];
  EXPECT_EQ(r.source, "fusion-explorer");
  EXPECT_EQ(r.side, "A");
  const FusionDecision direct = ours->explain(node(ours->graph(), "linear_1"), node(ours->graph(), "add"));
  EXPECT_EQ(r.code, to_string(direct.reason));
  EXPECT_EQ(r.message, direct.message);
}

TEST_F(PlanDiffTest, TextAndJsonSayTheSame) {
  const std::string text = plan_diff_text(ours->graph(), d);
  EXPECT_NE(text.find("B = inductor.json (inductor, torch crafted"), std::string::npos) << text;
  EXPECT_NE(text.find("only in A (3 groups)"), std::string::npos) << text;
  EXPECT_NE(text.find("B (inductor) OPAQUE_OP: cannot fuse op1 with op2_op3"), std::string::npos) << text;
  EXPECT_NE(text.find("library: extern_kernels.mm"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(plan_diff_json(ours->graph(), d));
  EXPECT_EQ(j["only_a"].size(), 3u);
  EXPECT_EQ(j["only_b"].size(), 4u);
  EXPECT_EQ(j["b"]["source"], "inductor");
  EXPECT_EQ(j["a"]["kernels"], 5);
  bool found = false;
  for (const auto& grp : j["only_a"]) {
    for (const auto& s : grp.value("splits", nlohmann::json::array())) found = found || s["reasons"][0]["source"] == "inductor";
  }
  EXPECT_TRUE(found);
}

std::string run_cli(const std::string& args, int* status) {
  const std::string command = std::string(FX_CLI_PATH) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int rc = pclose(pipe);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

TEST(FusionCliDiff, TextJsonAndRefusals) {
  const std::string dir = std::string(FX_SOURCE_DIR) + "/python/tests/fixtures/";
  int status = -1;
  const std::string text = run_cli("diff " + dir + "crafted_our_plan_mlp.json " + dir + "crafted_inductor_plan_mlp.json", &status);
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("only in B (4 groups)"), std::string::npos) << text;
  const std::string json = run_cli("diff --json " + dir + "crafted_our_plan_mlp.json " + dir + "crafted_inductor_plan_mlp.json", &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(nlohmann::json::parse(json)["both"].size(), 2u);
  const std::string other = run_cli("diff " + dir + "crafted_our_plan_mlp.json " + std::string(FX_SOURCE_DIR) + "/sample_graphs/softmax.json", &status);
  EXPECT_EQ(status, 2);
  EXPECT_NE(other.find("plans of different graphs"), std::string::npos) << other;
  const std::string usage = run_cli("diff " + dir + "crafted_our_plan_mlp.json", &status);
  EXPECT_EQ(status, 2);
  EXPECT_NE(usage.find("name two plan files"), std::string::npos) << usage;
}

}  // namespace
}  // namespace fx
