// The measurement passes of `fusion-cli run` on a real GPU, on relu(x*w+b) over 64M floats (256 MiB per tensor):
// every step's DRAM bytes are present, positive and on the right group, the unfused plan moves ~2 GiB (5 reads
// + 3 writes) and the fused one ~1 GiB (3 + 1); and the CLI writes the JSON, CSV and trace that carry them.
// Skips without a device, and where the system refuses profiling (not root with RmProfilingAdminOnly=1).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"
#include "kernels/common/gpu_error.h"
#include "kernels/executor/profile_pass.h"
#include "kernels/profile/dram_profiler.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

constexpr double kTensor = 256.0 * 1024 * 1024;
constexpr double kTolerance = 0.10;
const std::string kSample = std::string(FX_SOURCE_DIR) + "/sample_graphs/relu_mul_add.json";

bool refused(const std::string& reason) {
  return reason.find("restricted to admin") != std::string::npos ||
         reason.find("another profiler") != std::string::npos;
}

::testing::AssertionResult near_tensors(double measured, double tensors) {
  const double expected = tensors * kTensor;
  if (std::abs(measured - expected) <= kTolerance * expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "measured " << measured / (1 << 20) << " MiB, expected "
                                       << expected / (1 << 20) << " MiB";
}

struct ProfiledRun {
  std::unique_ptr<FusionEngine> engine;
  Plan unfused, fused;
  RunReport report;
  ProfileMeasurements measured;
};

ProfiledRun run_profiled(const ProfileSettings& settings, const std::string& graph_file = kSample,
                         bool autotune = true) {
  ProfiledRun r;
  auto g = load_graph_file(graph_file);
  EXPECT_TRUE(g.ok());
  r.engine = std::make_unique<FusionEngine>(*g, DeviceDescription::h100_sxm());
  r.unfused = Plan::unfused(r.engine->graph(), r.engine->cost_model());
  r.engine->auto_fuse();
  r.fused = r.engine->plan();
  RunOptions opt;
  opt.timing.repeat = 3;
  opt.timing.warmup = 1;
  opt.autotune = autotune;
  ProfilePass pass(opt);
  Executor ex(r.engine->graph(), r.unfused, r.fused, opt);
  r.report = ex.run();
  r.measured = pass.measure(ex, r.report, settings);
  return r;
}

class RunProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      query_device(0);
    } catch (const NoDeviceError& e) {
      GTEST_SKIP() << e.what();
    }
  }
};

// Every kernel of the timing pass sits on the step that launched it: the group in its row is the step's.
void expect_timeline_on_steps(const PlanReport& plan, const PlanMeasurement& m) {
  ASSERT_EQ(m.steps.size(), plan.kernels.size());
  std::size_t timed = 0;
  for (std::size_t s = 0; s < m.steps.size(); ++s) {
    EXPECT_EQ(m.steps[s].timeline.size(), 1u) << plan.name << " step " << s << ": one generated kernel";
    for (const TimedKernel& t : m.steps[s].timeline) {
      EXPECT_EQ(t.name, plan.kernels[s].name);
      EXPECT_GT(t.duration_us, 0.0);
    }
    timed += m.steps[s].timeline.size();
  }
  ASSERT_EQ(m.rows.size(), timed);
  for (std::size_t i = 0; i < m.rows.size(); ++i) {
    EXPECT_EQ(m.rows[i].group, plan.kernels[i].group) << m.rows[i].kernel;
    EXPECT_EQ(m.rows[i].nodes, plan.kernels[i].nodes) << m.rows[i].kernel;
    EXPECT_TRUE(m.rows[i].bytes_read && *m.rows[i].bytes_read > 0) << m.rows[i].kernel;
  }
}

