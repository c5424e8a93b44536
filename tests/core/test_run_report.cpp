// The run report's one reader and one writer (core/report/run_report.h): every report the repository ships
// reads, and reads back the same after writing; another format or version, a wrong type or a missing field is
// refused at its JSON pointer.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/report/run_report.h"

namespace fx {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The reports the repository ships: the tests', the lessons' and the docs' recorded runs.
std::vector<fs::path> shipped_reports() {
  std::vector<fs::path> out;
  const fs::path root(FX_SOURCE_DIR);
  for (const char* dir : {"tests/data/run-reports", "lessons/runs", "docs/data/runs"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      if (e.path().extension() != ".json") continue;
      if (read_file(e.path()).find("\"fusion-explorer/run\"") != std::string::npos) out.push_back(e.path());
    }
  }
  return out;
}

std::string first_error(const Expected<RunReport>& r) {
  return r ? std::string("(read)") : r.errors().front().pointer + ": " + r.errors().front().message;
}

nlohmann::json relu_mul_add() {
  return nlohmann::json::parse(read_file(fs::path(FX_SOURCE_DIR) / "tests/data/run-reports/relu_mul_add.h100.json"));
}

TEST(RunReport, EveryShippedReportReadsAndReadsBackTheSame) {
  const std::vector<fs::path> files = shipped_reports();
  ASSERT_GE(files.size(), 9u);  // 2 test reports, 5 lessons' runs, 2 in the docs
  for (const fs::path& f : files) {
    const auto report = read_run_report(read_file(f));
    ASSERT_TRUE(report) << f << ": " << first_error(report);
    const auto back = read_run_report(to_json(*report).dump());
    ASSERT_TRUE(back) << f << ": " << first_error(back);
    EXPECT_EQ(*back, *report) << f;
  }
}

TEST(RunReport, ReadsWhatTheRunMeasured) {
  const auto run = read_run_report(relu_mul_add().dump());
  ASSERT_TRUE(run) << first_error(run);
  EXPECT_TRUE(run->completed());
  EXPECT_EQ(run->status(), "ok");
  EXPECT_EQ(run->graph, "relu_mul_add");
  ASSERT_TRUE(run->device);
  EXPECT_EQ(run->device->name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(run->unfused.kernels.size(), 3u);
  EXPECT_EQ(run->fused.kernels.size(), 1u);
  ASSERT_TRUE(run->unfused.measured_bytes() && run->fused.measured_bytes());
  EXPECT_GT(*run->unfused.measured_bytes(), *run->fused.measured_bytes());
  ASSERT_TRUE(run->profile);
  EXPECT_TRUE(run->hbm_traffic_reduction);
  EXPECT_TRUE(run->verified);
}

TEST(RunReport, AFaultReportHasTheFaultAndNothingMeasured) {
  const auto fault = read_run_report(read_file(fs::path(FX_SOURCE_DIR) / "tests/data/run-reports/gpu_fault.h100.json"));
  ASSERT_TRUE(fault) << first_error(fault);
  EXPECT_FALSE(fault->completed());
  EXPECT_EQ(fault->status(), "gpu_fault");
  EXPECT_TRUE(fault->unfused.kernels.empty());
  EXPECT_FALSE(to_json(*fault).contains("plans"));
  auto no_fault = nlohmann::json::parse(to_json(*fault).dump());
  no_fault.erase("fault");
  EXPECT_EQ(run_report_from_json(no_fault).errors().front().pointer, "/fault");
}

TEST(RunReport, AnotherVersionOrFormatIsRefusedNamingBoth) {
  auto j = relu_mul_add();
  j["version"] = 2;
  auto r = run_report_from_json(j);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.errors().front().pointer, "/version");
  EXPECT_NE(r.errors().front().message.find("version 2"), std::string::npos) << r.errors().front().message;
  EXPECT_NE(r.errors().front().message.find("reads version 1"), std::string::npos) << r.errors().front().message;
  j.erase("version");
  EXPECT_EQ(run_report_from_json(j).errors().front().pointer, "/version");
  j = relu_mul_add();
  j["format"] = "fusion-explorer/graph";
  r = run_report_from_json(j);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.errors().front().pointer, "/format");
  EXPECT_NE(r.errors().front().message.find("fusion-explorer/graph"), std::string::npos);
  EXPECT_FALSE(read_run_report("[]"));
  EXPECT_FALSE(read_run_report("{not json"));
}

