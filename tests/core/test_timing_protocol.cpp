// The timing protocol: its presets keep today's defaults and do_bench's flag set, a file changes only what it
// names, and a bad file is refused with the JSON pointer of each bad value.
#include <gtest/gtest.h>

#include "core/report/timing_protocol.h"

namespace fx {
namespace {

TEST(TimingProtocol, TheInteractivePresetIsTheDefault) {
  const TimingProtocol p = *timing_preset("interactive");
  EXPECT_EQ(p, TimingProtocol{});
  EXPECT_EQ(p.warmup, 3);
  EXPECT_EQ(p.repeat, 20);
  EXPECT_FALSE(p.cold_l2);
  EXPECT_EQ(p.warmup_ms, 0.0);
  EXPECT_EQ(p.repeat_ms, 0.0);
  EXPECT_EQ(p.rest_ms, 0.0);
  EXPECT_EQ(p.tuning_rest_ms, 250.0);
  EXPECT_EQ(p.placement, 0u);
  EXPECT_TRUE(p.read_clocks);
}

// As the PyTorch harness has always run fusion-cli: --cold-l2 --warmup-ms 25 --repeat-ms 100 --rest-ms 1000.
TEST(TimingProtocol, TheDoBenchPresetIsTheHarnessFlagSet) {
  const TimingProtocol p = *timing_preset("do_bench");
  EXPECT_EQ(p.preset, "do_bench");
  EXPECT_TRUE(p.cold_l2);
  EXPECT_EQ(p.warmup_ms, 25.0);
  EXPECT_EQ(p.repeat_ms, 100.0);
  EXPECT_EQ(p.rest_ms, 1000.0);
  EXPECT_EQ(p.tuning_rest_ms, 250.0);
  EXPECT_EQ(p.warmup, 3);
  EXPECT_EQ(p.repeat, 20);
  EXPECT_EQ(*timing_preset("do-bench"), p);
  EXPECT_FALSE(timing_preset("fast"));
}

TEST(TimingProtocol, AFileChangesOnlyWhatItNames) {
  auto p = timing_protocol_from_json(nlohmann::json::parse(R"({"preset": "do_bench", "placement": 7})"));
  ASSERT_TRUE(p.ok()) << format_diagnostics(p.errors());
  EXPECT_EQ(p->placement, 7u);
  EXPECT_TRUE(p->cold_l2);
  EXPECT_EQ(p->repeat_ms, 100.0);
  EXPECT_EQ(p->preset, "custom") << "a value departs from the preset";
  p = timing_protocol_from_json(nlohmann::json::parse(R"({"preset": "do_bench", "rest_ms": 1000})"));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->preset, "do_bench") << "the preset's own value";
  p = timing_protocol_from_json(nlohmann::json::parse(R"({"repeat": 50})"));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->repeat, 50);
  EXPECT_FALSE(p->cold_l2) << "interactive when no preset is named";
}

TEST(TimingProtocol, RoundTripsThroughJson) {
  TimingProtocol p = *timing_preset("do_bench");
  p.placement = 12;
  p.read_clocks = false;
  name_custom_if_changed(p);
  const auto back = timing_protocol_from_json(nlohmann::json::parse(timing_protocol_to_json(p).dump()));
  ASSERT_TRUE(back.ok()) << format_diagnostics(back.errors());
  EXPECT_EQ(*back, p);
}

TEST(TimingProtocol, BadValuesAreNamedByPointer) {
  const auto p = timing_protocol_from_json(nlohmann::json::parse(
      R"({"version": 1, "repeat": 0, "rest_ms": -1, "cold_l2": "yes", "flush": true, "placement": 1.5})"));
  ASSERT_FALSE(p.ok());
  const std::string text = format_diagnostics(p.errors());
  EXPECT_NE(text.find("/repeat"), std::string::npos) << text;
  EXPECT_NE(text.find("repeat takes a count from 1"), std::string::npos) << text;
  EXPECT_NE(text.find("/rest_ms: rest_ms takes milliseconds from 0 to 60000 (not -1)"), std::string::npos) << text;
  EXPECT_NE(text.find("/cold_l2: cold_l2 takes true or false"), std::string::npos) << text;
  EXPECT_NE(text.find("unknown field 'flush'"), std::string::npos) << text;
  EXPECT_NE(text.find("/placement"), std::string::npos) << text;
  const auto wrong = timing_protocol_from_json(nlohmann::json::parse(R"({"format": "fusion-explorer/run"})"));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(format_diagnostics(wrong.errors()).find("not a timing protocol"), std::string::npos);
  EXPECT_FALSE(timing_protocol_from_json(nlohmann::json::parse(R"({"version": 2})")).ok());
  EXPECT_FALSE(timing_protocol_from_json(nlohmann::json::parse(R"({"preset": "fast"})")).ok());
  EXPECT_FALSE(load_timing_protocol("/nonexistent/protocol.json").ok());
}

}  // namespace
}  // namespace fx
