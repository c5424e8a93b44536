// ONNX import: reads an ONNX model (protobuf) and maps it to the graph format. The GUI's File > Open of a
// .onnx file and `fusion-cli import` both call import_onnx_file(); build the result with build_graph().
//
// This header is free of protobuf and ONNX types, so core and the GUI never see them. The library target
// fx_onnx is always present; in a build configured without protobuf/libonnx (FX_WITH_ONNX off or not
// found) onnx_import_available() is false and every import returns one diagnostic saying so.
//
// Example (GUI):
//   std::vector<std::string> warnings;
//   fx::Expected<fx::GraphSpec> spec = fx::import_onnx_file(path, fx::OnnxImportOptions{}, warnings);
//   if (!spec) show(fx::format_diagnostics(spec.errors(), path));
//   else { auto graph = fx::build_graph(*spec); show(warnings); ... }
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"

namespace fx {

struct OnnxImportOptions {
  // Values for symbolic dimensions (ONNX dim_param, e.g. "batch_size" or "N"); from --dim NAME=VALUE.
  std::map<std::string, std::int64_t> dims;
  // Value for a symbolic or unknown dimension that `dims` does not name; each use is reported as a warning.
  std::int64_t default_dim = 1;
  // Files larger than this are refused before parsing (protobuf itself stops at 2 GiB).
  std::size_t max_file_bytes = std::size_t{2047} << 20;
  // Graph name; empty: the file's stem for import_onnx_file, the ONNX graph's name for import_onnx_bytes.
  std::string name;
};

// True when this build links protobuf and libonnx.
bool onnx_import_available();

// Reads and maps one ONNX file. Errors (unreadable, not ONNX, a node that references nothing, an output
// whose shape nobody can infer) come back as diagnostics whose pointer names the place in the model,
// e.g. "/graph/node/12". Warnings (ops imported as `custom`, assumed dimensions, dtypes narrowed to the
// format's set) are appended to `warnings`, one line each.
Expected<GraphSpec> import_onnx_file(const std::filesystem::path& path, const OnnxImportOptions& options,
                                     std::vector<std::string>& warnings);

// The same for a serialized ModelProto in memory; `source_name` names it in messages and defaults the graph name.
Expected<GraphSpec> import_onnx_bytes(std::string_view bytes, const std::string& source_name,
                                      const OnnxImportOptions& options, std::vector<std::string>& warnings);

}  // namespace fx
