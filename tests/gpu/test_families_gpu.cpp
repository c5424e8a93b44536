// The fusion families the peers fuse, run on the GPU: a concat with its pointwise branches and consumer, sibling
// reductions, and a reduction chained into one over the remaining axes. Each runs fused as one kernel against the
// unfused plan (and, at small sizes, the float64 reference). Skips with a message where no CUDA device exists.
#include <gtest/gtest.h>

#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"
#include "kernels/executor/executor.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

// Both plans, the auto-fused one against the unfused one; with `reference`, both against the float64 reference too.
RunReport run_both(const Graph& g, bool reference) {
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  engine.auto_fuse();
  RunOptions opt;
  opt.timing.repeat = 3;
  opt.timing.warmup = 1;
  opt.reference = reference ? RunOptions::Reference::on : RunOptions::Reference::off;
  Executor ex(engine.graph(), unfused, engine.plan(), opt);
  return ex.run();
}

void expect_verified(const RunReport& r, const std::string& what, bool reference) {
  EXPECT_TRUE(r.verified) << what;
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.passed) << what << ": fused vs unfused " << c.name << " rel. error " << c.rel_error << " (limit "
                          << c.threshold << "), " << c.nan_count << " NaN";
  }
  if (!reference) return;
  ASSERT_FALSE(r.reference_checks.empty()) << what << ": " << r.reference_note;
  for (const auto& c : r.reference_checks) {
    EXPECT_TRUE(c.passed) << what << ": " << c.name << " (" << c.dtype << ") vs float64 rel. error " << c.rel_error
                          << " (limit " << c.threshold << "), " << c.nan_count << " NaN";
  }
}

void expect_kernels(const RunReport& r, std::size_t unfused, std::size_t fused, const std::string& what) {
  EXPECT_EQ(r.unfused.kernels.size(), unfused) << what;
  EXPECT_EQ(r.fused.kernels.size(), fused) << what;
  EXPECT_TRUE(r.fused.notes.empty()) << what << ": " << (r.fused.notes.empty() ? "" : r.fused.notes.front());
}

TEST(FamiliesGpu, ConcatOfPointwiseBranchesRunsAsOneKernel) {
  FX_REQUIRE_DEVICE();
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/concat_branches.json");
  ASSERT_TRUE(g.ok());
  const RunReport r = run_both(*g, false);
  expect_verified(r, "concat_branches", false);
  expect_kernels(r, 5, 1, "concat_branches");
}

// Odd sizes (the scalar path), a leading-axis and a nested concat, a branch with a broadcast operand, in f32, f16
// and bf16 against the float64 reference.
TEST(FamiliesGpu, ConcatVariantsMatchTheReference) {
  FX_REQUIRE_DEVICE();
  for (const char* dtype : {"f32", "f16", "bf16"}) {
    const std::string t = dtype;
    const Graph g = inline_graph(
        R"({"name": "x", "shape": [37, 61], "dtype": ")" + t + R"("}, {"name": "y", "shape": [37, 29], "dtype": ")" + t +
            R"("}, {"name": "b", "shape": [29], "dtype": ")" + t + R"("})",
        R"({"name": "rx", "op": "relu", "inputs": ["x"]},
           {"name": "yb", "op": "add", "inputs": ["y", "b"]},
           {"name": "ty", "op": "tanh", "inputs": ["yb"]},
           {"name": "cols", "op": "concat", "inputs": ["rx", "ty", "y"], "attrs": {"axis": -1}},
           {"name": "rows", "op": "concat", "inputs": ["cols", "cols"], "attrs": {"axis": 0}},
           {"name": "out", "op": "silu", "inputs": ["rows"]})",
        R"("out")");
    const RunReport r = run_both(g, true);
    expect_verified(r, std::string("concat variants ") + dtype, true);
    expect_kernels(r, 6, 1, std::string("concat variants ") + dtype);
  }
}

TEST(FamiliesGpu, MeanAndVarianceSiblingsRunAsOneKernel) {
  FX_REQUIRE_DEVICE();
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/mean_variance.json");
  ASSERT_TRUE(g.ok());
  const RunReport r = run_both(*g, false);
  expect_verified(r, "mean_variance", false);
  expect_kernels(r, 6, 1, "mean_variance");
}

// A mean over the last axis chained into a max and a sum over the remaining one, with odd segment lengths (lanes
// past the end) and more segments than warps, in f32 and bf16.
TEST(FamiliesGpu, ChainedReductionsRunAsOneKernelAndMatchTheReference) {
  FX_REQUIRE_DEVICE();
  for (const char* dtype : {"f32", "bf16"}) {
    const std::string t = dtype;
    const Graph g = inline_graph(
        R"({"name": "x", "shape": [150, 37, 77], "dtype": ")" + t + R"("}, {"name": "w", "shape": [77], "dtype": ")" + t +
            R"("})",
        R"({"name": "xw", "op": "mul", "inputs": ["x", "w"]},
           {"name": "s", "op": "mean", "inputs": ["xw"], "attrs": {"axis": -1}},
           {"name": "r", "op": "abs", "inputs": ["s"]},
           {"name": "m", "op": "max", "inputs": ["r"], "attrs": {"axis": -1}},
           {"name": "u", "op": "sum", "inputs": ["s"], "attrs": {"axis": -1}},
           {"name": "y", "op": "mul", "inputs": ["m", "u"]})",
        R"("y", "s")");
    const RunReport r = run_both(g, true);
    expect_verified(r, std::string("chained reductions ") + dtype, true);
    expect_kernels(r, 6, 1, std::string("chained reductions ") + dtype);
  }
}

}  // namespace
}  // namespace fx::gpu
