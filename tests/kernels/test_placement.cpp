// RunOptions::placement: the gaps before a run's buffers (placement_gap), drawn from the placement alone.
#include <gtest/gtest.h>

#include <set>

#include "kernels/executor/executor.h"

namespace fx::gpu {
namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;

TEST(Placement, ZeroPacksEveryBufferBackToBack) {
  for (std::size_t i = 0; i < 100; ++i) EXPECT_EQ(placement_gap(0, i), 0u) << i;
}

TEST(Placement, GapsAreWholeMiBFrom0To15AndTheSameForTheSamePlacement) {
  std::set<std::size_t> seen;
  for (std::uint64_t placement : {1ull, 2ull, 7ull, 123456789ull}) {
    for (std::size_t i = 0; i < 64; ++i) {
      const std::size_t g = placement_gap(placement, i);
      EXPECT_EQ(g % kMiB, 0u) << placement << ", " << i;
      EXPECT_LE(g, 15 * kMiB) << placement << ", " << i;
      seen.insert(g);
    }
  }
  EXPECT_EQ(seen.size(), 16u);  // every gap from 0 to 15 MiB comes up
  // A placement is the same gaps in every build: a run can be repeated on the addresses of an earlier one.
  const std::size_t seven[] = {13, 13, 9, 13, 15};
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(placement_gap(7, i), seven[i] * kMiB) << i;
}

TEST(Placement, OtherPlacementsPutTheBuffersElsewhere) {
  // The first four gaps of placements 1 to 20, as one number each: a new placement draws other gaps.
  std::set<std::size_t> firsts;
  for (std::uint64_t placement = 1; placement <= 20; ++placement) {
    std::size_t at = 0;
    for (std::size_t i = 0; i < 4; ++i) at = at * 31 + placement_gap(placement, i);
    firsts.insert(at);
  }
  EXPECT_GE(firsts.size(), 18u);
}

}  // namespace
}  // namespace fx::gpu
