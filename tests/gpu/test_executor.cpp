// The executor on the GPU: every elementwise/reduction sample runs in both plans (unfused and auto-fused) at
// a small size (odd row lengths: masked and scalar paths) and at full size, and verification must pass.
// Skips with a message where no CUDA device exists.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"
#include "kernels/codegen/codegen.h"
#include "kernels/common/gpu_error.h"
#include "kernels/executor/executor.h"
#include "tests/gpu/executor_test_support.h"
#include "tests/gpu/test_contraction_support.h"

namespace fx::gpu {
namespace {

// The sample with every dimension above 64 shrunk (same size for the same original, so shapes stay
// consistent): to an odd size, which exercises masked rows and the scalar (non-vector) path, or to a multiple
// of 8, which keeps the vector accesses and so every layout of the elementwise kernels.
Graph shrink(const std::string& file, bool odd = true) {
  auto text = read_text_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + file, 1 << 26);
  auto spec = parse_graph_spec(*text);
  EXPECT_TRUE(spec.ok());
  for (auto& in : spec->inputs) {
    for (auto& d : in.type.shape) {
      if (d > 64) d = odd ? 61 + d % 13 : 96 + 8 * (d % 5);
    }
  }
  for (auto& n : spec->nodes) n.shape.reset();
  auto g = build_graph(*spec);
  EXPECT_TRUE(g.ok()) << file;
  return std::move(g).value();
}

// x * w then sigmoid over [rows, cols] f32: two elementwise kernels unfused, one fused, each with layouts to time.
Graph mul_sigmoid(int rows, int cols) {
  const std::string shape = "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "chain",
    "inputs": [{"name": "x", "shape": )" + shape + R"(, "dtype": "f32"}, {"name": "w", "shape": )" + shape +
                      R"(, "dtype": "f32"}],
    "nodes": [{"name": "m", "op": "mul", "inputs": ["x", "w"]}, {"name": "y", "op": "sigmoid", "inputs": ["m"]}],
    "outputs": ["y"]})");
  EXPECT_TRUE(g.ok());
  return std::move(g).value();
}

RunReport run_both(const Graph& g, int repeat, RunOptions opt = {}) {
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  engine.auto_fuse();
  opt.timing.repeat = repeat;
  opt.timing.warmup = 1;
  Executor ex(engine.graph(), unfused, engine.plan(), opt);
  return ex.run();
}