// A kernel's shared counter window (bytes measured once for identical steps) reads back as written, and one
// without the step it names is refused there.
TEST(RunReport, ASharedCounterWindowReadsBackAndIsCheckedWhereItIs) {
  auto run = read_run_report(relu_mul_add().dump());
  ASSERT_TRUE(run) << first_error(run);
  run->fused.kernels[0].measured->shared_window = SharedCounterWindow{"unfused", 2, "fx_g2_y", 2};
  const nlohmann::json j = to_json(*run);
  EXPECT_EQ(j["plans"][1]["kernels"][0]["measured"]["shared_window"]["kernel"], "fx_g2_y");
  const auto back = read_run_report(j.dump());
  ASSERT_TRUE(back) << first_error(back);
  EXPECT_EQ(*back, *run);
  EXPECT_TRUE(back->fused.kernels[0].measured->reused_measurement("fused", 0));
  EXPECT_FALSE(back->fused.kernels[0].measured->reused_measurement("unfused", 2));
  EXPECT_FALSE(back->unfused.kernels[0].measured->reused_measurement("unfused", 0)) << "measured alone";
  nlohmann::json broken = j;
  broken["plans"][1]["kernels"][0]["measured"]["shared_window"].erase("step");
  EXPECT_EQ(run_report_from_json(broken).errors().front().pointer, "/plans/1/kernels/0/measured/shared_window/step");
}

// No second spelling is guessed at: a field of the wrong type or an old name is an error where it is.
TEST(RunReport, AWrongTypeOrAMissingFieldIsLocated) {
  auto j = relu_mul_add();
  j["plans"][1]["kernels"][0]["measured_ms"] = "fast";
  EXPECT_EQ(run_report_from_json(j).errors().front().pointer, "/plans/1/kernels/0/measured_ms");
  j = relu_mul_add();
  j["plans"][0]["kernels"][2].erase("measured_ms");
  j["plans"][0]["kernels"][2]["time_us"] = 12.0;  // another spelling: not read
  EXPECT_EQ(run_report_from_json(j).errors().front().pointer, "/plans/0/kernels/2/measured_ms");
  j = relu_mul_add();
  j["plans"][0]["name"] = "fused";  // two fused plans, no unfused one
  EXPECT_EQ(run_report_from_json(j).errors().front().pointer, "/plans/1/name");
  j["plans"][0]["name"] = "before";
  EXPECT_EQ(run_report_from_json(j).errors().front().pointer, "/plans/0/name");
  j = relu_mul_add();
  j["plans"][0]["kernel_count"] = 7;
  EXPECT_EQ(run_report_from_json(j).errors().front().pointer, "/plans/0/kernel_count");
  j = nlohmann::json::parse(read_file(fs::path(FX_SOURCE_DIR) / "lessons/runs/sin_cos.h100.json"));
  ASSERT_TRUE(run_report_from_json(j)) << "a report with the clocks' timeline";
  j["timing"]["gpu_clocks"]["timeline"][0] = {1, 2};
  EXPECT_EQ(run_report_from_json(j).errors().front().pointer, "/timing/gpu_clocks/timeline/0");
  j["timing"].erase("repeat");
  EXPECT_EQ(run_report_from_json(j).errors().front().pointer, "/timing/repeat");
  j = relu_mul_add();
  j["device"] = "NVIDIA H100";
  EXPECT_EQ(run_report_from_json(j).errors().front().pointer, "/device");
  j = relu_mul_add();
  j.erase("plans");
  EXPECT_EQ(run_report_from_json(j).errors().front().pointer, "/plans");
}

// What is not measured stays absent through a round trip: "not measured" and a reason, never a zero.
TEST(RunReport, WhatWasNotMeasuredStaysAbsent) {
  RunReport r;
  r.device = RunDevice{"GPU", "sm_90", 132};
  r.unfused.name = "unfused";
  r.fused.name = "fused";
  KernelReport k;
  k.name = "fx_g0";
  k.group = "g0";
  k.measured_ms = 0.5;
  k.measured = MeasuredTraffic{};
  k.measured->reason = "not measured: --no-profile";
  r.fused.kernels = {k};
  r.profile = RunProfile{"CUDA events", "", "not measured: --no-profile", "h100", 3.35e12, std::nullopt, "", {}};
  r.hbm_traffic_reduction_reason = "not measured: --no-profile";
  r.timing.repeat = 20;
  const auto j = to_json(r);
  EXPECT_EQ(j["plans"][1]["kernels"][0]["measured"]["bytes_read"], "not measured");
  EXPECT_EQ(j["hbm_traffic_reduction"], "not measured");
  EXPECT_TRUE(j["plans"][1]["kernels"][0]["group_predicted_ms"].is_null());
  const auto back = read_run_report(j.dump());
  ASSERT_TRUE(back) << first_error(back);
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(back->fused.kernels[0].measured_bytes());
}

}  // namespace
}  // namespace fx
