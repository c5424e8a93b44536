// The JSON layer under graph_io.h, for code that reads or writes more than a graph (fused-graph files,
// reports). Includes nlohmann/json, so keep it out of widely included headers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/graph/graph.h"
#include "core/graph/graph_io.h"

namespace fx {

// Parses text as JSON with a nesting-depth and size limit; syntax errors carry line and column.
Expected<nlohmann::json> parse_json_text(std::string_view text, const LoadLimits& limits = {});

// Reads the graph part of a document. `extra_top_level_keys` are keys the caller handles (e.g. "fusion").
Expected<GraphSpec> spec_from_json(const nlohmann::json& doc, const LoadLimits& limits = {},
                                   std::initializer_list<std::string_view> extra_top_level_keys = {});

nlohmann::ordered_json graph_to_json(const Graph& graph);

// Pretty-prints with two-space indent, keeping arrays of numbers/strings and small objects on one line so
// that graph files stay readable and diffs stay small. Ends with a newline.
std::string dump_pretty(const nlohmann::ordered_json& value);

}  // namespace fx
