// Internal to kernels/executor: running the library calls of contraction groups (cuBLASLt, cuDNN) as steps
// of a plan, next to the generated kernels. Plan decisions live in contraction_plan.h (no CUDA).
#pragma once

#include <memory>
#include <string>

#include "core/fusion/plan.h"
#include "kernels/contraction/conv.h"
#include "kernels/contraction/device_memory.h"
#include "kernels/contraction/matmul.h"
#include "kernels/executor/contraction_plan.h"
#include "kernels/executor/executor.h"

namespace fx::gpu {

// One cuBLASLt handle and one cuDNN handle per executor (both bound to its one stream), made on first use.
struct ContractionRuntime {
  std::unique_ptr<Matmul> matmul;
  std::unique_ptr<Conv2d> conv;
};

// A step that is a library call. Buffers made at preparation (stacked weights, folded conv weights and bias)
// belong to the step; the values it reads and writes live in the executor's arena.
class LibraryStep {
 public:
  explicit LibraryStep(LibraryCall call) : call_(std::move(call)) {}

  const LibraryCall& call() const { return call_; }
  std::string library() const { return call_.kind == LibraryCallKind::conv2d ? "cuDNN" : "cuBLASLt"; }
  // The report's library path in plan `plan`, with the algorithm it ran (cuBLASLt's timed choice, cuDNN's), once
  // it has run.
  std::string describe(const Executor::Impl& im, int plan) const;

  // Once the graph inputs are on the device: stacks horizontal weights, folds batchnorm, sums biases.
  void prepare(Executor::Impl& im);
  void launch(Executor::Impl& im, int plan) const;

 private:
  MatmulProblem horizontal_problem(const Executor::Impl& im, int plan) const;

  LibraryCall call_;
  contraction_detail::DeviceMemory weights_, bias_;
};

// Adds a contraction group's steps to plan p: its library calls, then generated kernels for the elementwise
// nodes no epilogue absorbed; notes say why a group takes more than one launch.
void append_contraction_steps(Executor::Impl& im, int p, const Group& group, const std::vector<NodeId>& nodes,
                              int group_index);
// Runs every library step's preparation (after fill_inputs, before any launch).
void prepare_library_steps(Executor::Impl& im);

}  // namespace fx::gpu
