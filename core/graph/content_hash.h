// Content hashes that tie a run report to the graph and the plan it measured: a report opened over another
// graph, or over the same graph with another plan, is recognised as such. FNV-1a 64, as 16 hex digits: a
// fingerprint against mix-ups, not a security measure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/graph/graph.h"

namespace fx {

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t seed = 0xcbf29ce484222325ULL);
std::string hex64(std::uint64_t value);

// The graph's inputs, nodes (ops, operands, attributes) and outputs; not its name or description, so a
// renamed copy of a graph hashes the same (the name is checked on its own).
std::string graph_content_hash(const Graph& graph);

}  // namespace fx
