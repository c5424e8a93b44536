// Internal to kernels/executor: the executor's state, with CUDA types.
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
#include "kernels/executor/executor.h"
#include "kernels/executor/gpu_fault.h"
#include "kernels/nvrtc/nvrtc_compiler.h"

namespace fx::gpu {

// triton.testing.do_bench's cache flush: 256 MB of zeros written before each timed run (RunOptions::cold_l2).
constexpr std::size_t kColdL2Bytes = std::size_t{256} << 20;
// Device memory kept free beyond what a run allocates: CUDA graphs, a cuDNN workspace grown past cudnnFind's, the
// context's own growth.
constexpr std::size_t kMemoryHeadroomBytes = std::size_t{256} << 20;

class LibraryStep;          // contraction_step.h: a cuBLASLt/cuDNN call
struct ContractionRuntime;  // contraction_step.h: the library handles
class SortStep;             // sort_step.h: a CUB segmented sort (sort, topk)

// What a library step launches: the whole call, or one of the three launches of a convolution run
// channels-last (LibraryStep::nhwc_ready): x to NHWC, the cuDNN call, y back to NCHW.
enum class CallPart : std::uint8_t { whole, to_nhwc, conv_nhwc, to_nchw };

// One launch of a plan: a generated kernel loaded from its CUBIN, or a library call (`call` set; then
// `kernel` names it and lists its nodes and values, and has no source).
struct Step {
  GeneratedKernel kernel;
  std::string group;
  std::optional<double> group_predicted_ms;
  std::int64_t group_predicted_bytes = 0;
  cudaLibrary_t library = nullptr;
  cudaKernel_t function = nullptr;
  // A generated kernel's other layouts (GeneratedKernel::alternatives), compiled when the run autotunes; the
  // tuning pass (tune_layouts) installs the fastest in kernel/function and says why in `layout_choice`.
  struct Layout {
    KernelLayout layout;
    cudaLibrary_t library = nullptr;
    cudaKernel_t function = nullptr;
  };
  std::vector<Layout> alternatives;
  std::string layout_choice;
  std::shared_ptr<LibraryStep> call;
  CallPart call_part = CallPart::whole;  // with `call`: which of its launches this step is
  std::shared_ptr<SortStep> sort;  // set for a sort/topk node (then `kernel` has no source either)
  // Set by keep_channels_last (channels_last.h): a conversion of a value between its NCHW buffer and its NHWC
  // one (`function` launched with the source and destination; `library` null when the function is a
  // convolution's own conversion), or a generated elementwise kernel that reads and writes NHWC buffers.
  std::optional<LayoutConversion> conversion;
  bool channels_last = false;
  // A convolution layout tuning kept NCHW, timing its NHWC way with x and y converted around it, while values
  // may stay NHWC around it (RunOptions::keep_nhwc): the times, so keep_channels_last can weigh the NHWC call
  // again without the conversions the kept plan does not launch. Its NHWC way stays loaded until then.
  struct NchwChoice {
    double nchw_ms = 0;            // the NCHW call
    double nhwc_alone_ms = 0;      // the NHWC call alone, x and y already NHWC
    double nhwc_converted_ms = 0;  // the NHWC call with both conversions, in their fastest layout
    std::size_t conversion_layout = 0;  // that layout (LibraryStep::install_conversion_layout)
  };
  std::optional<NchwChoice> nchw_choice;
};

struct PlanSteps {
  std::string name;
  std::vector<Step> steps;
  std::vector<std::string> notes;
  double predicted_ms = 0;
  std::int64_t bytes = 0;
  std::map<ValueId, std::size_t> offsets;  // values this plan writes -> offset in the arena
  std::map<ValueId, void*> bound;  // graph outputs written to the caller's buffers instead (Executor::bind_outputs)
  // Values kept channels-last across steps (channels_last.h) -> their NHWC buffers, allocated and freed with
  // the arena; empty until keep_channels_last planned the plan (channels_last_planned).
  std::map<ValueId, contraction_detail::DeviceMemory> nhwc_buffers;
  bool channels_last_planned = false;
};

// The executor's state. The rules that keep it consistent:
// - The plans' steps and the memory plan (input_offsets, PlanSteps::offsets, arena_bytes, placement_gaps, the
//   sort workspace) are fixed by the constructor (build_plan, plan_memory). Only tuning (tune_layouts,
//   keep_channels_last) changes steps afterwards, before the verification, and it leaves every offset as it was:
//   a step it adds writes values that already have one, or NHWC buffers of their own (PlanSteps::nhwc_buffers).
// - `arena` is null outside a preparation: allocate() sets it, release() frees it with every library step's
//   prepared buffers and NHWC buffer and clears PlanSteps::bound. run() releases on return; prepare_with_inputs
//   releases first, so each preparation starts from nothing.
// - PlanSteps::bound is only ever set on a prepared plan (bind_outputs) and is cleared by run() and release().
// - The timing protocol (options.timing) is read, never written: the rounds a timing came to are its result
//   (TimedPlans::rounds), not options.
// - fault_site is written only by begin_phase and launched(); sync_each_step only by begin_phase and the
//   single-launch entry points.
struct Executor::Impl {
  Graph graph;
  RunOptions options;
  DeviceInfo device;
  NvrtcCompiler compiler;
  PlanSteps plans[2];  // indexed by plan_index(PlanId)
  PlanSteps& plan(PlanId p) { return plans[plan_index(p)]; }
  const PlanSteps& plan(PlanId p) const { return plans[plan_index(p)]; }
  std::map<ValueId, std::size_t> input_offsets;
  std::size_t arena_bytes = 0;
  char* arena = nullptr;
  // The arena and the library steps' prepared buffers (contraction_step.h): what the run allocates.
  std::int64_t required_bytes() const;
  cudaStream_t stream = nullptr;
  std::map<DType, std::pair<cudaLibrary_t, cudaKernel_t>> fill_kernels;
  std::shared_ptr<ContractionRuntime> contraction;  // made with the first contraction group
  std::map<ValueId, double> tolerances;  // outputs checked looser than their dtype (TF32 contractions upstream)
  std::size_t sort_workspace_offset = 0, sort_workspace_bytes = 0;  // CUB's, in the arena, shared by sort steps
  std::size_t placement_gaps = 0;  // the bytes RunOptions::placement's gaps add to the arena (plan_memory)
  // Where a sticky error is attributed (gpu_fault.h): the phase, and the last step whose launch call returned.
  FaultSite fault_site;
  bool sync_each_step = false;  // set for the verification pass: a fault then surfaces at the step that made it
  std::unique_ptr<ClockMonitor> clocks;  // NVML for this device: the clocks of each timing (gpu_clocks.h)

