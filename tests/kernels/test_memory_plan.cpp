// The executor's memory plan (kernels/executor/memory_plan.h) laid out without a GPU: inputs shared by both
// plans, each plan's step outputs once and back to back, the placement's gaps, the sort workspace last, and the
// NHWC buffers counted before any is allocated.
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/graph/graph_io.h"
#include "kernels/executor/executor.h"
#include "kernels/executor/memory_plan.h"

namespace fx::gpu {
namespace {

// x [64] f32 (256 bytes), w [100] f32 (400 bytes, 512 aligned); a = relu(x), b = add(a, w), c = neg(b).
Graph small_graph() {
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "small", "inputs": [
      {"name": "x", "shape": [64], "dtype": "f32"}, {"name": "w", "shape": [100], "dtype": "f32"}],
    "nodes": [
      {"name": "a", "op": "relu", "inputs": ["x"]},
      {"name": "b", "op": "add", "inputs": ["a", "x"]},
      {"name": "c", "op": "neg", "inputs": ["b"]}],
    "outputs": ["c"]})");
  EXPECT_TRUE(g.ok()) << format_diagnostics(g.errors());
  return std::move(g).value();
}

ValueId value(const Graph& g, const std::string& name) { return *g.find_value(name); }

// The unfused plan writes a, b and c in three steps; the fused plan writes a and c in one step, then c again
// (placed once).
std::array<std::vector<std::vector<ValueId>>, 2> step_outputs(const Graph& g) {
  const ValueId a = value(g, "a"), b = value(g, "b"), c = value(g, "c");
  return {{{{a}, {b}, {c}}, {{a, c}, {c}}}};
}

TEST(MemoryPlan, InputsOnceThenEachPlansOutputsThenTheSortWorkspace) {
  const Graph g = small_graph();
  MemoryPlan m;
  m.plan(g, step_outputs(g), 0, 1000);
  // Inputs 256 + 512, unfused a, b, c 3 * 256, fused a, c 2 * 256, workspace 1024.
  EXPECT_EQ(m.arena_bytes(), 256u + 512u + 3 * 256u + 2 * 256u + 1024u);
  EXPECT_EQ(m.placement_gaps(), 0u);
  EXPECT_EQ(m.sort_workspace_bytes(), 1000u);
  EXPECT_TRUE(m.writes(PlanId::unfused, value(g, "b")));
  EXPECT_FALSE(m.writes(PlanId::fused, value(g, "b")));
  EXPECT_FALSE(m.writes(PlanId::fused, value(g, "x")));  // an input: shared, not written
  EXPECT_FALSE(m.allocated());
}

TEST(MemoryPlan, APlacementAddsAGapBeforeEachInputAndEachStepsOutputs) {
  const Graph g = small_graph();
  MemoryPlan m;
  m.plan(g, step_outputs(g), 7, 0);
  // Gaps before x, w, the unfused plan's three steps and the fused plan's first step (its second step writes
  // nothing new): six in all, drawn as placement_gap draws them.
  std::size_t gaps = 0;
  for (std::size_t i = 0; i < 6; ++i) gaps += placement_gap(7, i);
  EXPECT_GT(gaps, 0u);
  EXPECT_EQ(m.placement_gaps(), gaps);
  EXPECT_EQ(m.arena_bytes(), 256u + 512u + 5 * 256u + gaps);
}

TEST(MemoryPlan, AValueWithoutABufferIsNamed) {
  const Graph g = small_graph();
  MemoryPlan m;
  m.plan(g, step_outputs(g), 0, 0);
  try {
    m.pointer(g, PlanId::fused, value(g, "b"));
    FAIL() << "b has no buffer in the fused plan";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()), "value b has no buffer in the fused plan");
  }
}

TEST(MemoryPlan, NhwcBuffersAreCountedBeforeTheyAreAllocated) {
  const Graph g = small_graph();
  MemoryPlan m;
  m.plan(g, step_outputs(g), 0, 0);
  EXPECT_EQ(m.nhwc_bytes(g), 0);
  std::map<ValueId, contraction_detail::DeviceMemory> buffers;
  buffers.emplace(value(g, "b"), contraction_detail::DeviceMemory());
  m.set_nhwc_buffers(PlanId::unfused, std::move(buffers));
  EXPECT_EQ(m.nhwc_bytes(g), 256);
  EXPECT_EQ(m.nhwc_pointer(PlanId::unfused, value(g, "b")), nullptr);  // not allocated yet
  EXPECT_EQ(m.nhwc_pointer(PlanId::fused, value(g, "b")), nullptr);
}

}  // namespace
}  // namespace fx::gpu
