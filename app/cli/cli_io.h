// fusion-cli's files: "-" names stdin where a file is read and stdout where one is written (POSIX
// utility convention), so verbs compose in pipes: `fusion-cli import m.onnx -o - | fusion-cli fuse - --auto`.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "core/cost/device_description.h"
#include "core/graph/graph.h"

namespace fx::cli {

inline bool is_std_stream(const std::string& path) { return path == "-"; }

// A whole file, or all of stdin for "-" (refused past max_bytes, like a file).
Expected<std::string> read_input(const std::string& path, std::size_t max_bytes);

// A graph file, or a graph read from stdin for "-".
Expected<Graph> load_graph_input(const std::string& path);

// A --device value: a preset name, a device JSON file, or "-" for a device JSON on stdin.
Expected<DeviceDescription> resolve_device_input(const std::string& name_or_file);

// Writes the file atomically, or `text` to `out` for "-".
Expected<bool> write_output(const std::string& path, std::string_view text, std::ostream& out);

// How messages name the file: "<stdin>" for "-".
std::string display_name(const std::string& path);

}  // namespace fx::cli
