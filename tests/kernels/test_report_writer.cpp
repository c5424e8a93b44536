// The run report's writer (core's to_json of the report the executor fills, with the profile added, as
// `fusion-cli run --json` writes it) on a report with every part filled. With FX_REPORT_OUT set, the JSON goes to that file too: the schema test
// (tests/schemas/test_run_report_schema.py) runs this test and validates it against schemas/run-report.schema.json.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "kernels/executor/executor_internal.h"
#include "kernels/executor/profile_summary.h"
#include "kernels/executor/report_json.h"

namespace fx::gpu {
namespace {

PlanReport plan(const std::string& name, int kernels) {
  PlanReport p;
  p.name = name;
  for (int i = 0; i < kernels; ++i) {
    KernelReport k;
    k.name = "fx_g" + std::to_string(i);
    k.group = "g" + std::to_string(i);
    k.kind = "elementwise";
    k.library = "generated (NVRTC)";
    k.path = "4 elements per thread (16-byte accesses)";
    k.nodes = {"n" + std::to_string(i)};
    k.bytes = 1 << 20;
    k.group_predicted_ms = 0.01;
    k.group_predicted_bytes = 1 << 20;
    k.measured_ms = 0.012;
    p.kernels.push_back(k);
  }
  p.notes = {"a note"};
  p.total_ms = 0.012 * kernels;
  p.min_ms = p.total_ms * 0.99;
  p.max_ms = p.total_ms * 1.01;
  p.stepped_ms = p.total_ms * 1.02;
  p.graph_ms = p.total_ms * 0.98;
  p.predicted_ms = 0.01 * kernels;
  p.bytes = std::int64_t{kernels} << 20;
  return p;
}

RunReport full_report() {
  RunReport r;
  DeviceInfo device;
  device.name = "NVIDIA H100 80GB HBM3";
  device.sm_count = 132;
  device.cc_major = 9;
  r.device = run_device(device);
  r.unfused = plan("unfused", 3);
  r.fused = plan("fused", 1);
  r.fused.split_groups = {{"g:mm", 2, {"mm: cuBLASLt has no `silu` epilogue"}}};
  r.checks = {{"y", "f32", 1e-7, 1e-5, 0, true}};
  r.reference_checks = {{"unfused: y", "f32", 1e-7, 1e-5, 0, true}, {"fused: y", "f32", 1e-7, 1e-5, 0, true}};
  r.verified = true;
  r.speedup = 3.0;
  r.timing = run_timing(*timing_preset("do_bench"), {37, 151}, 0.66);
  r.timing.layouts = "timed";
  const std::string unread = "GPU clocks not read: read_clocks is off in the timing protocol";
  r.timing.gpu_clocks = clock_reading(ClockSpan{}, unread);
  r.timing.graph_gpu_clocks = clock_reading(ClockSpan{}, unread);  // the plans' CUDA graphs were timed too
  ProfileSummary s;
  s.timing_source = "CUDA events (median of the timed runs)";
  s.counters_reason = "not measured: --no-profile";
  s.peak_device = "h100";
  s.peak_bandwidth = 3.35e12;
  s.plans[0].name = "unfused";
  s.plans[1].name = "fused";
  s.reduction_reason = "not measured: --no-profile";
  // Kernels 0 and 2 of the unfused plan are one kernel on one problem: measured once, in kernel 0's window.
  for (int i = 0; i < 3; ++i) {
    KernelProfile k;
    k.name = r.unfused.kernels[static_cast<std::size_t>(i)].name;
    k.predicted_bytes = 1 << 20;
    k.bytes_read = k.bytes_written = 0.5 * (1 << 20);
    k.cuda_kernels = 1;
    if (i != 1) k.shared_window = SharedCounterWindow{"unfused", 0, "fx_g0", 2};
    s.plans[0].kernels.push_back(k);
  }
  add_profile(r, s);
  r.graph = "relu_mul_add";
  r.plan_source = "auto-fuse (2 merges)";
  return r;
}

TEST(ReportWriter, WritesEveryPartOfACompletedRun) {
  const auto j = to_json(full_report());
  EXPECT_EQ(j["format"], "fusion-explorer/run");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["status"], "ok");
  ASSERT_EQ(j["plans"].size(), 2u);
  EXPECT_EQ(j["plans"][0]["kernels"].size(), 3u);
  EXPECT_EQ(j["timing"]["preset"], "do_bench");
  EXPECT_EQ(j["timing"]["rest_ms"], 1000.0);
  EXPECT_EQ(j["verification"]["reference"]["outputs"].size(), 2u);
  EXPECT_EQ(j["hbm_traffic_reduction"], "not measured");
  EXPECT_EQ(j["plans"][1]["split_groups"][0]["kernels"], 2);
  EXPECT_EQ(j["plans"][0]["split_groups"].size(), 0u);
  const auto& shared = j["plans"][0]["kernels"][2]["measured"]["shared_window"];
  EXPECT_EQ(shared, (nlohmann::ordered_json{{"plan", "unfused"}, {"step", 0}, {"kernel", "fx_g0"}, {"steps", 2}}));
  EXPECT_FALSE(j["plans"][0]["kernels"][1]["measured"].contains("shared_window")) << "measured alone";
  if (const char* out = std::getenv("FX_REPORT_OUT")) {
    std::ofstream(out) << j.dump(2) << "\n";
  }
}

// What the executor fills reads back as the same report: the writer and the reader agree on every field.
TEST(ReportWriter, WhatIsWrittenReadsBackTheSame) {
  const RunReport written = full_report();
  auto back = read_run_report(to_json(written).dump(2));
  ASSERT_TRUE(back) << back.errors().front().to_string();
  EXPECT_EQ(*back, written);
  EXPECT_EQ(to_json(*back), to_json(written));
}

// A group that runs as several steps is listed with the plan's notes about it; a group of one step is not.
TEST(SplitGroups, ThePlanSaysWhichGroupsRunAsSeveralKernels) {
  CompiledPlan ps;
  for (const char* group : {"g:a", "g:mm", "g:mm", "g:mm", "g:b"}) {
    Step s;
    s.group = group;
    ps.steps.push_back(std::move(s));
  }
  ps.notes = {"g:mm: 3 launches: cuBLASLt GEMM, then fx_g1_silu", "g:a: unrelated", "g:mmx: another group"};
  const std::vector<SplitGroup> split = split_groups(ps);
  ASSERT_EQ(split.size(), 1u);
  EXPECT_EQ(split[0].group, "g:mm");
  EXPECT_EQ(split[0].kernels, 3);
  ASSERT_EQ(split[0].why.size(), 1u);
  EXPECT_EQ(split[0].why[0], "3 launches: cuBLASLt GEMM, then fx_g1_silu");
}

}  // namespace
}  // namespace fx::gpu
