// Internal to kernels/executor: the run's check of both plans against the float64 CPU reference
// (core/reference), on the very inputs the run generated on the device.
#pragma once

#include <string>

#include "kernels/executor/executor_internal.h"

namespace fx::gpu {

// Whether the reference is cheap enough to run without being asked: every tensor under 16M elements and
// the whole evaluation under 256M element visits (a few seconds of plain loops); `why` says why not.
bool reference_is_affordable(const Graph& graph, std::string& why);

// After both plans ran once: fills rep.reference_checks (or rep.reference_note) as im.options.reference asks,
// and clears rep.verified when a plan disagrees with the reference.
void check_against_reference(CompiledProgram& im, RunReport& rep);

}  // namespace fx::gpu