TEST_F(RunProfile, ReluMulAddBytesOnTheirGroupsAndHalvedByFusion) {
  const ProfiledRun r = run_profiled({});
  if (refused(r.measured.counters_reason)) GTEST_SKIP() << r.measured.counters_reason;
  ASSERT_TRUE(r.measured.counters_reason.empty()) << r.measured.counters_reason;
  ASSERT_TRUE(r.measured.timing_reason.empty()) << r.measured.timing_reason;
  expect_timeline_on_steps(r.report.unfused, r.measured.plans[0]);
  expect_timeline_on_steps(r.report.fused, r.measured.plans[1]);

  // Launch-order join: the unfused steps are mul (2 reads), add (2), relu (1), each writing one tensor.
  const PlanReport& u = r.report.unfused;
  ASSERT_EQ(u.kernels.size(), 3u);
  const double reads[] = {2, 2, 1};
  for (std::size_t s = 0; s < 3; ++s) {
    const KernelCounters& c = r.measured.plans[0].steps[s].counters;
    ASSERT_TRUE(c.available) << c.reason;
    EXPECT_EQ(c.kernels, 1);
    EXPECT_TRUE(near_tensors(c.bytes_read, reads[s])) << u.kernels[s].group << " read";
    EXPECT_TRUE(near_tensors(c.bytes_written, 1)) << u.kernels[s].group << " written";
  }

  const DeviceDescription peak = DeviceDescription::h100_sxm();
  const ProfileSummary s = summarize_profile(r.report, r.measured, r.unfused, r.fused, peak, r.report.device->l2_bytes);
  ASSERT_TRUE(s.plans[0].measured_bytes()) << s.plans[0].not_measured;
  ASSERT_TRUE(s.plans[1].measured_bytes()) << s.plans[1].not_measured;
  EXPECT_TRUE(near_tensors(*s.plans[0].measured_bytes(), 8)) << "unfused ~2 GiB";
  EXPECT_TRUE(near_tensors(*s.plans[1].measured_bytes(), 4)) << "fused ~1 GiB";
  ASSERT_TRUE(s.hbm_traffic_reduction) << s.reduction_reason;
  EXPECT_NEAR(*s.hbm_traffic_reduction, 2.0, 0.2);
  for (const PlanProfile& p : s.plans) {
    EXPECT_FALSE(p.mismatch) << p.name << ": " << *p.measured_over_predicted;
    for (const KernelProfile& k : p.kernels) EXPECT_FALSE(k.mismatch) << k.name << ": " << k.mismatch_reason;
  }
}

TEST_F(RunProfile, NoProfileKeepsTimingsAndSaysWhyBytesAreMissing) {
  const ProfiledRun r = run_profiled({.counters = false});
  EXPECT_NE(r.measured.counters_reason.find("--no-profile"), std::string::npos) << r.measured.counters_reason;
  for (const PlanMeasurement& p : r.measured.plans) {
    EXPECT_FALSE(p.rows.empty());
    for (const StepMeasurement& step : p.steps) {
      EXPECT_FALSE(step.counters.available);
      EXPECT_EQ(step.counters.reason, r.measured.counters_reason);
    }
    for (const KernelTimingRow& row : p.rows) EXPECT_FALSE(row.bytes_read) << row.kernel;
  }
}

// Two branches alike, relu(x1 @ W1) + relu(x2 @ W2): unfused, the two GEMMs and the two relus are each one kernel
// on one problem; fused, the two GEMMs with their relu epilogue are. Different inputs, so no horizontal merge.
constexpr const char* kTwoBranches = R"({"format": "fusion-explorer/graph", "version": 1, "name": "two_branches",
  "inputs": [{"name": "x1", "shape": [2048, 1024], "dtype": "f32"}, {"name": "x2", "shape": [2048, 1024], "dtype": "f32"},
             {"name": "W1", "shape": [1024, 1024], "dtype": "f32", "role": "weight"},
             {"name": "W2", "shape": [1024, 1024], "dtype": "f32", "role": "weight"}],
  "nodes": [{"name": "m1", "op": "matmul", "inputs": ["x1", "W1"]}, {"name": "r1", "op": "relu", "inputs": ["m1"]},
            {"name": "m2", "op": "matmul", "inputs": ["x2", "W2"]}, {"name": "r2", "op": "relu", "inputs": ["m2"]},
            {"name": "y", "op": "add", "inputs": ["r1", "r2"]}],
  "outputs": ["y"]})";

