// `fusion-cli run` on a remote target: check the remote fusion-cli's version, make a private folder there
// (0700), copy the graph and plan in, run `fusion-cli run` there with its progress streamed back line by line,
// copy the report (and CSV/trace) back, remove the folder. A cancel (SIGTERM, SIGINT, SIGHUP) stops the remote
// process and removes the folder; if this process dies outright, the closed connection does the same there.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "app/remote/target.h"

namespace fx::remote {

// Exit codes besides fusion-cli run's own (0 verified, 1 failed, 2 bad input, 3 no CUDA device, 4 GPU fault):
// the target could not be used (ssh failed, no or an incompatible fusion-cli there), and a cancelled run.
inline constexpr int kTargetUnusable = 5;
inline constexpr int kCancelled = 130;

// The version this fusion-cli reports ("fusion-cli X.Y.Z" on --version).
std::string cli_version();
// A remote version works with this one when major and minor match (the run's options and the report format
// change only with those).
bool compatible_versions(const std::string& local, const std::string& remote);

struct RemoteRun {
  RunTarget target;
  std::string graph;                        // the local graph file
  std::optional<std::string> plan;          // --plan's local file
  std::optional<std::string> device_file;   // --device given as a local file
  std::vector<std::string> options;         // the rest of run's arguments, passed on as they are
  std::optional<std::string> json, csv, trace;  // local files the report and exports are copied back to
};

// Runs it; lines of the remote stdout go to out as they arrive (with --progress: its JSON lines), the remote
// stderr and our own messages to err. Returns the remote fusion-cli's exit code, or one of the two above.
int run_remote(const RemoteRun& run, std::ostream& out, std::ostream& err);

}  // namespace fx::remote
