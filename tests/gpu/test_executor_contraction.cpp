// Contraction groups in the executor on the GPU: every contraction sample at a small shape (unfused vs fused,
// and both against the float64 reference) and at full size, with the library path and the launch count each
// plan reports. Skips with a message where no CUDA device exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "core/fusion/engine.h"
#include "core/generate/transformer.h"
#include "core/graph/graph_io.h"
#include "kernels/common/gpu_error.h"
#include "kernels/executor/executor.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

Graph sample(const std::string& name) {
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + name + ".json");
  EXPECT_TRUE(g.ok()) << name;
  return std::move(g).value();
}

// A plan with the named nodes as one group and every other node alone.
Plan plan_with_group(const Graph& g, const std::vector<std::string>& members) {
  std::vector<NodeId> mine;
  for (const auto& m : members) mine.push_back(*g.find_node(m));
  std::vector<GroupSpec> specs = {{mine, {}}};
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (std::find(mine.begin(), mine.end(), n) == mine.end()) specs.push_back({{n}, {}});
  }
  return Plan::from_groups(g, CostModel(DeviceDescription::h100_sxm()), specs);
}

RunReport run_plans(const Graph& g, const Plan* fused, int repeat, RunOptions opt = {}) {
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  engine.auto_fuse();
  opt.timing.repeat = repeat;
  opt.timing.warmup = 1;
  Executor ex(engine.graph(), unfused, fused ? *fused : engine.plan(), opt);
  return ex.run();
}

void expect_verified(const RunReport& r, const std::string& what) {
  EXPECT_TRUE(r.verified) << what << (r.reference_note.empty() ? "" : "; reference: " + r.reference_note);
  for (const auto& checks : {r.checks, r.reference_checks}) {
    for (const auto& c : checks) {
      EXPECT_TRUE(c.passed) << what << ": " << c.name << " rel. error " << c.rel_error << " (limit " << c.threshold
                            << "), " << c.nan_count << " NaN";
    }
  }
  for (const auto& n : r.fused.notes) std::cout << "  [" << what << "] note: " << n << "\n";
}

std::string fused_paths(const RunReport& r) {
  std::string s;
  for (const auto& k : r.fused.kernels) s += k.name + " [" + k.library + "] " + k.path + "\n";
  return s;
}

bool has_path(const PlanReport& p, const std::string& text) {
  return std::any_of(p.kernels.begin(), p.kernels.end(), [&](const KernelReport& k) { return k.path.find(text) != std::string::npos; });
}

const char* kMlpNodes = R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                           {"name": "add", "op": "add", "inputs": ["mm", "b"]}, {"name": "y", "op": "ACT", "inputs": ["add"]})";

Graph small_mlp(const std::string& dtype, const std::string& activation) {
  std::string nodes = kMlpNodes;
  nodes.replace(nodes.find("ACT"), 3, activation);
  auto input = [&](const std::string& name, const std::string& shape) {
    return R"({"name": ")" + name + R"(", "shape": )" + shape + R"(, "dtype": ")" + dtype + R"("})";
  };
  return inline_graph(input("x", "[96, 80]") + ", " + input("W", "[80, 48]") + ", " + input("b", "[48]"), nodes, R"("y")");
}

TEST(ExecutorContractionGpu, MatmulEpiloguesAtSmallShapes) {
  FX_REQUIRE_DEVICE();
  struct Case {
    std::string dtype, activation, epilogue;
    std::size_t fused_kernels;
    std::string library = "cuBLASLt";
  };
  for (const Case& c : {Case{"f32", "relu", "RELU_BIAS epilogue, TF32 tensor cores", 1},
                        Case{"bf16", "relu", "RELU_BIAS epilogue, BF16", 1},
                        Case{"bf16", "gelu_tanh", "GELU_BIAS epilogue (tanh approximation)", 1},
                        Case{"f16", "gelu_tanh", "GELU_BIAS epilogue (tanh approximation), FP16", 1},
                        // cuBLASLt has no erf GELU; in half precision cuDNN's matmul graph takes the whole chain.
                        Case{"bf16", "gelu", "cuDNN matmul graph + add_bias + gelu_erf", 1, "cuDNN"},
                        Case{"f32", "sigmoid", "BIAS epilogue", 2}}) {
    const std::string what = c.dtype + " " + c.activation;
    SCOPED_TRACE(what);
    const Graph g = small_mlp(c.dtype, c.activation);
    const Plan fused = plan_with_group(g, {"mm", "add", "y"});  // not left to the cost model at this size
    const RunReport r = run_plans(g, &fused, 3);
    expect_verified(r, what);
    EXPECT_FALSE(r.reference_checks.empty()) << what << ": " << r.reference_note;  // small: float64 reference ran
    EXPECT_EQ(r.unfused.kernels.size(), 3u) << what;
    EXPECT_EQ(r.fused.kernels.size(), c.fused_kernels) << what << "\n" << fused_paths(r);
    EXPECT_TRUE(has_path(r.fused, c.epilogue)) << what << "\n" << fused_paths(r);
    EXPECT_EQ(r.fused.kernels[0].library, c.library) << what;
    EXPECT_TRUE(has_path(r.unfused, "cuBLASLt GEMM, no epilogue")) << what;
  }
}

