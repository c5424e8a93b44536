#include "kernels/executor/layout_tuning.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "kernels/common/event_timing.h"
#include "kernels/contraction/device_memory.h"

namespace fx::gpu {
namespace {

// Timed rounds per layout, after one warm-up round; one launch of each layout per round, so that a drift of
// the clocks during the search moves every layout alike (the cuBLASLt search does the same).
constexpr int kRounds = 15;

// Layout 0 is the step's installed one; layout i > 0 is alternatives[i - 1]. Installing i swaps the two, so
// every compiled layout stays owned by the step (and is unloaded with it).
void install(Step& st, std::size_t i) {
  if (i == 0) return;
  Step::Layout& alt = st.alternatives[i - 1];
  KernelLayout current{st.kernel.layout, std::move(st.kernel.source), st.kernel.block, st.kernel.grid};
  std::swap(st.library, alt.library);
  std::swap(st.function, alt.function);
  st.kernel.layout = std::move(alt.layout.description);
  st.kernel.source = std::move(alt.layout.source);
  st.kernel.block = alt.layout.block;
  st.kernel.grid = alt.layout.grid;
  alt.layout = std::move(current);
}

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f ms", ms);
  return buf;
}

}  // namespace

void tune_layouts(Executor::Impl& im) {
  const int forced = im.options.force_layout;
  if (!im.options.autotune && forced < 0) return;
  const contraction_detail::DeviceMemory flush(im.options.cold_l2 && forced < 0 ? kColdL2Bytes : 0);
  for (int p = 0; p < 2; ++p) {
    PlanSteps& ps = im.plans[p];
    if (std::none_of(ps.steps.begin(), ps.steps.end(), [](const Step& st) { return !st.alternatives.empty(); })) {
      continue;  // nothing to choose in this plan
    }
    for (std::size_t s = 0; s < ps.steps.size(); ++s) {
      Step& st = ps.steps[s];
      const std::size_t n = st.alternatives.size() + 1;
      if (n == 1) {  // nothing to choose: run it, so the steps after it read what it writes
        im.launch(p, s);
        continue;
      }
      if (forced >= 0) {
        const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(forced), n - 1);
        install(st, k);
        st.layout_choice = st.kernel.layout + ": layout " + std::to_string(k + 1) + " of " + std::to_string(n) +
                           ", set by hand (not timed)";
        im.launch(p, s);
        continue;
      }
      auto launch_layout = [&](std::size_t i) {
        if (i == 0) {
          im.launch_layout(p, st, st.function, st.kernel.block, st.kernel.grid);
        } else {
          const Step::Layout& alt = st.alternatives[i - 1];
          im.launch_layout(p, st, alt.function, alt.layout.block, alt.layout.grid);
        }
        im.launched(p, s);
      };
      std::vector<std::vector<double>> times(n);
      for (int round = 0; round <= kRounds; ++round) {
        for (std::size_t i = 0; i < n; ++i) {
          if (flush.get()) FX_CUDA_CALL(cudaMemsetAsync(flush.get(), 0, flush.bytes(), im.stream));
          const double ms = median_event_ms(im.stream, 1, [&] { launch_layout(i); });
          if (round > 0) times[i].push_back(ms);
        }
      }
      std::vector<double> med(n);
      for (std::size_t i = 0; i < n; ++i) {
        std::nth_element(times[i].begin(), times[i].begin() + kRounds / 2, times[i].end());
        med[i] = times[i][kRounds / 2];
      }
      const auto best = static_cast<std::size_t>(std::min_element(med.begin(), med.end()) - med.begin());
      std::string others;
      for (std::size_t i = 0; i < n; ++i) {
        if (i == best) continue;
        const std::string& d = i == 0 ? st.kernel.layout : st.alternatives[i - 1].layout.description;
        others += (others.empty() ? "" : "; ") + d + ": " + ms_text(med[i]);
      }
      install(st, best);
      st.layout_choice = st.kernel.layout + ": the fastest of " + std::to_string(n) + " layouts timed here (" +
                         ms_text(med[best]) + "; " + others + ")";
      launch_layout(0);  // the installed layout writes the outputs the next steps read
    }
  }
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
}

}  // namespace fx::gpu
