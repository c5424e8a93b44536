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

// x [64], w [100]; a = relu(x); r = reshape(a) and s = reshape(r), views of a's buffer; v = reshape(x), a view of
// the input; y = add(s, v).
Graph viewed_graph() {
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "viewed", "inputs": [
      {"name": "x", "shape": [64], "dtype": "f32"}, {"name": "w", "shape": [100], "dtype": "f32"}],
    "nodes": [
      {"name": "a", "op": "relu", "inputs": ["x"]},
      {"name": "r", "op": "reshape", "inputs": ["a"], "attrs": {"shape": [8, 8]}},
      {"name": "s", "op": "reshape", "inputs": ["r"], "attrs": {"shape": [4, 16]}},
      {"name": "v", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [4, 16]}},
      {"name": "y", "op": "add", "inputs": ["s", "v"]}],
    "outputs": ["y"]})");
  EXPECT_TRUE(g.ok()) << format_diagnostics(g.errors());
  return std::move(g).value();
}

// A view has no buffer of its own: it reads its source's, through chains of views, in the plan that has it (the
// fused plan here writes r in a kernel of its own). Nothing is placed for it, so the arena holds what the steps
// write, each once: no buffer is handed to a second value, and the source's bytes live as long as the plan.
TEST(MemoryPlan, AViewReadsItsSourcesBufferAndTakesNoneOfItsOwn) {
  const Graph g = viewed_graph();
  const ValueId x = value(g, "x"), a = value(g, "a"), r = value(g, "r"), s = value(g, "s"), v = value(g, "v"),
                y = value(g, "y");
  MemoryPlan m;
  const std::array<std::vector<std::vector<ValueId>>, 2> steps = {{{{a}, {y}}, {{a, r}, {y}}}};
  const std::array<std::map<ValueId, ValueId>, 2> views = {{{{r, a}, {s, r}, {v, x}}, {{s, r}, {v, x}}}};
  m.plan(g, steps, 0, 0, views);
  // Inputs 256 + 512; unfused a and y; fused a, r and y: 256 each.
  EXPECT_EQ(m.arena_bytes(), 256u + 512u + 2 * 256u + 3 * 256u);
  EXPECT_EQ(m.storage(PlanId::unfused, s), a);  // s -> r -> a
  EXPECT_EQ(m.storage(PlanId::unfused, r), a);
  EXPECT_EQ(m.storage(PlanId::unfused, v), x);
  EXPECT_EQ(m.storage(PlanId::unfused, y), y);
  EXPECT_EQ(m.storage(PlanId::fused, s), r);  // r is a kernel's output there
  EXPECT_TRUE(m.is_view(PlanId::unfused, r));
  EXPECT_FALSE(m.is_view(PlanId::fused, r));
  EXPECT_FALSE(m.writes(PlanId::unfused, s));
  EXPECT_FALSE(m.writes(PlanId::unfused, r));
  EXPECT_TRUE(m.writes(PlanId::fused, r));
}

TEST(MemoryPlan, AViewAStepWritesOrWithoutASourceBufferIsRefused) {
  const Graph g = viewed_graph();
  const ValueId a = value(g, "a"), r = value(g, "r"), y = value(g, "y");
  const std::array<std::vector<std::vector<ValueId>>, 2> steps = {{{{a}, {r}, {y}}, {{a}, {y}}}};
  MemoryPlan written;
  try {
    written.plan(g, steps, 0, 0, {{{{r, a}}, {}}});
    FAIL() << "r is written by a step";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()), "the view r of the unfused plan is written by a step");
  }
  MemoryPlan sourceless;
  try {
    sourceless.plan(g, steps, 0, 0, {{{}, {{value(g, "s"), r}}}});
    FAIL() << "r has no buffer in the fused plan";
  } catch (const std::logic_error& e) {
    EXPECT_EQ(std::string(e.what()), "the view s of the fused plan reads r, which has no buffer");
  }
}

// A bound graph output that is a view binds the value whose buffer it reads: the step writing that one writes
// the caller's buffer, and every view of it reads there. Two bindings of one buffer are refused.
TEST(MemoryPlan, BindingAViewBindsItsStorage) {
  const Graph g = viewed_graph();
  const ValueId a = value(g, "a"), r = value(g, "r"), s = value(g, "s");
  MemoryPlan m;
  m.plan(g, {{{{a}, {value(g, "y")}}, {}}}, 0, 0, {{{{r, a}, {s, r}}, {}}});
  alignas(256) static char caller[256];
  m.bind(PlanId::unfused, {{s, caller}});
  EXPECT_EQ(m.pointer(g, PlanId::unfused, a), caller);
  EXPECT_EQ(m.pointer(g, PlanId::unfused, r), caller);
  EXPECT_THROW(m.bind(PlanId::unfused, {{s, caller}, {a, caller + 128}}), std::logic_error);
  EXPECT_EQ(m.pointer(g, PlanId::unfused, s), caller);  // the refused binding changed nothing
}

}  // namespace
}  // namespace fx::gpu
