// A horizontal GEMM's one strided-batched call against its parts run as calls of their own (step_tuning.h):
// timed, or the kept choice reused.
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/cuda_call.h"
#include "kernels/common/ms_text.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/step_tuning.h"
#include "kernels/tuning/tuning_keys.h"

namespace fx::gpu {
namespace {

// One way to run a horizontal GEMM: its one strided-batched call or its parts alone, in the search's finalist
// `finalist` (every part has the same problem), or as run() launches it where the finalists are not timed.
struct HorizontalWay {
  bool parts = false;
  std::optional<std::size_t> finalist;
};

// One kind (the merged call or the parts): its search's finalists, timed here unless there is one or the
// problem's finalists were timed in a plan already (then the installed configuration alone).
struct Kind : GemmWay {
  const LibraryStep* call = nullptr;  // the merged call, or the first part (the parts share its problem)
  std::size_t count = 0;  // its finalists
};

struct Horizontal {
  TuningPass& pass;
  PlanId p;
  std::size_t s;
  std::shared_ptr<LibraryStep> merged;
  std::vector<std::shared_ptr<LibraryStep>> parts;
  Kind kinds[2];  // [0] the merged call, [1] the parts
  void launch(const HorizontalWay& way) const;
};

void Horizontal::launch(const HorizontalWay& way) const {
  const PlanBuffers b = pass.im.buffers(p);
  auto run = [&](const LibraryStep& call) {
    if (way.finalist) {
      call.launch_finalist(b, pass.im.stream, *way.finalist);
    } else {
      call.launch(b, pass.im.stream);
    }
  };
  if (!way.parts) {
    run(*merged);
  } else {
    for (const auto& part : parts) run(*part);
  }
  pass.im.launched(p, s);
}

// After its search (search()).
Kind kind_of(TuningPass& pass, PlanId p, const LibraryStep& call) {
  const PlanBuffers b = pass.im.buffers(p);
  Kind k;
  k.call = &call;
  k.problem = call.gemm_problem(b);
  k.count = call.gemm_finalists(b);
  k.finalists = call.gemm_finalists_id(b);
  k.timed_here = k.count >= 2 && !timed_before(pass.timed, k.problem);
  return k;
}

// Times every way (each kind in each of its finalists), then, where that was more than two, the two kinds again
// side by side, each in the configuration just kept: the least of several medians is biased low against one
// median. Each kind keeps its fastest finalist (detail "merged", "parts"), whichever kind runs.
TimedChoice time_ways(Horizontal& h) {
  std::vector<HorizontalWay> ways;
  for (int k = 0; k < 2; ++k) {
    if (!h.kinds[k].timed_here) ways.push_back({k == 1, std::nullopt});
    for (std::size_t i = 0; h.kinds[k].timed_here && i < h.kinds[k].count; ++i) ways.push_back({k == 1, i});
  }
  const WayLaunch way = [&](std::size_t i) { h.launch(ways[i]); };
  const TuneRounds rounds = comparison_rounds(h.pass, h.p, h.s, ways.size(), kConvRounds, way);
  ClockWatch watch(*h.pass.im.clocks);
  const std::vector<double> med = time_rounds(h.pass, h.p, h.s, ways.size(), rounds, way);
  TimedChoice t;
  const auto first_parts = static_cast<std::ptrdiff_t>(h.kinds[0].timed_here ? h.kinds[0].count : 1);
  const std::vector<double> by_kind[2] = {{med.begin(), med.begin() + first_parts}, {med.begin() + first_parts, med.end()}};
  t.ms = {by_kind[0][fastest(by_kind[0])], by_kind[1][fastest(by_kind[1])]};
  for (int k = 0; k < 2; ++k) {
    if (h.kinds[k].timed_here) t.detail[k == 0 ? "merged" : "parts"] = {{"finalist", fastest(by_kind[k])}, {"ms", by_kind[k]}};
  }
  if (ways.size() > 2) {
    for (int k = 0; k < 2; ++k) {  // the kinds in the configurations just kept
      if (h.kinds[k].timed_here) h.kinds[k].call->choose_finalist(h.pass.im.buffers(h.p), fastest(by_kind[k]), by_kind[k]);
    }
    const WayLaunch kind = [&](std::size_t i) { h.launch(HorizontalWay{i == 1, std::nullopt}); };
    t.ms = time_rounds(h.pass, h.p, h.s, 2, comparison_rounds(h.pass, h.p, h.s, 2, kConvRounds, kind), kind);
  }
  t.index = t.ms[1] < t.ms[0] ? 1 : 0;
  t.detail["clocks"] = at_clocks(watch.stop());
  return t;
}

// The finalist a kept choice gives a kind timed here, if it is one.
std::optional<std::pair<std::size_t, std::vector<double>>> kept_finalist(const TimedChoice& c, const Kind& k, const char* name) {
  if (!c.detail.contains(name)) return std::nullopt;
  const nlohmann::json& d = c.detail[name];
  if (!d.is_object() || !d.contains("finalist") || !d["finalist"].is_number_unsigned() || !d.contains("ms") ||
      !d["ms"].is_array() || d["ms"].size() != k.count || d["finalist"].get<std::size_t>() >= k.count) {
    return std::nullopt;
  }
  for (const auto& v : d["ms"]) {
    if (!v.is_number()) return std::nullopt;
  }
  return std::make_pair(d["finalist"].get<std::size_t>(), d["ms"].get<std::vector<double>>());
}

bool usable(const TimedChoice& kept, const Horizontal& h) {
  return kept.ms.size() == 2 && (!h.kinds[0].timed_here || kept_finalist(kept, h.kinds[0], "merged")) &&
         (!h.kinds[1].timed_here || kept_finalist(kept, h.kinds[1], "parts"));
}

// Each kind timed here keeps its fastest finalist for every launch after (and every step of its problem).
void keep_finalists(Horizontal& h, const TimedChoice& c) {
  const PlanBuffers b = h.pass.im.buffers(h.p);
  const std::string together = "its " + std::to_string(h.parts.size()) + " GEMMs together";
  for (int k = 0; k < 2; ++k) {
    if (!h.kinds[k].timed_here) continue;
    const auto [finalist, ms] = *kept_finalist(c, h.kinds[k], k == 0 ? "merged" : "parts");
    h.kinds[k].call->choose_finalist(b, finalist, ms, k == 0 ? "" : together);
    h.pass.timed.push_back(h.kinds[k].problem);
  }
}

StepTuning decision(const Horizontal& h, const TimedChoice& c) {
  const LibraryCall& lc = h.merged->call();
  const std::string count = std::to_string(h.parts.size());
  const std::string clocks = c.detail.contains("clocks") && c.detail["clocks"].is_string() ? c.detail["clocks"].get<std::string>() : "";
  const std::string times = "the strided-batched call " + ms_text(c.ms[0]) + ", its " + count + " GEMMs alone " +
                            ms_text(c.ms[1]) + (c.reused() ? ", " + reused_from(c) : ", timed here") +
                            (clocks.empty() ? "" : "; " + clocks);
  if (c.index == 0) return {KeepStep{}, "one strided-batched call, the faster (" + times + ")", c.tuned_at};
  return {SplitParts{h.parts, false},
          "run alone, one of " + lc.name + "'s " + count + " GEMMs: the faster way (" + times + ")", c.tuned_at};
}

}  // namespace

// cuBLASLt's batched kernels need not be the faster (docs/benchmarks.md, qkv_bf16), so the plan keeps whichever
// of the one strided-batched call (layout 1) and its parts run alone (layout 2) times faster here, each way in
// the search's best configurations (tune_gemm). The kept choice holds for both kinds' problems and finalists,
// whether each kind's finalists were timed here, and the tuning context.
StepTuning tune_horizontal(TuningPass& pass, PlanId p, std::size_t s) {
  CompiledProgram& im = pass.im;
  Horizontal h{pass, p, s, im.plan(p).steps[s].library()->call, {}, {}};
  for (const LibraryCall& part : h.merged->call().parts) h.parts.push_back(std::make_shared<LibraryStep>(part, im.contraction));
  const LibraryCall& lc = h.merged->call();
  const std::string count = std::to_string(h.parts.size());
  if (pass.forced >= 0) {
    if (pass.forced == 0) return {KeepStep{}, "one strided-batched call: layout 1 of 2, set by hand (not timed)", ""};
    return {SplitParts{h.parts, true},
            "run alone, one of " + lc.name + "'s " + count + " GEMMs: layout 2 of 2, set by hand (not timed)", ""};
  }
  search(pass, p, *h.merged);
  for (const auto& part : h.parts) search(pass, p, *part);
  h.kinds[0] = kind_of(pass, p, *h.merged);
  h.kinds[1] = kind_of(pass, p, *h.parts[0]);
  const TuningKey key = horizontal_key(h.kinds[0], h.kinds[1], h.parts.size(), tuning_context(im, p, s));
  const TimedChoice c = pass.choose(key, 2, [&] { return time_ways(h); },
                                    [&](const TimedChoice& kept) { return usable(kept, h); });
  keep_finalists(h, c);
  return decision(h, c);
}

}  // namespace fx::gpu
