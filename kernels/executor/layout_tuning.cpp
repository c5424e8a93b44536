#include "kernels/executor/layout_tuning.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/graph/content_hash.h"
#include "kernels/common/cuda_call.h"
#include "kernels/common/ms_text.h"
#include "kernels/common/stream_gate.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/step_tuning.h"

namespace fx::gpu {
namespace {

// A generated kernel's layouts, each as "SOURCE-HASH block B grid G": what decides its timing besides the plan.
std::string layouts_text(const Step& st) {
  auto shape = [](const std::string& source, int block, std::int64_t grid) {
    return hex64(fnv1a64(source)) + " block " + std::to_string(block) + " grid " + std::to_string(grid);
  };
  std::string layouts = shape(st.kernel.source, st.kernel.block, st.kernel.grid);
  for (const GeneratedLaunch::Layout& alt : st.generated()->alternatives)
    layouts += "; " + shape(alt.layout.source, alt.layout.block, alt.layout.grid);
  return layouts;
}

// "(0.0123 ms; 32 threads x 4: 0.0150 ms; ...)": the chosen layout's time, then the others'.
std::string layout_times(const Step& st, const TimedChoice& c) {
  std::string others;
  for (std::size_t i = 0; i < c.ms.size(); ++i) {
    if (i == c.index) continue;
    const std::string& d = i == 0 ? st.kernel.layout : st.generated()->alternatives[i - 1].layout.description;
    others += (others.empty() ? "" : "; ") + d + ": " + ms_text(c.ms[i]);
  }
  return "(" + ms_text(c.ms[c.index]) + "; " + others + ")";
}

StepTuning forced_layout(const Step& st, std::size_t n, int forced) {
  const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(forced), n - 1);
  const std::string& name = k == 0 ? st.kernel.layout : st.generated()->alternatives[k - 1].layout.description;
  return {InstallLayout{k}, name + ": layout " + std::to_string(k + 1) + " of " + std::to_string(n) +
                                ", set by hand (not timed)", ""};
}

}  // namespace

// A generated kernel's layouts: the forced one untimed, or each timed (or the kept choice reused) and the fastest
// installed.
StepTuning tune_generated(TuningPass& pass, PlanId p, std::size_t s) {
  CompiledProgram& im = pass.im;
  const Step& st = im.plan(p).steps[s];
  const GeneratedLaunch& g = *st.generated();
  const std::size_t n = g.alternatives.size() + 1;
  if (pass.forced >= 0) return forced_layout(st, n, pass.forced);
  const PlanBuffers b = im.buffers(p);
  const WayLaunch launch_layout = [&](std::size_t i) {
    if (i == 0) {
      g.launch_layout(st, g.loaded.function(), st.kernel.block, st.kernel.grid, b, im.stream);
    } else {
      const GeneratedLaunch::Layout& alt = g.alternatives[i - 1];
      g.launch_layout(st, alt.loaded.function(), alt.layout.block, alt.layout.grid, b, im.stream);
    }
    im.launched(p, s);
  };
  int timed_rounds = kRounds;
  const TuningKey key{"layout", st.kernel.name + ": " + layouts_text(st) + ", " + tuning_context(im, p, s)};
  const TimedChoice c = pass.choose(key, n, [&] {
    // With the flush (the PyTorch harness's protocol) as long as the plans will be timed; without it each run
    // waits behind a gate of its own (time_rounds), and 15 rounds are kept.
    const TuneRounds rounds = pass.flush.get() ? comparison_rounds(pass, p, s, n, kRounds, launch_layout, Rest::no)
                                               : TuneRounds(kRounds);
    timed_rounds = rounds.timed;
    TimedChoice timed;
    timed.ms = time_rounds(pass, p, s, n, rounds, launch_layout);
    timed.index = fastest(timed.ms);
    return timed;
  }, [n](const TimedChoice& kept) { return kept.ms.size() == n; });
  const std::string how = c.reused() ? reused_from(c) + ":" : "timed here in " + std::to_string(timed_rounds) + " rounds";
  // The report names the installed layout, which is the chosen one once applied.
  const std::string& chosen = c.index == 0 ? st.kernel.layout : g.alternatives[c.index - 1].layout.description;
  return {InstallLayout{c.index},
          chosen + ": the fastest of " + std::to_string(n) + " layouts " + how + " " + layout_times(st, c), c.tuned_at};
}

