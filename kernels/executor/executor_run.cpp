// A run's phases in order (allocate, inputs, tuning, verification, reference, dump, timing, CUDA-graph replays),
// and what the reports say each step ran.
#include <algorithm>

#include "kernels/common/cuda_call.h"
#include "kernels/executor/channels_last.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/executor_internal.h"
#include "kernels/executor/layout_tuning.h"
#include "kernels/executor/report_json.h"
#include "kernels/executor/sort_step.h"
#include "kernels/timing/plan_timing.h"
#include "kernels/verify/output_check.h"
#include "kernels/verify/reference_check.h"

namespace fx::gpu {

// What step s of plan p runs: its name, kind, library and path (the layout or call kept), nodes and bytes;
// not its time.
KernelReport kernel_report(const CompiledProgram& im, PlanId p, std::size_t s) {
  const Step& st = im.plan(p).steps[s];
  KernelReport kr;
  kr.name = st.kernel.name;
  kr.group = st.group;
  kr.kind = std::string(kernel_kind_name(st.kernel.kind));
  kr.library = "generated (NVRTC)";
  kr.path = st.layout_choice.empty() ? st.kernel.layout : st.layout_choice;
  if (const SortLaunch* sort = st.sort()) {  // a CUB segmented sort
    kr.library = "CUB";
    kr.path = sort->sort->describe();
  }
  if (const LibraryLaunch* lib = st.library(); lib && lib->is_conversion()) {
    kr.path = lib->call->describe(im.buffers(p), lib->part);  // a generated conversion
    const std::string& layout = st.layout_choice.empty() ? st.kernel.layout : st.layout_choice;
    if (!layout.empty()) kr.path += "; " + layout;
  } else if (lib) {  // a cuBLASLt/cuDNN call
    kr.kind = std::string(library_call_kind_name(lib->call->call().kind));
    kr.library = lib->call->library();
    kr.path = lib->call->describe(im.buffers(p), lib->part);
    if (!st.layout_choice.empty()) kr.path += "; " + st.layout_choice;
  }
  for (NodeId n : st.kernel.nodes) kr.nodes.push_back(im.graph.node(n).name);
  kr.bytes = st.kernel.bytes_moved;
  kr.group_predicted_ms = st.group_predicted_ms;
  kr.group_predicted_bytes = st.group_predicted_bytes;
  kr.tuned_at = st.tuned_at;
  return kr;
}

std::vector<SplitGroup> split_groups(const CompiledPlan& ps) {
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

// Each phase starts on an idle stream (gpu_fault.h: how a fault is attributed).
std::int64_t prepare_and_verify(CompiledProgram& im, const std::map<ValueId, const void*>& given,
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
  im.memory.poison(im.graph, im.stream);
  FX_CUDA_CALL(cudaStreamSynchronize(im.stream));
  im.progress("verify", 0.2, "running both plans once");
  im.begin_phase("verification", true);  // every step's first run, synchronised: exact attribution
  im.launch_all(PlanId::unfused);
  im.launch_all(PlanId::fused);
  im.begin_phase("verification checks", false);
  checks = verify_outputs(im);
  return device_bytes;
}

namespace {

// RunOptions::timed: both plans timed again, as often as it asks (the report keeps the run's own timing).
void time_again_on_request(CompiledProgram& im, TimedPlans& timed) {
  if (!im.options.timed) return;
  TimingPass pass{0, timed.plan(PlanId::unfused).total_ms, timed.plan(PlanId::fused).total_ms, timed.rounds.warmup,
                  timed.rounds.repeat, timed.round_ms, timed.clocks, clocks_note(im, timed.clocks)};
  while (im.options.timed(pass)) {
    im.progress("time", 0.4, "timing both plans again (timing " + std::to_string(pass.index + 1) + ")");
    TimedPlans again = time_plans(im);
    pass = {pass.index + 1, again.plan(PlanId::unfused).total_ms, again.plan(PlanId::fused).total_ms,
            again.rounds.warmup, again.rounds.repeat, again.round_ms, again.clocks, clocks_note(im, again.clocks)};
  }
}

// RunOptions::cuda_graph: each plan replayed as a CUDA graph, after a rest, with the clocks it ran at.
void time_graphs(CompiledProgram& im, RunReport& rep) {
  im.progress("graph", 0.9, "CUDA-graph replay");
  im.begin_phase("CUDA graph", false);
  im.rest();
  ClockWatch watch(*im.clocks);
  rep.unfused.graph_ms = time_graph(im, PlanId::unfused);
  ClockSpan clocks = watch.stop();
  im.rest();
  ClockWatch fused_watch(*im.clocks);
  rep.fused.graph_ms = time_graph(im, PlanId::fused);
  clocks.merge(fused_watch.stop());
  rep.timing.graph_gpu_clocks = clock_reading(clocks, clocks_note(im, clocks));
  for (PlanReport* plan : {&rep.unfused, &rep.fused}) {
    if (std::string note = host_bound_note(*plan); !note.empty()) plan->notes.push_back(std::move(note));
  }
}

// How the plans were timed: the protocol asked for, the rounds it came to, the layouts, the clocks.
RunTiming timing_of_run(const CompiledProgram& im, const TimedPlans& timed) {
  RunTiming t = run_timing(im.options.timing, timed.rounds, timed.round_ms);
  t.layouts = im.options.force_layout >= 0 ? "forced " + std::to_string(im.options.force_layout + 1)
              : im.options.autotune        ? "timed"
                                           : "default";
  t.placement_gap_bytes = static_cast<std::int64_t>(im.memory.placement_gaps());
  t.gpu_clocks = clock_reading(timed.clocks, clocks_note(im, timed.clocks));
  return t;
}

// What the report says of the run beside the plans' times: the device, the protocol, the layouts, the compiles.
void describe_run(const CompiledProgram& im, RunReport& rep) {
  rep.device = run_device(im.device);
  rep.speedup = rep.fused.total_ms > 0 ? rep.unfused.total_ms / rep.fused.total_ms : 0;
  if (im.tuning) {
    rep.tuning_cache = im.tuning->folder().string();
    rep.tuning_warnings = im.tuning->warnings();
  } else {
    rep.tuning_cache = im.options.autotune && im.options.force_layout < 0 ? "none: every choice timed" : "none: nothing timed";
  }
  rep.tuned_steps = im.tuned_steps;
  rep.reused_steps = im.reused_steps;
  const CompileStats cs = im.compiler.stats();
  rep.kernels_compiled = cs.compiled;
  rep.cache_hits = cs.memory_hits + cs.disk_hits;
  rep.compile_seconds = cs.compile_seconds;
  rep.compile_wall_seconds = cs.wall_seconds;
}

}  // namespace

RunReport run_phases(CompiledProgram& im) {
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
  time_again_on_request(im, timed);
  rep.timing = timing_of_run(im, timed);
  rep.unfused = std::move(timed.plan(PlanId::unfused));
  rep.fused = std::move(timed.plan(PlanId::fused));
  if (im.options.cuda_graph) time_graphs(im, rep);
  describe_run(im, rep);
  im.progress("done", 1.0, rep.verified ? "verified" : "verification FAILED");
  return rep;
}

}  // namespace fx::gpu
