// The ONNX importer in a build without protobuf and libonnx: every import says how to get one.
#include "app/import/onnx_import.h"

namespace fx {
namespace {

Diagnostic unavailable(const std::string& source) {
  return Diagnostic{"", "cannot import " + source + ": this build has no ONNX support (install libonnx-dev, "
                        "libprotobuf-dev and protobuf-compiler, e.g. with scripts/install-deps.sh, then reconfigure)"};
}

}  // namespace

bool onnx_import_available() { return false; }

Expected<GraphSpec> import_onnx_file(const std::filesystem::path& path, const OnnxImportOptions&,
                                     std::vector<std::string>&) {
  return unavailable(path.string());
}

Expected<GraphSpec> import_onnx_bytes(std::string_view, const std::string& source_name, const OnnxImportOptions&,
                                      std::vector<std::string>&) {
  return unavailable(source_name);
}

}  // namespace fx
