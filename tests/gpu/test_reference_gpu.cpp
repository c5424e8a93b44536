// Both plans against the float64 CPU reference (core/reference), on the inputs the run generated: every
// elementwise/reduction sample at small shapes in its own dtype and rewritten to f16 and bf16, tiled
// transposes of several ranks, max_pool2d's window kernel, and sort/topk through CUB. Skips with a message where no CUDA device exists.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"
#include "kernels/codegen/codegen.h"
#include "kernels/common/gpu_error.h"
#include "kernels/executor/executor.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

// The sample with every dimension above 64 cut to 61..73 (the same original size gives the same size, so
// shapes stay consistent; odd sizes exercise masked rows and partial tiles), its f32 inputs as `dtype`.
Expected<Graph> small_variant(const std::string& file, DType dtype) {
  auto text = read_text_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + file, 1 << 26);
  auto spec = parse_graph_spec(*text);
  if (!spec.ok()) return spec.errors();
  for (auto& in : spec->inputs) {
    for (auto& d : in.type.shape) {
      if (d > 64) d = 61 + d % 13;
    }
    if (in.type.dtype == DType::f32) in.type.dtype = dtype;
  }
  for (auto& n : spec->nodes) n.shape.reset(), n.dtype.reset();
  return build_graph(*spec);
}

RunReport run_with_reference(const Graph& g) {
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  engine.auto_fuse();
  RunOptions opt;
  opt.timing.repeat = 2;
  opt.timing.warmup = 1;
  opt.reference = RunOptions::Reference::on;
  Executor ex(engine.graph(), unfused, engine.plan(), opt);
  return ex.run();
}

void expect_matches_reference(const RunReport& r, const std::string& what) {
  EXPECT_TRUE(r.verified) << what;
  ASSERT_FALSE(r.reference_checks.empty()) << what << ": " << r.reference_note;
  for (const auto& c : r.reference_checks) {
    EXPECT_TRUE(c.passed) << what << ": " << c.name << " (" << c.dtype << ") rel. error " << c.rel_error << " (limit "
                          << c.threshold << "), " << c.nan_count << " NaN";
  }
  for (const auto& c : r.checks) EXPECT_TRUE(c.passed) << what << ": fused vs unfused " << c.name;
}

TEST(ReferenceGpu, EverySampleMatchesTheReferenceInEachFloatType) {
  FX_REQUIRE_DEVICE();
  const auto samples = runnable_samples();
  ASSERT_GE(samples.size(), 10u);
  for (const std::string& s : samples) {
    for (DType t : {DType::f32, DType::f16, DType::bf16}) {
      const std::string what = s + " (" + std::string(dtype_name(t)) + ")";
      SCOPED_TRACE(what);
      auto g = small_variant(s, t);
      if (!g.ok()) {  // a sample whose ops need f32 (none today): say so rather than pass silently
        ADD_FAILURE() << what << ": " << format_diagnostics(g.errors());
        continue;
      }
      expect_matches_reference(run_with_reference(*g), what);
    }
  }
}

TEST(ReferenceGpu, TiledTransposesMatchTheReference) {
  FX_REQUIRE_DEVICE();
  // perm [0, 2, 1] and [2, 0, 1] move the innermost dim; the pre-transpose value is also an output.
  const Graph g = inline_graph(
      R"({"name": "x", "shape": [3, 70, 45], "dtype": "f32"}, {"name": "b", "shape": [70], "dtype": "f32"})",
      R"({"name": "m", "op": "mul", "inputs": ["x", 3]},
         {"name": "t", "op": "transpose", "inputs": ["m"], "attrs": {"perm": [0, 2, 1]}},
         {"name": "y", "op": "relu", "inputs": ["s"]},
         {"name": "s", "op": "add", "inputs": ["t", "b"]},
         {"name": "u", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [2, 0, 1]}},
         {"name": "v", "op": "dropout", "inputs": ["u"], "attrs": {"p": 0.3, "seed": 5}})",
      R"("y", "m", "v")");
  expect_matches_reference(run_with_reference(g), "transposes f32");
  const Graph h = inline_graph(R"({"name": "x", "shape": [129, 97], "dtype": "bf16"})",
                               R"({"name": "t", "op": "transpose", "inputs": ["x"], "attrs": {"perm": [1, 0]}},
                                  {"name": "y", "op": "sigmoid", "inputs": ["t"]})",
                               R"("y")");
  expect_matches_reference(run_with_reference(h), "transpose bf16");
}

// The fast 16-bit sigmoid and silu (preamble: fx_sigmoid_fast) over [-90, 90], where exp(-x) overflows f32,
// and sigmoid of values near the format's limits (+-inf in f16, whose literal 1e30 overflows; up to about 9e31 in
// bf16): within the 16-bit limits of the float64 reference, and no NaN where it has none.
TEST(ReferenceGpu, SixteenBitSigmoidAndSiluMatchTheReferenceOverAWideRange) {
  FX_REQUIRE_DEVICE();
  for (const char* dtype : {"bf16", "f16"}) {
    const Graph g = inline_graph(std::string(R"({"name": "x", "shape": [61, 67], "dtype": ")") + dtype + R"("})",
                                 R"({"name": "s", "op": "mul", "inputs": ["x", 45.0]},
                                    {"name": "y", "op": "sigmoid", "inputs": ["s"]},
                                    {"name": "z", "op": "silu", "inputs": ["s"]},
                                    {"name": "big", "op": "mul", "inputs": ["s", 1.0e30]},
                                    {"name": "w", "op": "sigmoid", "inputs": ["big"]})",
                                 R"("y", "z", "w")");
    expect_matches_reference(run_with_reference(g), std::string("wide sigmoid/silu ") + dtype);
  }
}

