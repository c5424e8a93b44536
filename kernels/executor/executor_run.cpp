// Executor::run(): verification of the fused plan against the unfused one, event timing of both plans and of
// each kernel (median of the timed runs), optional CUDA-graph replay, and the .npy dump for the PyTorch harness.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "kernels/common/cuda_call.h"
#include "kernels/common/event_timing.h"
#include "kernels/contraction/device_memory.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/executor_internal.h"
#include "kernels/executor/channels_last.h"
#include "kernels/executor/layout_tuning.h"
#include "kernels/executor/reference_check.h"
#include "kernels/executor/sort_step.h"

namespace fx::gpu {

namespace {

double bf16_to_double(std::uint16_t h) {
  std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double f16_to_double(std::uint16_t h) {
  const int sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(mant + 1024, exp - 25);
  }
  return sign ? -v : v;
}

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

std::vector<char> download(const void* ptr, std::int64_t bytes) {
  std::vector<char> host(static_cast<std::size_t>(bytes));
  FX_CUDA_CALL(cudaMemcpy(host.data(), ptr, host.size(), cudaMemcpyDeviceToHost));
  return host;
}

OutputCheck compare(const std::string& name, DType t, const std::vector<double>& fused, const std::vector<double>& unfused) {
  OutputCheck c;
  c.name = name;
  c.dtype = std::string(dtype_name(t));
  c.threshold = tolerance_for(t);
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < fused.size(); ++i) {
    if (std::isnan(fused[i]) || std::isnan(unfused[i])) {
      ++c.nan_count;
      continue;
    }
    const double d = fused[i] - unfused[i];
    diff += d * d;
    norm += unfused[i] * unfused[i];
  }
  c.rel_error = norm > 0 ? std::sqrt(diff / norm) : (diff > 0 ? INFINITY : 0.0);
  c.passed = c.nan_count == 0 && c.rel_error <= c.threshold;
  return c;
}

}  // namespace

std::vector<double> to_doubles(DType t, const std::vector<char>& raw) {
  const std::size_t n = raw.size() / static_cast<std::size_t>(dtype_size(t));
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const char* p = raw.data() + i * static_cast<std::size_t>(dtype_size(t));
    switch (t) {
      case DType::f32: { float f; std::memcpy(&f, p, 4); out[i] = f; break; }
      case DType::f16: { std::uint16_t h; std::memcpy(&h, p, 2); out[i] = f16_to_double(h); break; }
      case DType::bf16: { std::uint16_t h; std::memcpy(&h, p, 2); out[i] = bf16_to_double(h); break; }
      case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case DType::i64: { std::int64_t v; std::memcpy(&v, p, 8); out[i] = static_cast<double>(v); break; }
      case DType::boolean: out[i] = *p ? 1.0 : 0.0; break;
    }
  }
  return out;
}

