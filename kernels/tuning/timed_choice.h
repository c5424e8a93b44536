// A tuning decision among candidates: timed in this run, or taken from the tuning cache. The tuning passes
// (kernels/executor/layout_tuning.h) time on the GPU through the callback they pass; the rules here (a kept
// choice skips the timing, a kept choice of another form is timed again with a warning, a run that retunes
// ignores what was kept) are plain C++ and tested on the CPU (tests/kernels/test_timed_choice.cpp).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/tuning/tuning_cache.h"

namespace fx::gpu {

struct TimedChoice {
  std::size_t index = 0;   // the candidate chosen
  std::vector<double> ms;  // each candidate's median when it was timed (in this run, or the kept entry's run)
  // What the pass keeps beside the times: a convolution's NHWC call timed alone, the reason cuDNN refused a way.
  nlohmann::json detail = nlohmann::json::object();
  std::string tuned_at;  // when a kept choice was timed; "" for one timed in this run
  bool reused() const { return !tuned_at.empty(); }
};

// The index of the least of `ms` (the first of equals); 0 for an empty list.
std::size_t fastest(std::span<const double> ms);

// The kept choice's form: {"index": i, "ms": [n numbers] or [], "detail": {...}}.
nlohmann::json to_json(const TimedChoice& c);

// Where a choice comes from: `cache` (null: none) unless the run retunes.
struct ChoiceSource {
  TuningCache* cache = nullptr;
  bool retune = false;
};

// `key`'s choice among n candidates: the kept one where the cache holds one of the form above (index < n; n
// times or none) that `usable` accepts, else the one time() returns, kept for the next run. time() is called
// only on a miss. A kept entry of another form (written by another build, or edited) is a warning in the
// cache's list and timed again; the cache's own damage checks (TuningCache::find) come first.
TimedChoice choose(const ChoiceSource& source, const TuningKey& key, std::size_t n,
                   const std::function<TimedChoice()>& time,
                   const std::function<bool(const TimedChoice&)>& usable = {});

}  // namespace fx::gpu
