// TEST ONLY: a deliberately faulting kernel, so the GPU-fault path (kernels/executor/gpu_fault.h, fusion-cli
// run's exit code 4 and "gpu_fault" report, the GUI's message) is tested against a real fault on a real GPU.
//
//   FX_TEST_FAULT_KERNEL=<group id>   the fused plan's generated kernel(s) of that group ("g:mul")
//   FX_TEST_FAULT_KERNEL=first        the fused plan's first generated kernel
//
// The chosen kernel stores to an address no allocation has (inline PTX, volatile: the compiler cannot drop
// it), which the GPU reports as cudaErrorIllegalAddress, a sticky error. Only this environment variable turns it
// on, read in test_fault_target() and nowhere else; no graph or plan file can reach it. Unset, the generated
// source is unchanged.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/codegen/codegen.h"

namespace fx::gpu::codegen {

inline constexpr const char* kTestFaultVariable = "FX_TEST_FAULT_KERNEL";

// The value of FX_TEST_FAULT_KERNEL; empty when it is unset or empty (the normal case).
std::string test_fault_target();

// `source` with the faulting store as the first statement of kernel `name`'s body. Throws std::logic_error when
// the source has no such kernel.
std::string with_test_fault(const std::string& source, const std::string& name);

// Applies FX_TEST_FAULT_KERNEL to one plan's generated kernels, given in launch order with their group ids.
// Returns a note for the plan's report naming what was changed, or nullopt when the variable is unset. Throws
// std::invalid_argument when it names a group with no generated kernel here (a typo must not pass as a clean run).
std::optional<std::string> apply_test_fault(const std::vector<std::pair<std::string, GeneratedKernel*>>& kernels);

}  // namespace fx::gpu::codegen
