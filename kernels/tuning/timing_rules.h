// Rules that decide how much timing a tuning search spends, apart from the GPU that runs it, so that they are
// tested on the CPU (tests/kernels/test_timed_choice.cpp): when a GEMM comparison must wait for the GPU to rest,
// and which candidates of a cuBLASLt search's screening are worth more than one round.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "kernels/profile/gpu_clocks.h"

namespace fx::gpu {

// Whether a GEMM comparison must rest first, given what NVML saw since the previous one (or the pass began). The
// rest is there so that a comparison does not start at the clocks a power-limited search left behind; where
// the GPU was watched and nothing held its clocks back (no power cap, power brake, thermal or hardware
// slowdown in any busy sample), there is nothing to wait for. Unwatched (no NVML): always.
bool rest_needed(const ClockSpan& since_check, bool watched);

// A cuBLASLt search's screening, after one timed round of every candidate (`first`, nullopt: it did not run):
// which go on to the screening's other rounds. Candidate 0 (the heuristic's first) always does; another where
// it ran within `margin` times the `keep`-th fastest run of the others. The screening keeps the `keep` fastest
// others by their median of three runs, and a candidate that far behind in its first run would need its other two to beat those
// candidates' by the same margin, beyond the spread of runs taken back to back in interleaved rounds.
std::vector<std::size_t> screen_survivors(std::span<const std::optional<double>> first, std::size_t keep,
                                          double margin);

// A screening of n candidates in `rounds` interleaved rounds after one warm-up round, where those
// screen_survivors drops after the first timed round run no more: the upper median of `rounds` runs of each
// survivor, nullopt for the others and for a candidate that failed to launch (time(i) nullopt; it drops out).
template <typename Time>
std::vector<std::optional<double>> screened_medians(std::size_t n, int rounds, std::size_t keep, double margin,
                                                    Time&& time) {
  std::vector<std::optional<double>> first(n);
  for (int round = 0; round < 2; ++round) {  // the warm-up round, then the first timed one
    for (std::size_t i = 0; i < n; ++i) {
      if (round == 1 && !first[i]) continue;
      first[i] = time(i);
    }
  }
  std::vector<std::vector<double>> runs(n);
  const std::vector<std::size_t> survivors = screen_survivors(first, keep, margin);
  for (std::size_t i : survivors) {
    if (first[i]) runs[i].push_back(*first[i]);
  }
  for (int round = 1; round < rounds; ++round) {
    for (std::size_t i : survivors) {
      if (runs[i].size() != static_cast<std::size_t>(round)) continue;  // dropped out
      const std::optional<double> ms = time(i);
      if (ms) {
        runs[i].push_back(*ms);
      } else {
        runs[i].clear();
      }
    }
  }
  std::vector<std::optional<double>> medians(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (runs[i].size() != static_cast<std::size_t>(rounds)) continue;
    std::nth_element(runs[i].begin(), runs[i].begin() + static_cast<std::ptrdiff_t>(rounds / 2), runs[i].end());
    medians[i] = runs[i][static_cast<std::size_t>(rounds / 2)];
  }
  return medians;
}

// Medians of n ways timed in interleaved rounds, as interleaved_medians (event_timing.h) times them, for a search
// that keeps only the `keep` fastest: from `min_rounds` timed rounds on, a way whose fastest run so far is more
// than `margin` times the `keep`-th best median so far is timed no more (its median is of the runs it had). Its
// median over the remaining rounds could not be below its fastest run, so it could join the `keep` only if
// theirs moved up by the margin. time(i): the milliseconds of one run of way i, or nullopt when it cannot run
// (it drops out, its median nullopt).
struct Pruning {
  std::size_t keep = 3;
  int min_rounds = 5;
  double margin = 1.1;
};

template <typename Time>
std::vector<std::optional<double>> pruned_interleaved_medians(std::size_t n, int warmup, int rounds, Pruning pruning,
                                                              Time&& time) {
  auto median = [](std::vector<double> t) {  // the upper median, as every choice here takes it
    std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
    return t[t.size() / 2];
  };
  std::vector<std::vector<double>> times(n);
  std::vector<char> runs(n, 1), timed(n, 1);
  for (int round = 0; round < warmup + rounds; ++round) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!runs[i] || !timed[i]) continue;
      const std::optional<double> ms = time(i);
      if (!ms) runs[i] = 0;
      if (ms && round >= warmup) times[i].push_back(*ms);
    }
    if (round + 1 - warmup < pruning.min_rounds || pruning.keep == 0) continue;
    std::vector<double> medians;
    for (std::size_t i = 0; i < n; ++i) {
      if (runs[i] && timed[i] && !times[i].empty()) medians.push_back(median(times[i]));
    }
    if (medians.size() <= pruning.keep) continue;
    std::nth_element(medians.begin(), medians.begin() + static_cast<std::ptrdiff_t>(pruning.keep - 1), medians.end());
    const double bar = medians[pruning.keep - 1] * pruning.margin;
    for (std::size_t i = 0; i < n; ++i) {
      if (runs[i] && timed[i] && !times[i].empty() && *std::min_element(times[i].begin(), times[i].end()) > bar) {
        timed[i] = 0;
      }
    }
  }
  std::vector<std::optional<double>> result(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (runs[i] && !times[i].empty()) result[i] = median(times[i]);
  }
  return result;
}

}  // namespace fx::gpu
