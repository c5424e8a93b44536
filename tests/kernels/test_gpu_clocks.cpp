// The clock report's arithmetic and words (kernels/profile/gpu_clocks.h), and the monitor where NVML is absent
// (this machine and CI have no driver); tests/gpu/test_gpu_clocks.cpp reads a real GPU's clocks.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "kernels/executor/report_json.h"
#include "core/export/timings_export.h"
#include "kernels/profile/gpu_clocks.h"

namespace fx::gpu {
namespace {

ClockSample busy(unsigned mhz, double watts, std::uint64_t reasons = 0) { return {mhz, watts, 48, reasons}; }

TEST(GpuClocks, IdleSamplesCountButDoNotSetTheRange) {
  ClockSpan s;
  s.max_sm_mhz = 1980;
  s.power_limit_w = 700;
  s.add({345, 70, 35, kClockGpuIdle});  // the host between two stretches: the idle clock is not the timing's
  s.add(busy(1980, 480));
  s.add(busy(1740, 691, kClockSwPowerCap));
  s.add(busy(1755, 690, kClockSwPowerCap | kClockSwThermal));
  EXPECT_EQ(s.samples, 4);
  EXPECT_EQ(s.busy_samples, 3);
  EXPECT_EQ(s.sm_mhz_min, 1740u);
  EXPECT_EQ(s.sm_mhz_max, 1980u);
  EXPECT_DOUBLE_EQ(s.power_w_max, 691);
  EXPECT_EQ(s.reasons, kClockSwPowerCap | kClockSwThermal);
  EXPECT_EQ(s.sm_mhz_median(), 1755u);
  EXPECT_EQ(describe_clock_span(s),
            "SM clock 1755 MHz (median; 1740-1980, highest 1980), up to 691 W of 700 W, up to 48 C; held back by the "
            "power cap and thermal slowdown (software) (3 samples)");
  EXPECT_EQ(clock_span_brief(s), "SM 1755 MHz (1740-1980), power cap, thermal");
}

TEST(GpuClocks, TwoSpansMergeAsTheirSamplesAddedToOne) {
  const std::vector<ClockSample> first = {{345, 70, 35, kClockGpuIdle}, busy(1980, 480), busy(1740, 691, kClockSwPowerCap)};
  const std::vector<ClockSample> second = {busy(1755, 690, kClockSwThermal), {345, 60, 34, kClockGpuIdle}};
  ClockSpan a, b, all;
  a.max_sm_mhz = all.max_sm_mhz = 1980;
  b.power_limit_w = all.power_limit_w = 700;
  for (const auto& s : first) a.add(s), all.add(s);
  for (const auto& s : second) b.add(s), all.add(s);
  a.merge(b);
  EXPECT_EQ(a.samples, all.samples);
  EXPECT_EQ(a.busy_samples, all.busy_samples);
  EXPECT_EQ(a.busy_sm_mhz, all.busy_sm_mhz);
  EXPECT_EQ(describe_clock_span(a), describe_clock_span(all));
  ClockSpan idle_only, empty;
  idle_only.add({345, 70, 35, kClockGpuIdle});
  empty.merge(idle_only);  // an idle span leaves the range unset
  EXPECT_EQ(empty.samples, 1);
  EXPECT_EQ(empty.busy_samples, 0);
  b.merge(ClockSpan{});
  EXPECT_EQ(b.busy_samples, 1);
  EXPECT_EQ(b.sm_mhz_min, 1755u);
}

TEST(GpuClocks, SaysWhenNothingHeldTheClocksBackOrNothingWasSeen) {
  ClockSpan s;
  EXPECT_EQ(describe_clock_span(s), "");
  EXPECT_EQ(clock_span_brief(s), "");
  s.add({345, 70, 35, kClockGpuIdle});
  EXPECT_EQ(clock_span_brief(s), "");
  EXPECT_EQ(s.sm_mhz_median(), 0u);
  EXPECT_NE(describe_clock_span(s).find("idle in the one sample"), std::string::npos);
  s.add(busy(1980, 300));
  EXPECT_EQ(describe_clock_span(s), "SM clock 1980 MHz, up to 300 W, up to 48 C; nothing held the clocks back (1 sample)");
  // A tuning note from one or two samples could be the clock ramping up from idle: none below kBriefSamples.
  EXPECT_EQ(clock_span_brief(s), "");
  s.add(busy(1980, 310));
  s.add(busy(1980, 320));
  EXPECT_EQ(clock_span_brief(s), "SM 1980 MHz");
}

TEST(GpuClocks, NamesEachReasonOnceInBitOrder) {
  EXPECT_TRUE(clock_reason_names(0).empty());
  EXPECT_TRUE(clock_reason_names(kClockGpuIdle).empty());
  const auto names = clock_reason_names(kClockHwThermal | kClockSwPowerCap | kClockHwSlowdown | kClockGpuIdle);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], "the power cap");
  EXPECT_EQ(names[1], "a hardware slowdown");
  EXPECT_EQ(names[2], "thermal slowdown (hardware)");
}

