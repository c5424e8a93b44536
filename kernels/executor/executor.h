// The CUDA executor: runs a graph's unfused plan (one kernel per node, as eager PyTorch does) and a fused plan
// (one kernel per group) on the same seeded inputs, checks that every graph output agrees, and times both
// with CUDA events. No vendor header here: CUDA types live behind the pimpl.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/fusion/plan.h"
#include "core/graph/graph.h"
#include "core/report/run_report.h"
#include "core/report/timing_protocol.h"
#include "kernels/executor/gpu_fault.h"
#include "kernels/executor/plan_id.h"
#include "kernels/profile/gpu_clocks.h"

namespace fx::gpu {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::int64_t total_memory = 0, free_memory = 0;
  int clock_khz = 0, memory_clock_khz = 0, memory_bus_bits = 0;
  std::int64_t l2_bytes = 0;
  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

// Throws NoDeviceError (gpu_error.h) when there is no driver or no device.
DeviceInfo query_device(int ordinal = 0);

// One launch of a plan, as the profiler sees it.
struct LaunchInfo {
  PlanId plan = PlanId::unfused;
  int step = 0;              // index of the kernel in its plan
  std::string kernel;        // kernel name
  std::string group;         // the plan's group id
  std::uint64_t step_id = 0;  // plan * 1'000'000 + step: unique per launch site, for CUPTI external ids
};

// One timing of both plans (the whole-plan rounds of the run's timing), as RunOptions::timed receives it.
struct TimingPass {
  int index = 0;                        // 0: the run's own timing; 1, 2, ...: timed again on request
  double unfused_ms = 0, fused_ms = 0;  // medians of the whole-plan runs
  int warmup = 0, repeat = 0;           // the rounds run (timing_rounds)
  double round_ms = 0;                  // one round as estimated for warmup_ms/repeat_ms (else 0)
  ClockSpan clocks;                     // the GPU's clocks over the timed rounds
  std::string clocks_note;              // why `clocks` is empty ("" when it is not)
};

struct RunOptions {
  // How the plans are timed (core/report/timing_protocol.h): rounds, flush, rests, placement, clocks. Either way
  // the event timing takes the two plans in interleaved rounds (unfused, fused, unfused, ...), so a drift of the
  // clocks moves both alike; `cuda_graph` replays each plan's graph on its own afterwards.
  TimingProtocol timing;
  bool cuda_graph = false;      // also time each plan replayed as a CUDA graph
  // Time each generated kernel's layouts (GeneratedKernel::alternatives) on the device before the verification
  // and keep the fastest, as cuBLASLt's algorithms are chosen; likewise a convolution's NCHW call against its
  // NHWC way, a horizontal GEMM's one strided-batched call against its GEMMs run alone, and a GEMM's best
  // cuBLASLt configurations again, inside the plan (layout_tuning.h); the report says which and the times.
  // Off: the default layout (the NCHW call, the merged GEMM). `force_layout` k >= 0 runs layout k of every kernel
  // that has one (0: the default), untimed: for tests and for comparing layouts by hand.
  bool autotune = true;
  int force_layout = -1;
  // Where what tuning chose is kept (kernels/tuning/tuning_cache.h) and reused by the next run on the same GPU
  // and software, for the same problems (fusion-cli: TuningCache::default_dir()); empty: no cache, everything is
  // timed. `retune` times everything again and overwrites what was kept. Unused where nothing is timed.
  std::string tuning_cache_dir;
  bool retune = false;
  // Once convolutions run channels-last (tuned or forced), keep their values NHWC between steps, converting a
  // value once for a reader that needs NCHW (kernels/executor/channels_last_plan.h). Off: x and y are converted
  // around each such convolution, as tuning timed it.
  bool keep_nhwc = true;
  std::uint64_t seed = 20261122;
  std::string dump_dir;         // when set: inputs and both plans' outputs as .npy, and manifest.json
  // Both plans' outputs against the float64 CPU reference (core/reference): `automatic` checks graphs small
  // enough for it (reference_is_affordable), `on` always, `off` never.
  enum class Reference : std::uint8_t { automatic, on, off } reference = Reference::automatic;
  // Called with the run's timing as soon as it is done, before the CUDA-graph replays, the report and anything
  // freed; while it returns true, both plans are timed again in the same way (the rest, the rounds counted anew,
  // the clocks read) and it is called with that timing. For a harness that alternates this process's timings
  // with another program's on the same GPU (bench/python/paired.py against PyTorch): the two sides of each
  // comparison then run seconds apart, in the same stretch of the GPU's heat and power. The report keeps the
  // run's own timing (index 0). Empty: the plans are timed once.
  std::function<bool(const TimingPass&)> timed;
  // Called before and after every kernel launch (the profiler wraps launches with these).
  std::function<void(const LaunchInfo&)> before_launch, after_launch;
  // Progress: step name, fraction done (0..1), one line for people.
  std::function<void(const std::string&, double, const std::string&)> progress;
};

// What a run reports (KernelReport, PlanReport, SplitGroup, OutputCheck, RunReport) is core's
// (core/report/run_report.h): the executor fills it, fusion-cli writes it, every reader reads the same type.

double tolerance_for(DType t);

// The warm-up and timed rounds of both plans for options asking for a time (warmup_ms, repeat_ms), given one
// round's estimated time (flush included), with do_bench's arithmetic: int(ms / round_ms), at least 1, and at
// most kMaxTimedRounds; `warmup` and `repeat` where the options ask for none or round_ms is not positive.
struct TimingRounds {
  int warmup = 0, repeat = 1;
};
inline constexpr int kMaxTimedRounds = 20000;
TimingRounds timing_rounds(const TimingProtocol& protocol, double round_ms);

// The index-th gap of a run with RunOptions::placement `placement` (plan_memory leaves one before each input, then
// one before each step's outputs, in plan order): 0 for placement 0, else a whole number of MiB from 0 to 15
// drawn from (placement, index) alone, so that one placement puts every run's buffers at the same offsets.
std::size_t placement_gap(std::uint64_t placement, std::size_t index);

// A plan is host-bound when, launched step by step, it took more than this times its CUDA-graph replay: its steps
// took the host longer to launch (a library call costs the host far more than a kernel launch) than the GPU to
// run them.
constexpr double kHostBoundRatio = 1.15;
// The note a host-bound plan's report carries (both times, and that the graph's is the GPU's); empty when the
// plan kept up or its graph was not timed (RunOptions::cuda_graph).
std::string host_bound_note(const PlanReport& p);

class Executor {
 public:
  // Generates and compiles every kernel of both plans and plans the memory; allocates nothing yet. Throws
  // NoDeviceError without a device, std::invalid_argument for work it cannot run (a custom op, ...),
  // CompileError with log and source, GpuError for a failed call.
  Executor(const Graph& graph, const Plan& unfused, const Plan& fused, RunOptions options = {});
  ~Executor();
  Executor(Executor&&) noexcept;
  Executor& operator=(Executor&&) noexcept;
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Bytes the run allocates: the arena (inputs, intermediates, outputs of both plans), the buffers library calls
  // prepare (folded or stacked weights, channels-last scratch), the cuBLASLt/cuDNN workspaces and, with
  // cold_l2, the cache-flush buffer; checked against free memory (with headroom for CUDA graphs and the
  // context) before anything is allocated.
  std::int64_t required_bytes() const;
  // Allocates, fills inputs, verifies, times both plans. Frees everything on return or on error.
  // The verification pass synchronises after every step, so a kernel that faults on its first run is named
  // exactly. A sticky CUDA error (sticky_error.h) leaves this and every public method below as GpuFault; the
  // context is then dead and the process must end without further CUDA work.
  RunReport run();
  // For the profiler: after run() (or prepare()), launch one plan once on the executor's stream and wait.
  void prepare();
  void launch_plan_once(PlanId plan);
  // For the counter pass (kernels/executor/profile_pass.h): one step of a plan, any kind, through the same
  // launch path and hooks as a whole-plan launch; does not wait. Steps must go in plan order (each reads its
  // predecessors' outputs). Throws std::out_of_range for a step the plan does not have.
  void launch_step(PlanId plan, int step);
  // For the counter pass: each step's identity for measurement (step_identity.h), read once the plan is prepared
  // (prepare(), after run()): steps of equal identity run the same kernel on the same problem and so move the same
  // DRAM bytes from a cold L2; nullopt for a step that must be measured on its own.
  std::vector<std::optional<std::string>> measurement_identities(PlanId plan) const;
  // Where a sticky error seen now would be attributed: for errors that surface outside the executor's own
  // calls (the profiler synchronises itself after launch_step).
  FaultSite fault_site() const;
  // The device the plans were compiled for and run on.
  const DeviceInfo& device() const;