TEST(ExecutorContractionGpu, AScalarMultiplyIsTheGemmsAlpha) {
  FX_REQUIRE_DEVICE();
  // (x @ W) * 0.125 + b, relu: one cuBLASLt call with alpha 0.125 and the RELU_BIAS epilogue, checked against
  // the unfused plan (three kernels and the GEMM) and the float64 reference.
  for (const char* dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    auto input = [&](const std::string& name, const std::string& shape) {
      return R"({"name": ")" + name + R"(", "shape": )" + shape + R"(, "dtype": ")" + dtype + R"("})";
    };
    const Graph g = inline_graph(input("x", "[96, 80]") + ", " + input("W", "[80, 48]") + ", " + input("b", "[48]"),
                                 R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                    {"name": "s", "op": "mul", "inputs": ["mm", 0.125]},
                                    {"name": "add", "op": "add", "inputs": ["s", "b"]},
                                    {"name": "y", "op": "relu", "inputs": ["add"]})",
                                 R"("y")");
    const Plan fused = plan_with_group(g, {"mm", "s", "add", "y"});
    const RunReport r = run_plans(g, &fused, 2);
    expect_verified(r, dtype);
    EXPECT_FALSE(r.reference_checks.empty()) << r.reference_note;
    ASSERT_EQ(r.fused.kernels.size(), 1u) << fused_paths(r);
    EXPECT_TRUE(has_path(r.fused, "RELU_BIAS epilogue, alpha 0.125")) << fused_paths(r);
  }
}

TEST(ExecutorContractionGpu, TransposedOperandFoldsIntoTheGemm) {
  FX_REQUIRE_DEVICE();
  // Attention scores q @ k^T with k^T a transpose of the last two dims: the fused plan is one cuBLASLt call
  // reading k with the transpose flag (no transpose kernel), checked against the unfused plan (transpose
  // kernel, then GEMM) and the float64 reference. Odd sizes, and A transposed too (x^T @ w).
  const Graph g = inline_graph(R"({"name": "q", "shape": [3, 40, 24], "dtype": "f32"},
                                  {"name": "k", "shape": [3, 56, 24], "dtype": "f32"},
                                  {"name": "x", "shape": [24, 40], "dtype": "f32"}, {"name": "w", "shape": [24, 8], "dtype": "f32"})",
                               R"({"name": "kt", "op": "transpose", "inputs": ["k"], "attrs": {"perm": [0, 2, 1]}},
                                  {"name": "s", "op": "matmul", "inputs": ["q", "kt"]},
                                  {"name": "xt", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [1, 0]}},
                                  {"name": "y", "op": "matmul", "inputs": ["xt", "w"]})",
                               R"("s", "y")");
  const Plan fused = Plan::from_groups(g, CostModel(DeviceDescription::h100_sxm()),
                                       {{{*g.find_node("kt"), *g.find_node("s")}, {}}, {{*g.find_node("xt"), *g.find_node("y")}, {}}});
  const RunReport r = run_plans(g, &fused, 2);
  expect_verified(r, "transposed operands");
  EXPECT_FALSE(r.reference_checks.empty()) << r.reference_note;
  EXPECT_EQ(r.unfused.kernels.size(), 4u);
  ASSERT_EQ(r.fused.kernels.size(), 2u) << fused_paths(r);
  for (const auto& k : r.fused.kernels) {
    EXPECT_EQ(k.library, "cuBLASLt") << fused_paths(r);
    EXPECT_NE(k.path.find("read as a transposed operand"), std::string::npos) << fused_paths(r);
  }
}

// bf16: x @ W + b -> gelu (erf) as one cuDNN matmul graph, verified against the unfused plan and the float64
// reference; where cuDNN offers no engine, two kernels and a note that says why.
TEST(ExecutorContractionGpu, ErfGeluAfterABf16MatmulIsOneCudnnCall) {
  FX_REQUIRE_DEVICE();
  for (const char* act : {"gelu", "silu"}) {
    const Graph g = small_mlp("bf16", act);
    const Plan fused = plan_with_group(g, {"mm", "add", "y"});
    const RunReport r = run_plans(g, &fused, 2);
    expect_verified(r, act);
    EXPECT_FALSE(r.reference_checks.empty()) << r.reference_note;
    const bool refused = std::any_of(r.fused.notes.begin(), r.fused.notes.end(), [](const std::string& n) {
      return n.find("is not one kernel") != std::string::npos;
    });
    if (refused) {
      ADD_FAILURE() << act << ": cuDNN ran no matmul graph: " << ::testing::PrintToString(r.fused.notes);
      continue;
    }
    ASSERT_EQ(r.fused.kernels.size(), 1u) << fused_paths(r);
    EXPECT_EQ(r.fused.kernels[0].library, "cuDNN");
    EXPECT_EQ(r.fused.kernels[0].name, "cudnn_g_mm");
    EXPECT_NE(r.fused.kernels[0].path.find("cuDNN matmul graph + add_bias + "), std::string::npos) << fused_paths(r);
  }
}