TEST(GpuClocks, AMonitorNotAskedForReadsNothing) {
  ClockMonitor off(-1);  // fusion-cli run --no-clocks
  EXPECT_FALSE(off.available());
  EXPECT_EQ(off.why_not(), "not asked to read them");
  EXPECT_EQ(ClockWatch(off).stop().samples, 0);
}

TEST(GpuClocks, WithoutNvmlTheMonitorSaysWhyAndAWatchSeesNothing) {
  ClockMonitor m(0);
  if (m.available()) GTEST_SKIP() << "NVML reads a GPU here: tests/gpu/test_gpu_clocks.cpp covers it";
  EXPECT_FALSE(m.why_not().empty());
  EXPECT_FALSE(m.sample().has_value());
  ClockWatch w(m, std::chrono::milliseconds(1));
  const ClockSpan s = w.stop();
  EXPECT_EQ(s.samples, 0);
  EXPECT_EQ(describe_clock_span(s), "");
  EXPECT_EQ(w.stop().samples, 0);  // stopping twice is harmless
}

// The samples travel in the report, so a trace exported later from the report (the GUI's) has the counter
// tracks the CLI's --trace has.
TEST(GpuClocks, TheRunReportCarriesEverySampleForTheTraceCounterTracks) {
  ClockSpan span;
  span.timeline = {{0.0, ClockSample{345, 71.26, 31, kClockGpuIdle}}, {10.004, busy(1755, 691.04, 0)}};
  RunReport r;
  r.unfused.name = "unfused";
  r.fused.name = "fused";
  r.timing.gpu_clocks = clock_reading(span, "");
  auto back = read_run_report(to_json(r).dump());  // as a viewer reads the file
  ASSERT_TRUE(back) << back.errors().front().to_string();
  const std::vector<ClockPoint> points = clock_points(*back);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[1].ms, 10.0);  // rounded to 10 us, as written
  EXPECT_EQ(points[1].sm_mhz, 1755.0);
  EXPECT_EQ(points[0].power_w, 71.3);
  EXPECT_EQ(points[0].temperature_c, 31.0);
  const std::vector<CounterTrack> tracks = clock_tracks(points);
  ASSERT_EQ(tracks.size(), 3u);
  EXPECT_EQ(tracks[0].points[1], std::make_pair(10000.0, 1755.0));
}

TEST(GpuClocks, TheRunReportSaysWhatTheClocksWereOrWhyTheyWereNotRead) {
  ClockSpan span;
  span.max_sm_mhz = 1980;
  span.power_limit_w = 700;
  span.add(busy(1755, 691, kClockSwPowerCap));
  RunReport read;
  read.timing.gpu_clocks = clock_reading(span, "unused: the clocks were read");
  const auto j = to_json(read)["timing"];
  EXPECT_EQ(j["gpu_clocks"]["sm_mhz_median"], 1755);
  EXPECT_TRUE(j["gpu_clocks"]["sm_mhz_median"].is_number_integer());  // whole MHz, as NVML gives them
  EXPECT_EQ(j["gpu_clocks"]["held_back_by"], nlohmann::ordered_json::array({"the power cap"}));
  EXPECT_EQ(j["gpu_clocks"]["summary"], describe_clock_span(span));
  EXPECT_EQ(j["gpu_clocks"]["note"], "");
  EXPECT_TRUE(j["graph_gpu_clocks"].is_null());  // no --cuda-graph: no graph timing, no clocks of it

  RunReport unread;
  const std::string why = "GPU clocks not read: NVML not found (libnvidia-ml.so.1)";
  unread.timing.gpu_clocks = clock_reading(ClockSpan{}, why);
  const auto u = to_json(unread)["timing"]["gpu_clocks"];
  EXPECT_EQ(u["summary"], "");
  EXPECT_EQ(u["note"], why);
  for (const char* k : {"sm_mhz_median", "power_w_max", "temperature_c_max", "held_back_by", "max_sm_mhz"}) {
    EXPECT_TRUE(u[k].is_null()) << k;  // never a zero that reads as a measurement
  }
}

}  // namespace
}  // namespace fx::gpu
