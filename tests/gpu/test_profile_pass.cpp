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

ProfiledRun run_profiled(const ProfileSettings& settings) {
  ProfiledRun r;
  auto g = load_graph_file(kSample);
  EXPECT_TRUE(g.ok());
  r.engine = std::make_unique<FusionEngine>(*g, DeviceDescription::h100_sxm());
  r.unfused = Plan::unfused(r.engine->graph(), r.engine->cost_model());
  r.engine->auto_fuse();
  r.fused = r.engine->plan();
  RunOptions opt;
  opt.timing.repeat = 3;
  opt.timing.warmup = 1;
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