// The tanh GELU written out after the bias, as Hugging Face's GPT-2 writes it (mlp_gelu_decomposed_bf16 at a
// small shape): h is read four times, and the GEMM with all ten ops after it is one verified cuDNN call.
TEST(ExecutorContractionGpu, AGeluWrittenOutAfterABf16MatmulIsOneCudnnCall) {
  FX_REQUIRE_DEVICE();
  const std::string t = R"(, "dtype": "bf16"})";
  const Graph g = inline_graph(R"({"name": "x", "shape": [96, 80])" + t + R"(, {"name": "W", "shape": [80, 48])" + t +
                                   R"(, {"name": "b", "shape": [48])" + t,
                               R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                  {"name": "h", "op": "add", "inputs": ["mm", "b"]},
                                  {"name": "h2", "op": "mul", "inputs": ["h", "h"]},
                                  {"name": "h3", "op": "mul", "inputs": ["h2", "h"]},
                                  {"name": "ch3", "op": "mul", "inputs": ["h3", 0.044715]},
                                  {"name": "inner", "op": "add", "inputs": ["h", "ch3"]},
                                  {"name": "scaled", "op": "mul", "inputs": ["inner", 0.7978845608]},
                                  {"name": "t", "op": "tanh", "inputs": ["scaled"]},
                                  {"name": "onep", "op": "add", "inputs": ["t", 1.0]},
                                  {"name": "halfh", "op": "mul", "inputs": ["h", 0.5]},
                                  {"name": "y", "op": "mul", "inputs": ["halfh", "onep"]})",
                               R"("y")");
  const Plan fused = plan_with_group(g, {"mm", "h", "h2", "h3", "ch3", "inner", "scaled", "t", "onep", "halfh", "y"});
  const RunReport r = run_plans(g, &fused, 2);
  expect_verified(r, "gelu written out");
  EXPECT_FALSE(r.reference_checks.empty()) << r.reference_note;
  ASSERT_EQ(r.fused.kernels.size(), 1u) << fused_paths(r) << ::testing::PrintToString(r.fused.notes);
  EXPECT_EQ(r.fused.kernels[0].library, "cuDNN");
  EXPECT_NE(r.fused.kernels[0].path.find("cuDNN matmul graph + add_bias + mul_value(v1, v1)"), std::string::npos)
      << fused_paths(r);
}

// f32: cuBLASLt with its bias epilogue, then the erf GELU as a generated kernel, and the note says why.
TEST(ExecutorContractionGpu, ErfGeluSaysWhyItIsTwoKernels) {
  FX_REQUIRE_DEVICE();
  const Graph g = small_mlp("f32", "gelu");
  const Plan fused = plan_with_group(g, {"mm", "add", "y"});
  const RunReport r = run_plans(g, &fused, 2);
  expect_verified(r, "erf gelu");
  ASSERT_EQ(r.fused.kernels.size(), 2u);
  EXPECT_EQ(r.fused.kernels[1].library, "generated (NVRTC)");
  const bool said = std::any_of(r.fused.notes.begin(), r.fused.notes.end(),
                                [](const std::string& n) { return n.find("erf-based") != std::string::npos; });
  EXPECT_TRUE(said) << ::testing::PrintToString(r.fused.notes);
}

Graph small_qkv() {
  return inline_graph(R"({"name": "x", "shape": [96, 64], "dtype": "bf16"}, {"name": "Wq", "shape": [64, 40], "dtype": "bf16"},
                         {"name": "Wk", "shape": [64, 40], "dtype": "bf16"}, {"name": "Wv", "shape": [64, 40], "dtype": "bf16"})",
                      R"({"name": "q", "op": "matmul", "inputs": ["x", "Wq"]}, {"name": "k", "op": "matmul", "inputs": ["x", "Wk"]},
                         {"name": "v", "op": "matmul", "inputs": ["x", "Wv"]}, {"name": "s", "op": "add", "inputs": ["q", "k"]},
                         {"name": "y", "op": "mul", "inputs": ["s", "v"]})",
                      R"("q", "y")");
}

// Layout 1 forced: a horizontal GEMM's one strided-batched call (tuning may keep its GEMMs alone, tested below).
RunOptions merged_gemm() {
  RunOptions opt;
  opt.force_layout = 0;
  return opt;
}

TEST(ExecutorContractionGpu, HorizontalMatmulIsOneLaunchAndConsumersReadItsOutputsInPlace) {
  FX_REQUIRE_DEVICE();
  const Graph g = small_qkv();
  const Plan merged = plan_with_group(g, {"q", "k", "v"});
  const RunReport r = run_plans(g, &merged, 3, merged_gemm());
  expect_verified(r, "small qkv");
  EXPECT_EQ(r.unfused.kernels.size(), 5u);
  ASSERT_EQ(r.fused.kernels.size(), 3u) << fused_paths(r);  // one GEMM for q,k,v; add; mul
  EXPECT_EQ(r.fused.kernels[0].kind, "horizontal_matmul");
  EXPECT_TRUE(has_path(r.fused, "stacked once at plan time")) << fused_paths(r);
  // The merged GEMM's report names the cuBLASLt algorithm it ran, as a single GEMM's does.
  EXPECT_NE(r.fused.kernels[0].path.find("algorithm"), std::string::npos) << fused_paths(r);
  EXPECT_TRUE(has_path(r.fused, "one strided-batched call: layout 1 of 2, set by hand")) << fused_paths(r);
}

// TimingProtocol::rest_ms: each GEMM tuning comparison (here the small qkv group's two ways) starts after the
// rest the protocol asks for, whatever the clocks did (tuning_rest_ms is taken only where NVML saw them held back).
TEST(ExecutorContractionGpu, AGemmComparisonStartsAfterTheRestItIsAskedFor) {
  FX_REQUIRE_DEVICE();
  const Graph g = small_qkv();
  const Plan merged = plan_with_group(g, {"q", "k", "v"});
  auto seconds = [&](double rest_ms) {
    RunOptions opt;
    opt.timing.rest_ms = rest_ms;
    const auto t0 = std::chrono::steady_clock::now();
    const RunReport r = run_plans(g, &merged, 3, opt);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    expect_verified(r, "small qkv");
    EXPECT_TRUE(has_path(r.fused, "timed here")) << fused_paths(r);  // its ways were compared
    return s;
  };
  seconds(0);  // the generated kernels compiled and cached, the libraries loaded
  const double without = seconds(0), with = seconds(2000);
  std::cout << "  small qkv: " << without << " s without a rest, " << with << " s with 2 s\n";
  EXPECT_GT(with - without, 1.8) << "a run with a 2 s rest took " << with << " s, without " << without;
}

