// Internal to kernels/executor: a plan compiled for the device. A CompiledPlan is a list of steps of a closed set
// of kinds (a std::variant): a generated kernel, a library call (cuBLASLt, cuDNN), a CUB sort, a layout
// conversion. Each kind owns how it launches, given the plan's buffers (memory_plan.h) and a stream.
// A new kind of step: a struct with `launch(const Step&, const PlanBuffers&, cudaStream_t)`, added to
// StepAction (Step::launch visits it), and a look at the places that ask a step its kind: kernel_report
// (executor_run.cpp) and the tuning passes, which change only the kinds they know.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/graph/graph.h"
#include "kernels/codegen/codegen.h"
#include "kernels/executor/channels_last_plan.h"
#include "kernels/executor/plan_id.h"

namespace fx::gpu {

class MemoryPlan;   // memory_plan.h
class LibraryStep;  // contraction_step.h: a cuBLASLt/cuDNN call
class SortStep;     // sort_step.h: a CUB segmented sort (sort, topk)

// A kernel loaded from its CUBIN; unloads it when destroyed. Move-only, so every compiled kernel has one owner.
class LoadedKernel {
 public:
  LoadedKernel() = default;
  LoadedKernel(cudaLibrary_t library, cudaKernel_t function) : library_(library), function_(function) {}
  ~LoadedKernel();
  LoadedKernel(LoadedKernel&& o) noexcept;
  LoadedKernel& operator=(LoadedKernel&& o) noexcept;
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  cudaKernel_t function() const { return function_; }

 private:
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t function_ = nullptr;
};

// What a step's launch reads and writes: one plan's buffers in the memory plan.
struct PlanBuffers {
  const Graph& graph;
  const MemoryPlan& memory;
  PlanId plan;
  void* value(ValueId v) const;  // the value's buffer (throws std::logic_error for one it has not)
  void* nhwc(ValueId v) const;   // its NHWC buffer (channels_last.h), or null where it has none
};

// Launches `function` with one device pointer per kernel parameter, in order.
void launch_kernel(cudaKernel_t function, int block, std::int64_t grid, std::vector<void*> pointers,
                   cudaStream_t stream);

struct Step;

// A generated kernel (NVRTC). Step::kernel is the installed layout's source and launch shape; `alternatives`
// are its other layouts, compiled when the run autotunes. Tuning installs the fastest by swapping it with the
// installed one (layout_tuning.cpp), so every compiled layout stays owned here.
struct GeneratedLaunch {
  LoadedKernel loaded;
  struct Layout {
    KernelLayout layout;
    LoadedKernel loaded;
  };
  std::vector<Layout> alternatives;
  // Reads and writes its values' NHWC buffers (set by keep_channels_last for a kernel that runs on NHWC data).
  bool channels_last = false;
  void launch(const Step& step, const PlanBuffers& b, cudaStream_t stream) const;
  // The device pointers it is launched with: its inputs', then its outputs' buffers.
  std::vector<void*> pointers(const Step& step, const PlanBuffers& b) const;
  // One launch in a given compiled layout (the installed one, or an alternative while they are timed).
  void launch_layout(const Step& step, cudaKernel_t function, int block, std::int64_t grid, const PlanBuffers& b,
                     cudaStream_t stream) const;
};

// What a library step launches: the whole call, or one of the three launches of a convolution run
// channels-last (LibraryStep::nhwc_ready): x to NHWC, the cuDNN call, y back to NCHW.
enum class CallPart : std::uint8_t { whole, to_nhwc, conv_nhwc, to_nchw };

// A cuBLASLt or cuDNN call. Several steps may share one call (a convolution run channels-last as three).
struct LibraryLaunch {
  explicit LibraryLaunch(std::shared_ptr<LibraryStep> c, CallPart p = CallPart::whole) : call(std::move(c)), part(p) {}
  std::shared_ptr<LibraryStep> call;
  CallPart part = CallPart::whole;
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
  bool is_conversion() const { return part == CallPart::to_nhwc || part == CallPart::to_nchw; }
  void launch(const Step& step, const PlanBuffers& b, cudaStream_t stream) const;
};

// A sort or topk node run by CUB's segmented sort.
struct SortLaunch {
  std::shared_ptr<SortStep> sort;
  void launch(const Step& step, const PlanBuffers& b, cudaStream_t stream) const;
};

// A value converted between its NCHW buffer and its NHWC one (keep_channels_last): a tiled transpose generated
// for it (`loaded`), or a channels-last convolution's own conversion (`owner` keeps that call, and so its
// compiled conversion `function`, alive).
struct ConversionLaunch {
  LayoutConversion conversion;
  LoadedKernel loaded;
  std::shared_ptr<LibraryStep> owner;
  cudaKernel_t function = nullptr;
  void launch(const Step& step, const PlanBuffers& b, cudaStream_t stream) const;
};

using StepAction = std::variant<GeneratedLaunch, LibraryLaunch, SortLaunch, ConversionLaunch>;

// What a step is for the report and the memory plan, whatever its kind.
struct StepInfo {
  // Its name, nodes, the values it reads and writes (the memory plan gives each output a buffer), bytes and,
  // for a generated kernel or conversion, its source and launch shape. A library call's has no source.
  GeneratedKernel kernel;
  std::string group;
  std::optional<double> group_predicted_ms;
  std::int64_t group_predicted_bytes = 0;
  std::string layout_choice;  // the layout or call tuning kept, and why
  std::string tuned_at;       // where that choice came from the tuning cache: when it was tuned
};

struct Step : StepInfo {
  StepAction action;

  void launch(const PlanBuffers& b, cudaStream_t stream) const;
  // The step's kind, or null for another kind.
  const GeneratedLaunch* generated() const { return std::get_if<GeneratedLaunch>(&action); }
  GeneratedLaunch* generated() { return std::get_if<GeneratedLaunch>(&action); }
  const LibraryLaunch* library() const { return std::get_if<LibraryLaunch>(&action); }
  LibraryLaunch* library() { return std::get_if<LibraryLaunch>(&action); }
  const SortLaunch* sort() const { return std::get_if<SortLaunch>(&action); }
  const ConversionLaunch* conversion() const { return std::get_if<ConversionLaunch>(&action); }
  // A library step's call (shared by the steps of one call), or null.
  LibraryStep* call() const {
    const LibraryLaunch* l = library();
    return l ? l->call.get() : nullptr;
  }
};

// One plan compiled: its steps in launch order, and the notes that say why a group runs as more than one step.
// Steps are fixed by compilation (Executor's constructor); only the tuning passes change them afterwards, before
// the verification, each in one place: apply_step_tuning (step_tuning.h) for tune_layouts' decisions, and
// apply_rewrite (channels_last.cpp) for keep_channels_last's. A step they add writes values that already have a
// buffer in the memory plan, or NHWC buffers of their own.
struct CompiledPlan {
  std::string name;  // plan_name(PlanId)
  std::vector<Step> steps;
  std::vector<std::string> notes;
  // The plan's views (core/analysis/views.h): each view group's value -> the value whose buffer it reads. A view
  // is no step: nothing is launched, timed or reported as a kernel for it (the notes name them).
  std::map<ValueId, ValueId> views;
  double predicted_ms = 0;
  std::int64_t bytes = 0;
  bool channels_last_planned = false;  // keep_channels_last has run on this plan (it runs once)
};

}  // namespace fx::gpu
