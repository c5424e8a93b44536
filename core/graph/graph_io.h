// The JSON graph format, version 1: parsing with located errors, and a canonical, stable save.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/graph/graph.h"

namespace fx {

inline constexpr std::string_view kGraphFormat = "fusion-explorer/graph";
inline constexpr int kGraphFormatVersion = 1;

// Limits that keep hostile files from exhausting memory or the stack.
struct LoadLimits {
  std::size_t max_file_bytes = 64u << 20;  // 64 MiB of JSON: a 10,000-node graph is ~4 MiB; parsing peaks near 20x
  int max_depth = 64;                       // JSON nesting; the format needs 5
  std::size_t max_nodes = 1'000'000;
  std::size_t max_rank = kMaxRank;
};

Expected<GraphSpec> parse_graph_spec(std::string_view json_text, const LoadLimits& limits = {});
Expected<Graph> load_graph(std::string_view json_text, const LoadLimits& limits = {});
Expected<Graph> load_graph_file(const std::filesystem::path& path, const LoadLimits& limits = {});

// Canonical JSON: fixed key order, every node's shape and dtype written, two-space indent, trailing newline.
std::string save_graph(const Graph& graph);

// Reads a whole file, or a diagnostic naming the file and the OS error.
Expected<std::string> read_text_file(const std::filesystem::path& path, std::size_t max_bytes);
// Writes atomically: a temporary file in the same folder, then rename; the old file survives a failure.
Expected<bool> write_text_file_atomic(const std::filesystem::path& path, std::string_view text);

}  // namespace fx
