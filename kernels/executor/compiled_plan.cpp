#include "kernels/executor/compiled_plan.h"

#include <stdexcept>
#include <utility>

#include "kernels/common/cuda_call.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/memory_plan.h"
#include "kernels/executor/sort_step.h"

namespace fx::gpu {

LoadedKernel::~LoadedKernel() {
  if (library_) cudaLibraryUnload(library_);
}

LoadedKernel::LoadedKernel(LoadedKernel&& o) noexcept
    : library_(std::exchange(o.library_, nullptr)), function_(std::exchange(o.function_, nullptr)) {}

LoadedKernel& LoadedKernel::operator=(LoadedKernel&& o) noexcept {
  if (this != &o) {
    if (library_) cudaLibraryUnload(library_);
    library_ = std::exchange(o.library_, nullptr);
    function_ = std::exchange(o.function_, nullptr);
  }
  return *this;
}

void* PlanBuffers::value(ValueId v) const { return memory.pointer(graph, plan, v); }
void* PlanBuffers::nhwc(ValueId v) const { return memory.nhwc_pointer(plan, v); }

void launch_kernel(cudaKernel_t function, int block, std::int64_t grid, std::vector<void*> pointers,
                   cudaStream_t stream) {
  std::vector<void*> args;
  for (void*& ptr : pointers) args.push_back(&ptr);
  FX_CUDA_CALL(cudaLaunchKernel(reinterpret_cast<const void*>(function), dim3(static_cast<unsigned>(grid)),
                                dim3(static_cast<unsigned>(block)), args.data(), 0, stream));
}

void GeneratedLaunch::launch(const Step& step, const PlanBuffers& b, cudaStream_t stream) const {
  launch_layout(step, loaded.function(), step.kernel.block, step.kernel.grid, b, stream);
}

std::vector<void*> GeneratedLaunch::pointers(const Step& step, const PlanBuffers& b) const {
  // A step run channels-last reads and writes the NHWC buffers (its scalars have only the one).
  auto at = [&](ValueId v) {
    if (!channels_last || has_one_layout(b.graph, v)) return b.value(v);
    void* nhwc = b.nhwc(v);
    if (!nhwc) throw std::logic_error(step.kernel.name + ": " + b.graph.value_name(v) + " has no NHWC buffer");
    return nhwc;
  };
  std::vector<void*> ptrs;
  for (ValueId v : step.kernel.inputs) ptrs.push_back(at(v));
  for (ValueId v : step.kernel.outputs) ptrs.push_back(at(v));
  return ptrs;
}

void GeneratedLaunch::launch_layout(const Step& step, cudaKernel_t function, int block, std::int64_t grid,
                                    const PlanBuffers& b, cudaStream_t stream) const {
  launch_kernel(function, block, grid, pointers(step, b), stream);
}

void LibraryLaunch::launch(const Step&, const PlanBuffers& b, cudaStream_t stream) const {
  call->launch(b, stream, part);
}

void SortLaunch::launch(const Step&, const PlanBuffers& b, cudaStream_t stream) const { sort->launch(b, stream); }

void ConversionLaunch::launch(const Step& step, const PlanBuffers& b, cudaStream_t stream) const {
  void* nchw = b.value(conversion.value);
  void* nhwc = b.nhwc(conversion.value);
  if (!nhwc) throw std::logic_error(step.kernel.name + ": the value has no NHWC buffer");
  // The source, then the destination.
  launch_kernel(function, step.kernel.block, step.kernel.grid,
                conversion.to_nhwc ? std::vector<void*>{nchw, nhwc} : std::vector<void*>{nhwc, nchw}, stream);
}

void Step::launch(const PlanBuffers& b, cudaStream_t stream) const {
  std::visit([&](const auto& kind) { kind.launch(*this, b, stream); }, action);
}

}  // namespace fx::gpu
