// The counter pass's windows (kernels/profile/counter_windows.h): one window per distinct identity, the first
// step of each measured, every other step mapped to it; steps without an identity always measured alone.
#include <gtest/gtest.h>

#include "kernels/profile/counter_windows.h"

namespace fx::gpu {
namespace {

using Ids = std::vector<std::optional<std::string>>;
using Sizes = std::vector<std::size_t>;

TEST(CounterWindows, DistinctStepsAreEachMeasured) {
  const Ids ids = {"conv 64", "relu 64", "conv 128"};
  const CounterWindows w = plan_counter_windows(ids);
  EXPECT_EQ(w.measured, (Sizes{0, 1, 2}));
  EXPECT_EQ(w.source, (Sizes{0, 1, 2}));
  EXPECT_EQ(w.window, (Sizes{0, 1, 2}));
  EXPECT_EQ(w.sharing, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(w.reused(), 0u);
}

TEST(CounterWindows, IdenticalStepsShareTheFirstOnesWindow) {
  // Two plans laid end to end: steps 0-3 unfused, 4-5 fused; the fused plan's first step is unchanged by fusion.
  const Ids ids = {"conv a", "add", "conv a", "add", "conv a", "conv+add"};
  const CounterWindows w = plan_counter_windows(ids);
  EXPECT_EQ(w.measured, (Sizes{0, 1, 5}));
  EXPECT_EQ(w.source, (Sizes{0, 1, 0, 1, 0, 5}));
  EXPECT_EQ(w.window, (Sizes{0, 1, 0, 1, 0, 2}));
  EXPECT_EQ(w.sharing, (std::vector<int>{3, 2, 3, 2, 3, 1}));
  EXPECT_EQ(w.reused(), 3u);
}

TEST(CounterWindows, StepsWithoutAnIdentityAreNeverMerged) {
  const Ids ids = {std::nullopt, "gemm", std::nullopt, "gemm", std::nullopt};
  const CounterWindows w = plan_counter_windows(ids);
  EXPECT_EQ(w.measured, (Sizes{0, 1, 2, 4}));
  EXPECT_EQ(w.source, (Sizes{0, 1, 2, 1, 4}));
  EXPECT_EQ(w.sharing, (std::vector<int>{1, 2, 1, 2, 1}));
}

TEST(CounterWindows, IdentitiesThatDifferInOneCharacterAreDifferentKernels) {
  const Ids ids = {"gemm m 1024 n 768", "gemm m 1024 n 769", "gemm m 1024 n 768 ", "", ""};
  const CounterWindows w = plan_counter_windows(ids);
  EXPECT_EQ(w.measured, (Sizes{0, 1, 2, 3}));
  EXPECT_EQ(w.source, (Sizes{0, 1, 2, 3, 3}));
}

TEST(CounterWindows, NoStepsNoWindows) {
  const CounterWindows w = plan_counter_windows({});
  EXPECT_TRUE(w.measured.empty());
  EXPECT_TRUE(w.source.empty());
  EXPECT_EQ(w.reused(), 0u);
}

}  // namespace
}  // namespace fx::gpu
