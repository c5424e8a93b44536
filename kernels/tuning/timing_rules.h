// Rules that decide how much timing a tuning search spends, apart from the GPU that runs it, so that they are
// tested on the CPU (tests/kernels/test_timed_choice.cpp): when a GEMM comparison must wait for the GPU to rest,
// and which candidates of a cuBLASLt search's screening are worth more than one round.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "kernels/profile/gpu_clocks.h"

namespace fx::gpu {

// Whether a GEMM comparison must rest first, given what NVML saw since the last rest (or the pass began). The
// rest is there so that a comparison does not start at the clocks a power-limited search left behind; where
// the GPU was watched and nothing held its clocks back (no power cap, power brake, thermal or hardware
// slowdown in any busy sample), there is nothing to wait for. Unwatched (no NVML): always.
bool rest_needed(const ClockSpan& since_rest, bool watched);

// A cuBLASLt search's screening, after one timed round of every candidate (`first`, nullopt: it did not run):
// which go on to the screening's other rounds. Candidate 0 (the heuristic's first) always does; another where
// it ran within `margin` times the `keep`-th fastest run of the others. The screening keeps the `keep` fastest
// others by their median of three runs, and a candidate that far behind in its first run would need its other two to beat those
// candidates' by the same margin, beyond the spread of runs taken back to back in interleaved rounds.
std::vector<std::size_t> screen_survivors(std::span<const std::optional<double>> first, std::size_t keep,
                                          double margin);

}  // namespace fx::gpu
