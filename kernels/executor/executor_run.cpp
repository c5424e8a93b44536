// Executor::run(): the run's phases in order (allocate, inputs, tuning, verification, reference, dump, timing,
// CUDA-graph replays) and the calls that run a prepared plan on the caller's buffers.
#include <algorithm>

#include "kernels/common/cuda_call.h"
#include "kernels/executor/channels_last.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/executor_internal.h"
#include "kernels/executor/layout_tuning.h"
#include "kernels/executor/sort_step.h"
#include "kernels/timing/plan_timing.h"
#include "kernels/verify/output_check.h"
#include "kernels/verify/reference_check.h"

namespace fx::gpu {

// What step s of plan p runs: its name, kind, library and path (the layout or call kept), nodes and bytes;
// not its time.
KernelReport kernel_report(const Executor::Impl& im, PlanId p, std::size_t s) {
  const Step& st = im.plan(p).steps[s];
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

std::vector<SplitGroup> split_groups(const PlanSteps& ps) {
  std::vector<SplitGroup> out;
  for (std::size_t s = 0; s < ps.steps.size();) {
    const std::string& group = ps.steps[s].group;
    std::size_t e = s;
    while (e < ps.steps.size() && ps.steps[e].group == group) ++e;
    if (e - s > 1) {
      SplitGroup split{group, static_cast<int>(e - s), {}};
      for (const std::string& n : ps.notes) {
        if (n.starts_with(group + ": ")) split.why.push_back(n.substr(group.size() + 2));
      }
      out.push_back(std::move(split));
    }
    s = e;
  }
  return out;
}

namespace {

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
  im.launch_all(PlanId::unfused);
  im.launch_all(PlanId::fused);
  im.begin_phase("verification checks", false);
  checks = verify_outputs(im);
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
    dump_values(im, im.options.dump_dir);
  }
  im.progress("time", 0.4, "timing both plans in interleaved rounds");
  im.begin_phase("timing", false);
  TimedPlans timed = time_plans(im);
  rep.unfused = std::move(timed.plans[0]);
  rep.fused = std::move(timed.plans[1]);
  rep.clocks = timed.clocks;
  rep.round_ms = timed.round_ms;
  rep.warmup = timed.rounds.warmup;
  rep.repeat = timed.rounds.repeat;
  if (im.options.timed) {
    TimingPass pass{0, rep.unfused.total_ms, rep.fused.total_ms, rep.warmup, rep.repeat, rep.round_ms, rep.clocks,
                    clocks_note(im, rep.clocks)};
    while (im.options.timed(pass)) {
      im.progress("time", 0.4, "timing both plans again (timing " + std::to_string(pass.index + 1) + ")");
      const TimedPlans again = time_plans(im);
      pass = {pass.index + 1, again.plans[0].total_ms, again.plans[1].total_ms, again.rounds.warmup,
              again.rounds.repeat, again.round_ms, again.clocks, clocks_note(im, again.clocks)};
    }
  }
  if (im.options.cuda_graph) {
    im.progress("graph", 0.9, "CUDA-graph replay");
    im.begin_phase("CUDA graph", false);
    im.rest();
    ClockWatch watch(*im.clocks);
    rep.unfused.graph_ms = time_graph(im, PlanId::unfused);
    const ClockSpan unfused_clocks = watch.stop();
    im.rest();
    ClockWatch fused_watch(*im.clocks);
    rep.fused.graph_ms = time_graph(im, PlanId::fused);
    rep.graph_clocks = unfused_clocks;
    rep.graph_clocks.merge(fused_watch.stop());
    for (PlanReport* plan : {&rep.unfused, &rep.fused}) {
      if (std::string note = host_bound_note(*plan); !note.empty()) plan->notes.push_back(std::move(note));
    }
  }
  rep.device = im.device;
  rep.clocks_note = clocks_note(im, rep.clocks);
  rep.protocol = im.options.timing;
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

std::vector<OutputCheck> Executor::prepare_with_inputs(const std::map<std::string, const void*>& inputs) {
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
    im.begin_phase("launches on the caller's buffers", false);
    return checks;
  });
}

void Executor::enqueue(PlanId plan) {
  if (!impl_->arena) throw std::logic_error("enqueue before prepare_with_inputs");
  impl_->attributed([&] {
    impl_->sync_each_step = false;
    impl_->launch_all(plan);
  });
}

void* Executor::stream() const { return impl_->stream; }

std::vector<KernelReport> Executor::plan_kernels(PlanId plan) const {
  std::vector<KernelReport> out;
  for (std::size_t s = 0; s < impl_->plan(plan).steps.size(); ++s) out.push_back(kernel_report(*impl_, plan, s));
  return out;
}

std::vector<SplitGroup> Executor::split_groups(PlanId plan) const { return fx::gpu::split_groups(impl_->plan(plan)); }

void* Executor::buffer(PlanId plan, const std::string& name) const {
  if (!impl_->arena) throw std::logic_error("buffer before prepare_with_inputs");
  const auto v = impl_->graph.find_value(name);
  if (!v) throw std::invalid_argument("graph " + impl_->graph.name() + " has no value '" + name + "'");
  // A value the plan keeps channels-last lives in its NHWC buffer; its NCHW one is written only where a reader
  // needs it, which a graph output's check always does.
  if (impl_->nhwc_pointer(plan, *v) && !impl_->graph.is_output(*v)) {
    throw std::invalid_argument("'" + name + "' is kept channels-last (NHWC) in the " + impl_->plan(plan).name +
                                " plan; only graph outputs and values in the graph's own layout can be read");
  }
  return impl_->pointer(plan, *v);
}

void Executor::bind_outputs(PlanId plan, const std::map<std::string, void*>& outputs) {
  Impl& im = *impl_;
  if (!im.arena) throw std::logic_error("bind_outputs before prepare_with_inputs");
  const PlanSteps& ps = im.plan(plan);
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
  im.plan(plan).bound = std::move(bound);
}

}  // namespace fx::gpu