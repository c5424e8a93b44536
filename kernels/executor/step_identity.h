// Internal to kernels/executor: a step's identity for the counter pass (kernels/profile/counter_windows.h). Two
// steps with the same identity run the same code on the same problem in the same launch configuration, so from
// a cold L2 they move the same DRAM bytes, whichever buffers they read. The identity is built from what decides
// a step's behaviour: a generated kernel's source (the graph's names it was written with aside), launch shape and layout; a
// library call's problem, operand alignments and chosen algorithm. No identity (always measured): sorts, whose
// traffic may depend on their data, and calls whose choice is not established (attention).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/executor/compiled_plan.h"

namespace fx::gpu {

// A generated kernel's identity: its source with the graph's names it was written with (`names`, in the order of
// their roles: entry point, inputs, outputs, nodes; empty: the entry point's alone) replaced by their roles, its
// block and grid, and whether it runs on NHWC buffers. nullopt for a kernel without source.
std::optional<std::string> generated_identity(const GeneratedKernel& kernel, bool channels_last,
                                              const std::vector<std::string>& names = {});

// Step `st` of the plan whose buffers are `b`, once the plan has run (tuning done, algorithms chosen).
std::optional<std::string> measurement_identity(const Step& st, const PlanBuffers& b);

}  // namespace fx::gpu