std::string write_npy(const std::string& path, DType t, const Shape& shape, const std::vector<char>& raw) {
  std::string descr;
  switch (t) {
    case DType::f32: descr = "<f4"; break;
    case DType::f16: descr = "<f2"; break;
    case DType::bf16: descr = "<u2"; break;  // numpy has no bfloat16: the bit patterns
    case DType::i32: descr = "<i4"; break;
    case DType::i64: descr = "<i8"; break;
    case DType::boolean: descr = "|b1"; break;
  }
  std::string dims;
  for (auto d : shape) dims += std::to_string(d) + ",";
  if (shape.size() > 1) dims.pop_back();
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  const std::size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  const unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  out.write(reinterpret_cast<const char*>(magic), 8);
  const auto len = static_cast<std::uint16_t>(header.size());
  const char len_bytes[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(len_bytes, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(raw.data(), static_cast<std::streamsize>(raw.size()));
  return descr;
}

namespace {

void dump(Executor::Impl& im, const std::string& dir) {
  namespace fs = std::filesystem;
  const Graph& g = im.graph;
  nlohmann::ordered_json manifest = {{"graph", g.name()}, {"seed", im.options.seed}};
  auto entry = [&](const std::string& sub, ValueId v, int plan) {
    fs::create_directories(fs::path(dir) / sub);
    const std::string file = sub + "/" + g.value_name(v) + ".npy";
    const auto& t = g.value_type(v);
    const std::string descr = write_npy((fs::path(dir) / file).string(), t.dtype, t.shape, download(im.pointer(plan, v), t.bytes()));
    return nlohmann::ordered_json{{"name", g.value_name(v)}, {"file", file}, {"dtype", dtype_name(t.dtype)},
                                  {"npy_descr", descr}, {"shape", t.shape}};
  };
  for (ValueId v = 0; v < static_cast<ValueId>(g.inputs().size()); ++v) manifest["inputs"].push_back(entry("inputs", v, 0));
  for (ValueId v : g.outputs()) {
    manifest["unfused"].push_back(entry("unfused", v, 0));
    manifest["fused"].push_back(entry("fused", v, 1));
  }
  std::ofstream(fs::path(dir) / "manifest.json") << manifest.dump(2) << "\n";
}

std::vector<OutputCheck> verify(Executor::Impl& im) {
  std::vector<OutputCheck> checks;
  for (ValueId v : im.graph.outputs()) {
    const auto& t = im.graph.value_type(v);
    auto unfused = to_doubles(t.dtype, download(im.pointer(0, v), t.bytes()));
    auto fused = to_doubles(t.dtype, download(im.pointer(1, v), t.bytes()));
    checks.push_back(compare(im.graph.value_name(v), t.dtype, fused, unfused));
    if (auto it = im.tolerances.find(v); it != im.tolerances.end()) {  // TF32 contractions upstream
      OutputCheck& c = checks.back();
      c.threshold = it->second;
      c.passed = c.nan_count == 0 && c.rel_error <= c.threshold;
    }
  }
  return checks;
}

// What step s of plan p runs: its name, kind, library and path (the layout or call kept), nodes and bytes;
// not its time.
KernelReport kernel_report(const Executor::Impl& im, int p, std::size_t s) {
  const Step& st = im.plans[p].steps[s];
  KernelReport kr;
  kr.name = st.kernel.name;
  kr.group = st.group;
  kr.kind = std::string(kernel_kind_name(st.kernel.kind));
  kr.library = "generated (NVRTC)";
  kr.path = st.layout_choice.empty() ? st.kernel.layout : st.layout_choice;
  if (st.sort) {  // a CUB segmented sort
    kr.library = "CUB";
    kr.path = st.sort->describe();
  }
  if (st.call && (st.call_part == CallPart::to_nhwc || st.call_part == CallPart::to_nchw)) {
    kr.path = st.call->describe(im, p, st.call_part);  // a generated conversion
    const std::string& layout = st.layout_choice.empty() ? st.kernel.layout : st.layout_choice;
    if (!layout.empty()) kr.path += "; " + layout;
  } else if (st.call) {  // a cuBLASLt/cuDNN call
    kr.kind = std::string(library_call_kind_name(st.call->call().kind));
    kr.library = st.call->library();
    kr.path = st.call->describe(im, p, st.call_part);
    if (!st.layout_choice.empty()) kr.path += "; " + st.layout_choice;
  }
  for (NodeId n : st.kernel.nodes) kr.nodes.push_back(im.graph.node(n).name);
  kr.bytes = st.kernel.bytes_moved;
  kr.group_predicted_ms = st.group_predicted_ms;
  kr.group_predicted_bytes = st.group_predicted_bytes;
  return kr;
}

// Plan p's report from its timed rounds. The plan runs in 2 x repeat rounds, each after the flush (or an
// untimed run of the plan): repeat rounds whole, with an event before its first step and one after its last,
// for the plan's time, as do_bench times a PyTorch function; then repeat rounds with an event after each step
// as well, for the steps' times. The events between steps are not free: each is recorded when the kernel before it has
// finished, and the next kernel starts after it, so one kernel's start no longer overlaps the tail of the one
// before; gpt2_block's 16-step fused plan took 2.3% longer with them on an H100, and mlp_relu_small_bf16's three
// small unfused steps 16% (stepped_ms keeps that total, to show the difference).
PlanReport plan_report(Executor::Impl& im, int p, const Events& whole, const Events& stepped) {
  PlanSteps& ps = im.plans[p];
  const std::size_t k = ps.steps.size();
  const int repeat = std::max(1, im.options.repeat);
  PlanReport rep;
  rep.name = ps.name;
  rep.notes = ps.notes;
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

// Both plans, in interleaved rounds: round r times the unfused plan, then the fused plan (each run after the
// cold-L2 flush when asked). Timed one after the other, the fused plan ran on a GPU that the unfused plan's
// rounds had just heated: bf16 GEMMs run at the H100's power limit, where the clocks fall by several percent
// over a few hundred milliseconds, and swiglu_bf16's merged GEMM measured 0.731 ms after the unfused plan's two
// GEMMs measured 0.342 ms each. Interleaved, a drift moves both plans alike. Without the flush, each timed run
// follows an untimed run of its own plan, as back to back: what it finds in the L2 is its own operands, not
// whatever the other plan left there.
// The rounds that time the plans whole come first, then as many rounds step by step (plan_report says why
// both). Run in one round, whole and stepped, the plans' timing lasted twice as long, and the power-limited
// unfused plans of mlp_gelu_bf16 and swiglu_bf16 measured 1-3% slower at --repeat 100 than at 50; in this
// order the rounds that give the plans' times last as long as when there were no step-by-step runs.
// With warmup_ms or repeat_ms the rounds' counts come from five rounds timed first, as do_bench estimates a
// function's time before its warm-up (timing_rounds); the counts then stand in im.options for everything after
// (the step-by-step rounds, the CUDA-graph replays, the report).
std::array<PlanReport, 2> time_plans(Executor::Impl& im, ClockSpan& clocks, double& round_ms) {
  const contraction_detail::DeviceMemory flush(im.options.cold_l2 ? kColdL2Bytes : 0);
  auto prepare = [&](int p) {
    if (flush.get()) {
      FX_CUDA_CALL(cudaMemsetAsync(flush.get(), 0, flush.bytes(), im.stream));
    } else {
      im.launch_all(p);
    }
  };
  im.rest();
  round_ms = 0;
  if (im.options.warmup_ms > 0 || im.options.repeat_ms > 0) {
    constexpr int kEstimateRounds = 5;
    round_ms = mean_event_ms(im.stream, kEstimateRounds, [&] {
      for (int p = 0; p < 2; ++p) {
        prepare(p);
        im.launch_all(p);
      }
    });
    const TimingRounds rounds = timing_rounds(im.options, round_ms);
    im.options.warmup = rounds.warmup;
    im.options.repeat = rounds.repeat;
  }
  const int repeat = std::max(1, im.options.repeat);
  for (int w = 0; w < im.options.warmup; ++w) {
    for (int p = 0; p < 2; ++p) im.launch_all(p);
  }
  const std::size_t k[2] = {im.plans[0].steps.size(), im.plans[1].steps.size()};
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
    for (int p = 0; p < 2; ++p) {
      prepare(p);
      FX_CUDA_CALL(cudaEventRecord(whole[p].e[2 * r], im.stream));
      im.launch_all(p);
      FX_CUDA_CALL(cudaEventRecord(whole[p].e[2 * r + 1], im.stream));
    }
  }
  whole_enqueued = true;
  for (std::size_t r = 0; r < n; ++r) {
    for (int p = 0; p < 2; ++p) {
      prepare(p);
      const std::size_t base = r * (k[p] + 1);
      FX_CUDA_CALL(cudaEventRecord(stepped[p].e[base], im.stream));
      for (std::size_t s = 0; s < k[p]; ++s) {
        im.launch(p, s);
        FX_CUDA_CALL(cudaEventRecord(stepped[p].e[base + s + 1], im.stream));
      }
    }
  }
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
  clocks = watch.stop();
  return {plan_report(im, 0, whole[0], stepped[0]), plan_report(im, 1, whole[1], stepped[1])};
}

// The plan captured once as a CUDA graph and replayed: launch overhead drops out of the timing (a plan whose
// library calls take the host longer than the GPU is timed as the GPU runs it).
double time_graph(Executor::Impl& im, int p) {
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
  const contraction_detail::DeviceMemory flush(im.options.cold_l2 ? kColdL2Bytes : 0);
  // Asked for in milliseconds, the plan's replays take that long on their own (do_bench's count from five
  // replays timed first), as PyTorch's queued runs of one function do; otherwise as many as the plans' rounds.
  TimingRounds rounds{im.options.warmup, std::max(1, im.options.repeat)};
  if (im.options.warmup_ms > 0 || im.options.repeat_ms > 0) {
    constexpr int kEstimateReplays = 5;
    rounds = timing_rounds(im.options, mean_event_ms(im.stream, kEstimateReplays, [&] {
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
std::string clocks_note(const Executor::Impl& im, const ClockSpan& span) {
  if (!im.options.read_clocks) return "GPU clocks not read: --no-clocks";
  if (!im.clocks->available()) return "GPU clocks not read: " + im.clocks->why_not();
  if (span.samples == 0) return "GPU clocks not read: every NVML reading failed (" + im.clocks->last_error() + ")";
  return {};
}

// The run's phases; each starts on an idle stream (gpu_fault.h: how a fault is attributed).
// Allocation, inputs (seeded, or `given`'s copied in), layout tuning; then both plans once, each step
// synchronised, checked against each other. Returns the bytes allocated.
std::int64_t prepare_and_verify(Executor::Impl& im, const std::map<ValueId, const void*>& given,
                                std::vector<OutputCheck>& checks) {
  im.begin_phase("inputs", false);
  std::int64_t device_bytes = im.required_bytes();
  im.progress("allocate", 0.1, format_bytes(static_cast<double>(device_bytes)) + " of device memory");
  im.allocate();
  im.progress("inputs", 0.15, given.empty() ? "seeded random inputs" : "the caller's inputs");
  im.fill_inputs(given);
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));  // a fault here is not a plan step's
  if (im.options.autotune || im.options.force_layout >= 0) {
    im.progress("tune", 0.17, "timing the layouts of generated kernels");
    im.begin_phase("layout tuning", false);
    tune_layouts(im);
    if (im.options.keep_nhwc) {
      keep_channels_last(im);
      // Its NHWC copies of values replace the convolutions' own scratch, and may need more (an unfused plan's).
      device_bytes = std::max(device_bytes, im.required_bytes());
    }
    im.begin_phase("inputs", false);
  }
  im.poison_outputs();
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
  im.progress("verify", 0.2, "running both plans once");
  im.begin_phase("verification", true);  // every step's first run, synchronised: exact attribution
  im.launch_all(0);
  im.launch_all(1);
  im.begin_phase("verification checks", false);
  checks = verify(im);
  return device_bytes;
}

RunReport run_phases(Executor::Impl& im) {
  RunReport rep;
  rep.device_bytes = prepare_and_verify(im, {}, rep.checks);
  rep.verified = std::all_of(rep.checks.begin(), rep.checks.end(), [](const OutputCheck& c) { return c.passed; });
  im.progress("reference", 0.25, "checking both plans against the float64 reference");
  check_against_reference(im, rep);
  if (!im.options.dump_dir.empty()) {
    im.progress("dump", 0.3, "writing .npy files to " + im.options.dump_dir);
    dump(im, im.options.dump_dir);
  }
  im.progress("time", 0.4, "timing both plans in interleaved rounds");
  im.begin_phase("timing", false);
  auto timed = time_plans(im, rep.clocks, rep.round_ms);
  rep.unfused = std::move(timed[0]);
  rep.fused = std::move(timed[1]);
  if (im.options.timed) {
    const TimingRounds first{im.options.warmup, im.options.repeat};
    TimingPass pass{0, rep.unfused.total_ms, rep.fused.total_ms, first.warmup, std::max(1, first.repeat),
                    rep.round_ms, rep.clocks, clocks_note(im, rep.clocks)};
    while (im.options.timed(pass)) {
      im.progress("time", 0.4, "timing both plans again (timing " + std::to_string(pass.index + 1) + ")");
      auto again = time_plans(im, pass.clocks, pass.round_ms);
      pass.index += 1;
      pass.unfused_ms = again[0].total_ms;
      pass.fused_ms = again[1].total_ms;
      pass.warmup = im.options.warmup;
      pass.repeat = std::max(1, im.options.repeat);
      pass.clocks_note = clocks_note(im, pass.clocks);
    }
    im.options.warmup = first.warmup;  // the report's rounds are its own timing's
    im.options.repeat = first.repeat;
  }
  if (im.options.cuda_graph) {
    im.progress("graph", 0.9, "CUDA-graph replay");
    im.begin_phase("CUDA graph", false);
    im.rest();
    ClockWatch watch(*im.clocks);
    rep.unfused.graph_ms = time_graph(im, 0);
    const ClockSpan unfused_clocks = watch.stop();
    im.rest();
    ClockWatch fused_watch(*im.clocks);
    rep.fused.graph_ms = time_graph(im, 1);
    rep.graph_clocks = unfused_clocks;
    rep.graph_clocks.merge(fused_watch.stop());
    for (PlanReport* plan : {&rep.unfused, &rep.fused}) {
      if (std::string note = host_bound_note(*plan); !note.empty()) plan->notes.push_back(std::move(note));
    }
  }
  rep.device = im.device;
  rep.clocks_note = clocks_note(im, rep.clocks);
  rep.repeat = std::max(1, im.options.repeat);
  rep.warmup = im.options.warmup;
  rep.warmup_ms = im.options.warmup_ms;
  rep.repeat_ms = im.options.repeat_ms;
  rep.rest_ms = im.options.rest_ms;
  rep.tuning_rest_ms = im.options.tuning_rest_ms;
  rep.cold_l2 = im.options.cold_l2;
  rep.placement = im.options.placement;
  rep.placement_gaps = static_cast<std::int64_t>(im.placement_gaps);
  rep.layouts = im.options.force_layout >= 0 ? "forced " + std::to_string(im.options.force_layout + 1)
                : im.options.autotune                 ? "timed"
                                                      : "default";
  rep.speedup = rep.fused.total_ms > 0 ? rep.unfused.total_ms / rep.fused.total_ms : 0;
  const CompileStats cs = im.compiler.stats();
  rep.kernels_compiled = cs.compiled;
  rep.cache_hits = cs.memory_hits + cs.disk_hits;
  rep.compile_seconds = cs.compile_seconds;
  im.progress("done", 1.0, rep.verified ? "verified" : "verification FAILED");
  return rep;
}

}  // namespace

RunReport Executor::run() {
  Impl& im = *impl_;
  for (auto& ps : im.plans) ps.bound.clear();  // a run writes its own buffers, whatever a harness bound
  struct Release {
    Impl& im;
    ~Release() { im.release(); }
  } release{im};
  return im.attributed([&] { return run_phases(im); });
}

namespace {
void check_plan(int plan) {
  if (plan < 0 || plan > 1) throw std::out_of_range("no plan " + std::to_string(plan) + " (0 unfused, 1 fused)");
}
}  // namespace

std::vector<OutputCheck> Executor::prepare_for_harness(const std::map<std::string, const void*>& inputs) {
  Impl& im = *impl_;
  std::map<ValueId, const void*> given;
  for (const auto& [name, ptr] : inputs) {
    const auto v = im.graph.find_value(name);
    if (!v || static_cast<std::size_t>(*v) >= im.graph.inputs().size()) {
      throw std::invalid_argument("'" + name + "' is not an input of graph " + im.graph.name());
    }
    if (!ptr) throw std::invalid_argument("input '" + name + "': a null device pointer");
    given[*v] = ptr;
  }
  im.release();  // a second preparation starts from nothing
  return im.attributed([&] {
    // The caller's inputs may still be being written on its own streams, which the executor's non-blocking
    // stream does not wait for.
    FX_CUDA_CALL(cudaDeviceSynchronize());
    std::vector<OutputCheck> checks;
    prepare_and_verify(im, given, checks);
    FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
    im.begin_phase("harness launches", false);
    return checks;
  });
}

void Executor::enqueue_plan(int plan) {
  check_plan(plan);
  if (!impl_->arena) throw std::logic_error("enqueue_plan before prepare_for_harness");
  impl_->attributed([&] {
    impl_->sync_each_step = false;
    impl_->launch_all(plan);
  });
}

void* Executor::stream_handle() const { return impl_->stream; }

std::vector<KernelReport> Executor::plan_kernels(int plan) const {
  check_plan(plan);
  std::vector<KernelReport> out;
  for (std::size_t s = 0; s < impl_->plans[plan].steps.size(); ++s) out.push_back(kernel_report(*impl_, plan, s));
  return out;
}

void* Executor::value_pointer(int plan, const std::string& name) const {
  check_plan(plan);
  if (!impl_->arena) throw std::logic_error("value_pointer before prepare_for_harness");
  const auto v = impl_->graph.find_value(name);
  if (!v) throw std::invalid_argument("graph " + impl_->graph.name() + " has no value '" + name + "'");
  // A value the plan keeps channels-last lives in its NHWC buffer; its NCHW one is written only where a reader
  // needs it, which a graph output's check always does.
  if (impl_->nhwc_pointer(plan, *v) && !impl_->graph.is_output(*v)) {
    throw std::invalid_argument("'" + name + "' is kept channels-last (NHWC) in the " + impl_->plans[plan].name +
                                " plan; only graph outputs and values in the graph's own layout can be read");
  }
  return impl_->pointer(plan, *v);
}

void Executor::bind_outputs(int plan, const std::map<std::string, void*>& outputs) {
  check_plan(plan);
  Impl& im = *impl_;
  if (!im.arena) throw std::logic_error("bind_outputs before prepare_for_harness");
  const PlanSteps& ps = im.plans[plan];
  std::map<ValueId, void*> bound;
  for (const auto& [name, ptr] : outputs) {
    const auto v = im.graph.find_value(name);
    if (!v || !im.graph.is_output(*v) || !ps.offsets.count(*v)) {
      throw std::invalid_argument("'" + name + "' is not a graph output that the " + ps.name + " plan of " +
                                  im.graph.name() + " writes");
    }
    if (!ptr || reinterpret_cast<std::uintptr_t>(ptr) % 256 != 0) {
      throw std::invalid_argument("output '" + name + "': " + (ptr ? "a device pointer not aligned to 256 bytes"
                                                                     : "a null device pointer"));
    }
    for (const Step& s : ps.steps) {
      if (!s.call || s.call->call().outputs.size() < 2) continue;
      const auto& parts = s.call->call().outputs;
      if (std::find(parts.begin(), parts.end(), *v) != parts.end()) {
        throw std::invalid_argument("output '" + name + "' is one of the " + std::to_string(parts.size()) +
                                    " parts that " + s.call->call().name +
                                    " writes at equal spacing in the plan's own buffer; it cannot be bound");
      }
    }
    bound[*v] = ptr;
  }
  // Two outputs in overlapping memory would write over each other.
  std::vector<std::pair<const char*, ValueId>> spans;
  for (const auto& [v, ptr] : bound) spans.push_back({static_cast<const char*>(ptr), v});
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    const auto& [start, v] = spans[i - 1];
    if (spans[i].first < start + im.graph.value_type(v).bytes()) {
      throw std::invalid_argument("outputs '" + im.graph.value_name(v) + "' and '" +
                                  im.graph.value_name(spans[i].second) + "' overlap in the caller's memory");
    }
  }
  im.plans[plan].bound = std::move(bound);
}

}  // namespace fx::gpu