// A cuBLASLt call's configuration: the search (Matmul) times its candidates once, each after an untimed launch of
// itself, as the process starts; the plan runs it after the flush and the step before it, on a GPU whose clocks
// the plan's own rounds have set. Close configurations rank differently in the two (kFinalistsKept in
// matmul_search.cpp), so the search's best few are timed again here, the plan's way, and the fastest kept.
StepTuning tune_gemm(TuningPass& pass, PlanId p, std::size_t s) {
  CompiledProgram& im = pass.im;
  const LibraryStep* call = im.plan(p).steps[s].call();
  const PlanBuffers b = im.buffers(p);
  search(pass, p, *call);
  const MatmulProblem problem = call->gemm_problem(b);
  const std::size_t n = call->gemm_finalists(b);
  if (n < 2 || timed_before(pass.timed, problem)) return {KeepStep{}, "", ""};
  const TuningKey key{"gemm_in_plan", matmul_problem_text(problem) + ", finalists " + call->gemm_finalists_id(b) +
                                          ", " + tuning_context(im, p, s)};
  std::string clocks;
  const TimedChoice c = pass.choose(key, n, [&] {
    const WayLaunch finalist = [&](std::size_t i) {
      call->launch_finalist(b, im.stream, i);
      im.launched(p, s);
    };
    const TuneRounds rounds = comparison_rounds(pass, p, s, n, kConvRounds, finalist);
    ClockWatch watch(*im.clocks);
    TimedChoice timed;
    timed.ms = time_rounds(pass, p, s, n, rounds, finalist);
    timed.index = fastest(timed.ms);
    clocks = at_clocks(watch.stop());
    return timed;
  }, [n](const TimedChoice& kept) { return kept.ms.size() == n; });
  call->choose_finalist(b, c.index, c.ms);
  pass.timed.push_back(problem);
  return {KeepStep{}, c.reused() ? reused_from(c) : clocks, c.tuned_at};
}

namespace {

using Tuner = StepTuning (*)(TuningPass&, PlanId, std::size_t);

// Which decider chooses for a step, or null where it has nothing to choose.
Tuner tuner_of(const Step& st, int forced) {
  const LibraryStep* call = st.call();
  if (call && call->nhwc_ready() && st.library()->part == CallPart::whole) return tune_conv_layout;
  if (call && call->offers_split()) return tune_horizontal;
  if (call && call->is_gemm() && forced < 0) return tune_gemm;
  if (st.generated() && !st.generated()->alternatives.empty()) return tune_generated;
  return nullptr;
}

}  // namespace

void tune_layouts(CompiledProgram& im) {
  if (!im.options.autotune && im.options.force_layout < 0) return;
  TuningPass pass(im);
  for (PlanId p : kPlanIds) {
    CompiledPlan& ps = im.plan(p);
    const auto tunable = [&](const Step& st) { return tuner_of(st, pass.forced) != nullptr; };
    if (std::none_of(ps.steps.begin(), ps.steps.end(), tunable)) continue;  // nothing to choose in this plan
    std::size_t s = 0;
    while (s < ps.steps.size()) {
      const Tuner tune = tuner_of(ps.steps[s], pass.forced);
      std::size_t last = s;
      if (tune) {
        im.progress("tune", 0.17, ps.name + " plan: step " + std::to_string(s + 1) + " of " +
                                      std::to_string(ps.steps.size()) + " (" + ps.steps[s].kernel.name + ")");
        last = apply_step_tuning(im, p, s, tune(pass, p, s));
      }
      // What step s became runs now, so the steps after it read what it writes.
      for (; s <= last; ++s) im.launch(p, s);
    }
  }
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
  pass.spend.gate_timeouts = StreamGate::timeouts() - pass.gate_timeouts_before;
  // Where the pass spent its time (with --progress): a cold run's tuning is most of its wall time.
  im.progress("tune", 0.2, "tuning: " + pass.spend.text() + "; " + std::to_string(im.tuned_steps) + " choices timed, " +
                               std::to_string(im.reused_steps) + " reused");
}

}  // namespace fx::gpu