bool has_note(const PlanReport& p, const std::string& text) {
  return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// Layout 2 forced: the group's GEMMs run alone, each an ordinary cuBLASLt call on the graph's own weight and
// writing its output where the merged call would; the consumers read them there. Verified like the merged way.
TEST(ExecutorContractionGpu, HorizontalMatmulRunsAsItsGemmsWhenLayoutTwoIsForced) {
  FX_REQUIRE_DEVICE();
  const Graph g = small_qkv();
  const Plan merged = plan_with_group(g, {"q", "k", "v"});
  RunOptions opt;
  opt.force_layout = 1;
  const RunReport r = run_plans(g, &merged, 3, opt);
  expect_verified(r, "small qkv, GEMMs alone");
  ASSERT_EQ(r.fused.kernels.size(), 5u) << fused_paths(r);  // q, k, v, add, mul
  for (std::size_t i = 0; i < 3; ++i) {
    const KernelReport& k = r.fused.kernels[i];
    EXPECT_EQ(k.kind, "matmul") << fused_paths(r);
    EXPECT_EQ(k.library, "cuBLASLt");
    EXPECT_EQ(k.nodes, std::vector<std::string>{std::string(1, "qkv"[i])});
    EXPECT_NE(k.path.find("run alone, one of cublaslt_g_q_x3's 3 GEMMs: layout 2 of 2, set by hand"), std::string::npos)
        << fused_paths(r);
    EXPECT_NE(k.path.find("algorithm"), std::string::npos) << fused_paths(r);
  }
  EXPECT_TRUE(has_note(r.fused, "3 launches: cublaslt_g_q_x3 runs as its 3 GEMMs (cublaslt_g_q_q + cublaslt_g_q_k + "
                                "cublaslt_g_q_v), set by hand"))
      << ::testing::PrintToString(r.fused.notes);
}

// Tuned: both ways timed on the device, the faster kept, and the plan is what the choice says.
TEST(ExecutorContractionGpu, HorizontalMatmulWayIsTimed) {
  FX_REQUIRE_DEVICE();
  const Graph g = small_qkv();
  const Plan merged = plan_with_group(g, {"q", "k", "v"});
  const RunReport r = run_plans(g, &merged, 3);
  expect_verified(r, "small qkv, way timed");
  EXPECT_TRUE(has_path(r.fused, "the strided-batched call 0.")) << fused_paths(r);
  EXPECT_TRUE(has_path(r.fused, " ms, its 3 GEMMs alone 0.")) << fused_paths(r);
  const bool alone = has_path(r.fused, "run alone, one of cublaslt_g_q_x3's 3 GEMMs: the faster way");
  EXPECT_NE(alone, has_path(r.fused, "one strided-batched call, the faster")) << fused_paths(r);
  EXPECT_EQ(r.fused.kernels.size(), alone ? 5u : 3u) << fused_paths(r);
  EXPECT_EQ(r.fused.kernels[0].kind, alone ? "matmul" : "horizontal_matmul") << fused_paths(r);
}

TEST(ExecutorContractionGpu, SwigluMergedIsTwoKernels) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(R"({"name": "x", "shape": [96, 64], "dtype": "bf16"}, {"name": "W1", "shape": [64, 80], "dtype": "bf16"},
                                  {"name": "W3", "shape": [64, 80], "dtype": "bf16"})",
                               R"({"name": "g", "op": "matmul", "inputs": ["x", "W1"]}, {"name": "u", "op": "matmul", "inputs": ["x", "W3"]},
                                  {"name": "act", "op": "silu", "inputs": ["g"]}, {"name": "y", "op": "mul", "inputs": ["act", "u"]})",
                               R"("y")");
  const Plan merged = plan_with_group(g, {"g", "u", "act", "y"});
  const RunReport r = run_plans(g, &merged, 3, merged_gemm());
  expect_verified(r, "small swiglu merged");
  EXPECT_EQ(r.fused.kernels.size(), 2u) << fused_paths(r);
  const RunReport a = run_plans(g, nullptr, 3);
  expect_verified(a, "small swiglu auto");
}

// A fused group the executor must run as several kernels says so before it runs (Executor::split_groups), and
// the report shows it: the GEMM and silu(g) * u, which no cuBLASLt epilogue takes.
TEST(ExecutorContractionGpu, AGroupRunAsSeveralKernelsIsSaidBeforeTheRun) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(R"({"name": "x", "shape": [96, 64], "dtype": "f32"}, {"name": "W", "shape": [64, 80], "dtype": "f32"},
                                  {"name": "u", "shape": [96, 80], "dtype": "f32"})",
                               R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]}, {"name": "act", "op": "silu", "inputs": ["mm"]},
                                  {"name": "y", "op": "mul", "inputs": ["act", "u"]})",
                               R"("y")");
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  const Plan merged = plan_with_group(g, {"mm", "act", "y"});
  RunOptions opt;
  opt.timing.repeat = 2;
  opt.timing.warmup = 0;
  Executor ex(engine.graph(), unfused, merged, opt);
  const std::vector<SplitGroup> before = ex.split_groups(PlanId::fused);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].kernels, 2);
  ASSERT_FALSE(before[0].why.empty());
  EXPECT_TRUE(ex.split_groups(PlanId::unfused).empty());
  const RunReport r = ex.run();
  expect_verified(r, "matmul + silu * u");
  ASSERT_EQ(r.fused.split_groups.size(), 1u);
  EXPECT_EQ(r.fused.split_groups[0].group, before[0].group);
  EXPECT_EQ(r.fused.split_groups[0].kernels, 2);
}