  // Running the compiled plans on the caller's own device buffers, for a program that uses or times them next to
  // its own work on the GPU (bench/harness is one). prepare_with_inputs allocates; fills the inputs, the device
  // buffers `inputs` names (by graph input name, each the input's size, contiguous) copied over the seeded ones;
  // prepares the library steps from them; tunes as run() does (RunOptions::autotune, force_layout, keep_nhwc);
  // runs both plans once, each step synchronised, and returns their checks against each other. Everything stays
  // allocated until the executor is destroyed or prepared again. Throws std::invalid_argument for a name that
  // is not an input.
  std::vector<OutputCheck> prepare_with_inputs(const std::map<std::string, const void*>& inputs = {});
  // Enqueues every step of a prepared plan on stream() and returns; the caller synchronises.
  void enqueue(PlanId plan);
  // The executor's stream (a cudaStream_t), on which the caller orders its own work.
  void* stream() const;
  // A value's device buffer in a prepared plan (an input's is the same in both).
  void* buffer(PlanId plan, const std::string& value) const;
  // From now on the prepared plan writes the named graph outputs into the caller's device buffers (each the
  // output's size, contiguous, 256-byte aligned as the executor's own), not its own; its later steps read them
  // there. An empty map gives every output its own buffer back; a preparation does too. Throws
  // std::invalid_argument, binding nothing, for a value that is not a graph output written by the plan, a null
  // or misaligned pointer, two outputs whose buffers overlap, or one of the parts a horizontal GEMM writes at
  // equal spacing in its own buffer. run() writes the executor's own buffers, whatever was bound.
  void bind_outputs(PlanId plan, const std::map<std::string, void*>& outputs);
  // What each step of a plan runs (KernelReport without times): after tuning, the layouts and calls it kept.
  std::vector<KernelReport> plan_kernels(PlanId plan) const;
  // The plan's groups that run as more than one kernel, and why; known once the plans are built (tuning may
  // split more: ask again after prepare_with_inputs or run).
  std::vector<SplitGroup> split_groups(PlanId plan) const;

 private:
  struct Impl;  // executor.cpp: the compiled program (executor_internal.h, CUDA types) it coordinates
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx::gpu
