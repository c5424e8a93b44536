// Which steps of a run the counter pass measures in a window of their own, and which take the numbers of an
// identical step measured in the same run. Two steps are identical when they run the same kernel on the same
// problem (Executor::measurement_identity says what that is for each kind of step); from a cold L2 such steps
// move the same DRAM bytes whatever buffers they read, so one window serves them all. A step without an identity
// (a sort, anything whose traffic may depend on its data) is always measured. Plain C++, tested on the CPU
// (tests/kernels/test_counter_windows.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace fx::gpu {

struct CounterWindows {
  std::vector<std::size_t> measured;  // the steps given a window, in step order
  std::vector<std::size_t> source;    // per step: the step whose window gives its counters (itself where measured)
  std::vector<std::size_t> window;    // per step: the index in `measured` of that window
  std::vector<int> sharing;           // per step: how many steps share its window (1: measured alone)
  std::size_t reused() const { return source.size() - measured.size(); }
};

// `identities`: one per step, in the order the pass launches them; the first step of each identity is measured.
CounterWindows plan_counter_windows(std::span<const std::optional<std::string>> identities);

}  // namespace fx::gpu