std::filesystem::path write_two_branches() {
  const auto path = std::filesystem::temp_directory_path() / ("fx-two-branches-" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << kTwoBranches;
  return path;
}

// Identical steps are measured once: fewer windows than steps, each shared step carries exactly the bytes of the
// step it names (of the same kind and predicted bytes, so no two different kernels were merged), and the report
// says which step was measured.
TEST_F(RunProfile, IdenticalStepsAreMeasuredOnceAndNameTheStepMeasured) {
  const auto graph = write_two_branches();
  // Default layouts, so that the two relus are not given different layouts by timing noise.
  ProfiledRun r = run_profiled({}, graph.string(), /*autotune=*/false);
  std::filesystem::remove(graph);
  if (refused(r.measured.counters_reason)) GTEST_SKIP() << r.measured.counters_reason;
  ASSERT_TRUE(r.measured.counters_reason.empty()) << r.measured.counters_reason;
  const PlanReport* plans[2] = {&r.report.unfused, &r.report.fused};
  const std::size_t steps = plans[0]->kernels.size() + plans[1]->kernels.size();
  EXPECT_GT(r.measured.counter_windows, 0u);
  EXPECT_LT(r.measured.counter_windows, steps);

  std::size_t reused = 0, shared_gemms[2] = {0, 0}, shared_relus = 0;
  for (std::size_t p = 0; p < 2; ++p) {
    for (std::size_t s = 0; s < plans[p]->kernels.size(); ++s) {
      const StepMeasurement& step = r.measured.plans[p].steps[s];
      ASSERT_TRUE(step.counters.available) << step.counters.reason;
      EXPECT_GT(step.counters.bytes_read, 0.0);
      if (!step.shared_window) continue;
      const SharedCounterWindow& w = *step.shared_window;
      const std::size_t sp = w.plan == "unfused" ? 0 : 1;
      const KernelReport& mine = plans[p]->kernels[s];
      const KernelReport& source = plans[sp]->kernels.at(static_cast<std::size_t>(w.step));
      EXPECT_EQ(w.kernel, source.name);
      EXPECT_GE(w.steps, 2);
      EXPECT_EQ(mine.library, source.library) << mine.name << " shares " << source.name;
      EXPECT_EQ(mine.kind, source.kind) << mine.name << " shares " << source.name;
      EXPECT_EQ(mine.bytes, source.bytes) << mine.name << " shares " << source.name;
      const KernelCounters& c = r.measured.plans[sp].steps[static_cast<std::size_t>(w.step)].counters;
      EXPECT_EQ(step.counters.bytes_read, c.bytes_read) << mine.name;
      EXPECT_EQ(step.counters.bytes_written, c.bytes_written) << mine.name;
      if (mine.library == "cuBLASLt") ++shared_gemms[p];
      if (p == 0 && mine.nodes.size() == 1 && mine.nodes[0].front() == 'r') ++shared_relus;
      if (sp != p || static_cast<std::size_t>(w.step) != s) ++reused;
    }
  }
  EXPECT_EQ(shared_gemms[0], 2u) << "the unfused plan's two GEMMs are one problem";
  EXPECT_EQ(shared_gemms[1], 2u) << "the fused plan's two GEMMs with their epilogue are one problem";
  EXPECT_EQ(shared_relus, 2u) << "the unfused plan's relu kernels differ only in their names";
  EXPECT_EQ(reused, steps - r.measured.counter_windows);

  const ProfileSummary summary = summarize_profile(r.report, r.measured, r.unfused, r.fused,
                                                   DeviceDescription::h100_sxm(), r.report.device->l2_bytes);
  add_profile(r.report, summary);
  int named = 0;
  for (const PlanReport* plan : r.report.plans()) {
    for (std::size_t s = 0; s < plan->kernels.size(); ++s) {
      const KernelReport& k = plan->kernels[s];
      ASSERT_TRUE(k.measured);
      if (!k.measured->reused_measurement(plan->name, static_cast<int>(s))) continue;
      ++named;
      ASSERT_FALSE(k.measured->notes.empty());
      EXPECT_NE(k.measured->notes.front().find("same as step " + std::to_string(k.measured->shared_window->step)),
                std::string::npos) << k.measured->notes.front();
    }
  }
  EXPECT_EQ(static_cast<std::size_t>(named), reused);
}

// The premise of measuring once: steps of equal identity, each measured in a window of its own (as the counter
// pass did before it shared windows), read the same DRAM bytes, within 2%. Written bytes are not compared: a
// window counts only what the L2 writes back while it is open, which for an output that fits in the L2 varies
// from one window to the next (docs/measurement.md).
TEST_F(RunProfile, StepsOfEqualIdentityMeasuredApartMoveTheSameBytes) {
  const auto graph = write_two_branches();
  auto g = load_graph_file(graph);
  std::filesystem::remove(graph);
  ASSERT_TRUE(g.ok());
  FusionEngine engine(*g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  RunOptions opt;
  opt.timing.repeat = 3;
  opt.autotune = false;
  Executor ex(engine.graph(), unfused, unfused, opt);
  ex.run();
  ex.prepare();
  ex.launch_plan_once(PlanId::unfused);
  const std::vector<std::optional<std::string>> ids = ex.measurement_identities(PlanId::unfused);
  DramProfiler profiler(ex.device().ordinal);
  if (!profiler.available()) GTEST_SKIP() << profiler.reason();
  const std::vector<KernelCounters> c =
      profiler.measure(static_cast<int>(ids.size()), [&](int i) { ex.launch_step(PlanId::unfused, i); });
  if (!c.empty() && refused(c[0].reason)) GTEST_SKIP() << c[0].reason;
  int pairs = 0;
  for (std::size_t a = 0; a < ids.size(); ++a) {
    for (std::size_t b = a + 1; b < ids.size(); ++b) {
      if (!ids[a] || ids[a] != ids[b]) continue;
      ++pairs;
      ASSERT_TRUE(c[a].available && c[b].available) << c[a].reason << c[b].reason;
      EXPECT_NEAR(c[b].bytes_read, c[a].bytes_read, 0.02 * c[a].bytes_read) << "steps " << a << " and " << b;
    }
  }
  EXPECT_EQ(pairs, 2) << "the two GEMMs and the two relus";
}

// `fusion-cli run --progress` says how many distinct kernels the counter pass measures and how many steps reuse one.
TEST_F(RunProfile, CliProgressCountsDistinctKernels) {
  ASSERT_TRUE(std::filesystem::exists(FX_CLI_PATH)) << FX_CLI_PATH << " missing: build the fusion-cli target";
  const auto graph = write_two_branches();
  const auto out = std::filesystem::temp_directory_path() / ("fx-two-branches-" + std::to_string(::getpid()) + ".out");
  const std::string cmd = std::string(FX_CLI_PATH) + " run " + graph.string() + " --auto --repeat 3 --progress > " +
                          out.string() + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_all(out);
  const std::string text = read_all(out);
  std::filesystem::remove(graph);
  std::filesystem::remove(out);
  if (text.find("restricted to admin") != std::string::npos) GTEST_SKIP() << "profiling refused here";
  EXPECT_NE(text.find("distinct kernels for"), std::string::npos) << text;
  EXPECT_NE(text.find("reuse a measurement"), std::string::npos) << text;
}

TEST_F(RunProfile, CliWritesMeasuredBytesCsvAndTrace) {
  ASSERT_TRUE(std::filesystem::exists(FX_CLI_PATH)) << FX_CLI_PATH << " missing: build the fusion-cli target";
  const auto dir = std::filesystem::temp_directory_path() / ("fx-profile-cli-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string cmd = std::string(FX_CLI_PATH) + " run " + kSample + " --auto --repeat 3 --json " +
                          (dir / "run.json").string() + " --csv " + (dir / "k.csv").string() + " --trace " +
                          (dir / "k.trace.json").string() + " > " + (dir / "out.txt").string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << read_all(dir / "out.txt");
  const std::string text = read_all(dir / "out.txt");
  EXPECT_NE(text.find("HBM traffic reduction, fused over unfused"), std::string::npos) << text;

  const auto j = nlohmann::json::parse(read_all(dir / "run.json"));
  const std::string counters = j["profile"]["counters"];
  if (refused(counters)) GTEST_SKIP() << counters;
  ASSERT_EQ(counters, "measured");
  for (const auto& plan : j["plans"]) {
    for (const auto& k : plan["kernels"]) {
      ASSERT_TRUE(k["measured"]["bytes_read"].is_number()) << k.dump();
      EXPECT_GT(k["measured"]["bytes_read"].get<double>(), 0.0) << k["group"];
      EXPECT_GT(k["measured"]["bytes_written"].get<double>(), 0.0) << k["group"];
      EXPECT_TRUE(k["measured"]["predicted_bytes"].is_number());
    }
  }
  ASSERT_TRUE(j["hbm_traffic_reduction"].is_number()) << j["hbm_traffic_reduction_reason"];
  EXPECT_NEAR(j["hbm_traffic_reduction"].get<double>(), 2.0, 0.2);

  const std::string csv = read_all(dir / "k.csv");
  std::size_t lines = 0;
  for (char c : csv) lines += c == '\n';
  EXPECT_EQ(lines, 1u + 3u + 1u) << csv;  // header, three unfused kernels, one fused
  const auto trace = nlohmann::json::parse(read_all(dir / "k.trace.json"));
  std::size_t named = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["name"].get<std::string>().rfind("group ", 0) == 0) ++named;
  }
  EXPECT_EQ(named, 4u) << "every kernel named by its group and nodes";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fx::gpu
