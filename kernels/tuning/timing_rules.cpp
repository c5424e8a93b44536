#include "kernels/tuning/timing_rules.h"

#include <algorithm>

namespace fx::gpu {

bool rest_needed(const ClockSpan& since_check, bool watched) {
  constexpr std::uint64_t kHeldBack =
      kClockSwPowerCap | kClockHwSlowdown | kClockSwThermal | kClockHwThermal | kClockHwPowerBrake;
  return !watched || (since_check.reasons & kHeldBack) != 0;
}

std::vector<std::size_t> screen_survivors(std::span<const std::optional<double>> first, std::size_t keep,
                                          double margin) {
  std::vector<std::size_t> survivors;
  if (first.empty()) return survivors;
  survivors.push_back(0);
  std::vector<double> others;  // the other candidates' runs: they compete for `keep` places
  for (std::size_t i = 1; i < first.size(); ++i) {
    if (first[i]) others.push_back(*first[i]);
  }
  if (others.empty() || keep == 0) return survivors;
  const std::size_t k = std::min(keep, others.size()) - 1;
  std::nth_element(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(k), others.end());
  const double bar = others[k] * margin;
  for (std::size_t i = 1; i < first.size(); ++i) {
    if (first[i] && *first[i] <= bar) survivors.push_back(i);
  }
  return survivors;
}

}  // namespace fx::gpu
