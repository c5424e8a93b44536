// Internal to kernels/executor: keeping a plan's values channels-last between its steps once layout tuning has
// chosen which convolutions run NHWC. The rules (which value lives in which layout, where it is converted) are
// channels_last_plan.h; this applies them to the steps.
#pragma once

#include "kernels/executor/executor_internal.h"

namespace fx::gpu {

// For each plan whose convolutions run channels-last (CallPart::conv_nhwc) in a way that gains from it: drops
// the conversions tuning put around each such convolution, marks the elementwise steps that run on NHWC data
// (GeneratedLaunch::channels_last), inserts one conversion step per value still needing one (ConversionLaunch, each saying
// which value for which reader), gives those values NHWC buffers (MemoryPlan::set_nhwc_buffers, allocated here) and
// says what changed in the plan's notes. A plan is left as tuning made it where keeping values NHWC would not
// move fewer bytes in conversions than converting x and y around each convolution (one convolution between NCHW
// neighbours: silently; otherwise a note says so), or where the NHWC copies would not fit in free device memory
// (a note); a plan already done is not done again. Call after tune_layouts, before verification.
void keep_channels_last(CompiledProgram& im);

}  // namespace fx::gpu
