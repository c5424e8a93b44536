// fusion-cli import: an ONNX model to a graph file.
#include <charconv>

#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "app/import/onnx_import.h"
#include "core/graph/graph_io.h"

namespace fx::cli {
namespace {

// "NAME=VALUE" with VALUE a whole number >= 1.
bool parse_dim(const std::string& text, std::string& name, std::int64_t& value) {
  const auto eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) return false;
  name = text.substr(0, eq);
  const char* first = text.data() + eq + 1;
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, value);
  return ec == std::errc() && end == last && first != last && value >= 1;
}

int import_model(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {"--quiet"}, {"-o", "--dim", "--default-dim", "--name"}, {{"--output", "-o"}});
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli import: " << (args.ok() ? "name one .onnx file" : args.error()) << "\n";
    return kBadInput;
  }
  OnnxImportOptions options;
  for (const std::string& d : args.values("--dim")) {
    std::string name;
    std::int64_t value = 0;
    if (!parse_dim(d, name, value)) {
      err << "fusion-cli import: --dim takes NAME=VALUE with VALUE a whole number >= 1, got '" << d << "'\n";
      return kBadInput;
    }
    options.dims[name] = value;
  }
  if (auto d = args.value("--default-dim")) {
    std::string ignored;
    if (!parse_dim("x=" + *d, ignored, options.default_dim)) {
      err << "fusion-cli import: --default-dim takes a whole number >= 1\n";
      return kBadInput;
    }
  }
  if (auto n = args.value("--name")) options.name = *n;
  const std::string& file = args.positionals()[0];
  const std::string shown = display_name(file);
  std::vector<std::string> warnings;
  auto spec = [&]() -> Expected<GraphSpec> {
    if (!is_std_stream(file)) return import_onnx_file(file, options, warnings);
    auto bytes = read_input(file, options.max_file_bytes);
    if (!bytes) return bytes.errors();
    return import_onnx_bytes(*bytes, shown, options, warnings);
  }();
  for (const std::string& w : warnings) {
    if (!args.has("--quiet")) err << shown << ": warning: " << w << "\n";
  }
  if (!spec) return report_errors(err, file, format_diagnostics(spec.errors(), shown));
  auto g = build_graph(*spec);
  if (!g) return report_errors(err, file, format_diagnostics(g.errors(), shown));
  const std::string path = args.value("-o").value_or("-");
  auto w = write_output(path, save_graph(*g), out);
  if (!w) return report_errors(err, path, format_diagnostics(w.errors(), path));
  if (!is_std_stream(path) && !args.has("--quiet")) {
    err << "wrote " << path << ": " << g->num_nodes() << " nodes, " << g->inputs().size() << " inputs\n";
  }
  return kOk;
}

Register import_cmd(
    {"import", "convert an ONNX model to a graph file",
     "usage: fusion-cli import MODEL.onnx [-o OUT.json] [--dim NAME=VALUE]... [--default-dim N] [--name NAME]\n"
     "                        [--quiet]\n\n"
     "Maps ONNX operators to the graph format's ops (Gemm, MatMul, Conv, BatchNormalization, LayerNormalization,\n"
     "Softmax, Reduce*, elementwise math, Reshape/Transpose/Concat/Slice/Split, Cast, TopK, ...). Anything else\n"
     "imports as an opaque `custom` node named after the ONNX op, with the shape ONNX's shape inference gives;\n"
     "a warning lists them. Initializers become weights (only their shapes and dtypes are kept); one-element\n"
     "constants become number literals. Symbolic dimensions take --dim NAME=VALUE, else --default-dim\n"
     "(default 1), with a warning. Writes the graph to OUT.json, or to stdout (also for -o -); MODEL - reads stdin. Exit code 2 for files that are\n"
     "not ONNX or cannot be mapped, and in builds without ONNX support.\n",
     import_model});

}  // namespace
}  // namespace fx::cli