// Executor::bind_outputs: a later step reads a bound output where the plan wrote it. The unfused plan's sigmoid
// reads m; the plan's own buffer for m is poisoned after binding, so a read from it would make y NaN.
TEST(ExecutorGpu, ALaterStepReadsABoundOutputWhereItWasWritten) {
  FX_REQUIRE_DEVICE();
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "bound",
    "inputs": [{"name": "x", "shape": [512, 1024], "dtype": "f32"}, {"name": "w", "shape": [512, 1024], "dtype": "f32"}],
    "nodes": [{"name": "m", "op": "mul", "inputs": ["x", "w"]}, {"name": "y", "op": "sigmoid", "inputs": ["m"]}],
    "outputs": ["m", "y"]})");
  ASSERT_TRUE(g.ok());
  FusionEngine engine(*g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  engine.auto_fuse();
  Executor ex(engine.graph(), unfused, engine.plan(), RunOptions{});
  for (const OutputCheck& c : ex.prepare_with_inputs()) ASSERT_TRUE(c.passed) << c.name;
  constexpr std::size_t kN = 512 * 1024, kBytes = kN * 4;
  auto stream = static_cast<cudaStream_t>(ex.stream());
  // y as the plan computes it in its own buffers.
  test::DeviceArray want(kBytes), m(kBytes), y(kBytes);
  ex.enqueue(PlanId::unfused);
  ASSERT_EQ(cudaMemcpyAsync(want.get(), ex.buffer(PlanId::unfused, "y"), kBytes, cudaMemcpyDeviceToDevice, stream), cudaSuccess);
  void* own_m = ex.buffer(PlanId::unfused, "m");
  ex.bind_outputs(PlanId::unfused, {{"m", m.get()}, {"y", y.get()}});
  EXPECT_EQ(ex.buffer(PlanId::unfused, "y"), y.get());
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemset(own_m, 0xFF, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(y.get(), 0xFF, kBytes), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ex.enqueue(PlanId::unfused);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(test::count_different(y.get(), want.get(), kN, DType::f32), 0)
      << "elements of the bound y that differ from the plan's own y (NaN: m read from the poisoned buffer)";
  // Overlapping buffers are refused, and the binding stays as it was.
  auto refused = [&](std::map<std::string, void*> outputs, const std::string& says) {
    try {
      ex.bind_outputs(PlanId::unfused, outputs);
      ADD_FAILURE() << "bound: " << says;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused({{"m", m.get()}, {"y", m.get()}}, "outputs 'm' and 'y' overlap in the caller's memory");
  refused({{"m", y.get()}, {"y", static_cast<char*>(y.get()) + kBytes - 256}}, "overlap in the caller's memory");
  EXPECT_EQ(ex.buffer(PlanId::unfused, "y"), y.get());
}

TEST(ExecutorGpu, ARunReportCarriesTheClocksOfItsTiming) {
  FX_REQUIRE_DEVICE();
  RunOptions opt;
  opt.cuda_graph = true;
  const RunReport r = run_both(mul_sigmoid(4096, 4096), 20, opt);
  ASSERT_TRUE(r.timing.gpu_clocks);
  ASSERT_TRUE(r.timing.graph_gpu_clocks);
  EXPECT_TRUE(r.timing.gpu_clocks->note.empty()) << r.timing.gpu_clocks->note;  // the GPU machine has the driver's NVML
  EXPECT_GT(r.timing.gpu_clocks->samples, 0);
  EXPECT_GT(r.timing.graph_gpu_clocks->samples, 0);
  std::cout << "timing: " << r.timing.gpu_clocks->summary << "\nCUDA graphs: " << r.timing.graph_gpu_clocks->summary
            << "\n";
}

// A timing asked for in milliseconds, as do_bench's: a round timed first, the counts from it, and a rest before
// the timing and each plan's CUDA-graph replays.
TEST(ExecutorGpu, ATimingInMillisecondsRunsTheRoundsItComesTo) {
  FX_REQUIRE_DEVICE();
  RunOptions opt;
  opt.cuda_graph = true;
  opt.timing.cold_l2 = true;
  opt.timing.warmup_ms = 5;
  opt.timing.repeat_ms = 30;
  opt.timing.rest_ms = 50;
  const RunReport r = run_both(mul_sigmoid(2048, 2048), 20, opt);
  ASSERT_GT(r.timing.round_ms.value_or(0), 0.0);
  const double round_ms = *r.timing.round_ms;
  // Each plan moves 48 MiB unfused, 32 fused, and each run follows the 256 MB flush: a round is well above
  // 0.05 ms on any GPU, and far below the 30 ms asked for.
  EXPECT_GT(round_ms, 0.05);
  EXPECT_LT(round_ms, 15.0);
  const TimingRounds expected = timing_rounds(opt.timing, round_ms);
  EXPECT_EQ(r.timing.repeat, expected.repeat);
  EXPECT_EQ(r.timing.warmup, expected.warmup);
  EXPECT_GE(r.timing.repeat, 2);
  EXPECT_EQ(r.timing.repeat_ms, 30.0);
  EXPECT_EQ(r.timing.rest_ms, 50.0);
  // The timed rounds lasted about repeat_ms: each plan's median times the rounds, flushes aside.
  EXPECT_LT(r.timing.repeat * (r.unfused.total_ms + r.fused.total_ms), 2 * 30.0);
  EXPECT_GT(r.unfused.graph_ms.value_or(0), 0.0);
  EXPECT_GT(r.fused.graph_ms.value_or(0), 0.0);
  std::cout << "a round " << round_ms << " ms: " << r.timing.warmup << " warm-up rounds, " << r.timing.repeat << " timed\n";
  // Each kernel's three layouts were compared as long as the plans were timed: a round of them, each after
  // the flush, takes well under 2 ms on any GPU, so 30 ms makes more rounds than the 15 of a counted run.
  int tuned = 0;
  for (const PlanReport* p : {&r.unfused, &r.fused}) {
    for (const KernelReport& k : p->kernels) {
      const std::string at = " layouts timed here in ";
      const std::size_t i = k.path.find(at);
      ASSERT_NE(i, std::string::npos) << k.path;
      const int rounds = std::atoi(k.path.c_str() + i + at.size());
      EXPECT_GT(rounds, 15) << k.path;
      ++tuned;
    }
  }
  EXPECT_EQ(tuned, 3);
}

// RunOptions::timed: the run's own timing first, then one more each time the callback asks, each timed like
// the first (rounds counted anew from the asked milliseconds); the report keeps the first.
TEST(ExecutorGpu, TimesBothPlansAgainWhileAsked) {
  FX_REQUIRE_DEVICE();
  RunOptions opt;
  opt.timing.cold_l2 = true;
  opt.timing.warmup_ms = 2;
  opt.timing.repeat_ms = 10;
  opt.timing.rest_ms = 20;
  std::vector<TimingPass> passes;
  opt.timed = [&](const TimingPass& t) {
    passes.push_back(t);
    return passes.size() < 3;
  };
  const RunReport r = run_both(mul_sigmoid(2048, 2048), 20, opt);
  ASSERT_EQ(passes.size(), 3u);
  for (std::size_t i = 0; i < passes.size(); ++i) {
    const TimingPass& t = passes[i];
    EXPECT_EQ(t.index, static_cast<int>(i));
    EXPECT_GT(t.unfused_ms, 0.0) << i;
    EXPECT_GT(t.fused_ms, 0.0) << i;
    EXPECT_GT(t.round_ms, 0.0) << i;
    EXPECT_EQ(t.repeat, timing_rounds(opt.timing, t.round_ms).repeat) << i;
    EXPECT_EQ(t.clocks.samples > 0, t.clocks_note.empty()) << i << ": " << t.clocks_note;
    // 48 MiB against 32 MiB after the same flush: the fused plan is the faster in every timing.
    EXPECT_LT(t.fused_ms, t.unfused_ms) << i;
    std::cout << "timing " << i << ": unfused " << t.unfused_ms << " ms, fused " << t.fused_ms << " ms, " << t.repeat
              << " rounds\n";
  }
  EXPECT_EQ(r.unfused.total_ms, passes[0].unfused_ms);
  EXPECT_EQ(r.fused.total_ms, passes[0].fused_ms);
  EXPECT_EQ(r.timing.repeat, passes[0].repeat);
  EXPECT_EQ(r.timing.round_ms, passes[0].round_ms);
  EXPECT_TRUE(r.verified);
}

// RunOptions::placement: the same plans on buffers moved by gaps, which the run's allocation grows by, with the
// same results; a horizontal GEMM's parts stay equally spaced (its step refuses otherwise).
TEST(ExecutorGpu, APlacementMovesTheBuffersAndNotTheResults) {
  FX_REQUIRE_DEVICE();
  RunOptions opt;
  opt.autotune = false;  // the same layouts in both runs
  const RunReport packed = run_both(mul_sigmoid(1024, 1024), 3, opt);
  opt.timing.placement = 7;
  const RunReport placed = run_both(mul_sigmoid(1024, 1024), 3, opt);
  EXPECT_EQ(packed.timing.placement, 0);
  EXPECT_EQ(packed.timing.placement_gap_bytes, 0);
  EXPECT_EQ(placed.timing.placement, 7);
  std::int64_t gaps = 0;  // one before each input (x, w), each unfused step's output (m, y) and the fused y
  for (std::size_t i = 0; i < 5; ++i) gaps += static_cast<std::int64_t>(placement_gap(7, i));
  EXPECT_EQ(placed.timing.placement_gap_bytes, gaps);
  EXPECT_EQ(placed.device_bytes - packed.device_bytes, gaps);
  ASSERT_TRUE(packed.verified);
  ASSERT_TRUE(placed.verified);
  ASSERT_EQ(placed.checks.size(), packed.checks.size());
  for (std::size_t i = 0; i < packed.checks.size(); ++i) EXPECT_EQ(placed.checks[i].rel_error, packed.checks[i].rel_error);
  // qkv's three projections as one horizontal GEMM, shrunk: its parts' outputs back to back after one gap.
  opt.timing.placement = 3;
  const RunReport qkv = run_both(shrink("qkv_bf16.json", false), 3, opt);
  EXPECT_TRUE(qkv.verified);
  EXPECT_GT(qkv.timing.placement_gap_bytes, 0);
}

// The kernels of both plans whose report line (path) contains `text`.
int kernels_saying(const RunReport& r, const std::string& text) {
  int n = 0;
  for (const PlanReport* p : {&r.unfused, &r.fused}) {
    for (const KernelReport& k : p->kernels) n += k.path.find(text) != std::string::npos;
  }
  return n;
}

void expect_verified(const RunReport& r, const std::string& what) {
  EXPECT_TRUE(r.verified) << what;
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.passed) << what << ": output " << c.name << " rel. error " << c.rel_error << " (limit " << c.threshold
                          << "), " << c.nan_count << " NaN";
  }
  EXPECT_GT(r.unfused.total_ms, 0.0) << what;
  EXPECT_GT(r.fused.total_ms, 0.0) << what;
}

TEST(ExecutorGpu, EverySampleVerifiesAtSmallSize) {
  FX_REQUIRE_DEVICE();
  for (const std::string& s : runnable_samples()) {
    SCOPED_TRACE(s);
    expect_verified(run_both(shrink(s), 3), s + " (small)");
  }
}

TEST(ExecutorGpu, EverySampleVerifiesAtFullSize) {
  FX_REQUIRE_DEVICE();
  for (const std::string& s : runnable_samples()) {
    SCOPED_TRACE(s);
    auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + s);
    ASSERT_TRUE(g.ok());
    const RunReport r = run_both(*g, 5);
    expect_verified(r, s);
    // A fused plan never has more kernels than the unfused one.
    EXPECT_LE(r.fused.kernels.size(), r.unfused.kernels.size()) << s;
  }
}

