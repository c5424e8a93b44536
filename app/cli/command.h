// fusion-cli's verbs register themselves here; main() dispatches. Each verb lives in its own file.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace fx::cli {

// Exit codes: 0 ok, 1 a run failed (verification mismatch, a non-sticky GPU error), 2 bad input or usage,
// 3 no CUDA device / built without CUDA, 4 a GPU fault (a sticky CUDA error: a kernel faulted, the context is
// dead; kernels/executor/gpu_fault.h). The GUI tells these apart.
// 5: run --target could not use the target (ssh failed, no or an incompatible fusion-cli there); 130: cancelled.
enum ExitCode : int { kOk = 0, kFailed = 1, kBadInput = 2, kNoDevice = 3, kGpuFault = 4, kTargetUnusable = 5 };

// A tiny argument parser: options are declared up front so that a typo is an error, not ignored.
// An option declared as "--accept..." takes every following word up to the next option.
class Args {
 public:
  Args(std::vector<std::string> argv, std::set<std::string> flags, std::set<std::string> options,
       std::map<std::string, std::string> aliases = {});
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  bool has(const std::string& flag) const { return flags_.count(flag) || values_.count(flag); }
  std::optional<std::string> value(const std::string& option) const;
  std::vector<std::string> values(const std::string& option) const;  // repeated option, or space-separated list
  const std::vector<std::string>& positionals() const { return positionals_; }
  // Where each positional stands in argv (a run on a remote target rewrites them).
  const std::vector<std::size_t>& positional_indices() const { return positional_indices_; }

 private:
  std::set<std::string> flags_;
  std::multimap<std::string, std::string> values_;
  std::vector<std::string> positionals_;
  std::vector<std::size_t> positional_indices_;
  std::string error_;
};

struct Command {
  std::string name;
  std::string summary;  // one line for the verb list
  std::string help;     // the full --help text
  std::function<int(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)> run;
};

std::map<std::string, Command>& commands();

struct Register {
  explicit Register(Command c) { commands().emplace(c.name, std::move(c)); }
};

// Prints the diagnostics of a failed load as "FILE: error: /pointer: message" and returns kBadInput.
int report_errors(std::ostream& err, const std::string& file, const std::string& diagnostics_text);

}  // namespace fx::cli
