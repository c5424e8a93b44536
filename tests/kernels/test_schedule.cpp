// The executor's group order (kernels/executor/schedule.h), without a GPU: a topological order of every plan's
// launched groups, in which a group sharing its operands with the group just run goes next.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"
#include "kernels/executor/schedule.h"

namespace fx::gpu {
namespace {

Graph load_sample(const std::string& file) {
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + file);
  EXPECT_TRUE(g.ok()) << file;
  return std::move(g).value();
}

std::vector<std::string> ids(const Plan& plan, const std::vector<std::size_t>& order) {
  std::vector<std::string> out;
  for (std::size_t i : order) out.push_back(plan.groups()[i].id);
  return out;
}

// Every launched group once, each after the groups that write what it reads.
void expect_valid_order(const Plan& plan, const std::vector<std::size_t>& order, const std::string& what) {
  std::size_t launched = 0;
  for (const Group& gr : plan.groups()) launched += !gr.eliminated();
  ASSERT_EQ(order.size(), launched) << what;
  std::map<ValueId, std::size_t> written_at;
  for (std::size_t k = 0; k < order.size(); ++k) {
    for (ValueId v : plan.groups()[order[k]].io.outputs) written_at[v] = k;
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    for (ValueId v : plan.groups()[order[k]].io.inputs) {
      if (auto it = written_at.find(v); it != written_at.end()) EXPECT_LT(it->second, k) << what << ": value " << v;
    }
  }
}

TEST(Schedule, ProjectionsThatReadTheSameActivationRunBackToBack) {
  FusionEngine engine(load_sample("gpt2_block.json"), DeviceDescription::h100_sxm());
  engine.auto_fuse();
  const Plan& plan = engine.plan();
  const auto order = execution_order(engine.graph(), plan);
  expect_valid_order(plan, order, "gpt2_block");
  const std::vector<std::string> got = ids(plan, order);
  const std::vector<std::string> head(got.begin(), got.begin() + 8);
  EXPECT_EQ(head, (std::vector<std::string>{"g:ln1", "g:q_mm", "g:k_mm", "g:v_mm", "g:q_r", "g:k_r", "g:v_r",
                                            "g:scores"}));
}

TEST(Schedule, ChainsKeepThePlansOrderAndEveryPlanGetsATopologicalOrder) {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(FX_SOURCE_DIR) + "/sample_graphs")) {
    const std::string file = entry.path().filename().string();
    FusionEngine engine(load_sample(file), DeviceDescription::h100_sxm());
    const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
    expect_valid_order(unfused, execution_order(engine.graph(), unfused), file + " unfused");
    engine.auto_fuse();
    expect_valid_order(engine.plan(), execution_order(engine.graph(), engine.plan()), file + " fused");
  }
  FusionEngine chain(load_sample("sigmoid_chain.json"), DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(chain.graph(), chain.cost_model());
  std::vector<std::size_t> plan_order(unfused.groups().size());
  for (std::size_t i = 0; i < plan_order.size(); ++i) plan_order[i] = i;
  EXPECT_EQ(execution_order(chain.graph(), unfused), plan_order);
}

}  // namespace
}  // namespace fx::gpu
