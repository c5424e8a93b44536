#include "kernels/executor/tuning_rounds.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "core/graph/content_hash.h"
#include "kernels/common/event_timing.h"
#include "kernels/common/stream_gate.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/tuning/timing_rules.h"

namespace fx::gpu {

namespace {

// Seconds since `start`, added to `total`.
void add_since(std::chrono::steady_clock::time_point start, double& total) {
  total += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

std::string TuningSpend::text() const {
  char t[200];
  std::snprintf(t, sizeof t, "%d library searches %.2f s, %d rests %.2f s, %d comparisons (%d runs) %.2f s", searches,
                search_s, rests, rest_s, comparisons, runs, timed_s);
  std::string text = t;
  // A gate that timed out held a timed window back while the host waited on the stream (stream_gate.h).
  if (gate_timeouts > 0) text += ", " + std::to_string(gate_timeouts) + " stream gates timed out (100 ms each)";
  return text;
}

bool timed_before(const TimedProblems& timed, const MatmulProblem& p) {
  return std::find(timed.begin(), timed.end(), p) != timed.end();
}

TuningPass::TuningPass(CompiledProgram& program)
    : im(program),
      forced(program.options.force_layout),
      flush(program.options.timing.cold_l2 && forced < 0 ? kColdL2Bytes : 0),
      gate_timeouts_before(StreamGate::timeouts()) {
  if (im.clocks) since_check = std::make_unique<ClockWatch>(*im.clocks);
}

TimedChoice TuningPass::choose(const TuningKey& key, std::size_t n, const std::function<TimedChoice()>& time,
                               const std::function<bool(const TimedChoice&)>& usable) {
  TimedChoice c = fx::gpu::choose(choices(), key, n, time, usable);
  ++(c.reused() ? im.reused_steps : im.tuned_steps);
  return c;
}

// Each timed launch finds the L2 as the plan timing leaves it for that step: first what the plan timing puts
// before a timed run (the flush when there is one, else an untimed launch of the same way: its operands in the
// L2), then the step before it in the plan (untimed), whose outputs, just written, are in the L2 when the step
// runs in the plan. Without that, a kernel after the first is timed as if the whole plan began with it, its
// inputs in DRAM, and the layout that wins with cold inputs can be slower with the warm ones the plan gives it.
// The rounds run back to back, as the plan timing's do: every run is enqueued and the host waits once, at the
// end. Waiting for each run leaves the GPU idle between runs, and on power-limited GEMMs that is another
// regime, in which configurations rank otherwise. The GPU must never wait for the host inside a timed window (a
// way whose launches cost the host more would be charged for them: stream_gate.h). With the flush, each run's
// 256 MB memset gives the host a run's time to enqueue the next, so one gate, opened once the host is
// kHeadStart runs ahead, is enough; without it (a run after an untimed launch of the same way, perhaps a few
// microseconds) each run is enqueued behind a gate of its own. The warm-up rounds are not gated: they may hold a
// way's first launch, which can wait for the stream (stream_gate.h).
std::vector<double> time_rounds(TuningPass& pass, PlanId p, std::size_t s, std::size_t n, TuneRounds rounds,
                                const WayLaunch& launch) {
  CompiledProgram& im = pass.im;
  const auto start = std::chrono::steady_clock::now();
  const bool flushed = pass.flush.get() != nullptr;
  const std::size_t warmup_runs = static_cast<std::size_t>(std::max(0, rounds.warmup)) * n;
  constexpr std::size_t kHeadStart = 8;
  const std::size_t runs = warmup_runs + static_cast<std::size_t>(rounds.timed) * n;
  std::vector<EventPair> ev(runs);
  std::optional<StreamGate> head;  // opened when reset (or when a launch throws)
  for (std::size_t r = 0; r < runs; ++r) {
    const std::size_t i = r % n;     // one run of each way per round
    std::optional<StreamGate> gate;  // without the flush: opened when this scope ends, the run enqueued
    if (!flushed && r >= warmup_runs) gate.emplace(im.stream);
    if (flushed && r == warmup_runs) head.emplace(im.stream);
    if (head && r == warmup_runs + kHeadStart) head.reset();
    if (flushed) {
      FX_CUDA_CALL(cudaMemsetAsync(pass.flush.get(), 0, pass.flush.bytes(), im.stream));
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
  for (std::size_t r = warmup_runs; r < runs; ++r) {
    float ms = 0;
    FX_CUDA_CALL(cudaEventElapsedTime(&ms, ev[r].start, ev[r].stop));
    times[r % n].push_back(ms);
  }
  std::vector<double> med(n);
  for (std::size_t i = 0; i < n; ++i) med[i] = upper_median(times[i]);
  add_since(start, pass.spend.timed_s);
  ++pass.spend.comparisons;
  pass.spend.runs += static_cast<int>(runs);
  return med;
}

namespace {

// A bf16 GEMM runs at the power limit, where its configurations rank differently at different clocks, and timed
// right after its search the clocks are power-capped. So a GEMM comparison starts from a rested GPU: the
// protocol's rest_ms always (it was asked for), tuning_rest_ms where NVML saw the clocks held back since the
// last rest (rest_needed: a search that never reached the cap leaves nothing to wait for) or cannot tell.
void rest_before_comparison(TuningPass& pass) {
  CompiledProgram& im = pass.im;
  const TimingProtocol& t = im.options.timing;
  bool rest = t.rest_ms > 0;
  if (!rest && t.tuning_rest_ms > 0) {
    FX_CUDA_CALL(cudaStreamSynchronize(im.stream));  // the watch's span ends with the work enqueued so far
    const ClockSpan seen = pass.since_check ? pass.since_check->stop() : ClockSpan{};
    rest = rest_needed(seen, pass.since_check && im.clocks && im.clocks->available());
  }
  if (rest) {
    const auto start = std::chrono::steady_clock::now();
    im.rest_for(std::max(t.rest_ms, t.tuning_rest_ms));
    add_since(start, pass.spend.rest_s);
    ++pass.spend.rests;
  }
  if (im.clocks) pass.since_check = std::make_unique<ClockWatch>(*im.clocks);
}

}  // namespace

// Where the timing is asked for in milliseconds (TimingProtocol::warmup_ms, repeat_ms: the do_bench protocol),
// the comparison runs as the plan timing will: warmed up as long and timed about as long (at least `rounds`),
// its round's time taken from one round run first. Otherwise `rounds` after one warm-up round, right after the
// rest. A generated kernel's layouts are compared without the rest (Rest::no): they are memory-bound, and a rest
// before each of a plan's steps would cost a second each. Layouts 0.1% apart are, after 15 rounds, as much the
// noise's pick as the kernel's; under the do_bench protocol they are timed as long as the plans.
TuneRounds comparison_rounds(TuningPass& pass, PlanId p, std::size_t s, std::size_t n, int rounds,
                             const WayLaunch& launch, Rest rest) {
  CompiledProgram& im = pass.im;
  const RunOptions& o = im.options;
  if (rest == Rest::yes) rest_before_comparison(pass);
  if (!(o.timing.warmup_ms > 0 || o.timing.repeat_ms > 0)) return rounds;
  auto one_round = [&] {
    for (std::size_t i = 0; i < n; ++i) {
      if (pass.flush.get()) {
        FX_CUDA_CALL(cudaMemsetAsync(pass.flush.get(), 0, pass.flush.bytes(), im.stream));
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

// A power-limited GEMM's configurations rank differently at different clocks, and the plan's own timing may run
// at others (gpu_clocks.h).
std::string at_clocks(const ClockSpan& span) {
  const std::string brief = clock_span_brief(span);
  return brief.empty() ? "" : "GPU while tuning: " + brief;
}

void search(TuningPass& pass, const std::function<void()>& first_launch) {
  const auto start = std::chrono::steady_clock::now();
  first_launch();
  FX_CUDA_CALL(cudaStreamSynchronize(pass.im.stream));
  add_since(start, pass.spend.search_s);
  ++pass.spend.searches;
}

// Its inputs were written by the steps before it, which tuning has launched in order.
void search(TuningPass& pass, PlanId p, const LibraryStep& call) {
  search(pass, [&] { call.launch(pass.im.buffers(p), pass.im.stream); });
}

std::string reused_from(const TimedChoice& c) { return "reused from the tuning cache (timed " + c.tuned_at + ")"; }

}  // namespace fx::gpu
