// Fusion groups as DOT clusters, coloured by fusion kind, for `fusion-cli dot --plan` and the GUI.
#pragma once

#include <vector>

#include "core/export/dot.h"
#include "core/fusion/plan.h"

namespace fx {

// Fill colour of a group: epilogue blue, horizontal orange, vertical green (the first that applies).
const char* fusion_kind_color(const Group& group);

// One cluster per group of more than one node ("g:mul vertical: mul+add+y").
std::vector<DotCluster> plan_clusters(const Graph& g, const Plan& plan);

}  // namespace fx
