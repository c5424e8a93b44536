// `fusion-cli run --target NAME|URL`: the run's own arguments, with its files swapped for the copies made on
// the target, handed to fx::remote (app/remote/remote_run.h); and the queue of a shared GPU server.
#pragma once

#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace fx::cli {

// Runs on the target named by --target, or in the shared server's queue (app/remote/shared_queue.h) where
// this machine is one; nullopt: run here and now. `flags` and `options` are run's own, so that its arguments
// are read exactly as a local run reads them. A target of "local" runs `local_run` without --target.
std::optional<int> run_elsewhere(const std::vector<std::string>& argv, const std::set<std::string>& flags,
                                 const std::set<std::string>& options,
                                 int (*local_run)(const std::vector<std::string>&, std::ostream&, std::ostream&),
                                 std::ostream& out, std::ostream& err);

}  // namespace fx::cli
