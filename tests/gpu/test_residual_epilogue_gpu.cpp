// A residual add after a matmul as cuBLASLt's C input (beta = 1), run on the GPU: matmul + residual and
// matmul + bias + residual + relu as one call in f32 and bf16, a residual that is the GEMM's own left operand,
// and a residual after the activation (a second kernel, with the reason). Each fused plan is checked against the
// unfused plan (GEMM, then one kernel per add and activation) and the float64 reference. Skips with a message
// where no CUDA device exists.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/fusion/engine.h"
#include "core/fusion/legality.h"
#include "core/graph/graph_io.h"
#include "kernels/executor/executor.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

std::string input(const std::string& name, const std::string& shape, const std::string& dtype) {
  return R"({"name": ")" + name + R"(", "shape": )" + shape + R"(, "dtype": ")" + dtype + R"("})";
}

// The named nodes as one group (legal for the engine: it is what auto-fuse may make), every other node alone.
// Small shapes, so the group is set here rather than left to the cost model.
Plan plan_with_group(const Graph& g, const std::vector<std::string>& members) {
  std::vector<NodeId> mine;
  for (const auto& m : members) mine.push_back(*g.find_node(m));
  const FusionDecision legal = check_group(g, mine, EngineOptions{});
  EXPECT_TRUE(legal.fuse) << legal.message;
  std::vector<GroupSpec> specs = {{mine, {}}};
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (std::find(mine.begin(), mine.end(), n) == mine.end()) specs.push_back({{n}, {}});
  }
  return Plan::from_groups(g, CostModel(DeviceDescription::h100_sxm()), specs);
}

RunReport run_plans(const Graph& g, const Plan& fused) {
  RunOptions opt;
  opt.timing.repeat = 2;
  opt.timing.warmup = 1;
  opt.reference = RunOptions::Reference::on;
  Executor ex(g, Plan::unfused(g, CostModel(DeviceDescription::h100_sxm())), fused, opt);
  return ex.run();
}

void expect_verified(const RunReport& r, const std::string& what) {
  EXPECT_TRUE(r.verified) << what;
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.passed) << what << ": fused vs unfused " << c.name << " rel. error " << c.rel_error << " (limit "
                          << c.threshold << "), " << c.nan_count << " NaN";
  }
  ASSERT_FALSE(r.reference_checks.empty()) << what << ": " << r.reference_note;
  for (const auto& c : r.reference_checks) {
    EXPECT_TRUE(c.passed) << what << ": " << c.name << " (" << c.dtype << ") vs float64 rel. error " << c.rel_error
                          << " (limit " << c.threshold << "), " << c.nan_count << " NaN";
  }
}

std::string paths(const PlanReport& p) {
  std::string s;
  for (const auto& k : p.kernels) s += k.name + " [" + k.library + "] " + k.path + "\n";
  return s;
}

// The fused plan is exactly one cuBLASLt call whose path names `epilogue` and the residual.
void expect_one_call(const RunReport& r, const std::string& epilogue, const std::string& what) {
  ASSERT_EQ(r.fused.kernels.size(), 1u) << what << "\n" << paths(r.fused);
  const KernelReport& k = r.fused.kernels[0];
  EXPECT_EQ(k.library, "cuBLASLt") << what;
  EXPECT_NE(k.path.find(epilogue + ", residual added as C (beta = 1)"), std::string::npos) << what << "\n" << k.path;
}

TEST(ResidualEpilogueGpu, MatmulPlusResidualIsOneCall) {
  FX_REQUIRE_DEVICE();
  for (const std::string dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    const Graph g = inline_graph(input("x", "[96, 80]", dtype) + ", " + input("W", "[80, 48]", dtype) + ", " +
                                     input("r", "[96, 48]", dtype),
                                 R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                    {"name": "y", "op": "add", "inputs": ["mm", "r"]})",
                                 R"("y")");
    const RunReport r = run_plans(g, plan_with_group(g, {"mm", "y"}));
    expect_verified(r, dtype + " matmul + residual");
    EXPECT_EQ(r.unfused.kernels.size(), 2u) << paths(r.unfused);
    expect_one_call(r, "cuBLASLt GEMM", dtype);
  }
}

// The batch of x [2, 48, 80] folds into M; the residual is on the left of its add; relu comes after both adds.
TEST(ResidualEpilogueGpu, MatmulBiasResidualReluIsOneCall) {
  FX_REQUIRE_DEVICE();
  for (const std::string dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    const Graph g = inline_graph(input("x", "[2, 48, 80]", dtype) + ", " + input("W", "[80, 48]", dtype) + ", " +
                                     input("b", "[48]", dtype) + ", " + input("r", "[2, 48, 48]", dtype),
                                 R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                    {"name": "add", "op": "add", "inputs": ["mm", "b"]},
                                    {"name": "res", "op": "add", "inputs": ["r", "add"]},
                                    {"name": "y", "op": "relu", "inputs": ["res"]})",
                                 R"("y")");
    const RunReport r = run_plans(g, plan_with_group(g, {"mm", "add", "res", "y"}));
    expect_verified(r, dtype + " matmul + bias + residual + relu");
    EXPECT_EQ(r.unfused.kernels.size(), 4u) << paths(r.unfused);
    expect_one_call(r, "RELU_BIAS epilogue", dtype);
  }
}

// x @ W + x: cuBLASLt reads x as A and as C; the output is a buffer of its own.
TEST(ResidualEpilogueGpu, AResidualThatIsTheGemmsLeftOperand) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(input("x", "[96, 64]", "bf16") + ", " + input("W", "[64, 64]", "bf16"),
                               R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                  {"name": "y", "op": "add", "inputs": ["mm", "x"]})",
                               R"("y")");
  const RunReport r = run_plans(g, plan_with_group(g, {"mm", "y"}));
  expect_verified(r, "x @ W + x");
  expect_one_call(r, "cuBLASLt GEMM", "x @ W + x");
}

// A residual after the activation is not C (cuBLASLt adds C before it): the group runs as the RELU_BIAS call and a
// generated kernel for the add, and the plan says why.
TEST(ResidualEpilogueGpu, AResidualAfterTheActivationIsASecondKernelWithTheReason) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(input("x", "[96, 80]", "f32") + ", " + input("W", "[80, 48]", "f32") + ", " +
                                   input("b", "[48]", "f32") + ", " + input("r", "[96, 48]", "f32"),
                               R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                  {"name": "add", "op": "add", "inputs": ["mm", "b"]},
                                  {"name": "act", "op": "relu", "inputs": ["add"]},
                                  {"name": "y", "op": "add", "inputs": ["act", "r"]})",
                               R"("y")");
  std::vector<NodeId> all;
  for (const char* n : {"mm", "add", "act", "y"}) all.push_back(*g.find_node(n));
  const std::vector<GroupSpec> one = {{all, {}}};
  const RunReport r = run_plans(g, Plan::from_groups(g, CostModel(DeviceDescription::h100_sxm()), one));
  expect_verified(r, "residual after relu");
  ASSERT_EQ(r.fused.kernels.size(), 2u) << paths(r.fused);
  EXPECT_NE(r.fused.kernels[0].path.find("RELU_BIAS epilogue, TF32"), std::string::npos) << paths(r.fused);
  EXPECT_TRUE(std::any_of(r.fused.notes.begin(), r.fused.notes.end(), [](const std::string& n) {
    return n.find("the residual add comes after the activation") != std::string::npos;
  })) << ::testing::PrintToString(r.fused.notes);
}

}  // namespace
}  // namespace fx::gpu