  Impl(const Graph& g, RunOptions o) : graph(g), options(std::move(o)) {}
  ~Impl();

  void build_plan(PlanId p, const Plan& plan);
  void plan_memory();
  void allocate();
  void release();
  // Seeded random inputs, except those `given` (device buffers of each input's size, copied in on the stream).
  void fill_inputs(const std::map<ValueId, const void*>& given = {});
  void poison_outputs();
  void launch(PlanId p, std::size_t s);
  void launch_generated(PlanId p, const Step& step);
  void launch_layout(PlanId p, const Step& step, cudaKernel_t function, int block, std::int64_t grid);
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
  void* pointer(PlanId p, ValueId v) const;
  // A value's NHWC buffer in plan p (channels_last.h), or null where it has none.
  void* nhwc_pointer(PlanId p, ValueId v) const;
  // Allocates the plans' NHWC buffers not allocated yet (after the arena, at each preparation).
  void allocate_nhwc_buffers();
  std::pair<cudaLibrary_t, cudaKernel_t> load(const std::string& source, const std::string& name);
  void progress(const std::string& step, double fraction, const std::string& message) const {
    if (options.progress) options.progress(step, fraction, message);
  }
};

// What step s of plan p runs: its name, kind, library and path (the layout or call kept), nodes and bytes;
// not its time.
KernelReport kernel_report(const Executor::Impl& im, PlanId p, std::size_t s);
// The groups of a plan's steps that take more than one step, with the plan's notes about each.
std::vector<SplitGroup> split_groups(const PlanSteps& ps);

}  // namespace fx::gpu