// conv (3x3, pad 1) -> batchnorm -> relu on x [2, 8, 10, 10] with 16 filters as one group, run with `opt`.
RunReport run_small_conv_bn_relu(const RunOptions& opt = {}) {
  const Graph g = inline_graph(
      R"({"name": "x", "shape": [2, 8, 10, 10], "dtype": "f32"}, {"name": "w", "shape": [16, 8, 3, 3], "dtype": "f32"},
         {"name": "bias", "shape": [16], "dtype": "f32"}, {"name": "mean", "shape": [16], "dtype": "f32"},
         {"name": "var", "shape": [16], "dtype": "f32"}, {"name": "gamma", "shape": [16], "dtype": "f32"},
         {"name": "beta", "shape": [16], "dtype": "f32"})",
      R"({"name": "conv", "op": "conv2d", "inputs": ["x", "w", "bias"], "attrs": {"stride": 1, "padding": 1}},
         {"name": "bn", "op": "batchnorm", "inputs": ["conv", "mean", "var", "gamma", "beta"], "attrs": {"eps": 1e-05, "axis": 1}},
         {"name": "y", "op": "relu", "inputs": ["bn"]})",
      R"("y")");
  const Plan fused = plan_with_group(g, {"conv", "bn", "y"});
  return run_plans(g, &fused, 3, opt);
}

// Layout 1 forced: the NCHW call (layout tuning could pick the channels-last way, tested below).
RunOptions nchw_conv() {
  RunOptions opt;
  opt.force_layout = 0;
  return opt;
}

TEST(ExecutorContractionGpu, ConvBatchnormReluFoldsAtSmallShape) {
  FX_REQUIRE_DEVICE();
  const RunReport r = run_small_conv_bn_relu(nchw_conv());
  expect_verified(r, "small conv_bn_relu");
  EXPECT_FALSE(r.reference_checks.empty()) << r.reference_note;
  ASSERT_EQ(r.fused.kernels.size(), 1u) << fused_paths(r);
  EXPECT_EQ(r.fused.kernels[0].library, "cuDNN");
  EXPECT_TRUE(has_path(r.fused, "batchnorm folded into conv weights at plan time")) << fused_paths(r);
  EXPECT_TRUE(has_path(r.fused, "; algorithm ")) << fused_paths(r);
  EXPECT_EQ(r.unfused.kernels.size(), 3u);
}

// conv (3x3, pad 1, no bias) -> relu on x [2, channels, 9, 9] with 8 filters, as one group, run with `opt`.
RunReport run_conv_relu(const std::string& dtype, int channels, int stride, const RunOptions& opt) {
  const std::string c = std::to_string(channels), t = R"(], "dtype": ")" + dtype + R"("})";
  const Graph g = inline_graph(
      R"({"name": "x", "shape": [2, )" + c + R"(, 9, 9)" + t + R"(, {"name": "w", "shape": [8, )" + c + R"(, 3, 3)" + t,
      R"({"name": "conv", "op": "conv2d", "inputs": ["x", "w"], "attrs": {"stride": )" + std::to_string(stride) +
          R"(, "padding": 1}}, {"name": "y", "op": "relu", "inputs": ["conv"]})",
      R"("y")");
  const Plan fused = plan_with_group(g, {"conv", "y"});
  return run_plans(g, &fused, 3, opt);
}

TEST(ExecutorContractionGpu, ConvReluWithoutBiasUsesAZeroBias) {
  FX_REQUIRE_DEVICE();
  const RunReport r = run_conv_relu("f32", 4, 2, nchw_conv());
  expect_verified(r, "small conv relu");
  EXPECT_EQ(r.fused.kernels.size(), 1u) << fused_paths(r);
}

