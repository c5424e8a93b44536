// Choosing each generated kernel's layout over threads by timing it on the device (RunOptions::autotune), as
// Inductor autotunes its pointwise block sizes and as the cuBLASLt plan picks among its algorithms.
#pragma once

#include "kernels/executor/executor_internal.h"

namespace fx::gpu {

// The layout tuning pass: takes both compiled plans and leaves them tuned, one step at a time in plan order
// (each step's choice made by its decider and applied in one place: step_tuning.h), launching each step as it
// becomes so that the next is timed on the inputs its predecessors just wrote, with the run's cache protocol and
// the step before it run just before each timed launch (the L2 as the plan leaves it: tuning_rounds.h).
// - A generated kernel with alternative layouts (GeneratedLaunch::alternatives) has each timed in interleaved
//   rounds and the fastest installed (StepInfo::layout_choice says which, with the times).
// - A convolution that can run channels-last (LibraryStep::nhwc_ready) has its NCHW call timed against the NHWC
//   way (conversion, call, conversion); when NHWC wins, its step becomes three (LibraryLaunch::part).
// - A cuBLASLt call has the search's best few configurations (Matmul::finalist_count) timed again the same way
//   and the fastest kept.
// - A horizontal GEMM (LibraryStep::offers_split) has its one strided-batched call timed against its parts run
//   as calls of their own; when the parts win, its step becomes one step per part.
// Every timed choice is kept in the tuning cache (CompiledProgram::tuning) and taken from there by the next run
// with the same problem, environment and context (StepInfo::tuned_at says when it was timed), unless the run
// retunes. With RunOptions::force_layout the given layout is installed untimed (layout 2 makes a convolution
// NHWC and a horizontal GEMM its parts). Leaves outputs written: call before the outputs are poisoned for
// verification.
void tune_layouts(CompiledProgram& im);

}  // namespace fx::gpu
