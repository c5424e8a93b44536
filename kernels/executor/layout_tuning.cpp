#include "kernels/executor/layout_tuning.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/event_timing.h"
#include "kernels/common/stream_gate.h"
#include "kernels/common/sticky_error.h"
#include "kernels/contraction/device_memory.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/profile/gpu_clocks.h"
#include "core/graph/content_hash.h"

namespace fx::gpu {
namespace {

// Timed rounds per layout, after one warm-up round; one launch of each layout per round, so that a drift of
// the clocks during the search moves every layout alike (the cuBLASLt search does the same). A convolution's
// ways and a horizontal GEMM's get more: their times spread wider (library calls, several launches, after each
// flush).
constexpr int kRounds = 15;
constexpr int kConvRounds = 31;

// Layout 0 is the step's installed one; layout i > 0 is alternatives[i - 1]. Installing i swaps the two, so
// every compiled layout stays owned by the step (and is unloaded with it).
void install(Step& st, GeneratedLaunch& g, std::size_t i) {
  if (i == 0) return;
  GeneratedLaunch::Layout& alt = g.alternatives[i - 1];
  swap_layout(st.kernel, alt.layout);
  std::swap(g.loaded, alt.loaded);
}

// The rounds of one comparison: `timed` rounds after `warmup` (one by default).
struct TuneRounds {
  TuneRounds(int timed_rounds, int warmup_rounds = 1) : timed(timed_rounds), warmup(warmup_rounds) {}  // NOLINT
  int timed, warmup;
};

// Times each of `n` ways of plan p's step s in interleaved rounds (after rounds.warmup, one by default); the
// medians. Each timed launch finds the L2 as the plan timing leaves it for that step: first what the plan timing puts before a
// timed run (the flush when there is one, else an untimed launch of the same way: its operands in the L2),
// then the step before it in the plan (untimed), whose outputs, just written, are in the L2 when the step runs
// in the plan. Without that, a kernel after the first is timed as if the whole plan began with it, its inputs
// in DRAM, and the layout that wins with cold inputs can be slower with the warm ones the plan gives it.
// The rounds run back to back, as the plan timing's do: every run is enqueued and the host waits once, at the
// end. Waiting for each run leaves the GPU idle between runs, and on power-limited GEMMs that is another regime,
// in which configurations rank otherwise. The GPU must never wait for the host inside a timed window (a way whose launches
// cost the host more would be charged for them: stream_gate.h). With the flush, each run's 256 MB memset gives
// the host a run's time to enqueue the next, so one gate, opened once the host is kHeadStart runs ahead, is
// enough, and the runs follow each other with no gap; without it (a run after an untimed launch of the same way,
// perhaps a few microseconds) each run is enqueued behind a gate of its own.
template <class Launch>
std::vector<double> time_rounds(CompiledProgram& im, PlanId p, std::size_t s, std::size_t n,
                                const contraction_detail::DeviceMemory& flush, TuneRounds rounds, Launch&& launch) {
  const int kWarmupRounds = std::max(0, rounds.warmup);
  constexpr std::size_t kHeadStart = 8;
  const std::size_t runs = static_cast<std::size_t>(kWarmupRounds + rounds.timed) * n;
  std::vector<EventPair> ev(runs);
  std::optional<StreamGate> head;  // opened when reset (or when a launch throws)
  if (flush.get()) head.emplace(im.stream);
  for (std::size_t r = 0; r < runs; ++r) {
    const std::size_t i = r % n;  // one run of each way per round
    std::optional<StreamGate> gate;  // without the flush: opened when this scope ends, the run enqueued
    if (!flush.get()) gate.emplace(im.stream);
    if (head && r == kHeadStart) head.reset();
    if (flush.get()) {
      FX_CUDA_CALL(cudaMemsetAsync(flush.get(), 0, flush.bytes(), im.stream));
    } else {
      launch(i);
    }
    if (s > 0) im.launch(p, s - 1);
    FX_CUDA_CALL(cudaEventRecord(ev[r].start, im.stream));
    launch(i);
    FX_CUDA_CALL(cudaEventRecord(ev[r].stop, im.stream));
  }
  head.reset();
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
  std::vector<std::vector<double>> times(n);
  for (std::size_t r = static_cast<std::size_t>(kWarmupRounds) * n; r < runs; ++r) {
    float ms = 0;
    FX_CUDA_CALL(cudaEventElapsedTime(&ms, ev[r].start, ev[r].stop));
    times[r % n].push_back(ms);
  }
  std::vector<double> med(n);
  for (std::size_t i = 0; i < n; ++i) med[i] = upper_median(times[i]);
  return med;
}

// The rounds of a GEMM's tuning comparison (its search's finalists, a horizontal GEMM's ways). A bf16 GEMM runs
// at the power limit, where its configurations rank differently at different clocks, and timed right after the
// search the clocks are power-capped. So each comparison starts from a rested GPU: the longer of the timing
// protocol's rest_ms and tuning_rest_ms (docs/measurement.md). Where the timing is asked for in milliseconds
// (TimingProtocol::warmup_ms, repeat_ms: the do_bench protocol), the comparison runs as the plan timing will: after a rest at least as long, warmed up as long and timed about as long (at least `rounds`),
// its round's time taken from one round run first. Otherwise `rounds` after one warm-up round, right after the
// rest.
// A generated kernel's layouts are compared the same way but without the rest (Rest::no): they are memory-bound,
// and a rest before each of a plan's steps would cost a second each. Layouts 0.1% apart are, after 15 rounds,
// as much the noise's pick as the kernel's; under the do_bench protocol they are timed as long as the plans.
enum class Rest { yes, no };
template <class Launch>
TuneRounds comparison_rounds(CompiledProgram& im, PlanId p, std::size_t s, std::size_t n,
                             const contraction_detail::DeviceMemory& flush, int rounds, Launch&& launch,
                             Rest rest = Rest::yes) {
  const RunOptions& o = im.options;
  if (rest == Rest::yes) im.rest_for(std::max(o.timing.rest_ms, o.timing.tuning_rest_ms));
  if (!(o.timing.warmup_ms > 0 || o.timing.repeat_ms > 0)) return rounds;
  auto one_round = [&] {
    for (std::size_t i = 0; i < n; ++i) {
      if (flush.get()) {
        FX_CUDA_CALL(cudaMemsetAsync(flush.get(), 0, flush.bytes(), im.stream));
      } else {
        launch(i);
      }
      if (s > 0) im.launch(p, s - 1);
      launch(i);
    }
  };
  // A kernel's layouts are launched here for the first time (the module's functions load on first launch), so
  // their round is timed after one untimed round: a first launch's stall would give fewer rounds than asked.
  if (rest == Rest::no) one_round();
  const double round_ms = mean_event_ms(im.stream, 1, one_round);
  TimingProtocol counted = o.timing;
  counted.warmup = 1;
  counted.repeat = rounds;
  const TimingRounds r = timing_rounds(counted, round_ms);
  return {std::max(rounds, r.repeat), r.warmup};
}

// What decides a timed choice besides its candidates: the protocol it was timed under (the flush; rounds counted
// or timed) and the step the plan runs before it, whose outputs are in the L2 when it runs.
std::string tuning_context(const CompiledProgram& im, PlanId p, std::size_t s) {
  const TimingProtocol& t = im.options.timing;
  std::string c = std::string("flush ") + (t.cold_l2 ? "yes" : "no") +
                  ((t.warmup_ms > 0 || t.repeat_ms > 0) ? ", rounds by time" : ", rounds by count");
  if (s > 0) {
    const Step& before = im.plan(p).steps[s - 1];
    c += ", after " + before.kernel.name + " " + hex64(fnv1a64(before.kernel.source));
  }
  return c;
}

// An earlier run's choice for `key` (none when the run retunes or keeps no cache).
std::optional<TuningEntry> cached_choice(CompiledProgram& im, const TuningKey& key) {
  if (!im.tuning || im.options.retune) return std::nullopt;
  return im.tuning->find(key);
}

// A choice timed in this run, kept for the next.
void keep_choice(CompiledProgram& im, const TuningKey& key, const nlohmann::json& choice) {
  ++im.tuned_steps;
  if (im.tuning) im.tuning->store(key, choice);
}

// The index an entry chose among n candidates, if it is one.
std::optional<std::size_t> chosen_index(const TuningEntry& entry, const char* field, std::size_t n) {
  const auto it = entry.choice.find(field);
  if (it == entry.choice.end() || !it->is_number_unsigned() || it->get<std::size_t>() >= n) return std::nullopt;
  return it->get<std::size_t>();
}

// A kept list of times, if it is one, of n numbers.
std::optional<std::vector<double>> kept_times(const TuningEntry& entry, std::size_t n) {
  const auto it = entry.choice.find("ms");
  if (it == entry.choice.end() || !it->is_array() || it->size() != n) return std::nullopt;
  std::vector<double> ms;
  for (const auto& v : *it) {
    if (!v.is_number()) return std::nullopt;
    ms.push_back(v.get<double>());
  }
  return ms;
}

std::string kept_text(const TuningEntry& entry, const char* field) {
  const auto it = entry.choice.find(field);
  return it != entry.choice.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::string reused_from(const TuningEntry& entry) { return "reused from the tuning cache (timed " + entry.tuned_at + ")"; }

// The first line of a library error, for a one-line report.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// A convolution's NCHW call (layout 1) against its channels-last way with the conversions in each of their
// layouts (layouts 2, 3, ...; with layout 1 forced the channels-last way is never loaded, so `forced` here is -1
// or >= 1). Returns the index of the step's last launch, which has run (so the steps after it read what it
// wrote).
std::size_t tune_conv_layout(CompiledProgram& im, PlanId p, std::size_t s, int forced,
                             const contraction_detail::DeviceMemory& flush) {
  CompiledPlan& ps = im.plan(p);
  const std::shared_ptr<LibraryStep> call = ps.steps[s].library()->call;
  const PlanBuffers b = im.buffers(p);
  const std::size_t ways = 1 + call->conversion_layouts();
  auto launch = [&](std::size_t i) {
    if (i == 0) {
      call->launch(b, im.stream, CallPart::whole);
    } else {
      for (CallPart part : {CallPart::to_nhwc, CallPart::conv_nhwc, CallPart::to_nchw}) {
        call->launch(b, im.stream, part, i - 1);
      }
    }
    im.launched(p, s);
  };
  auto keep_nchw = [&](const std::string& choice) {
    if (!ps.steps[s].library()->nchw_choice) call->drop_nhwc();  // its scratch and permuted weights are not needed any more
    ps.steps[s].layout_choice = choice;
    launch(0);
    return s;
  };
  // cuDNN may refuse the NHWC problem (a type or epilogue its legacy NHWC kernels lack) where it ran NCHW: the
  // run then keeps the NCHW call and says why, instead of failing. CUDA errors and faults propagate.
  try {
    launch(1);
    FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
  } catch (const GpuError& e) {
    if (is_sticky(e) || e.library() != "cuDNN") throw;
    return keep_nchw("NCHW: cuDNN refused the NHWC call (" + first_line(e.what()) + ")");
  }
  std::size_t way = 0;
  std::string choice;
  if (forced >= 1) {
    way = std::min<std::size_t>(static_cast<std::size_t>(forced), ways - 1);
    choice = "NHWC: layout " + std::to_string(way + 1) + " of " + std::to_string(ways) + ", set by hand (not timed; " +
             call->conversion_layout_name(way - 1) + ")";
  } else {
    // The NCHW call's first launch runs cuDNN's algorithm search, which synchronises: not inside the timed runs
    // (it would wait there for a gate the host cannot open until the search returns).
    launch(0);
    FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
    const std::vector<double> med = time_rounds(im, p, s, ways, flush, kConvRounds, launch);
    way = static_cast<std::size_t>(std::min_element(med.begin(), med.end()) - med.begin());
    std::string times = "NCHW call " + ms_text(med[0]);
    for (std::size_t i = 1; i < ways; ++i) {
      times += "; NHWC with " + call->conversion_layout_name(i - 1) + ": " + ms_text(med[i]);
    }
    choice = std::string(way > 0 ? "NHWC" : "NCHW") + ": the " + (ways == 2 ? "faster" : "fastest") + " of " +
             std::to_string(ways) + " layouts timed here (" + times + ")";
    if (way == 0 && im.options.keep_nhwc) {
      // With values kept NHWC around it, the kept plan may not launch the conversions timed here: time the
      // NHWC call alone too (its x the scratch the last NHWC round converted), for keep_channels_last.
      const std::size_t best = static_cast<std::size_t>(std::min_element(med.begin() + 1, med.end()) - med.begin());
      const std::vector<double> alone = time_rounds(im, p, s, 1, flush, kConvRounds, [&](std::size_t) {
        call->launch(b, im.stream, CallPart::conv_nhwc);
        im.launched(p, s);
      });
      ps.steps[s].library()->nchw_choice = LibraryLaunch::NchwChoice{med[0], alone[0], med[best], best - 1};
    }
  }
  if (way == 0) return keep_nchw(choice);
  call->install_conversion_layout(way - 1);
  // The one step becomes three: x to NHWC, the call, y back. The conversions are generated kernels owned by
  // the call; they report the group and the convolution's nodes. Everything that can throw comes before the
  // plan is changed.
  const Graph& g = im.graph;
  const LibraryCall& lc = call->call();
  Step to_nhwc{ps.steps[s], LibraryLaunch{call, CallPart::to_nhwc}};
  Step to_nchw{ps.steps[s], LibraryLaunch{call, CallPart::to_nchw}};
  for (Step* conversion : {&to_nhwc, &to_nchw}) call->describe_conversion(conversion->library()->part, *conversion);
  to_nhwc.kernel.inputs = {lc.x};
  to_nhwc.kernel.outputs = {};
  to_nhwc.kernel.bytes_moved = 2 * g.value_type(lc.x).bytes();
  to_nchw.kernel.inputs = {};
  to_nchw.kernel.outputs = {lc.outputs[0]};
  to_nchw.kernel.bytes_moved = 2 * g.value_type(lc.outputs[0]).bytes();
  const std::string note = ps.steps[s].group + ": " + lc.name + " runs channels-last, as 3 launches: " +
                           to_nhwc.kernel.name + " (x to NHWC) + " + lc.name + " + " + to_nchw.kernel.name +
                           " (y back to NCHW)";
  ps.notes.reserve(ps.notes.size() + 1);
  ps.steps.reserve(ps.steps.size() + 2);  // no reallocation, so no exception, from here on
  ps.steps[s].library()->part = CallPart::conv_nhwc;
  ps.steps[s].layout_choice = choice;
  ps.steps.insert(ps.steps.begin() + static_cast<std::ptrdiff_t>(s) + 1, std::move(to_nchw));
  ps.steps.insert(ps.steps.begin() + static_cast<std::ptrdiff_t>(s), std::move(to_nhwc));
  ps.notes.push_back(note);
  for (std::size_t i = s; i < s + 3; ++i) im.launch(p, i);
  return s + 2;
}

// The GEMM problems whose search finalists were timed in a plan already: one choice per problem serves every
// step that runs it, in both plans (the cuBLASLt plan cache is keyed by problem and pointer alignment, and the
// arena aligns every value alike).
using TimedProblems = std::vector<MatmulProblem>;

bool timed_before(const TimedProblems& timed, const MatmulProblem& p) {
  return std::find(timed.begin(), timed.end(), p) != timed.end();
}

std::size_t fastest(const std::vector<double>& ms) {
  return static_cast<std::size_t>(std::min_element(ms.begin(), ms.end()) - ms.begin());
}

// The clocks a GEMM's tuning rounds ran at, for its report line: a power-limited GEMM's configurations rank
// differently at different clocks, and the plan's own timing may run at others (gpu_clocks.h). "" where NVML
// was not read.
std::string at_clocks(const ClockSpan& span) {
  const std::string brief = clock_span_brief(span);
  return brief.empty() ? "" : "GPU while tuning: " + brief;
}

// A GEMM call's first launch runs cuBLASLt's algorithm search, which synchronises: never inside a timed round.
// Its inputs were written by the steps before it, which tuning has launched in order.
void search(CompiledProgram& im, PlanId p, const LibraryStep& call) {
  call.launch(im.buffers(p), im.stream);
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
}

// A cuBLASLt call's configuration: the search (Matmul) times its candidates once, each after an untimed launch of
// itself, as the process starts; the plan runs it after the flush and the step before it, on a GPU whose clocks
// the plan's own rounds have set. Close configurations rank differently in the two (kFinalistsKept in
// matmul.cpp), so the search's best few are timed again here, the plan's way, and the fastest kept. Returns s.
std::size_t tune_gemm(CompiledProgram& im, PlanId p, std::size_t s, const contraction_detail::DeviceMemory& flush,
                      TimedProblems& timed) {
  const LibraryStep* call = im.plan(p).steps[s].call();
  const PlanBuffers b = im.buffers(p);
  search(im, p, *call);
  const MatmulProblem problem = call->gemm_problem(b);
  const std::size_t n = call->gemm_finalists(b);
  if (n > 1 && !timed_before(timed, problem)) {
    Step& st = im.plan(p).steps[s];
    const TuningKey key{"gemm_in_plan", matmul_problem_text(problem) + ", finalists " + call->gemm_finalists_id(b) +
                                            ", " + tuning_context(im, p, s)};
    const auto entry = cached_choice(im, key);
    const auto reused = entry ? chosen_index(*entry, "finalist", n) : std::nullopt;
    const auto ms = entry ? kept_times(*entry, n) : std::nullopt;
    if (reused && ms) {
      call->choose_finalist(b, *reused, *ms);
      st.layout_choice = reused_from(*entry);
      st.tuned_at = entry->tuned_at;
      ++im.reused_steps;
    } else {
      auto finalist = [&](std::size_t i) {
        call->launch_finalist(b, im.stream, i);
        im.launched(p, s);
      };
      const TuneRounds rounds = comparison_rounds(im, p, s, n, flush, kConvRounds, finalist);
      ClockWatch watch(*im.clocks);
      const std::vector<double> med = time_rounds(im, p, s, n, flush, rounds, finalist);
      st.layout_choice = at_clocks(watch.stop());
      call->choose_finalist(b, fastest(med), med);
      keep_choice(im, key, {{"finalist", fastest(med)}, {"ms", med}});
    }
    timed.push_back(problem);
  }
  im.launch(p, s);
  return s;
}

// One way to run a horizontal GEMM: its one strided-batched call or its parts alone, in the search's finalist
// `finalist` (every part has the same problem), or as run() launches it where the finalists are not timed.
struct HorizontalWay {
  bool parts = false;
  std::optional<std::size_t> finalist;
};

// The ways of one kind: each finalist of the call's problem, or its installed configuration alone where there is
// one finalist or the problem's finalists were timed in a plan already.
void add_ways(std::vector<HorizontalWay>& ways, bool parts, std::size_t finalists, bool timed) {
  if (finalists < 2 || timed) {
    ways.push_back({parts, std::nullopt});
    return;
  }
  for (std::size_t i = 0; i < finalists; ++i) ways.push_back({parts, i});
}

// A horizontal GEMM's one strided-batched call (layout 1) against its parts run as calls of their own (layout 2).
// cuBLASLt's batched kernels need not be the faster (docs/benchmarks.md, qkv_bf16), so the plan keeps whichever
// times faster
// here, each way in the search's best configurations (tune_gemm). When the parts win, the one step becomes one
// step per part, each an ordinary GEMM on the graph's own weight, writing its output where the merged call would
// have (the stacked weights are freed with the merged call). Returns the index of the step's last launch, which
// has run.
std::size_t tune_horizontal(CompiledProgram& im, PlanId p, std::size_t s, int forced,
                            const contraction_detail::DeviceMemory& flush, TimedProblems& timed) {
  CompiledPlan& ps = im.plan(p);
  const std::shared_ptr<LibraryStep> merged = ps.steps[s].library()->call;
  const PlanBuffers b = im.buffers(p);
  const LibraryCall& lc = merged->call();
  std::vector<std::shared_ptr<LibraryStep>> parts;
  for (const LibraryCall& part : lc.parts) parts.push_back(std::make_shared<LibraryStep>(part, im.contraction));
  auto run = [&](const LibraryStep& call, const std::optional<std::size_t>& finalist) {
    if (finalist) {
      call.launch_finalist(b, im.stream, *finalist);
    } else {
      call.launch(b, im.stream);
    }
  };
  auto launch = [&](const HorizontalWay& way) {
    if (!way.parts) {
      run(*merged, way.finalist);
    } else {
      for (const auto& part : parts) run(*part, way.finalist);
    }
    im.launched(p, s);
  };
  const std::string count = std::to_string(parts.size());
  const std::string together = "its " + count + " GEMMs together";
  bool alone = false;
  std::string merged_choice, parts_choice;
  if (forced >= 0) {
    alone = forced >= 1;
    merged_choice = "one strided-batched call: layout 1 of 2, set by hand (not timed)";
    parts_choice = "run alone, one of " + lc.name + "'s " + count + " GEMMs: layout 2 of 2, set by hand (not timed)";
  } else {
    search(im, p, *merged);
    for (const auto& part : parts) search(im, p, *part);
    const MatmulProblem merged_problem = merged->gemm_problem(b), part_problem = parts[0]->gemm_problem(b);
    std::vector<HorizontalWay> ways;
    add_ways(ways, false, merged->gemm_finalists(b), timed_before(timed, merged_problem));
    const std::size_t first_parts_way = ways.size();
    add_ways(ways, true, parts[0]->gemm_finalists(b), timed_before(timed, part_problem));
    auto way = [&](std::size_t i) { launch(ways[i]); };
    const TuneRounds rounds = comparison_rounds(im, p, s, ways.size(), flush, kConvRounds, way);
    ClockWatch watch(*im.clocks);
    const std::vector<double> med = time_rounds(im, p, s, ways.size(), flush, rounds, way);
    const std::vector<double> merged_ms(med.begin(), med.begin() + static_cast<std::ptrdiff_t>(first_parts_way)),
        parts_ms(med.begin() + static_cast<std::ptrdiff_t>(first_parts_way), med.end());
    // Each kind keeps its fastest configuration (where its finalists were timed), whichever kind runs.
    if (ways.front().finalist) {
      merged->choose_finalist(b, fastest(merged_ms), merged_ms);
      timed.push_back(merged_problem);
    }
    if (ways.back().finalist) {
      parts[0]->choose_finalist(b, fastest(parts_ms), parts_ms, together);
      timed.push_back(part_problem);
    }
    double merged_best = merged_ms[fastest(merged_ms)], parts_best = parts_ms[fastest(parts_ms)];
    if (ways.size() > 2) {
      // The least of several medians is biased low against one median: the two kinds, each in the configuration
      // just kept, are timed again side by side for the choice between them.
      auto kind = [&](std::size_t i) { launch(HorizontalWay{i == 1, std::nullopt}); };
      const std::vector<double> two =
          time_rounds(im, p, s, 2, flush, comparison_rounds(im, p, s, 2, flush, kConvRounds, kind), kind);
      merged_best = two[0];
      parts_best = two[1];
    }
    alone = parts_best < merged_best;
    const std::string clocks = at_clocks(watch.stop());
    const std::string times = "the strided-batched call " + ms_text(merged_best) + ", its " + count +
                              " GEMMs alone " + ms_text(parts_best) + ", timed here" +
                              (clocks.empty() ? "" : "; " + clocks);
    merged_choice = "one strided-batched call, the faster (" + times + ")";
    parts_choice = "run alone, one of " + lc.name + "'s " + count + " GEMMs: the faster way (" + times + ")";
  }
  if (!alone) {
    ps.steps[s].layout_choice = merged_choice;
    im.launch(p, s);
    return s;
  }
  // The one step becomes one per part; everything that can throw comes before the plan is changed.
  const Graph& g = im.graph;
  std::vector<Step> split;
  std::string names;
  for (const auto& part : parts) {
    Step st{ps.steps[s], LibraryLaunch{part}};
    name_step_after(g, part->call(), st);
    st.layout_choice = parts_choice;
    names += (names.empty() ? "" : " + ") + part->call().name;
    split.push_back(std::move(st));
  }
  // The group's note on its launches (contraction_step.cpp, where it has more than one) named the merged call:
  // it is replaced by one that says what runs now.
  const std::string group = ps.steps[s].group;
  std::size_t group_steps = parts.size() - 1;
  for (const Step& other : ps.steps) group_steps += other.group == group ? 1 : 0;
  const std::string note = group + ": " + std::to_string(group_steps) + " launches: " + lc.name + " runs as its " +
                           count + " GEMMs (" + names + "), " +
                           (forced >= 0 ? "set by hand" : "faster than the one strided-batched call here");
  const std::string stale = group + ": ", merged_call = lc.name + " (";
  ps.notes.reserve(ps.notes.size() + 1);
  ps.steps.reserve(ps.steps.size() + split.size());  // no reallocation, so no exception, from here on
  ps.steps[s] = std::move(split[0]);
  ps.steps.insert(ps.steps.begin() + static_cast<std::ptrdiff_t>(s) + 1, std::make_move_iterator(split.begin() + 1),
                  std::make_move_iterator(split.end()));
  std::erase_if(ps.notes, [&](const std::string& n) {
    return n.rfind(stale, 0) == 0 && n.find(" launches: ") != std::string::npos && n.find(merged_call) != std::string::npos;
  });
  ps.notes.push_back(note);
  for (std::size_t i = s; i < s + parts.size(); ++i) im.launch(p, i);
  return s + parts.size() - 1;
}

// A generated kernel's layouts: the forced one installed untimed, or each timed and the fastest installed.
// Leaves the installed layout's outputs written, for the steps after it.
void tune_generated(CompiledProgram& im, PlanId p, std::size_t s, int forced,
                    const contraction_detail::DeviceMemory& flush) {
  Step& st = im.plan(p).steps[s];
  GeneratedLaunch& g = *st.generated();
  const std::size_t n = g.alternatives.size() + 1;
  if (forced >= 0) {
    const std::size_t k = std::min<std::size_t>(static_cast<std::size_t>(forced), n - 1);
    install(st, g, k);
    st.layout_choice = st.kernel.layout + ": layout " + std::to_string(k + 1) + " of " + std::to_string(n) +
                       ", set by hand (not timed)";
    im.launch(p, s);
    return;
  }
  const PlanBuffers b = im.buffers(p);
  auto launch_layout = [&](std::size_t i) {
    if (i == 0) {
      g.launch_layout(st, g.loaded.function(), st.kernel.block, st.kernel.grid, b, im.stream);
    } else {
      const GeneratedLaunch::Layout& alt = g.alternatives[i - 1];
      g.launch_layout(st, alt.loaded.function(), alt.layout.block, alt.layout.grid, b, im.stream);
    }
    im.launched(p, s);
  };
  auto shape = [](const std::string& source, int block, std::int64_t grid) {
    return hex64(fnv1a64(source)) + " block " + std::to_string(block) + " grid " + std::to_string(grid);
  };
  std::string layouts = shape(st.kernel.source, st.kernel.block, st.kernel.grid);
  for (const GeneratedLaunch::Layout& alt : g.alternatives)
    layouts += "; " + shape(alt.layout.source, alt.layout.block, alt.layout.grid);
  const TuningKey key{"layout", st.kernel.name + ": " + layouts + ", " + tuning_context(im, p, s)};
  if (const auto entry = cached_choice(im, key)) {
    if (const auto k = chosen_index(*entry, "layout", n)) {
      install(st, g, *k);
      st.layout_choice = st.kernel.layout + ": the fastest of " + std::to_string(n) + " layouts, " + reused_from(*entry) +
                         ": " + kept_text(*entry, "times");
      st.tuned_at = entry->tuned_at;
      ++im.reused_steps;
      launch_layout(0);  // the installed layout writes the outputs the next steps read
      return;
    }
  }
  // With the flush (the PyTorch harness's protocol) as long as the plans will be timed; without it each run
  // waits behind a gate of its own (time_rounds), and 15 rounds are kept.
  const TuneRounds rounds =
      flush.get() ? comparison_rounds(im, p, s, n, flush, kRounds, launch_layout, Rest::no) : TuneRounds(kRounds);
  const std::vector<double> med = time_rounds(im, p, s, n, flush, rounds, launch_layout);
  const std::size_t best = fastest(med);
  std::string others;
  for (std::size_t i = 0; i < n; ++i) {
    if (i == best) continue;
    const std::string& d = i == 0 ? st.kernel.layout : g.alternatives[i - 1].layout.description;
    others += (others.empty() ? "" : "; ") + d + ": " + ms_text(med[i]);
  }
  install(st, g, best);
  const std::string times = ms_text(med[best]) + "; " + others;
  st.layout_choice = st.kernel.layout + ": the fastest of " + std::to_string(n) + " layouts timed here in " +
                     std::to_string(rounds.timed) + " rounds (" + times + ")";
  keep_choice(im, key, {{"layout", best}, {"times", "(" + times + ")"}});
  launch_layout(0);  // the installed layout writes the outputs the next steps read
}

}  // namespace

void tune_layouts(CompiledProgram& im) {
  const int forced = im.options.force_layout;
  if (!im.options.autotune && forced < 0) return;
  const contraction_detail::DeviceMemory flush(im.options.timing.cold_l2 && forced < 0 ? kColdL2Bytes : 0);
  TimedProblems timed;
  for (PlanId p : kPlanIds) {
    CompiledPlan& ps = im.plan(p);
    const auto tunable = [&](const Step& st) {
      const LibraryStep* call = st.call();
      return (st.generated() && !st.generated()->alternatives.empty()) ||
             (call && (call->nhwc_ready() || call->offers_split() || (forced < 0 && call->is_gemm())));
    };
    if (std::none_of(ps.steps.begin(), ps.steps.end(), tunable)) continue;  // nothing to choose in this plan
    for (std::size_t s = 0; s < ps.steps.size(); ++s) {
      const Step& st = ps.steps[s];
      const LibraryStep* call = st.call();
      if (tunable(st)) {
        im.progress("tune", 0.17, ps.name + " plan: step " + std::to_string(s + 1) + " of " +
                                      std::to_string(ps.steps.size()) + " (" + st.kernel.name + ")");
      }
      if (call && call->nhwc_ready() && st.library()->part == CallPart::whole) {
        s = tune_conv_layout(im, p, s, forced, flush);
      } else if (call && call->offers_split()) {
        s = tune_horizontal(im, p, s, forced, flush, timed);
      } else if (call && call->is_gemm() && forced < 0) {
        s = tune_gemm(im, p, s, flush, timed);
      } else if (st.generated() && !st.generated()->alternatives.empty()) {
        tune_generated(im, p, s, forced, flush);
      } else {
        im.launch(p, s);  // nothing to choose: run it, so the steps after it read what it writes
      }
    }
  }
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
}

}  // namespace fx::gpu