// Autotuning may install any layout, so each must compute what the default does: every sample run with each
// layout forced, verified against the unfused plan and (small graphs) the float64 reference.
TEST(ExecutorGpu, EveryLayoutOfEveryKernelVerifies) {
  FX_REQUIRE_DEVICE();
  int forced = 0;
  for (const std::string& s : runnable_samples()) {
    SCOPED_TRACE(s);
    for (int layout : {0, 1, 2, 3}) {  // a tiled transpose has 3 layouts, a convolution 4 ways
      RunOptions opt;
      opt.force_layout = layout;
      const RunReport r = run_both(shrink(s, false), 2, opt);
      expect_verified(r, s + " layout " + std::to_string(layout + 1));
      EXPECT_EQ(kernels_saying(r, "the fastest"), 0) << "forced layouts are not timed";
      if (layout == 1) forced += kernels_saying(r, "layout 2 of 2, set by hand");
    }
  }
  EXPECT_GT(forced, 20) << "elementwise kernels ran in their 8-byte layout";
}

TEST(ExecutorGpu, LayoutsAreTimedAndTheFastestKept) {
  FX_REQUIRE_DEVICE();
  const Graph g = mul_sigmoid(2048, 1024);
  for (bool cold : {false, true}) {
    RunOptions opt;
    opt.timing.cold_l2 = cold;
    const RunReport tuned = run_both(g, 5, opt);
    expect_verified(tuned, cold ? "tuned, cold L2" : "tuned");
    // Both unfused kernels and the fused one: "N elements per thread (...): the fastest of 2 layouts timed
    // here in 15 rounds (0.0123 ms; the other: 0.0130 ms)".
    EXPECT_EQ(kernels_saying(tuned, ": the fastest of 2 layouts timed here in 15 rounds ("), 3);
    EXPECT_EQ(kernels_saying(tuned, "elements per thread ("), 3);
  }
  RunOptions fixed;
  fixed.autotune = false;
  const RunReport plain = run_both(g, 5, fixed);
  expect_verified(plain, "default layouts");
  EXPECT_EQ(kernels_saying(plain, "timed"), 0);
  EXPECT_EQ(kernels_saying(plain, "4 elements per thread (16-byte accesses)"), 3);
}

