// fusion-cli: the command-line face of Fusion Explorer. Verbs live in their own files and register
// themselves (command.h); this file only dispatches.
#include <iostream>

#include "app/cli/command.h"
#include "app/remote/remote_run.h"

int main(int argc, char** argv) {
  using namespace fx::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  auto usage = [](std::ostream& os) {
    os << "usage: fusion-cli <verb> [options]\n\nverbs:\n";
    for (const auto& [name, c] : commands()) {
      os << "  " << name << std::string(name.size() < 11 ? 11 - name.size() : 1, ' ') << c.summary << "\n";
    }
    os << "\n'fusion-cli <verb> --help' describes a verb.\n";
  };
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage(args.empty() ? std::cerr : std::cout);
    return args.empty() ? kBadInput : kOk;
  }
  if (args[0] == "--version") {
    std::cout << "fusion-cli " << fx::remote::cli_version() << "\n";
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
