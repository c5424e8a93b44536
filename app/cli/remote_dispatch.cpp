#include "app/cli/remote_dispatch.h"

#include <filesystem>

#include "app/cli/command.h"
#include "app/remote/remote_run.h"
#include "app/remote/shared_queue.h"

namespace fx::cli {
namespace {

// run's options that name files on this computer; each is copied to, or back from, the target.
const std::set<std::string> kFileOptions{"--plan", "--json", "--csv", "--trace", "--device"};
// Options that cannot work on another machine: a folder of arrays written there, a dialogue on stdin.
const std::set<std::string> kLocalOnly{"--dump", "--timings-on-request"};

// One of run's arguments into the remote run: a file to copy there or back, or a word passed on as written.
bool place_argument(remote::RemoteRun& run, const std::string& name, const std::string& word, const std::string& value,
                    std::ostream& err) {
  if (kLocalOnly.count(name)) {
    err << "fusion-cli run: " << name << " works only on this computer, not on " << run.target.name << "\n";
    return false;
  }
  const bool to_stdout = value == "-" && name != "--plan" && name != "--device";  // streamed back as it is
  if (to_stdout) run.options.insert(run.options.end(), {name, value});
  else if (name == "--plan") run.plan = value;
  else if (name == "--json") run.json = value;
  else if (name == "--csv") run.csv = value;
  else if (name == "--trace") run.trace = value;
  else if (name == "--device" && std::filesystem::is_regular_file(value)) run.device_file = value;
  else if (name == "--device") run.options.insert(run.options.end(), {"--device", value});
  else run.options.push_back(word);  // a flag, or an option and (next) its value, passed on as written
  return true;
}

std::optional<std::string> run_target_argument(const std::vector<std::string>& argv) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--target" && i + 1 < argv.size()) return argv[i + 1];
    if (argv[i].rfind("--target=", 0) == 0) return argv[i].substr(9);
  }
  return std::nullopt;
}

int run_on_target(const std::vector<std::string>& argv, const std::set<std::string>& flags,
                  const std::set<std::string>& options,
                  int (*local_run)(const std::vector<std::string>&, std::ostream&, std::ostream&), std::ostream& out,
                  std::ostream& err) {
  std::set<std::string> with_target = options;
  with_target.insert("--target");
  const Args args(argv, flags, with_target);
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli run: " << (args.ok() ? "name one graph file" : args.error()) << "\n";
    return kBadInput;
  }
  std::string error;
  auto target = remote::resolve_target(*args.value("--target"), remote::targets_file(), &error);
  if (!target) {
    err << "fusion-cli run: " << error << "\n";
    return kBadInput;
  }
  remote::RemoteRun run;
  run.target = *target;
  run.graph = args.positionals()[0];
  std::vector<std::string> rest;  // argv less --target (for a local run) ...
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string word = argv[i], value;
    const auto eq = word.find('=');
    const std::string name = word.rfind("--", 0) == 0 && eq != std::string::npos ? word.substr(0, eq) : word;
    const bool takes_value = name == "--target" || kFileOptions.count(name);
    if (takes_value) value = eq != std::string::npos && name != word ? word.substr(eq + 1) : argv[++i];
    if (name != "--target") {
      rest.push_back(word);
      if (takes_value && name == word) rest.push_back(value);
    }
    if (!target->remote() || i == args.positional_indices()[0] || name == "--target") continue;
    if (!place_argument(run, name, word, value, err)) return kBadInput;
  }
  if (!target->remote()) return local_run(rest, out, err);
  return remote::run_remote(run, out, err);
}

}  // namespace

std::optional<int> run_elsewhere(const std::vector<std::string>& argv, const std::set<std::string>& flags,
                                 const std::set<std::string>& options,
                                 int (*local_run)(const std::vector<std::string>&, std::ostream&, std::ostream&),
                                 std::ostream& out, std::ostream& err) {
  if (run_target_argument(argv)) return run_on_target(argv, flags, options, local_run, out, err);
  std::string error;
  const auto shared = remote::shared_gpu_config(&error);
  if (!error.empty()) {
    err << "fusion-cli run: " << error << "\n";
    return kBadInput;
  }
  if (!shared) return std::nullopt;
  // The queued run is this program again, with FX_SHARED_GPU_SLOT set so that it runs at once.
  std::vector<std::string> self{"/proc/self/exe", "run"};
  self.insert(self.end(), argv.begin(), argv.end());
  return remote::run_in_queue(*shared, self, out, err);
}

}  // namespace fx::cli