TEST(ReferenceGpu, ComparisonsWithScalarLiteralsMatchTheReference) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(R"({"name": "x", "shape": [61, 67], "dtype": "f32"})",
                               R"({"name": "c", "op": "gt", "inputs": ["x", 0.5]},
                                  {"name": "y", "op": "where", "inputs": ["c", "x", -1.5]},
                                  {"name": "s", "op": "sum", "inputs": ["y"], "attrs": {"axis": -1}})",
                               R"("y", "s")");
  expect_matches_reference(run_with_reference(g), "gt/where with scalars");
}

TEST(ReferenceGpu, SortAndTopkRunThroughCubAndMatchTheReference) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(
      R"({"name": "x", "shape": [37, 1000], "dtype": "f32"}, {"name": "i", "shape": [5, 300, 1], "dtype": "i32"})",
      R"({"name": "s", "op": "sort", "inputs": ["x"]},
         {"name": "k", "op": "topk", "inputs": ["x"], "attrs": {"k": 10}},
         {"name": "d", "op": "sort", "inputs": ["i"], "attrs": {"axis": 1, "descending": true}},
         {"name": "h", "op": "cast", "inputs": ["x"], "attrs": {"dtype": "bf16"}},
         {"name": "hk", "op": "topk", "inputs": ["h"], "attrs": {"k": 3}})",
      R"("s", "k", "d", "hk")");
  const RunReport r = run_with_reference(g);
  expect_matches_reference(r, "sort/topk");
  int cub = 0;
  for (const auto& k : r.fused.kernels) cub += k.library == "CUB";
  EXPECT_EQ(cub, 4);
}

// max_pool2d: its generated window kernel in both plans (never fused), odd sizes, padding on both sides, a
// stride and a dilation, f32 and bf16, after a relu that the fused plan keeps in its own kernel.
TEST(ReferenceGpu, MaxPool2dWindowsMatchTheReference) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(
      R"({"name": "x", "shape": [3, 5, 37, 29], "dtype": "f32"})",
      R"({"name": "r", "op": "relu", "inputs": ["x"]},
         {"name": "stem", "op": "max_pool2d", "inputs": ["r"], "attrs": {"kernel_size": 3, "stride": 2, "padding": 1}},
         {"name": "wide", "op": "max_pool2d", "inputs": ["x"], "attrs": {"kernel_size": [2, 3], "dilation": [2, 1]}},
         {"name": "h", "op": "cast", "inputs": ["x"], "attrs": {"dtype": "bf16"}},
         {"name": "hp", "op": "max_pool2d", "inputs": ["h"], "attrs": {"kernel_size": 2, "stride": 2}})",
      R"("stem", "wide", "hp")");
  const RunReport r = run_with_reference(g);
  expect_matches_reference(r, "max_pool2d");
  int windows = 0;
  for (const auto& k : r.fused.kernels) windows += k.kind == "window_pool";
  EXPECT_EQ(windows, 3);
}

TEST(ReferenceGpu, SortAlongAnOuterAxisIsRefusedWithTheReason) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(R"({"name": "x", "shape": [8, 16], "dtype": "f32"})",
                               R"({"name": "s", "op": "sort", "inputs": ["x"], "attrs": {"axis": 0}})", R"("s")");
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  try {
    Executor ex(engine.graph(), unfused, unfused);
    ADD_FAILURE() << "a sort over axis 0 of [8, 16] ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("innermost"), std::string::npos) << e.what();
  }
}

TEST(ReferenceGpu, CustomOpIsRefusedNamingTheNode) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(R"({"name": "x", "shape": [8], "dtype": "f32"})",
                               R"({"name": "vendor_fft", "op": "custom", "inputs": ["x"], "shape": [8], "dtype": "f32",
                                   "attrs": {"label": "FFT"}})",
                               R"("vendor_fft")");
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  try {
    Executor ex(engine.graph(), unfused, unfused);
    ADD_FAILURE() << "a custom op ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("vendor_fft"), std::string::npos) << e.what();
  }
}

TEST(ReferenceGpu, LargeGraphsSkipTheReferenceAndSayWhy) {
  FX_REQUIRE_DEVICE();
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/relu_mul_add.json");
  ASSERT_TRUE(g.ok());
  FusionEngine engine(*g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  engine.auto_fuse();
  RunOptions opt;
  opt.timing.repeat = 1;
  opt.timing.warmup = 0;
  const RunReport r = Executor(engine.graph(), unfused, engine.plan(), opt).run();
  EXPECT_TRUE(r.reference_checks.empty());
  EXPECT_NE(r.reference_note.find("16M"), std::string::npos) << r.reference_note;
}

}  // namespace
}  // namespace fx::gpu
