// The layout tuning pass's choices in the tuning cache (kernels/tuning/timed_choice.h): a hit skips the timing,
// a changed key, a retune, a damaged or foreign entry times again; what changes the keys of a convolution's
// NCHW/NHWC choice and a horizontal GEMM's one-call-or-parts choice (tuning_keys.h); and the rules that decide how
// much a search times (timing_rules.h). No GPU: the timing is a callback that counts its calls.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "core/graph/graph_io.h"
#include "kernels/tuning/timed_choice.h"
#include "kernels/tuning/timing_rules.h"
#include "kernels/tuning/tuning_keys.h"
#include "tests/kernels/tuning_test_support.h"

namespace fx::gpu {
namespace {

// A timing that counts its calls and returns the given medians, their fastest chosen.
struct CountedTiming {
  std::vector<double> ms;
  nlohmann::json detail = nlohmann::json::object();
  int calls = 0;
  std::function<TimedChoice()> fn() {
    return [this] {
      ++calls;
      return TimedChoice{fastest(ms), ms, detail, ""};
    };
  }
};

Conv2dProblem resnet_conv() {
  Conv2dProblem p;
  p.n = 32, p.c = 64, p.h = 56, p.w = 56, p.k = 64, p.r = 3, p.s = 3, p.pad_h = 1, p.pad_w = 1;
  p.allow_tf32 = true;
  p.epilogue = ConvEpilogue::relu_bias;
  return p;
}

const std::vector<std::string> kConversions = {"x to nhwc, layout 1", "x to nhwc, layout 2", "y to nchw, layout 1"};
const std::string kContext = "flush no, rounds by count, after fx_g3_relu 9c1e0f3a22d1b7e4";

TuningKey conv_key() { return conv_layout_key(resnet_conv(), kConversions, true, kContext); }

TEST(TimedChoice, AMissTimesOnceAndKeepsItANewRunTakesItWithoutTiming) {
  TempDir dir;
  CountedTiming timing{{0.120, 0.081, 0.090}, {{"nhwc_alone_ms", 0.070}}};
  const TuningKey key = conv_key();
  TimedChoice first;
  {
    TuningCache cache(dir.path, h100());
    first = choose({&cache, false}, key, 3, timing.fn());
    EXPECT_TRUE(cache.warnings().empty());
  }
  EXPECT_EQ(timing.calls, 1);
  EXPECT_FALSE(first.reused());
  EXPECT_EQ(first.index, 1u);

  TuningCache again(dir.path, h100());  // another run
  const TimedChoice second = choose({&again, false}, key, 3, timing.fn());
  EXPECT_EQ(timing.calls, 1) << "a kept choice is not timed again";
  EXPECT_TRUE(second.reused());
  EXPECT_NE(second.tuned_at.find(" UTC"), std::string::npos);
  EXPECT_EQ(second.index, 1u);
  EXPECT_EQ(second.ms, first.ms);
  EXPECT_EQ(second.detail, first.detail);
  EXPECT_TRUE(again.warnings().empty());
}

TEST(TimedChoice, RetuneTimesAgainAndReplacesTheKeptChoice) {
  TempDir dir;
  TuningCache cache(dir.path, h100());
  CountedTiming nhwc{{0.120, 0.081}}, nchw{{0.070, 0.081}};
  const TuningKey key = conv_key();
  EXPECT_EQ(choose({&cache, false}, key, 2, nhwc.fn()).index, 1u);
  const TimedChoice retuned = choose({&cache, true}, key, 2, nchw.fn());
  EXPECT_EQ(nchw.calls, 1) << "--retune ignores the kept choice";
  EXPECT_FALSE(retuned.reused());
  EXPECT_EQ(retuned.index, 0u);
  const TimedChoice later = choose({&cache, false}, key, 2, nhwc.fn());
  EXPECT_EQ(nhwc.calls, 1);
  EXPECT_TRUE(later.reused());
  EXPECT_EQ(later.index, 0u) << "the retuned choice replaced the earlier one";
}

TEST(TimedChoice, AnotherProblemSourceContextOrDeviceIsTimedAgain) {
  TempDir dir;
  CountedTiming timing{{0.120, 0.081}};
  ASSERT_EQ(TuningCache(dir.path, h100()).store(conv_key(), to_json(TimedChoice{1, {0.120, 0.081}, {}, ""})), true);
  Conv2dProblem wider = resnet_conv();
  wider.k = 128;
  std::vector<std::string> other_sources = kConversions;
  other_sources[1] += " (regenerated)";
  TuningEnvironment h200 = h100();
  h200.device = "NVIDIA H200";
  const std::pair<TuningKey, TuningEnvironment> misses[] = {
      {conv_layout_key(wider, kConversions, true, kContext), h100()},
      {conv_layout_key(resnet_conv(), other_sources, true, kContext), h100()},
      {conv_layout_key(resnet_conv(), kConversions, false, kContext), h100()},
      {conv_layout_key(resnet_conv(), kConversions, true, "flush yes, rounds by count"), h100()},
      {conv_key(), h200},
  };
  for (const auto& [key, env] : misses) {
    TuningCache cache(dir.path, env);
    EXPECT_FALSE(choose({&cache, false}, key, 2, timing.fn()).reused()) << key.problem << " on " << env.device;
  }
  EXPECT_EQ(timing.calls, 5);
  TuningCache same(dir.path, h100());
  EXPECT_TRUE(choose({&same, false}, conv_key(), 2, timing.fn()).reused());
  EXPECT_EQ(timing.calls, 5);
}

TEST(TimedChoice, ADamagedEntryIsAMissWithAWarningAndTheNewChoiceIsKept) {
  TempDir dir;
  const TuningKey key = conv_key();
  TuningCache writer(dir.path, h100());
  ASSERT_TRUE(writer.store(key, to_json(TimedChoice{1, {0.120, 0.081}, {}, ""})));
  ASSERT_TRUE(write_text_file_atomic(writer.entry_path(key), std::string("{\"format\": \"fusion-explorer/tun")));
  CountedTiming timing{{0.070, 0.081}};
  TuningCache cache(dir.path, h100());
  const TimedChoice c = choose({&cache, false}, key, 2, timing.fn());
  EXPECT_EQ(timing.calls, 1);
  EXPECT_FALSE(c.reused());
  ASSERT_EQ(cache.warnings().size(), 1u);
  EXPECT_NE(cache.warnings()[0].find(cache.entry_path(key).string()), std::string::npos) << cache.warnings()[0];
  TuningCache next(dir.path, h100());
  EXPECT_EQ(choose({&next, false}, key, 2, timing.fn()).index, 0u);
  EXPECT_EQ(timing.calls, 1) << "the choice timed after the damage was kept";
}

TEST(TimedChoice, AKeptChoiceOfAnotherFormOrThatThePassRefusesIsTimedAgainWithAWarning) {
  TempDir dir;
  const TuningKey key = conv_key();
  const nlohmann::json foreign[] = {
      {{"index", 2}, {"ms", {0.1, 0.2}}, {"detail", nlohmann::json::object()}},   // index out of range
      {{"index", 0}, {"ms", {0.1, 0.2, 0.3}}, {"detail", nlohmann::json::object()}},  // another count
      {{"index", 0}, {"ms", {0.1, "fast"}}, {"detail", nlohmann::json::object()}},
      {{"layout", 1}, {"times", "(0.1 ms)"}},  // another pass's form
      {{"index", 0}, {"ms", {0.1, 0.2}}, {"detail", nlohmann::json::object()}},  // refused by `usable` below
  };
  CountedTiming timing{{0.070, 0.081}};
  const auto needs_alone = [](const TimedChoice& kept) { return kept.detail.contains("nhwc_alone_ms"); };
  for (const nlohmann::json& choice : foreign) {
    ASSERT_TRUE(TuningCache(dir.path, h100()).store(key, choice));
    TuningCache cache(dir.path, h100());
    EXPECT_FALSE(choose({&cache, false}, key, 2, timing.fn(), needs_alone).reused()) << choice.dump();
    ASSERT_EQ(cache.warnings().size(), 1u) << choice.dump();
    EXPECT_NE(cache.warnings()[0].find("timed again"), std::string::npos) << cache.warnings()[0];
  }
  EXPECT_EQ(timing.calls, 5);
}

TEST(TimedChoice, WithoutACacheEveryChoiceIsTimed) {
  CountedTiming timing{{0.2, 0.1}};
  EXPECT_EQ(choose({nullptr, false}, conv_key(), 2, timing.fn()).index, 1u);
  EXPECT_FALSE(choose({nullptr, false}, conv_key(), 2, timing.fn()).reused());
  EXPECT_EQ(timing.calls, 2);
}

TEST(TuningKeys, EveryFieldOfAConvolutionProblemChangesItsKey) {
  std::vector<std::function<void(Conv2dProblem&)>> changes = {
      [](Conv2dProblem& p) { p.n = 16; },          [](Conv2dProblem& p) { p.c = 32; },
      [](Conv2dProblem& p) { p.h = 28; },          [](Conv2dProblem& p) { p.w = 28; },
      [](Conv2dProblem& p) { p.k = 128; },         [](Conv2dProblem& p) { p.r = 1; },
      [](Conv2dProblem& p) { p.s = 1; },           [](Conv2dProblem& p) { p.stride_h = 2; },
      [](Conv2dProblem& p) { p.stride_w = 2; },    [](Conv2dProblem& p) { p.pad_h = 0; },
      [](Conv2dProblem& p) { p.pad_w = 0; },       [](Conv2dProblem& p) { p.dilation_h = 2; },
      [](Conv2dProblem& p) { p.dilation_w = 2; },  [](Conv2dProblem& p) { p.groups = 2; },
      [](Conv2dProblem& p) { p.type = DType::bf16; }, [](Conv2dProblem& p) { p.allow_tf32 = false; },
      [](Conv2dProblem& p) { p.epilogue = ConvEpilogue::bias; }, [](Conv2dProblem& p) { p.nhwc = true; },
  };
  std::set<std::string> keys = {conv_key().problem};
  for (const auto& change : changes) {
    Conv2dProblem p = resnet_conv();
    change(p);
    keys.insert(conv_layout_key(p, kConversions, true, kContext).problem);
  }
  EXPECT_EQ(keys.size(), changes.size() + 1) << "two problems share a key";
  EXPECT_EQ(conv_key().kind, "conv_layout");
}

TEST(TuningKeys, EveryPartOfAHorizontalGemmChangesItsKey) {
  MatmulProblem merged;
  merged.batch = 3, merged.m = 8192, merged.n = 768, merged.k = 768;
  MatmulProblem part = merged;
  part.batch = 1;
  const GemmWay m{merged, "9c1e0f3a22d1b7e4", true}, pt{part, "0a1b2c3d4e5f6071", true};
  const TuningKey base = horizontal_key(m, pt, 3, kContext);
  GemmWay other_m = m, other_finalists = m, not_timed = m, other_part = pt;
  other_m.problem.m = 4096;
  other_finalists.finalists = "ffffffffffffffff";
  not_timed.timed_here = false;
  other_part.problem.transpose_b = true;
  const TuningKey others[] = {horizontal_key(other_m, pt, 3, kContext), horizontal_key(other_finalists, pt, 3, kContext),
                              horizontal_key(not_timed, pt, 3, kContext), horizontal_key(m, other_part, 3, kContext),
                              horizontal_key(m, pt, 2, kContext), horizontal_key(m, pt, 3, "flush yes")};
  std::set<std::string> keys = {base.problem};
  for (const TuningKey& k : others) keys.insert(k.problem);
  EXPECT_EQ(keys.size(), std::size(others) + 1);
  EXPECT_EQ(base.kind, "horizontal");

  TempDir dir;
  CountedTiming timing{{0.30, 0.25}, {{"merged", {{"finalist", 1}, {"ms", {0.31, 0.30, 0.33}}}}}};
  TuningCache cache(dir.path, h100());
  EXPECT_EQ(choose({&cache, false}, base, 2, timing.fn()).index, 1u);
  const TimedChoice kept = choose({&cache, false}, base, 2, timing.fn());
  EXPECT_TRUE(kept.reused());
  EXPECT_EQ(kept.detail["merged"]["finalist"], 1);
  EXPECT_FALSE(choose({&cache, false}, others[1], 2, timing.fn()).reused()) << "other finalists: timed again";
  EXPECT_EQ(timing.calls, 2);
}

ClockSpan span_with(std::uint64_t reasons) {
  ClockSpan s;
  s.add({1755, 690, 60, reasons});
  return s;
}

TEST(TimingRules, AComparisonRestsOnlyWhereTheClocksWereHeldBackOrNotWatched) {
  EXPECT_TRUE(rest_needed(ClockSpan{}, /*watched=*/false));
  EXPECT_TRUE(rest_needed(span_with(0), false));
  EXPECT_FALSE(rest_needed(ClockSpan{}, true)) << "nothing ran long enough to be sampled";
  EXPECT_FALSE(rest_needed(span_with(0), true));
  EXPECT_FALSE(rest_needed(span_with(kClockGpuIdle), true));
  for (std::uint64_t r : {kClockSwPowerCap, kClockHwPowerBrake, kClockSwThermal, kClockHwThermal, kClockHwSlowdown}) {
    EXPECT_TRUE(rest_needed(span_with(r), true)) << r;
  }
}

TEST(TimingRules, ScreeningKeepsTheHeuristicsFirstAndThoseWithinTheMarginOfTheLastPlace) {
  using ms = std::optional<double>;
  // The heuristic's first is slow; two places for the others: the second fastest other runs 1.1 ms, so the bar
  // is 1.1 * 1.3 = 1.43 ms.
  const std::vector<ms> first = {2.5, 1.0, 1.1, 2.0, std::nullopt, 1.25, 1.43, 1.44};
  EXPECT_EQ(screen_survivors(first, 2, 1.3), (std::vector<std::size_t>{0, 1, 2, 5, 6}));
  // More places than candidates that ran: every one that ran goes on.
  EXPECT_EQ(screen_survivors(first, 20, 1.3), (std::vector<std::size_t>{0, 1, 2, 3, 5, 6, 7}));
  EXPECT_EQ(screen_survivors(std::vector<ms>{std::nullopt, std::nullopt}, 7, 1.3), (std::vector<std::size_t>{0}));
  EXPECT_TRUE(screen_survivors({}, 7, 1.3).empty());
}

// A search's timing that counts each way's runs: way i runs ms[i] (or the next of its list, round after round).
struct CountedRuns {
  std::vector<std::vector<double>> ms;
  std::vector<int> calls = std::vector<int>(ms.size(), 0);
  std::optional<double> operator()(std::size_t i) {
    const std::vector<double>& runs = ms[i];
    if (runs.empty()) return std::nullopt;
    return runs[static_cast<std::size_t>(calls[i]++) % runs.size()];
  }
};

TEST(TimingRules, AScreeningTimesCandidatesFarBehindOnceAndTheOthersThreeTimes) {
  // Two places for the others: first timed runs 1.2, 1.1, 2.0, 1.25 and 5.0 ms put the bar at 1.3 x 1.2 ms; the
  // heuristic's first (2.5 ms) always goes on.
  CountedRuns runs{{{2.5}, {1.0, 1.2, 1.1}, {1.1}, {2.0}, {}, {1.25}, {5.0}}};
  const auto medians = screened_medians(7, 3, 2, 1.3, std::ref(runs));
  EXPECT_EQ(runs.calls, (std::vector<int>{4, 4, 4, 2, 0, 4, 2})) << "a warm-up and a first round for every one";
  EXPECT_EQ(medians[0], 2.5);
  EXPECT_EQ(medians[1], 1.1) << "the median of its three timed runs (1.2, 1.1, 1.0; the warm-up's 1.0 not counted)";
  EXPECT_FALSE(medians[3].has_value()) << "dropped after its first round";
  EXPECT_FALSE(medians[4].has_value()) << "failed to launch";
  EXPECT_EQ(medians[5], 1.25);
  EXPECT_FALSE(medians[6].has_value());
}

TEST(TimingRules, ASearchStopsTimingCandidatesClearlyBehindTheKeptFew) {
  CountedRuns runs{{{1.0}, {1.01}, {1.02}, {2.0}, {1.5}, {1.12}}};
  const auto medians = pruned_interleaved_medians(6, 2, 15, Pruning{3, 5, 1.1}, std::ref(runs));
  EXPECT_EQ(runs.calls, (std::vector<int>{17, 17, 17, 7, 7, 17})) << "1.12 is within 1.1 x 1.02; 1.5 and 2.0 are not";
  EXPECT_EQ(medians[0], 1.0);
  EXPECT_EQ(medians[3], 2.0) << "a way timed no more keeps the median of its runs";
  EXPECT_EQ(medians[4], 1.5);
}

TEST(TimingRules, ACandidateWithOneFastRunAmongSlowOnesIsTimedToTheEnd) {
  // Its fastest run is within the margin: it might yet be a finalist, so it is timed as long as the others.
  CountedRuns runs{{{1.0}, {1.0}, {1.0}, {1.05, 3.0, 3.0}}};  // its warm-up run is the fast one
  const auto medians = pruned_interleaved_medians(4, 1, 15, Pruning{3, 5, 1.1}, std::ref(runs));
  EXPECT_EQ(runs.calls[3], 16);
  EXPECT_EQ(medians[3], 3.0);
}

TEST(TimingRules, PruningChangesNothingWhereEveryCandidateIsClose) {
  CountedRuns pruned{{{1.0, 1.2}, {1.05, 1.0}, {1.1}, {1.0, 1.3, 1.1}, {}}};
  CountedRuns plain = pruned;
  const auto with = pruned_interleaved_medians(5, 2, 15, Pruning{3, 5, 1.1}, std::ref(pruned));
  const auto without = pruned_interleaved_medians(5, 2, 15, Pruning{0, 5, 1.1}, std::ref(plain));  // keep 0: none pruned
  EXPECT_EQ(with, without);
  EXPECT_EQ(pruned.calls, plain.calls);
  EXPECT_FALSE(with[4].has_value()) << "a way that cannot run drops out";
  EXPECT_EQ(pruned.calls[4], 0);
}

}  // namespace
}  // namespace fx::gpu