// Channels-last forced: x converted by a generated kernel, cuDNN's NHWC call (batchnorm folded, weights
// permuted at preparation), y converted back; three steps in both plans' convolutions, every output verified
// against the unfused plan and the float64 reference. The stride-2 case converts a y smaller than x.
TEST(ExecutorContractionGpu, ConvRunsChannelsLastAsThreeSteps) {
  FX_REQUIRE_DEVICE();
  RunOptions opt;
  opt.force_layout = 1;
  const RunReport r = run_small_conv_bn_relu(opt);
  expect_verified(r, "small conv_bn_relu, NHWC");
  EXPECT_FALSE(r.reference_checks.empty()) << r.reference_note;
  ASSERT_EQ(r.fused.kernels.size(), 3u) << fused_paths(r);
  EXPECT_EQ(r.fused.kernels[0].name, "fx_g_conv_x_to_nhwc");
  EXPECT_EQ(r.fused.kernels[0].library, "generated (NVRTC)");
  EXPECT_EQ(r.fused.kernels[0].bytes, 2 * 2 * 8 * 10 * 10 * 4);
  EXPECT_EQ(r.fused.kernels[1].library, "cuDNN");
  EXPECT_NE(r.fused.kernels[1].path.find("NHWC (x and y converted"), std::string::npos) << fused_paths(r);
  // Layout 2: NHWC with the conversions in their default layouts (3, 4: in their others). x's conversion
  // ([2, 8, 100] -> [2, 100, 8]) is too narrow for a tile and runs as an elementwise kernel; y's is tiled.
  EXPECT_NE(r.fused.kernels[1].path.find("NHWC: layout 2 of 4, set by hand (not timed; x's conversion in 4 elements "
                                         "per thread (16-byte accesses), y's in 64x64 tiles, 4 warps, 4 elements per "
                                         "access (16-byte accesses))"),
            std::string::npos)
      << fused_paths(r);
  EXPECT_NE(r.fused.kernels[2].path.find("64x64 tiles, 4 warps, 4 elements per access (16-byte accesses): chosen with "
                                         "the convolution's layout"),
            std::string::npos)
      << fused_paths(r);
  EXPECT_NE(r.fused.kernels[1].path.find("batchnorm folded"), std::string::npos) << fused_paths(r);
  EXPECT_EQ(r.fused.kernels[2].name, "fx_g_conv_y_to_nchw");
  EXPECT_EQ(r.fused.kernels[2].kind, "transpose_tiled");
  EXPECT_TRUE(std::any_of(r.fused.notes.begin(), r.fused.notes.end(),
                          [](const std::string& n) { return n.find("runs channels-last, as 3 launches") != std::string::npos; }));
  EXPECT_EQ(r.unfused.kernels.size(), 5u);  // conv as three steps, then bn and relu
  // The permuted weights and the NHWC copies of x and y are the run's memory too (checked against free memory
  // before anything is allocated): w + x + y more than the NCHW run, in each plan's convolution.
  const RunReport n = run_small_conv_bn_relu(nchw_conv());
  EXPECT_EQ(r.device_bytes - n.device_bytes, 2 * (16 * 8 * 3 * 3 + 2 * 8 * 10 * 10 + 2 * 16 * 10 * 10) * 4);

  const RunReport s = run_conv_relu("f32", 4, 2, opt);
  expect_verified(s, "small strided conv relu, NHWC");
  EXPECT_EQ(s.fused.kernels.size(), 3u) << fused_paths(s);
  EXPECT_EQ(s.fused.kernels[2].bytes, 2 * 2 * 8 * 5 * 5 * 4);

  // bf16: cuDNN's legacy NHWC kernels may refuse what its NCHW ones run; either way the run completes and says.
  const RunReport h = run_conv_relu("bf16", 8, 1, opt);
  expect_verified(h, "small bf16 conv relu, NHWC forced");
  EXPECT_TRUE(has_path(h.fused, "NHWC: layout 2 of ") || has_path(h.fused, "cuDNN refused the NHWC call"))
      << fused_paths(h);
}

// Tuned: every way timed, the fastest kept, and the report gives every time.
TEST(ExecutorContractionGpu, ConvLayoutIsTimed) {
  FX_REQUIRE_DEVICE();
  const RunReport r = run_small_conv_bn_relu();
  expect_verified(r, "small conv_bn_relu, timed layout");
  // NCHW, NHWC with the conversions in their default layouts, NHWC with them in their others (x's, an
  // elementwise kernel, has two layouts; y's, a tiled transpose, three).
  EXPECT_TRUE(has_path(r.fused, "the fastest of 4 layouts timed here (NCHW call ")) << fused_paths(r);
  EXPECT_TRUE(has_path(r.fused, " ms; NHWC with x's conversion in 2 elements per thread (8-byte accesses), y's in "
                                "64x64 tiles, 16 warps, 4 elements per access (16-byte accesses): 0."))
      << fused_paths(r);
  EXPECT_TRUE(has_path(r.fused, " ms; NHWC with x's conversion in 4 elements per thread (16-byte accesses), y's in "
                                "64x64 tiles, 4 warps, 4 elements per access (16-byte accesses): 0."))
      << fused_paths(r);
  EXPECT_TRUE(has_path(r.fused, " ms; NHWC with x's conversion in 2 elements per thread (8-byte accesses), y's in "
                                "64x64 tiles, 16 warps, 1 element per access (4-byte accesses): 0."))
      << fused_paths(r);
  // The plan is what the choice says: three steps for NHWC, the one call for NCHW.
  EXPECT_EQ(r.fused.kernels.size(), has_path(r.fused, "NHWC: the fastest") ? 3u : 1u) << fused_paths(r);
  EXPECT_EQ(has_path(r.fused, "NCHW: the fastest"), !has_path(r.fused, "NHWC: the fastest")) << fused_paths(r);
}

// A graph run with its convolutions forced NHWC, values kept channels-last between steps (the default) and, as
// --no-keep-nhwc, converted around each convolution; both verified (each against its unfused plan, and small
// graphs against the float64 reference).
struct KeptAndAround {
  RunReport kept, around;
};
KeptAndAround run_kept_and_around(const Graph& g, const std::string& what) {
  RunOptions opt;
  opt.force_layout = 1;
  KeptAndAround r{run_plans(g, nullptr, 3, opt), {}};
  opt.keep_nhwc = false;
  r.around = run_plans(g, nullptr, 3, opt);
  expect_verified(r.kept, what + ", values kept NHWC");
  expect_verified(r.around, what + ", conversions around each convolution");
  EXPECT_FALSE(r.kept.reference_checks.empty()) << r.kept.reference_note;
  return r;
}

// The layout conversions a plan launches, each a kernel of its own.
long conversions(const PlanReport& p) {
  return std::count_if(p.kernels.begin(), p.kernels.end(), [](const KernelReport& k) {
    return k.name.find("_to_nhwc") != std::string::npos || k.name.find("_to_nchw") != std::string::npos;
  });
}