// A large elementwise kernel has a third layout, 512 threads per block: timed with the others, and right
// when forced.
TEST(ExecutorGpu, WideBlockLayoutIsTimedAndVerifies) {
  FX_REQUIRE_DEVICE();
  const Graph g = mul_sigmoid(2048, 2048);
  const RunReport tuned = run_both(g, 3);
  expect_verified(tuned, "tuned");
  EXPECT_EQ(kernels_saying(tuned, ": the fastest of 3 layouts timed here in 15 rounds ("), 3);
  EXPECT_EQ(kernels_saying(tuned, "512 threads per block"), 3);
  RunOptions opt;
  opt.force_layout = 2;
  const RunReport wide = run_both(g, 2, opt);
  expect_verified(wide, "512 threads per block");
  EXPECT_EQ(kernels_saying(wide, "2 elements per thread (8-byte accesses), 512 threads per block: layout 3 of 3, "
                                 "set by hand"), 3);
}

// Each timed launch of a step's layouts follows a launch of the step before it in the plan, so the step finds
// the L2 as the plan leaves it (its predecessor's outputs just written) rather than as after a flush alone.
TEST(ExecutorGpu, LayoutTuningRunsThePreviousStepBeforeEachTimedLaunch) {
  FX_REQUIRE_DEVICE();
  const Graph g = mul_sigmoid(2048, 1024);
  for (bool cold : {false, true}) {
    bool tuning = false;
    std::map<std::pair<int, int>, int> launches;  // (plan, step) -> launches through the plan while tuning
    RunOptions opt;
    opt.timing.cold_l2 = cold;
    opt.progress = [&](const std::string& step, double, const std::string&) { tuning = step == "tune"; };
    opt.before_launch = [&](const LaunchInfo& info) {
      if (tuning) ++launches[{static_cast<int>(info.plan), info.step}];
    };
    const RunReport r = run_both(g, 2, opt);
    expect_verified(r, cold ? "cold L2" : "warm L2");
    // The unfused plan's sigmoid (step 1) has 2 layouts, each launched in 1 warm-up and 15 timed rounds:
    // its predecessor, the multiply, runs before each of those 32 launches. Once its decision is applied, each
    // step runs once more through the plan, as tuned, for the steps after it. The fused plan has one step.
    EXPECT_EQ((launches[{0, 0}]), 33) << (cold ? "cold" : "warm");
    EXPECT_EQ((launches[{0, 1}]), 1) << "a tuned step's own layouts launch outside the plan's launch()";
    EXPECT_EQ((launches[{1, 0}]), 1);
  }
}

