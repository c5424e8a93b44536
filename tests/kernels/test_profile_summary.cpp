// The report side of the measurement passes, without a GPU: measured bytes against the cost model's, the
// >10% flag and its reason, plan totals, the HBM traffic reduction, and "not measured" (never a zero) when the
// counter pass could not run. Plans come from the real fusion engine on the relu(x*w+b) sample.
#include <gtest/gtest.h>

#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"
#include "kernels/executor/profile_pass.h"
#include "kernels/executor/profile_summary.h"
#include "kernels/executor/report_json.h"

namespace fx::gpu {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kTensor = 256 * kMiB;  // one 8192x8192 f32 tensor
constexpr std::int64_t kL2 = std::int64_t{50} << 20;

struct Fixture {
  std::unique_ptr<FusionEngine> engine;
  Plan unfused, fused;
  RunReport report;
  ProfileMeasurements measured;
};

PlanReport plan_report(const std::string& name, const Plan& plan, double ms_per_kernel) {
  PlanReport r;
  r.name = name;
  r.bytes = plan.bytes_moved();
  for (const Group& g : plan.groups()) {
    KernelReport k;
    k.name = "fx_" + g.id;
    k.group = g.id;
    k.library = "generated (NVRTC)";
    k.bytes = g.cost.bytes_read + g.cost.bytes_written;
    k.measured_ms = ms_per_kernel;
    r.kernels.push_back(k);
    r.total_ms += ms_per_kernel;
  }
  return r;
}

KernelCounters counters(double read, double written) {
  KernelCounters c;
  c.available = true;
  c.kernels = 1;
  c.bytes_read = read;
  c.bytes_written = written;
  c.l2_bytes_written = written;
  c.per_kernel = {{read, written, 1000.0, written}};
  return c;
}

// relu(x*w+b) as CUPTI measures it: mul 2+1 tensors, add 2+1, relu 1+1; fused 3+1.
Fixture relu_mul_add() {
  Fixture f;
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/relu_mul_add.json");
  EXPECT_TRUE(g.ok());
  f.engine = std::make_unique<FusionEngine>(*g, DeviceDescription::h100_sxm());
  f.unfused = Plan::unfused(f.engine->graph(), f.engine->cost_model());
  f.engine->auto_fuse();
  f.fused = f.engine->plan();
  f.report.unfused = plan_report("unfused", f.unfused, 0.25);
  f.report.fused = plan_report("fused", f.fused, 0.35);
  const double unfused_reads[] = {2, 2, 1};
  for (double reads : unfused_reads) f.measured.plans[0].steps.push_back({{}, counters(reads * kTensor, kTensor), {}});
  f.measured.plans[1].steps.push_back({{}, counters(3 * kTensor, kTensor), {}});
  f.measured.copy_bandwidth = 3.0e12;
  return f;
}

ProfileSummary summarize(const Fixture& f) {
  return summarize_profile(f.report, f.measured, f.unfused, f.fused, DeviceDescription::h100_sxm(), kL2);
}

TEST(ProfileSummary, MeasuredBytesNextToPredictedWithReductionAndBandwidth) {
  const Fixture f = relu_mul_add();
  ASSERT_EQ(f.report.unfused.kernels.size(), 3u);
  ASSERT_EQ(f.report.fused.kernels.size(), 1u);
  const ProfileSummary s = summarize(f);
  EXPECT_DOUBLE_EQ(*s.plans[0].measured_bytes(), 8 * kTensor);
  EXPECT_DOUBLE_EQ(*s.plans[1].measured_bytes(), 4 * kTensor);
  ASSERT_TRUE(s.hbm_traffic_reduction);
  EXPECT_DOUBLE_EQ(*s.hbm_traffic_reduction, 2.0);
  EXPECT_DOUBLE_EQ(*s.predicted_reduction, 2.0);
  for (const KernelProfile& k : s.plans[0].kernels) {
    EXPECT_FALSE(k.mismatch) << k.name << ": " << k.mismatch_reason;
    EXPECT_NEAR(*k.measured_over_predicted, 1.0, 1e-9) << k.name;
  }
  const KernelProfile& fused = s.plans[1].kernels[0];
  EXPECT_NEAR(*fused.achieved_bandwidth, 4 * kTensor / 0.35e-3, 1.0);
  EXPECT_NEAR(*fused.fraction_of_peak, *fused.achieved_bandwidth / DeviceDescription::h100_sxm().hbm_bandwidth, 1e-12);
  EXPECT_NEAR(*fused.fraction_of_copy, *fused.achieved_bandwidth / 3.0e12, 1e-12);
  ASSERT_TRUE(fused.flops_per_s);
  EXPECT_GT(*fused.flops_per_s, 0.0);
  EXPECT_TRUE(fused.notes.empty()) << fused.notes.front();
}

// A step whose counters came from an identical step's window says so first among its notes, and the report's
// kernel carries the window; the measured step's note says its window serves the others.
TEST(ProfileSummary, BytesMeasuredOnceForIdenticalStepsSaySoAndNameTheStep) {
  Fixture f = relu_mul_add();
  const SharedCounterWindow w{"unfused", 0, f.report.unfused.kernels[0].name, 2};
  f.measured.plans[0].steps[0].shared_window = w;
  f.measured.plans[0].steps[2].shared_window = w;
  const ProfileSummary s = summarize(f);
  ASSERT_FALSE(s.plans[0].kernels[2].notes.empty());
  EXPECT_EQ(s.plans[0].kernels[2].notes.front(), "bytes measured once for 2 identical steps: same as step 0 of the "
                                                  "unfused plan (" + w.kernel + ")");
  EXPECT_NE(s.plans[0].kernels[0].notes.front().find("this step's window"), std::string::npos);
  EXPECT_TRUE(s.plans[0].kernels[1].notes.empty() ||
              s.plans[0].kernels[1].notes.front().find("measured once") == std::string::npos);
  RunReport report = f.report;
  add_profile(report, s);
  ASSERT_TRUE(report.unfused.kernels[2].measured);
  EXPECT_EQ(report.unfused.kernels[2].measured->shared_window, w);
  EXPECT_TRUE(report.unfused.kernels[2].measured->reused_measurement("unfused", 2));
  EXPECT_FALSE(report.unfused.kernels[1].measured->shared_window);
}

TEST(ProfileSummary, FlagsADifferenceAboveTenPercentWithAReason) {
  Fixture f = relu_mul_add();
  f.measured.plans[0].steps[1].counters = counters(3 * kTensor, kTensor);  // add read 3 tensors, not 2
  const ProfileSummary s = summarize(f);
  const KernelProfile& add = s.plans[0].kernels[1];
  EXPECT_TRUE(add.mismatch);
  EXPECT_NEAR(*add.measured_over_predicted, 4.0 / 3.0, 1e-9);
  EXPECT_NE(add.mismatch_reason.find("more bytes than predicted"), std::string::npos) << add.mismatch_reason;
  EXPECT_TRUE(s.plans[0].mismatch) << "9 tensors measured, 8 predicted: 12.5% off";
  EXPECT_FALSE(s.plans[0].kernels[0].mismatch);
}

TEST(ProfileSummary, SmallFootprintGetsTheL2NoteAndTheL2Reason) {
  KernelProfile k;
  k.library = "generated (NVRTC)";
  k.predicted_bytes = 32 * kMiB;
  k.bytes_read = 16 * kMiB;
  k.bytes_written = 4 * kMiB;
  k.l2_bytes_written = 16 * kMiB;
  k.measured_over_predicted = 20.0 / 32.0;
  EXPECT_NE(explain_bytes_mismatch(k, kL2).find("writes may stay in L2"), std::string::npos);
  k.predicted_bytes = 512 * kMiB;
  k.measured_over_predicted = 0.5;
  EXPECT_NE(explain_bytes_mismatch(k, kL2).find("still in the L2"), std::string::npos);
  k.library = "cuBLASLt";
  k.measured_over_predicted = 1.5;
  EXPECT_NE(explain_bytes_mismatch(k, kL2).find("library"), std::string::npos);
  k.library = kBuiltInKernelLibrary;  // the TF32 flash attention kernel
  EXPECT_NE(explain_bytes_mismatch(k, kL2).find("every block of query rows reads K, V and the mask again"),
            std::string::npos);
  k.measured_over_predicted = 1.05;
  EXPECT_TRUE(explain_bytes_mismatch(k, kL2).empty());
}

TEST(ProfileSummary, NotMeasuredIsAReasonNeverAZero) {
  Fixture f = relu_mul_add();
  KernelCounters refused;
  refused.reason = "not measured: profiling is restricted to admin users";
  f.measured.plans[0].steps[2].counters = refused;
  const ProfileSummary s = summarize(f);
  EXPECT_FALSE(s.plans[0].measured_bytes());
  EXPECT_NE(s.plans[0].not_measured.find("1 of 3 kernels not measured"), std::string::npos) << s.plans[0].not_measured;
  EXPECT_FALSE(s.hbm_traffic_reduction);
  EXPECT_NE(s.reduction_reason.find("restricted to admin"), std::string::npos) << s.reduction_reason;

  RunReport report = f.report;
  add_profile(report, s);
  const nlohmann::ordered_json j = to_json(report);
  const auto& relu = j["plans"][0]["kernels"][2]["measured"];
  EXPECT_EQ(relu["bytes_read"], "not measured");
  EXPECT_EQ(relu["bytes_written"], "not measured");
  EXPECT_EQ(relu["reason"], refused.reason);
  EXPECT_TRUE(relu["fraction_of_peak_bandwidth"].is_null());
  EXPECT_EQ(j["plans"][0]["measured"]["bytes_read"], "not measured");
  EXPECT_EQ(j["hbm_traffic_reduction"], "not measured");
  EXPECT_DOUBLE_EQ(j["plans"][1]["measured"]["bytes"].get<double>(), 4 * kTensor);
  EXPECT_DOUBLE_EQ(j["hbm_traffic_reduction_predicted"].get<double>(), 2.0);
  EXPECT_EQ(j["profile"]["counters"], "measured");
}

TEST(ProfileSummary, EventTimingRowsAreLaidEndToEndWithTheirGroups) {
  const Fixture f = relu_mul_add();
  const auto rows = rows_from_event_timings(f.report.unfused, f.measured.plans[0]);
  ASSERT_EQ(rows.size(), 3u);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].group, f.report.unfused.kernels[i].group);
    EXPECT_DOUBLE_EQ(rows[i].start_us, 250.0 * static_cast<double>(i));
    EXPECT_DOUBLE_EQ(rows[i].duration_us, 250.0);
    ASSERT_TRUE(rows[i].bytes_written);
    EXPECT_DOUBLE_EQ(*rows[i].bytes_written, kTensor);
  }
}

// A plan launched step by step that took the host longer than its CUDA-graph replay took the GPU gets a note
// with both times (resnet18's fused plan on an H100: 2.368 ms step by step, 0.960 ms as a graph); one that kept
// up, or whose graph was not timed, gets none.
TEST(ProfileSummary, AHostBoundPlanSaysSoWithBothTimes) {
  PlanReport p;
  p.total_ms = 2.368;
  EXPECT_EQ(host_bound_note(p), "") << "no graph timed: nothing to compare";
  p.graph_ms = 0.960;
  EXPECT_EQ(host_bound_note(p), "host-bound: launched step by step the plan took 2.3680 ms, replayed as a CUDA graph "
                                "0.9600 ms: its steps took the host longer to launch (library calls above all) than "
                                "the GPU to run them; the graph's time is the GPU's");
  p.total_ms = 1.10;  // 1.146x its graph: within what a graph saves on launch gaps alone
  EXPECT_EQ(host_bound_note(p), "");
  p.graph_ms = 0.0;
  EXPECT_EQ(host_bound_note(p), "") << "a graph time of zero is no measurement";
}

}  // namespace
}  // namespace fx::gpu
