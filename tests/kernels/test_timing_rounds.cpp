// The rounds a timing asked for in milliseconds comes to (TimingProtocol::warmup_ms/repeat_ms, timing_rounds): the
// arithmetic of triton.testing.do_bench, so that fusion-cli and the PyTorch harness keep the GPU busy as long.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/executor/executor.h"
#include "kernels/executor/report_json.h"

namespace fx::gpu {
namespace {

TEST(TimingRounds, CountsAreTheRunsWithoutAskedTimes) {
  RunOptions opt;
  opt.timing.warmup = 3;
  opt.timing.repeat = 50;
  const TimingRounds r = timing_rounds(opt.timing, 0.7);
  EXPECT_EQ(r.warmup, 3);
  EXPECT_EQ(r.repeat, 50);
  opt.timing.repeat = 0;  // at least one timed round, as the executor has always run
  EXPECT_EQ(timing_rounds(opt.timing, 0.7).repeat, 1);
}

TEST(TimingRounds, AskedTimesBecomeDoBenchCounts) {
  RunOptions opt;
  opt.timing.warmup = 3;
  opt.timing.repeat = 50;
  opt.timing.warmup_ms = 25;
  opt.timing.repeat_ms = 100;
  // do_bench: n = max(1, int(ms / estimate_ms)).
  TimingRounds r = timing_rounds(opt.timing, 0.66);
  EXPECT_EQ(r.warmup, 37);
  EXPECT_EQ(r.repeat, 151);
  r = timing_rounds(opt.timing, 40.0);  // a round longer than the time asked for: still one of each
  EXPECT_EQ(r.warmup, 1);
  EXPECT_EQ(r.repeat, 2);
  r = timing_rounds(opt.timing, 1e-6);  // a round too short to measure: capped
  EXPECT_EQ(r.warmup, kMaxTimedRounds);
  EXPECT_EQ(r.repeat, kMaxTimedRounds);
  // One asked for, the other kept as a count.
  opt.timing.warmup_ms = 0;
  r = timing_rounds(opt.timing, 0.5);
  EXPECT_EQ(r.warmup, 3);
  EXPECT_EQ(r.repeat, 200);
  // No estimate (a round that took no time, or NaN): the counts.
  EXPECT_EQ(timing_rounds(opt.timing, 0.0).repeat, 50);
  EXPECT_EQ(timing_rounds(opt.timing, std::nan("")).repeat, 50);
}

TEST(TimingRounds, TheJsonSaysWhatWasAskedAndWhatItCameTo) {
  RunReport counted;
  counted.timing = run_timing(TimingProtocol{}, {3, 20}, 0.0);
  auto t = to_json(counted)["timing"];
  EXPECT_EQ(t["repeat"], 20);
  for (const char* k : {"warmup_ms", "repeat_ms", "round_ms", "rest_ms"}) EXPECT_TRUE(t[k].is_null()) << k;

  RunReport timed = counted;
  timed.timing = run_timing(*timing_preset("do_bench"), {37, 151}, 0.66);
  t = to_json(timed)["timing"];
  EXPECT_EQ(t["repeat"], 151);
  EXPECT_EQ(t["warmup"], 37);
  EXPECT_EQ(t["warmup_ms"], 25.0);
  EXPECT_EQ(t["repeat_ms"], 100.0);
  EXPECT_EQ(t["round_ms"], 0.66);
  EXPECT_EQ(t["rest_ms"], 1000.0);
  EXPECT_EQ(t["tuning_rest_ms"], 250.0);
  EXPECT_EQ(t["preset"], "do_bench");
  EXPECT_EQ(t["cold_l2"], true);
  EXPECT_NE(t["protocol"].get<std::string>().find("do_bench"), std::string::npos);
}

TEST(TimingRounds, ATimingPassIsOneJsonLine) {
  TimingPass t;
  t.index = 2;
  t.unfused_ms = 0.5;
  t.fused_ms = 0.25;
  t.warmup = 37;
  t.repeat = 151;
  t.round_ms = 0.66;
  t.clocks_note = "GPU clocks not read: --no-clocks";
  const auto j = timing_pass_to_json(t);
  EXPECT_EQ(j["timing"], 2);
  EXPECT_EQ(j["unfused_ms"], 0.5);
  EXPECT_EQ(j["fused_ms"], 0.25);
  EXPECT_EQ(j["fused_over_unfused"], 0.5);
  EXPECT_EQ(j["warmup"], 37);
  EXPECT_EQ(j["repeat"], 151);
  EXPECT_EQ(j["round_ms"], 0.66);
  EXPECT_TRUE(j["gpu_clocks"]["sm_mhz_median"].is_null());
  EXPECT_EQ(j["gpu_clocks"]["note"], "GPU clocks not read: --no-clocks");
  EXPECT_EQ(j.dump().find('\n'), std::string::npos);  // one line of the protocol
  t.unfused_ms = 0;  // nothing timed: no ratio
  t.round_ms = 0;    // counted in runs
  const auto counted = timing_pass_to_json(t);
  EXPECT_TRUE(counted["fused_over_unfused"].is_null());
  EXPECT_TRUE(counted["round_ms"].is_null());
}

}  // namespace
}  // namespace fx::gpu
