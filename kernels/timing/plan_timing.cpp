#include "kernels/timing/plan_timing.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "kernels/common/cuda_call.h"
#include "kernels/common/event_timing.h"
#include "kernels/contraction/device_memory.h"

namespace fx::gpu {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Owns the events of the timed runs.
struct Events {
  std::vector<cudaEvent_t> e;
  explicit Events(std::size_t n) : e(n, nullptr) {
    for (auto& ev : e) FX_CUDA_CALL(cudaEventCreate(&ev));
  }
  ~Events() {
    for (auto ev : e) {
      if (ev) cudaEventDestroy(ev);
    }
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
};

float elapsed(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  FX_CUDA_CALL(cudaEventElapsedTime(&ms, a, b));
  return ms;
}


// Plan p's report from its timed rounds: `repeat` rounds whole (an event before its first step and after its
// last: the plan's time, as do_bench times a function), then `repeat` rounds with an event after every step (the
// steps' times). The events between steps cost time of their own, as the next kernel cannot start under the
// tail of the one before: stepped_ms keeps their total to show the difference.
PlanReport plan_report(CompiledProgram& im, PlanId p, int repeat, const Events& whole, const Events& stepped) {
  CompiledPlan& ps = im.plan(p);
  const std::size_t k = ps.steps.size();
  PlanReport rep;
  rep.name = ps.name;
  rep.notes = ps.notes;
  rep.split_groups = split_groups(ps);
  rep.predicted_ms = ps.predicted_ms;
  rep.bytes = ps.bytes;
  std::vector<double> totals, stepped_totals;
  std::vector<std::vector<double>> per(k);
  for (int r = 0; r < repeat; ++r) {
    totals.push_back(elapsed(whole.e[2 * static_cast<std::size_t>(r)], whole.e[2 * static_cast<std::size_t>(r) + 1]));
    const std::size_t base = static_cast<std::size_t>(r) * (k + 1);
    stepped_totals.push_back(elapsed(stepped.e[base], stepped.e[base + k]));
    for (std::size_t s = 0; s < k; ++s) per[s].push_back(elapsed(stepped.e[base + s], stepped.e[base + s + 1]));
  }
  rep.total_ms = median(totals);
  rep.stepped_ms = median(stepped_totals);
  rep.min_ms = *std::min_element(totals.begin(), totals.end());
  rep.max_ms = *std::max_element(totals.begin(), totals.end());
  for (std::size_t s = 0; s < k; ++s) {
    KernelReport kr = kernel_report(im, p, s);
    kr.measured_ms = median(per[s]);
    rep.kernels.push_back(std::move(kr));
  }
  return rep;
}

}  // namespace

TimingRounds timing_rounds(const TimingProtocol& protocol, double round_ms) {
  TimingRounds r{std::max(0, protocol.warmup), std::max(1, protocol.repeat)};
  if (!(round_ms > 0)) return r;
  auto rounds = [&](double ms) {
    const double n = std::floor(ms / round_ms);  // do_bench: max(1, int(rep / estimate_ms))
    return static_cast<int>(std::clamp(n, 1.0, static_cast<double>(kMaxTimedRounds)));
  };
  if (protocol.warmup_ms > 0) r.warmup = rounds(protocol.warmup_ms);
  if (protocol.repeat_ms > 0) r.repeat = rounds(protocol.repeat_ms);
  return r;
}

// Both plans in interleaved rounds (unfused, fused, unfused, ...), so a drift of the clocks over the timing
// (power-limited GEMMs heat the GPU) moves both alike; without the flush each timed run follows an untimed run
// of its own plan, so what it finds in the L2 is its own operands. The rounds that time the plans whole come
// first, then as many step by step, so the rounds that give the plans' times last as long as they would alone.
// With warmup_ms or repeat_ms the counts come from five rounds timed first, as do_bench estimates a function's
// time before its warm-up (timing_rounds).
TimedPlans time_plans(CompiledProgram& im) {
  const TimingProtocol& protocol = im.options.timing;
  TimedPlans out;
  const contraction_detail::DeviceMemory flush(im.options.timing.cold_l2 ? kColdL2Bytes : 0);
  auto prepare = [&](PlanId p) {
    if (flush.get()) {
      FX_CUDA_CALL(cudaMemsetAsync(flush.get(), 0, flush.bytes(), im.stream));
    } else {
      im.launch_all(p);
    }
  };
  im.rest();
  if (protocol.warmup_ms > 0 || protocol.repeat_ms > 0) {
    constexpr int kEstimateRounds = 5;
    out.round_ms = mean_event_ms(im.stream, kEstimateRounds, [&] {
      for (PlanId p : kPlanIds) {
        prepare(p);
        im.launch_all(p);
      }
    });
  }
  out.rounds = timing_rounds(protocol, out.round_ms);
  const int repeat = out.rounds.repeat;
  for (int w = 0; w < out.rounds.warmup; ++w) {
    for (PlanId p : kPlanIds) im.launch_all(p);
  }
  const std::size_t k[2] = {im.plan(PlanId::unfused).steps.size(), im.plan(PlanId::fused).steps.size()};
  const std::size_t n = static_cast<std::size_t>(repeat);
  Events whole[2] = {Events(n * 2), Events(n * 2)};
  Events stepped[2] = {Events(n * (k[0] + 1)), Events(n * (k[1] + 1))};
  // The clocks of the whole rounds, whose times the report gives, apart from the step-by-step rounds queued
  // behind them: the watch's samples count as the whole rounds' until the last whole round's end event has been
  // enqueued and has completed.
  std::atomic<bool> whole_enqueued{false};
  const cudaEvent_t whole_end = whole[1].e[2 * n - 1];
  ClockWatch watch(*im.clocks, kClockPeriod,
                   [&] { return whole_enqueued.load() && cudaEventQuery(whole_end) == cudaSuccess; });
  for (std::size_t r = 0; r < n; ++r) {
    for (PlanId p : kPlanIds) {
      prepare(p);
      FX_CUDA_CALL(cudaEventRecord(whole[plan_index(p)].e[2 * r], im.stream));
      im.launch_all(p);
      FX_CUDA_CALL(cudaEventRecord(whole[plan_index(p)].e[2 * r + 1], im.stream));
    }
  }
  whole_enqueued = true;
  for (std::size_t r = 0; r < n; ++r) {
    for (PlanId p : kPlanIds) {
      prepare(p);
      const std::size_t i = plan_index(p);
      const std::size_t base = r * (k[i] + 1);
      FX_CUDA_CALL(cudaEventRecord(stepped[i].e[base], im.stream));
      for (std::size_t s = 0; s < k[i]; ++s) {
        im.launch(p, s);
        FX_CUDA_CALL(cudaEventRecord(stepped[i].e[base + s + 1], im.stream));
      }
    }
  }
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
  out.clocks = watch.stop();
  for (PlanId p : kPlanIds) {
    out.plans[plan_index(p)] = plan_report(im, p, repeat, whole[plan_index(p)], stepped[plan_index(p)]);
  }
  return out;
}

// The plan captured once as a CUDA graph and replayed: launch overhead drops out of the timing (a plan whose
// library calls take the host longer than the GPU is timed as the GPU runs it).
double time_graph(CompiledProgram& im, PlanId p) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  FX_CUDA_CALL(cudaStreamBeginCapture(im.stream, cudaStreamCaptureModeThreadLocal));
  try {
    im.launch_all(p);
  } catch (...) {
    cudaStreamEndCapture(im.stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  FX_CUDA_CALL(cudaStreamEndCapture(im.stream, &graph));
  struct Guard {
    cudaGraph_t& g;
    cudaGraphExec_t& e;
    ~Guard() {
      if (e) cudaGraphExecDestroy(e);
      if (g) cudaGraphDestroy(g);
    }
  } guard{graph, exec};
  FX_CUDA_CALL(cudaGraphInstantiate(&exec, graph, 0));
  // With cold_l2 each replay follows the flush, as each run of time_plans does: its time then compares with the
  // plan's and with PyTorch's queued time (the same flush, the host's time taken out); without, replays run back
  // to back with the plan's operands in the L2.
  const contraction_detail::DeviceMemory flush(im.options.timing.cold_l2 ? kColdL2Bytes : 0);
  // Asked for in milliseconds, the plan's replays take that long on their own (do_bench's count from five
  // replays timed first), as PyTorch's queued runs of one function do; otherwise as many as the plans' rounds.
  const TimingProtocol& protocol = im.options.timing;
  TimingRounds rounds = timing_rounds(protocol, 0.0);
  if (protocol.warmup_ms > 0 || protocol.repeat_ms > 0) {
    constexpr int kEstimateReplays = 5;
    rounds = timing_rounds(protocol, mean_event_ms(im.stream, kEstimateReplays, [&] {
                             if (flush.get()) FX_CUDA_CALL(cudaMemsetAsync(flush.get(), 0, flush.bytes(), im.stream));
                             FX_CUDA_CALL(cudaGraphLaunch(exec, im.stream));
                           }));
  }
  for (int w = 0; w < rounds.warmup; ++w) FX_CUDA_CALL(cudaGraphLaunch(exec, im.stream));
  const int repeat = rounds.repeat;
  Events ev(static_cast<std::size_t>(repeat) * 2);
  for (int r = 0; r < repeat; ++r) {
    if (flush.get()) FX_CUDA_CALL(cudaMemsetAsync(flush.get(), 0, flush.bytes(), im.stream));
    FX_CUDA_CALL(cudaEventRecord(ev.e[2 * static_cast<std::size_t>(r)], im.stream));
    FX_CUDA_CALL(cudaGraphLaunch(exec, im.stream));
    FX_CUDA_CALL(cudaEventRecord(ev.e[2 * static_cast<std::size_t>(r) + 1], im.stream));
  }
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) t.push_back(elapsed(ev.e[2 * static_cast<std::size_t>(r)], ev.e[2 * static_cast<std::size_t>(r) + 1]));
  return median(t);
}

// Why a timing's span has no clock samples ("" when it has some).
std::string clocks_note(const CompiledProgram& im, const ClockSpan& span) {
  if (!im.options.timing.read_clocks) return "GPU clocks not read: read_clocks is off in the timing protocol";
  if (!im.clocks->available()) return "GPU clocks not read: " + im.clocks->why_not();
  if (span.samples == 0) return "GPU clocks not read: every NVML reading failed (" + im.clocks->last_error() + ")";
  return {};
}

}  // namespace fx::gpu