// A row kernel's three layouts (threads per row) are timed the same way; each verifies.
TEST(ExecutorGpu, RowKernelLayoutsAreTimedAndTheFastestKept) {
  FX_REQUIRE_DEVICE();
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "rows",
    "inputs": [{"name": "x", "shape": [2048, 4096], "dtype": "f32"}, {"name": "b", "shape": [2048, 4096], "dtype": "f32"}],
    "nodes": [{"name": "s", "op": "add", "inputs": ["x", "b"]}, {"name": "y", "op": "softmax", "inputs": ["s"]}],
    "outputs": ["y"]})");
  ASSERT_TRUE(g.ok());
  RunOptions opt;
  opt.timing.cold_l2 = true;
  const RunReport tuned = run_both(*g, 5, opt);
  expect_verified(tuned, "tuned");
  ASSERT_EQ(tuned.fused.kernels.size(), 1u);
  const std::string& path = tuned.fused.kernels[0].path;
  EXPECT_NE(path.find("threads per row, "), std::string::npos) << path;
  EXPECT_NE(path.find(": the fastest of 3 layouts timed here in 15 rounds ("), std::string::npos) << path;
  for (const char* layout : {"128 threads per row", "256 threads per row", "512 threads per row"}) {
    EXPECT_NE(path.find(layout), std::string::npos) << path;
  }
}

// Round r times the unfused plan once, then the fused plan once, so a drift of the clocks over the timing
// (power-limited GEMMs) moves both plans alike: the rounds that time the plans whole, then as many step by step.
TEST(ExecutorGpu, BothPlansAreTimedInInterleavedRounds) {
  FX_REQUIRE_DEVICE();
  bool timing = false;
  std::vector<int> plans;  // the plan of each launch while timing, runs of one plan merged
  RunOptions opt;
  opt.progress = [&](const std::string& step, double, const std::string&) { timing = step == "time"; };
  opt.before_launch = [&](const LaunchInfo& info) {
    if (timing && (plans.empty() || plans.back() != static_cast<int>(info.plan))) plans.push_back(static_cast<int>(info.plan));
  };
  const RunReport r = run_both(shrink("sigmoid_chain.json"), 4, opt);  // warm-up 1, 4 timed rounds
  expect_verified(r, "sigmoid_chain");
  ASSERT_EQ(plans.size(), 18u);  // (1 + 4 + 4) rounds of two plans: warm-up, whole, step by step
  for (std::size_t i = 0; i < plans.size(); ++i) EXPECT_EQ(plans[i], static_cast<int>(i % 2)) << i;
}

