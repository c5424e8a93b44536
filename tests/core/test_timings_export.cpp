// Golden text tests for the measured-timings exports (CSV and Chrome trace JSON).
#include "core/export/timings_export.h"

#include <gtest/gtest.h>

#include <map>

#include <nlohmann/json.hpp>

namespace fx {
namespace {

std::vector<KernelTimingRow> sample_rows() {
  std::vector<KernelTimingRow> rows;
  rows.push_back({"unfused", "fx_mul", "s0", {"mul"}, 0.0, 170.25, 805306368.0, 268435456.0, 805306368.0});
  rows.push_back({"fused", "fx_fused_g3", "g3", {"mul", "add", "relu"}, 0.0, 247.5, 805306368.0, 268435456.0,
                  1073741824.0});
  rows.push_back({"fused", "void gemm<float, 128>(\"x\", y)", "", {}, 250.125, 10.0, std::nullopt, std::nullopt,
                  std::nullopt});
  return rows;
}

TEST(TimingsCsv, WritesHeaderRowsAndRfc4180Quoting) {
  const std::string expected =
      "plan,kernel,group,nodes,start_us,duration_us,bytes_read,bytes_written,predicted_bytes\r\n"
      "unfused,fx_mul,s0,mul,0.000,170.250,805306368,268435456,805306368\r\n"
      "fused,fx_fused_g3,g3,mul;add;relu,0.000,247.500,805306368,268435456,1073741824\r\n"
      "fused,\"void gemm<float, 128>(\"\"x\"\", y)\",,,250.125,10.000,,,\r\n";
  EXPECT_EQ(timings_to_csv(sample_rows()), expected);
}

TEST(TimingsCsv, QuotesLineBreaksInNodeNames) {
  KernelTimingRow row{"p", "k", "g1", {"a\nb", "c"}, 1.0, 2.0, 10.0, std::nullopt, std::nullopt};
  EXPECT_EQ(timings_to_csv({row}),
            "plan,kernel,group,nodes,start_us,duration_us,bytes_read,bytes_written,predicted_bytes\r\n"
            "p,k,g1,\"a\nb;c\",1.000,2.000,10,,\r\n");
}

TEST(TimingsCsv, EmptyInputGivesHeaderOnly) {
  EXPECT_EQ(timings_to_csv({}),
            "plan,kernel,group,nodes,start_us,duration_us,bytes_read,bytes_written,predicted_bytes\r\n");
}

TEST(TimingsChromeTrace, OnePidPerPlanAndOneCompleteEventPerRow) {
  const std::string expected =
      "{\"traceEvents\":[\n"
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"unfused\"}},\n"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"GPU kernels\"}},\n"
      "{\"name\":\"group s0: mul\",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":0.0,\"dur\":170.25,\"pid\":1,\"tid\":1,"
      "\"args\":{\"kernel\":\"fx_mul\",\"group\":\"s0\",\"nodes\":[\"mul\"],\"bytes_read\":805306368.0,"
      "\"bytes_written\":268435456.0,\"predicted_bytes\":805306368.0}},\n"
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,\"args\":{\"name\":\"fused\"}},\n"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":2,\"tid\":1,\"args\":{\"name\":\"GPU kernels\"}},\n"
      "{\"name\":\"group g3: mul+add+relu\",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":0.0,\"dur\":247.5,\"pid\":2,"
      "\"tid\":1,\"args\":{\"kernel\":\"fx_fused_g3\",\"group\":\"g3\",\"nodes\":[\"mul\",\"add\",\"relu\"],"
      "\"bytes_read\":805306368.0,\"bytes_written\":268435456.0,\"predicted_bytes\":1073741824.0}},\n"
      "{\"name\":\"void gemm<float, 128>(\\\"x\\\", y)\",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":250.125,"
      "\"dur\":10.0,\"pid\":2,\"tid\":1,\"args\":{\"kernel\":\"void gemm<float, 128>(\\\"x\\\", y)\",\"group\":\"\","
      "\"nodes\":[],\"dram\":\"not measured\"}}\n"
      "],\"displayTimeUnit\":\"ns\"}\n";
  EXPECT_EQ(timings_to_chrome_trace(sample_rows()), expected);
}

TEST(TimingsChromeTrace, IsValidJsonThatReadersAccept) {
  const auto trace = nlohmann::json::parse(timings_to_chrome_trace(sample_rows()));
  ASSERT_TRUE(trace.contains("traceEvents"));
  int complete_events = 0;
  for (const auto& event : trace["traceEvents"]) {
    if (event["ph"] == "X") {
      ++complete_events;
      EXPECT_GE(event["dur"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(complete_events, 3);
}

// NVML's samples as counter tracks ("ph": "C") in a process of their own, named with its thread; an empty
// track adds nothing.
TEST(TimingsChromeTrace, CountersBecomeCounterTracksInTheirOwnProcess) {
  const std::vector<CounterTrack> counters{{"SM clock", "MHz", {{0.0, 1980.0}, {10000.0, 1755.0}}},
                                           {"power", "W", {{0.0, 512.5}}},
                                           {"temperature", "C", {}}};
  const auto trace = nlohmann::json::parse(timings_to_chrome_trace(sample_rows(), counters, "GPU (NVML)"));
  std::vector<nlohmann::json> counter_events;
  std::map<int, std::string> process_names, thread_names;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "C") counter_events.push_back(e);
    if (e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
    if (e["name"] == "thread_name") thread_names[e["pid"]] = e["args"]["name"];
  }
  ASSERT_EQ(counter_events.size(), 3u);
  EXPECT_EQ(counter_events[1]["name"], "SM clock");
  EXPECT_EQ(counter_events[1]["ts"], 10000.0);
  EXPECT_EQ(counter_events[1]["args"]["MHz"], 1755.0);
  EXPECT_EQ(counter_events[2]["args"]["W"], 512.5);
  EXPECT_EQ(counter_events[0]["pid"], 3);  // after the two plans
  EXPECT_EQ(process_names[3], "GPU (NVML)");
  EXPECT_EQ(thread_names.size(), 3u);  // every process's thread has a name
  EXPECT_EQ(thread_names[1], "GPU kernels");
}

TEST(TimingsChromeTrace, EmptyInputIsAnEmptyTrace) {
  const auto trace = nlohmann::json::parse(timings_to_chrome_trace({}));
  EXPECT_TRUE(trace["traceEvents"].empty());
}

// A report's samples, read where they are (timing.gpu_clocks.timeline); a report without samples gives none.
TEST(TimingsChromeTrace, ClockSamplesAreReadFromTheRunReport) {
  RunReport report;
  report.timing.gpu_clocks = ClockReading{};
  report.timing.gpu_clocks->timeline = {{0, 1980, 512.5, 40}, {10.5, 1755, 690.0, 41}};
  const std::vector<ClockPoint> points = clock_points(report);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].ms, 10.5);
  EXPECT_EQ(points[1].power_w, 690.0);
  const std::vector<CounterTrack> tracks = clock_tracks(points);
  ASSERT_EQ(tracks.size(), 3u);
  EXPECT_EQ(tracks[1].name, "power");
  EXPECT_EQ(tracks[1].points[1], std::make_pair(10500.0, 690.0));
  report.timing.gpu_clocks.reset();
  EXPECT_TRUE(clock_points(report).empty());
}

}  // namespace
}  // namespace fx
