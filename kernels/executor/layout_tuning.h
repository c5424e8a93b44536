// Choosing each generated kernel's layout over threads by timing it on the device (RunOptions::autotune), as
// Inductor autotunes its pointwise block sizes and as the cuBLASLt plan picks among its algorithms.
#pragma once

#include "kernels/executor/executor_internal.h"

namespace fx::gpu {

// Runs each plan that has a step to tune once, in order; a step with alternative layouts (GeneratedLaunch::alternatives)
// has each layout timed in interleaved rounds on the inputs its predecessors just wrote, with the run's cache
// protocol and the step before it run just before each timed launch (the L2 as the plan leaves it), and the
// fastest installed (StepInfo::layout_choice says which, with the times). With RunOptions::force_layout the given layout
// is installed untimed. A convolution that can run channels-last (LibraryStep::nhwc_ready) has its NCHW call
// timed against the NHWC way (conversion, call, conversion) the same way; when NHWC wins (or layout 2 is
// forced), its step becomes the three steps (LibraryLaunch::part). A cuBLASLt call has the search's best few
// configurations (Matmul::finalist_count) timed again the same way and the fastest kept. A horizontal GEMM
// (LibraryStep::offers_split) has its one strided-batched call timed against its parts run as calls of their
// own; when the parts win (or layout 2 is forced), its step becomes one step per part. Leaves outputs written:
// call before the outputs are poisoned for verification.
void tune_layouts(CompiledProgram& im);

}  // namespace fx::gpu
