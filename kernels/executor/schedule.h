// The order in which a plan's groups run. The plan lists its groups in one topological order (ties by the
// position of their first node); the executor runs them in another that keeps the L2 in mind.
#pragma once

#include <cstddef>
#include <vector>

#include "core/fusion/plan.h"
#include "core/graph/graph.h"

namespace fx::gpu {

// Indices into plan.groups() of the groups that launch (eliminated ones do not), in a topological order of
// the group graph: of the groups ready to run, the one sharing the most input bytes with the group that ran
// last goes first (its operands are likely still in the L2), otherwise the plan's order.
std::vector<std::size_t> execution_order(const Graph& g, const Plan& plan);

}  // namespace fx::gpu
