// The Model Explorer export (core/export/model_explorer.h): the graph JSON's nodes, layers and edges, and the
// per-node data, from a real run report of relu_mul_add on an H100 (tests/data/run-reports).
#include "core/export/model_explorer.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

using testing::sample;
using testing::test_device;

RunReport run_report(const std::string& file = "relu_mul_add.h100.json") {
  std::ifstream in(std::string(FX_SOURCE_DIR) + "/tests/data/run-reports/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  auto report = read_run_report(ss.str());
  EXPECT_TRUE(report.ok()) << file;
  return report ? *report : RunReport{};
}

const nlohmann::json& node(const nlohmann::json& graph, const std::string& id) {
  for (const auto& n : graph["nodes"]) {
    if (n["id"] == id) return n;
  }
  throw std::runtime_error("no node " + id);
}

std::string attr(const nlohmann::json& n, const std::string& key) {
  for (const auto& a : n["attrs"]) {
    if (a["key"] == key) return a["value"];
  }
  return "(absent)";
}

struct ReluMulAdd : ::testing::Test {
  void SetUp() override { engine.auto_fuse(); }
  FusionEngine engine{sample("relu_mul_add.json"), test_device()};
};

TEST_F(ReluMulAdd, RunReportGivesEachGroupsMeasuredTimeAndBytes) {
  auto m = measurements_from_run_report(run_report());
  ASSERT_TRUE(m.ok()) << format_diagnostics(m.errors());
  ASSERT_EQ(m->size(), 1u);
  const GroupMeasurement& g = m->at("g:mul");
  EXPECT_NEAR(g.time_us, 346.912, 0.001);
  ASSERT_TRUE(g.dram_bytes.has_value());
  EXPECT_DOUBLE_EQ(*g.dram_bytes, 1085601792.0);
  EXPECT_FALSE(measurements_from_run_report(run_report("gpu_fault.h100.json")).ok());  // it measured nothing
}

TEST_F(ReluMulAdd, GraphJsonPutsTheFusedGroupInOneLayerWithItsNumbers) {
  const auto doc = nlohmann::json::parse(
      plan_to_model_explorer(engine.graph(), engine.plan(), measurements_from_run_report(run_report()).value()));
  ASSERT_EQ(doc["graphs"].size(), 1u);
  const auto& graph = doc["graphs"][0];
  EXPECT_EQ(graph["nodes"].size(), 6u);  // three inputs, three nodes
  for (const char* id : {"mul", "add", "y"}) {
    EXPECT_EQ(node(graph, id)["namespace"], "g:mul") << id;
    EXPECT_EQ(attr(node(graph, id), "group"), "g:mul") << id;
  }
  EXPECT_EQ(node(graph, "x")["namespace"], "");
  EXPECT_EQ(node(graph, "w")["label"], "weight");
  const auto& add = node(graph, "add");
  EXPECT_EQ(add["label"], "add");
  ASSERT_EQ(add["incomingEdges"].size(), 2u);
  EXPECT_EQ(add["incomingEdges"][0]["sourceNodeId"], "mul");
  EXPECT_EQ(add["incomingEdges"][1]["sourceNodeId"], "b");
  EXPECT_EQ(add["incomingEdges"][1]["targetNodeInputId"], "1");
  // Only the group's last node carries its numbers, so a layer's sum is the group's.
  EXPECT_EQ(attr(node(graph, "y"), "measured_time_us"), "346.912");
  EXPECT_EQ(attr(node(graph, "y"), "measured_dram_bytes"), "1085601792");
  EXPECT_EQ(attr(node(graph, "mul"), "measured_time_us"), "(absent)");
  EXPECT_EQ(graph["groupNodeAttributes"]["g:mul"]["measured_time_us"], "346.912");
}

TEST_F(ReluMulAdd, NodeDataIsMeasuredWhereTheReportHasItAndPredictedElsewhere) {
  const GroupMeasurements measured = measurements_from_run_report(run_report()).value();
  auto time = nlohmann::json::parse(model_explorer_node_data(engine.graph(), engine.plan(), measured, NodeDataQuantity::time_us));
  ASSERT_EQ(time["results"].size(), 1u);
  EXPECT_NEAR(time["results"]["y"]["value"].get<double>(), 346.912, 0.001);
  EXPECT_EQ(time["gradient"].size(), 2u);
  auto bytes = nlohmann::json::parse(model_explorer_node_data(engine.graph(), engine.plan(), measured, NodeDataQuantity::bytes));
  EXPECT_DOUBLE_EQ(bytes["results"]["y"]["value"].get<double>(), 1085601792.0);
  // Without a report: the cost model's prediction (1 GiB read and written by the fused kernel).
  auto predicted = nlohmann::json::parse(model_explorer_node_data(engine.graph(), engine.plan(), {}, NodeDataQuantity::bytes));
  EXPECT_DOUBLE_EQ(predicted["results"]["y"]["value"].get<double>(), 4.0 * 256 * 1024 * 1024);
}

// A group whose id holds '/' (ONNX names) must not open nested layers: Model Explorer reads '/' as nesting.
TEST(ModelExplorer, SlashesInGroupIdsDoNotNestLayers) {
  FusionEngine e(testing::graph_from(testing::graph_json(R"([{"name": "x", "shape": [64], "dtype": "f32"}])",
                                                         R"([{"name": "a/relu", "op": "relu", "inputs": ["x"]},
                                                             {"name": "a/exp", "op": "exp", "inputs": ["a/relu"]}])",
                                                         R"(["a/exp"])")),
                 test_device());
  e.auto_fuse();
  const auto doc = nlohmann::json::parse(plan_to_model_explorer(e.graph(), e.plan(), {}));
  EXPECT_EQ(node(doc["graphs"][0], "a/exp")["namespace"], "g:a|relu");
}

}  // namespace
}  // namespace fx