// A residual block as resnet18 has them, convolutions forced NHWC: with values kept channels-last between steps
// (the default) the convolutions read and write NHWC buffers, the residual add + ReLU runs on NHWC data, the pool
// runs its channels-last variant, and only what a reader needs NCHW is converted (the graph outputs r and m);
// with --no-keep-nhwc each convolution converts its own x and y. Both verified against each other's unfused plan
// and the reference.
TEST(ExecutorContractionGpu, ResidualBlockKeepsValuesChannelsLast) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(
      R"({"name": "x", "shape": [2, 8, 10, 10], "dtype": "f32"}, {"name": "w1", "shape": [8, 8, 3, 3], "dtype": "f32"},
         {"name": "w2", "shape": [8, 8, 3, 3], "dtype": "f32"}, {"name": "w3", "shape": [16, 8, 3, 3], "dtype": "f32"})",
      R"({"name": "c1", "op": "conv2d", "inputs": ["x", "w1"], "attrs": {"padding": 1}},
         {"name": "a", "op": "relu", "inputs": ["c1"]},
         {"name": "c2", "op": "conv2d", "inputs": ["a", "w2"], "attrs": {"padding": 1}},
         {"name": "s", "op": "add", "inputs": ["c2", "x"]}, {"name": "r", "op": "relu", "inputs": ["s"]},
         {"name": "c3", "op": "conv2d", "inputs": ["r", "w3"], "attrs": {"padding": 1}},
         {"name": "y", "op": "relu", "inputs": ["c3"]},
         {"name": "m", "op": "max_pool2d", "inputs": ["y"], "attrs": {"kernel_size": 2, "stride": 2}})",
      R"("r", "m")");
  const auto [kept, around] = run_kept_and_around(g, "residual block");
  EXPECT_LT(kept.fused.kernels.size(), around.fused.kernels.size()) << fused_paths(kept) << "---\n" << fused_paths(around);
  EXPECT_TRUE(has_path(kept.fused, "on channels-last (NHWC) data")) << fused_paths(kept);
  EXPECT_TRUE(has_path(kept.fused, "r converted NHWC -> NCHW for the graph output")) << fused_paths(kept);
  EXPECT_TRUE(has_path(kept.fused, "NHWC (x and y in the plan's NHWC buffers")) << fused_paths(kept);
  EXPECT_TRUE(has_path(kept.fused, "its channels-last variant, on the values kept NHWC")) << fused_paths(kept);
  EXPECT_TRUE(has_path(kept.fused, "m converted NHWC -> NCHW for the graph output")) << fused_paths(kept);
  EXPECT_FALSE(has_path(around.fused, "plan's NHWC buffers")) << fused_paths(around);
  EXPECT_FALSE(has_path(around.fused, "channels-last variant")) << fused_paths(around);
  EXPECT_TRUE(std::any_of(kept.fused.notes.begin(), kept.fused.notes.end(), [](const std::string& n) {
    return n.find("channels-last across steps: 3 convolutions run NHWC") != std::string::npos;
  })) << fused_paths(kept);
  // The kept plan launches fewer conversions.
  EXPECT_EQ(conversions(around.fused), 6) << fused_paths(around);
  EXPECT_LT(conversions(kept.fused), 6) << fused_paths(kept);
}

// ResNet's stem: conv + ReLU, a 3x3 stride-2 max pool, conv. With values kept NHWC the pool runs its
// channels-last variant on the first convolution's output where it lies, and the plan converts only the graph's
// input and output (4 conversions around each convolution); both ways verified against each other's unfused plan
// and the float64 reference, the pool's padding and window edges included (16 x 16, odd windows at the border).
TEST(ExecutorContractionGpu, StemPoolsChannelsLastBetweenConvolutions) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(
      R"({"name": "x", "shape": [2, 8, 16, 16], "dtype": "f32"}, {"name": "w1", "shape": [16, 8, 3, 3], "dtype": "f32"},
         {"name": "w2", "shape": [16, 16, 3, 3], "dtype": "f32"})",
      R"({"name": "c1", "op": "conv2d", "inputs": ["x", "w1"], "attrs": {"padding": 1}},
         {"name": "a", "op": "relu", "inputs": ["c1"]},
         {"name": "p", "op": "max_pool2d", "inputs": ["a"], "attrs": {"kernel_size": 3, "stride": 2, "padding": 1}},
         {"name": "c2", "op": "conv2d", "inputs": ["p", "w2"], "attrs": {"padding": 1}},
         {"name": "y", "op": "relu", "inputs": ["c2"]})",
      R"("y")");
  const auto [kept, around] = run_kept_and_around(g, "stem");
  EXPECT_EQ(conversions(kept.fused), 2) << fused_paths(kept);
  EXPECT_EQ(conversions(around.fused), 4) << fused_paths(around);
  for (const PlanReport* plan : {&kept.unfused, &kept.fused}) {
    EXPECT_TRUE(has_path(*plan, "its channels-last variant, on the values kept NHWC")) << plan->name;
  }
  EXPECT_TRUE(std::any_of(kept.fused.notes.begin(), kept.fused.notes.end(), [](const std::string& n) {
    return n.find("through 1 pooling kernel run channels-last") != std::string::npos;
  })) << fused_paths(kept);
}

