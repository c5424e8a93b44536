// Internal to kernels/executor: the compiled program the executor runs, with CUDA types.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/codegen/codegen.h"
#include "kernels/common/sticky_error.h"
#include "kernels/contraction/device_memory.h"
#include "kernels/executor/channels_last_plan.h"
#include "kernels/executor/compiled_plan.h"
#include "kernels/executor/executor.h"
#include "kernels/executor/gpu_fault.h"
#include "kernels/executor/memory_plan.h"
#include "kernels/nvrtc/nvrtc_compiler.h"
#include "kernels/tuning/tuning_cache.h"

namespace fx::gpu {

// triton.testing.do_bench's cache flush: 256 MB of zeros written before each timed run (RunOptions::cold_l2).
constexpr std::size_t kColdL2Bytes = std::size_t{256} << 20;
// Device memory kept free beyond what a run allocates: CUDA graphs, a cuDNN workspace grown past cudnnFind's, the
// context's own growth.
constexpr std::size_t kMemoryHeadroomBytes = std::size_t{256} << 20;

struct ContractionRuntime;  // contraction_step.h: the library handles

// A kernel of a batch compiled at once (CompiledProgram::load_all): its source and name, and where its loaded
// function goes.
struct KernelLoad {
  CompileRequest request;
  LoadedKernel* into = nullptr;
};

// Both plans of a run compiled for one graph on one device: their steps, the memory plan, the stream they run
// on, the library handles, and where a fault is attributed. The executor (executor.h) coordinates the run's
// phases over it; the passes (layout_tuning.h, channels_last.h), the verification (kernels/verify) and the
// timing (kernels/timing) take it. The rules that keep it consistent:
// - Steps (CompiledPlan) and the memory plan are fixed by the constructor (compile, plan_memory); only the
//   tuning passes change steps afterwards, before the verification (compiled_plan.h, memory_plan.h).
// - The memory plan is allocated only within a preparation: release() frees it with every library step's
//   prepared buffers. run() releases on return; prepare_with_inputs releases first.
// - The timing protocol (options.timing) is read, never written: the rounds a timing came to are its result
//   (TimedPlans::rounds), not options.
// - fault_site is written only by begin_phase and launched(); sync_each_step only by begin_phase and the
//   single-launch entry points.
struct CompiledProgram {
  Graph graph;
  RunOptions options;
  DeviceInfo device;
  NvrtcCompiler compiler;
  CompiledPlan plans[2];  // indexed by plan_index(PlanId)
  CompiledPlan& plan(PlanId p) { return plans[plan_index(p)]; }
  const CompiledPlan& plan(PlanId p) const { return plans[plan_index(p)]; }
  MemoryPlan memory;
  PlanBuffers buffers(PlanId p) const { return {graph, memory, p}; }
  void* pointer(PlanId p, ValueId v) const { return memory.pointer(graph, p, v); }
  // The memory plan's arena, the NHWC buffers and the library steps' prepared buffers: what the run allocates.
  std::int64_t required_bytes() const;
  cudaStream_t stream = nullptr;
  std::map<DType, LoadedKernel> fill_kernels;
  std::shared_ptr<ContractionRuntime> contraction;  // made with the first contraction group
  std::map<ValueId, double> tolerances;  // outputs checked looser than their dtype (TF32 contractions upstream)
  std::size_t sort_workspace_bytes = 0;  // CUB's, the most any sort step needs (plan_memory puts it in the arena)
  // Where a sticky error is attributed (gpu_fault.h): the phase, and the last step whose launch call returned.
  FaultSite fault_site;
  bool sync_each_step = false;  // set for the verification pass: a fault then surfaces at the step that made it
  std::unique_ptr<ClockMonitor> clocks;  // NVML for this device: the clocks of each timing (gpu_clocks.h)
  // Where tuning keeps and finds its choices; null where nothing is timed (tuning_cache.h).
  std::unique_ptr<TuningCache> tuning;
  int tuned_steps = 0, reused_steps = 0;  // counted by the tuning passes, for the report

  CompiledProgram(const Graph& g, RunOptions o) : graph(g), options(std::move(o)) {}
  ~CompiledProgram();
  CompiledProgram(const CompiledProgram&) = delete;
  CompiledProgram& operator=(const CompiledProgram&) = delete;

  // Generates plan p's steps (code, library calls); load_kernels then compiles what both plans generated.
  void compile(PlanId p, const Plan& plan);
  void load_kernels();
  void plan_memory();
  void allocate();
  void release();
  // Seeded random inputs, except those `given` (device buffers of each input's size, copied in on the stream).
  void fill_inputs(const std::map<ValueId, const void*>& given = {});
  void launch(PlanId p, std::size_t s);
  void launched(PlanId p, std::size_t s);  // records the step for attribution; synchronises in the checking pass
  void begin_phase(const std::string& phase, bool sync_each);
  // Runs f; a sticky CUDA error escaping it becomes a GpuFault naming fault_site.
  template <class F>
  decltype(auto) attributed(F&& f) {
    try {
      return f();
    } catch (const GpuFault&) {
      throw;
    } catch (const GpuError& e) {
      if (!is_sticky(e)) throw;
      throw GpuFault(e, fault_site);
    }
  }
  void launch_all(PlanId p);
  // RunOptions::rest_ms with the GPU idle: the stream drained first, so the rest is the GPU's, not the host's.
  void rest() { rest_for(options.timing.rest_ms); }
  void rest_for(double ms);
  LoadedKernel load(const std::string& source, const std::string& name);
  // Compiles the batch's kernels in parallel (NvrtcCompiler::compile_all), then loads each where it goes.
  void load_all(const std::vector<KernelLoad>& batch, const CompileProgress& told = {});
  void progress(const std::string& step, double fraction, const std::string& message) const {
    if (options.progress) options.progress(step, fraction, message);
  }
};

// The plan note naming the views a plan launches nothing for ("3 views launch nothing (a, b, c): ...").
std::string views_note(const std::vector<std::string>& names);

// A step of `group` (its id and the cost model's prediction), of the given kind.
Step step_of_group(const Group& group, StepAction action = GeneratedLaunch{});

// What step s of plan p runs: its name, kind, library and path (the layout or call kept), nodes and bytes;
// not its time.
KernelReport kernel_report(const CompiledProgram& im, PlanId p, std::size_t s);
// The groups of a plan's steps that take more than one step, with the plan's notes about each.
std::vector<SplitGroup> split_groups(const CompiledPlan& ps);

// The run's phases up to the verification (executor_run.cpp): allocation, inputs (seeded, or `given`'s copied
// in), the tuning passes, then both plans once, each step synchronised, checked against each other. Returns the
// bytes allocated.
std::int64_t prepare_and_verify(CompiledProgram& im, const std::map<ValueId, const void*>& given,
                                std::vector<OutputCheck>& checks);
// Every phase of Executor::run(), the memory still allocated on return.
RunReport run_phases(CompiledProgram& im);

}  // namespace fx::gpu