// Each plan runs in 2 x repeat timed rounds, each after the flush: first whole, with an event before its first
// step and after its last only (the plan's time, as do_bench times a PyTorch function), then step by step, with
// an event after every step (the steps' times; the events between steps cost time of their own: stepped_ms).
// The whole rounds come first, so that the rounds giving the plan's time last as long as they would alone.
TEST(ExecutorGpu, EachPlanIsTimedWholeThenStepByStep) {
  FX_REQUIRE_DEVICE();
  bool timing = false;
  std::map<std::pair<int, int>, int> launches;  // (plan, step) -> launches while timing
  RunOptions opt;
  opt.timing.cold_l2 = true;
  opt.progress = [&](const std::string& step, double, const std::string&) { timing = step == "time"; };
  opt.before_launch = [&](const LaunchInfo& info) {
    if (timing) ++launches[{static_cast<int>(info.plan), info.step}];
  };
  const RunReport r = run_both(shrink("sigmoid_chain.json"), 4, opt);  // warm-up 1, 4 timed rounds
  expect_verified(r, "sigmoid_chain");
  ASSERT_GT(r.unfused.kernels.size(), 1u);
  for (int p = 0; p < 2; ++p) {
    const PlanReport& plan = p == 0 ? r.unfused : r.fused;
    for (int s = 0; s < static_cast<int>(plan.kernels.size()); ++s) {
      EXPECT_EQ((launches[{p, s}]), 1 + 2 * 4) << plan.name << " step " << s;
    }
    EXPECT_GT(plan.stepped_ms, 0.0) << plan.name;
    EXPECT_GT(plan.total_ms, 0.0) << plan.name;
  }
  EXPECT_EQ(launches.size(), r.unfused.kernels.size() + r.fused.kernels.size());
}

TEST(ExecutorGpu, PoisonedOutputsCatchAnUnwrittenElement) {
  FX_REQUIRE_DEVICE();
  // softmax over a row of 4096 at 2 rows: if the kernel skipped any element, NaN (poison) would reach the check.
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "t",
    "inputs": [{"name": "x", "shape": [2, 4096], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": "softmax", "inputs": ["x"]}], "outputs": ["y"]})");
  ASSERT_TRUE(g.ok());
  const RunReport r = run_both(*g, 2);
  expect_verified(r, "softmax 2x4096");
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_EQ(r.checks[0].nan_count, 0);
}

TEST(ExecutorGpu, RowKernelReadsOperandsBroadcastOverOuterDims) {
  FX_REQUIRE_DEVICE();
  // An attention mask [S, S] over scores [B, H, S, S] and a per-head bias [H, 1, S]: both cover the whole row,
  // so the row kernel reads them with vector accesses at each row's start in the operand (row % S, and
  // (row / S) % H). A wrong row offset gives a wrong softmax, which the unfused plan and the reference catch.
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "masked_softmax",
    "inputs": [{"name": "scores", "shape": [2, 3, 16, 32], "dtype": "f32"},
               {"name": "mask", "shape": [16, 32], "dtype": "f32", "role": "constant"},
               {"name": "head_bias", "shape": [3, 1, 32], "dtype": "f32", "role": "weight"}],
    "nodes": [{"name": "scaled", "op": "mul", "inputs": ["scores", 0.125]},
              {"name": "masked", "op": "add", "inputs": ["scaled", "mask"]},
              {"name": "biased", "op": "add", "inputs": ["masked", "head_bias"]},
              {"name": "y", "op": "softmax", "inputs": ["biased"]}], "outputs": ["y"]})");
  ASSERT_TRUE(g.ok());
  const RunReport r = run_both(*g, 2);
  expect_verified(r, "masked softmax");
  ASSERT_EQ(r.fused.kernels.size(), 1u);
  EXPECT_EQ(r.fused.kernels[0].kind, "row_reduction");
}

