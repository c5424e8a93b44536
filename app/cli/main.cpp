// fusion-cli: the command-line face of Fusion Explorer. Verbs live in their own files and register
// themselves (command.h); this file only dispatches.
#include <iostream>

#include "app/cli/command.h"
#include "app/import/onnx_import.h"
#ifdef FX_HAVE_CUDA
#include "kernels/contraction/conv.h"
#endif

namespace {

// What this build can do, so a user (and the package test) can tell a CPU-only build from a GPU one.
std::string build_features() {
#ifdef FX_HAVE_CUDA
  const std::string cuda =
      fx::gpu::cudnn_available() ? "CUDA executor with cuDNN" : "CUDA executor without cuDNN (no convolutions)";
#else
  const std::string cuda = "no CUDA executor (analysis only)";
#endif
  return "built with: " + cuda + ", " + (fx::onnx_import_available() ? "ONNX import" : "no ONNX import");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fx::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto usage = [](std::ostream& os) {
    os << "usage: fusion-cli <verb> [options]\n\nverbs:\n";
    for (const auto& [name, c] : commands()) {
      os << "  " << name << std::string(name.size() < 11 ? 11 - name.size() : 1, ' ') << c.summary << "\n";
    }
    os << "\n'fusion-cli <verb> --help' describes a verb; --help-all describes them all. Wherever a verb reads or\n"
          "writes a file, - means stdin or stdout; -- ends the options.\n";
  };
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? kBadInput : kOk;
  }
  if (args[0] == "--help-all") {  // every verb's help in one text: what help2man turns into the man page
    usage(std::cout);
    for (const auto& [name, c] : commands()) std::cout << "\n" << name << "\n" << c.help;
    return kOk;
  }
  if (args[0] == "--version") {
    std::cout << "fusion-cli " << FX_VERSION << "\n" << build_features() << "\n";
    return kOk;
  }
  auto it = commands().find(args[0]);
  if (it == commands().end()) {
    std::cerr << "fusion-cli: unknown verb '" << args[0] << "'\n\n";
    usage(std::cerr);
    return kBadInput;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const auto& a : rest) {
    if (a == "--") break;  // after it, "--help" is a file name
    if (a == "--help" || a == "-h") {
      std::cout << it->second.help;
      return kOk;
    }
  }
  try {
    return it->second.run(rest, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "fusion-cli " << args[0] << ": " << e.what() << "\n";
    return kFailed;
  }
}
