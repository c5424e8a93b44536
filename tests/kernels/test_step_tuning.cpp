// The one place that applies layout tuning's decisions to a plan (kernels/executor/step_tuning.h): what each
// decision makes of the steps and the plan's notes. No GPU: nothing is launched, loaded or allocated.
#include <gtest/gtest.h>

#include <memory>

#include "kernels/executor/contraction_plan.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/step_tuning.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

// Three projections of one x, merged into one horizontal GEMM by the contraction plan.
Graph projections() {
  return inline_graph(R"({"name": "x", "shape": [64, 32], "dtype": "f32"},
                         {"name": "Wq", "shape": [32, 16], "dtype": "f32", "role": "weight"},
                         {"name": "Wk", "shape": [32, 16], "dtype": "f32", "role": "weight"},
                         {"name": "Wv", "shape": [32, 16], "dtype": "f32", "role": "weight"})",
                      R"({"name": "q", "op": "matmul", "inputs": ["x", "Wq"]},
                         {"name": "k", "op": "matmul", "inputs": ["x", "Wk"]},
                         {"name": "v", "op": "matmul", "inputs": ["x", "Wv"]})",
                      R"("q", "k", "v")");
}

LibraryCall merged_call(const Graph& g) {
  const std::vector<NodeId> nodes = {*g.find_node("q"), *g.find_node("k"), *g.find_node("v")};
  const std::vector<ValueId> outputs = {*g.find_value("q"), *g.find_value("k"), *g.find_value("v")};
  ContractionGroupPlan p = plan_contraction_group(g, nodes, outputs, "g_qkv");
  EXPECT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls.at(0).kind, LibraryCallKind::horizontal_matmul);
  return p.calls.at(0);
}

TEST(StepTuning, SplitPartsMakesOneStepPerPartAndReplacesTheGroupsNote) {
  const Graph g = projections();
  CompiledProgram im(g, RunOptions{});
  CompiledPlan& ps = im.plan(PlanId::fused);
  const auto merged = std::make_shared<LibraryStep>(merged_call(g), nullptr);
  Step before;
  before.group = "g_ln";
  before.kernel.name = "fx_g_ln";
  Step call{StepInfo{}, LibraryLaunch{merged}};
  call.group = "g_qkv";
  name_step_after(g, merged->call(), call);
  ps.steps.push_back(std::move(before));
  ps.steps.push_back(std::move(call));
  ps.notes = {"g_qkv: 2 launches: " + merged->call().name + " (3 GEMMs as one strided-batched call) + fx_g_qkv_rest",
              "g_other: 2 launches: something else"};
  SplitParts split{{}, false};
  for (const LibraryCall& part : merged->call().parts) split.parts.push_back(std::make_shared<LibraryStep>(part, nullptr));

  const std::size_t last = apply_step_tuning(im, PlanId::fused, 1, {split, "run alone: the faster way", "2026-11-27 06:00:00 UTC"});
  EXPECT_EQ(last, 3u);
  ASSERT_EQ(ps.steps.size(), 4u);
  EXPECT_EQ(ps.steps[0].kernel.name, "fx_g_ln") << "the step before is untouched";
  for (std::size_t i = 1; i < 4; ++i) {
    const Step& st = ps.steps[i];
    EXPECT_EQ(st.call(), split.parts[i - 1].get());
    EXPECT_EQ(st.kernel.name, split.parts[i - 1]->call().name);
    EXPECT_EQ(st.group, "g_qkv");
    EXPECT_EQ(st.layout_choice, "run alone: the faster way");
    EXPECT_EQ(st.tuned_at, "2026-11-27 06:00:00 UTC");
    EXPECT_EQ(st.kernel.outputs.size(), 1u);
  }
  ASSERT_EQ(ps.notes.size(), 2u);
  EXPECT_EQ(ps.notes[0], "g_other: 2 launches: something else");
  EXPECT_NE(ps.notes[1].find("g_qkv: 3 launches: " + merged->call().name + " runs as its 3 GEMMs"), std::string::npos)
      << ps.notes[1];
  EXPECT_NE(ps.notes[1].find("faster than the one strided-batched call"), std::string::npos) << ps.notes[1];
}

TEST(StepTuning, InstallLayoutSwapsTheChosenLayoutInAndKeepsTheOtherAsAnAlternative) {
  const Graph g = projections();
  CompiledProgram im(g, RunOptions{});
  CompiledPlan& ps = im.plan(PlanId::unfused);
  Step st;
  st.kernel.name = "fx_g_add";
  st.kernel.layout = "1 element per thread";
  st.kernel.source = "source 1";
  st.kernel.block = 256;
  GeneratedLaunch generated;
  generated.alternatives.push_back({KernelLayout{"4 elements per thread", "source 4", 128, 7}, LoadedKernel{}});
  st.action = std::move(generated);
  ps.steps.push_back(std::move(st));

  EXPECT_EQ(apply_step_tuning(im, PlanId::unfused, 0, {InstallLayout{1}, "4 elements per thread: the fastest", ""}), 0u);
  const Step& tuned = ps.steps[0];
  EXPECT_EQ(tuned.kernel.layout, "4 elements per thread");
  EXPECT_EQ(tuned.kernel.source, "source 4");
  EXPECT_EQ(tuned.kernel.block, 128);
  EXPECT_EQ(tuned.kernel.grid, 7);
  EXPECT_EQ(tuned.generated()->alternatives.at(0).layout.description, "1 element per thread");
  EXPECT_EQ(tuned.layout_choice, "4 elements per thread: the fastest");
  EXPECT_TRUE(tuned.tuned_at.empty());

  // Keeping the step with no text of its own leaves its line as it was.
  EXPECT_EQ(apply_step_tuning(im, PlanId::unfused, 0, {KeepStep{}, "", ""}), 0u);
  EXPECT_EQ(ps.steps[0].layout_choice, "4 elements per thread: the fastest");
}

}  // namespace
}  // namespace fx::gpu