TEST(ExecutorGpu, RowKernelStoresAReshapeOfItsResult) {
  FX_REQUIRE_DEVICE();
  // layernorm over [2, 8, 48] stored through a reshape to [16, 48] (the exported GPT-2 block's ln -> view):
  // one row kernel whose registers are stored at the reshaped output's (same) flat index.
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "ln_view",
    "inputs": [{"name": "x", "shape": [2, 8, 48], "dtype": "f32"},
               {"name": "g", "shape": [48], "dtype": "f32", "role": "weight"}],
    "nodes": [{"name": "n", "op": "layernorm", "inputs": ["x", "g"]},
              {"name": "y", "op": "reshape", "inputs": ["n"], "attrs": {"shape": [16, 48]}}], "outputs": ["y"]})");
  ASSERT_TRUE(g.ok());
  const RunReport r = run_both(*g, 2);
  expect_verified(r, "layernorm + reshape");
  ASSERT_EQ(r.fused.kernels.size(), 1u);
  EXPECT_EQ(r.fused.kernels[0].kind, "row_reduction");
}

TEST(ExecutorGpu, ColdL2TimingStartsEachRunWithoutThePlansOperands) {
  FX_REQUIRE_DEVICE();
  // relu(x*w+b) over 2M f32: 24 MiB read, 8 MiB written, under the L2 of any GPU this runs on (50 MiB on an
  // H100). Back to back, the next run finds x, w and b in the L2; with cold_l2 each run reads them from DRAM
  // after a 256 MB overwrite, so its median must be clearly longer.
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "small_chain",
    "inputs": [{"name": "x", "shape": [2048, 1024], "dtype": "f32"}, {"name": "w", "shape": [2048, 1024], "dtype": "f32"},
               {"name": "b", "shape": [2048, 1024], "dtype": "f32"}],
    "nodes": [{"name": "m", "op": "mul", "inputs": ["x", "w"]}, {"name": "a", "op": "add", "inputs": ["m", "b"]},
              {"name": "y", "op": "relu", "inputs": ["a"]}], "outputs": ["y"]})");
  ASSERT_TRUE(g.ok());
  const DeviceInfo dev = query_device(0);
  if (dev.l2_bytes < (std::int64_t{40} << 20)) GTEST_SKIP() << "L2 of " << dev.l2_bytes << " bytes: the plan does not fit";
  FusionEngine engine(*g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  engine.auto_fuse();
  auto run = [&](bool cold) {
    RunOptions opt;
    opt.timing.repeat = 30;
    opt.timing.cold_l2 = cold;
    opt.cuda_graph = true;
    return Executor(engine.graph(), unfused, engine.plan(), opt).run();
  };
  const RunReport warm = run(false), cold = run(true);
  expect_verified(cold, "cold L2");
  EXPECT_FALSE(warm.timing.cold_l2);
  EXPECT_TRUE(cold.timing.cold_l2);
  EXPECT_GT(cold.fused.total_ms, 1.2 * warm.fused.total_ms)
      << "fused plan: cold " << cold.fused.total_ms << " ms, warm " << warm.fused.total_ms << " ms";
  // The CUDA-graph replay follows the flush too (so it compares with PyTorch's queued time under do_bench's
  // protocol); back to back it finds the operands in the L2.
  ASSERT_TRUE(cold.fused.graph_ms && warm.fused.graph_ms);
  EXPECT_GT(*cold.fused.graph_ms, 1.2 * *warm.fused.graph_ms)
      << "fused plan as a CUDA graph: cold " << *cold.fused.graph_ms << " ms, warm " << *warm.fused.graph_ms << " ms";
}

TEST(ExecutorGpu, RefusesWhatItCannotRun) {
  FX_REQUIRE_DEVICE();
  // Contractions run now (test_executor_contraction.cpp); a batch broadcast that cuBLASLt's strided batches
  // cannot express ([2,3] batches against [2,1]) is still refused, before anything is allocated.
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "t",
    "inputs": [{"name": "a", "shape": [2, 3, 4, 5], "dtype": "f32"}, {"name": "b", "shape": [2, 1, 5, 6], "dtype": "f32"}],
    "nodes": [{"name": "mm", "op": "matmul", "inputs": ["a", "b"]}], "outputs": ["mm"]})");
  ASSERT_TRUE(g.ok());
  FusionEngine engine(*g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  EXPECT_THROW(Executor(engine.graph(), unfused, unfused), std::invalid_argument);
}

}  // namespace
}  // namespace fx::gpu