// ResNet's stem at a small, odd size: a 7x7 stride-2 convolution over 3 channels (+ batchnorm + ReLU), the pool,
// a second convolution. Its channels-last way is the space-to-depth form: a generated kernel rearranges x's 2x2
// blocks into 16 channels (from x's NCHW buffer, in every plan), cuDNN runs a 4x4 stride-1 convolution on them
// with the rearranged, folded weights. Verified against the unfused plan and the float64 reference, with values
// kept NHWC (only the output converted) and converted around each convolution; bf16 too, where cuDNN runs it.
TEST(ExecutorContractionGpu, StemConvolutionRunsInSpaceToDepthForm) {
  FX_REQUIRE_DEVICE();
  auto stem = [](const std::string& dtype) {
    const std::string t = R"(], "dtype": ")" + dtype + R"("})";
    return inline_graph(
        R"({"name": "x", "shape": [2, 3, 21, 18)" + t + R"(, {"name": "w1", "shape": [16, 3, 7, 7)" + t +
            R"(, {"name": "mean", "shape": [16)" + t + R"(, {"name": "var", "shape": [16)" + t +
            R"(, {"name": "gamma", "shape": [16)" + t + R"(, {"name": "beta", "shape": [16)" + t +
            R"(, {"name": "w2", "shape": [16, 16, 3, 3)" + t,
        R"({"name": "c1", "op": "conv2d", "inputs": ["x", "w1"], "attrs": {"stride": 2, "padding": 3}},
           {"name": "bn", "op": "batchnorm", "inputs": ["c1", "mean", "var", "gamma", "beta"], "attrs": {"eps": 1e-05}},
           {"name": "a", "op": "relu", "inputs": ["bn"]},
           {"name": "p", "op": "max_pool2d", "inputs": ["a"], "attrs": {"kernel_size": 3, "stride": 2, "padding": 1}},
           {"name": "c2", "op": "conv2d", "inputs": ["p", "w2"], "attrs": {"padding": 1}},
           {"name": "y", "op": "relu", "inputs": ["c2"]})",
        R"("y")");
  };
  const auto [kept, around] = run_kept_and_around(stem("f32"), "stem in space-to-depth form");
  for (const RunReport* r : {&kept, &around}) {
    const PlanReport& plan = r->fused;
    EXPECT_TRUE(has_path(plan, "space to depth: x's 2x2 blocks as 16 channels, the 7x7 stride-2 convolution over 3 "
                               "channels run as a 4x4 stride-1 one, NHWC"))
        << fused_paths(*r);
    EXPECT_TRUE(std::any_of(plan.kernels.begin(), plan.kernels.end(), [](const KernelReport& k) {
      return k.name.find("_x_space_to_depth") != std::string::npos &&
             k.path.find("2x2 blocks of 3 channels as 12 (padded to 16) channels") != std::string::npos;
    })) << fused_paths(*r);
    EXPECT_TRUE(has_path(plan, "batchnorm folded into conv weights")) << fused_paths(*r);
  }
  EXPECT_EQ(conversions(kept.fused), 1) << fused_paths(kept);     // y, for the graph output
  EXPECT_EQ(conversions(around.fused), 3) << fused_paths(around);  // c1's y, c2's x and y
  // bf16: cuDNN's NHWC kernels may refuse it; either way the run completes, verified, and says which ran.
  RunOptions opt;
  opt.force_layout = 1;
  const RunReport h = run_plans(stem("bf16"), nullptr, 3, opt);
  expect_verified(h, "bf16 stem, NHWC forced");
  EXPECT_TRUE(has_path(h.fused, "space to depth: x's 2x2 blocks") || has_path(h.fused, "cuDNN refused the NHWC call"))
      << fused_paths(h);
}

TEST(ExecutorContractionGpu, SmallTransformerBlockRunsEndToEnd) {
  FX_REQUIRE_DEVICE();
  TransformerShape shape;
  shape.layers = 2, shape.hidden = 64, shape.seq = 32, shape.batch = 2, shape.heads = 4;
  auto g = build_graph(transformer_spec(shape));
  ASSERT_TRUE(g.ok());
  const RunReport r = run_plans(*g, nullptr, 3);
  expect_verified(r, "small transformer");
  EXPECT_LT(r.fused.kernels.size(), r.unfused.kernels.size());
}

// Full size: each sample's auto-fused plan, verified, with its kernel count no larger than unfused. resnet18's
// layouts are tuned here, so its plan takes whichever of the channels-last passes the timings ask for (on an
// H100: every convolution NHWC, layer2's downsample after reweighing, the max pool's channels-last variant).
TEST(ExecutorContractionGpu, SamplesAtFullSize) {
  FX_REQUIRE_DEVICE();
  for (const std::string s : {"mlp_relu_f32", "mlp_gelu_bf16", "mlp_relu_small_bf16", "swiglu_bf16", "qkv_bf16",
                              "conv_bn_relu", "gpt2_block", "resnet18"}) {
    SCOPED_TRACE(s);
    const RunReport r = run_plans(sample(s), nullptr, 5);
    expect_verified(r, s);
    EXPECT_LE(r.fused.kernels.size(), r.unfused.kernels.size()) << s;
    if (s == "gpt2_block") {  // its GEMMs' search finalists timed again in the plan (tune_gemm)
      EXPECT_TRUE(has_path(r.fused, " best timed again in the plan: ")) << fused_paths(r);
      // res1 and y are the attention and MLP output projections' C input (beta = 1)
      EXPECT_TRUE(has_path(r.fused, "BIAS epilogue, residual added as C (beta = 1)")) << fused_paths(r);
    }
    std::cout << "  " << s << ": unfused " << r.unfused.kernels.size() << " launches " << r.unfused.total_ms
              << " ms, fused " << r.fused.kernels.size() << " launches " << r.fused.total_ms << " ms\n"
              << fused_paths(r);
  }
  const Graph swiglu = sample("swiglu_bf16");
  const Plan merged = plan_with_group(swiglu, {"g", "u", "act", "y"});  // x@[W1|W3] once, then silu(g)*u
  const RunReport r = run_plans(swiglu, &merged, 5);
  expect_verified(r, "swiglu merged");
  // The two GEMMs as one call, or alone where tuning found them faster, then one kernel for silu(g)*u.
  EXPECT_EQ(r.fused.kernels.size(), has_path(r.fused, "run alone, one of") ? 3u : 2u) << fused_paths(r);
  std::cout << "  swiglu merged: fused " << r.fused.total_ms << " ms\n" << fused_paths(r);
}

}  // namespace
}  // namespace fx::gpu
