// A shared GPU server for a workshop: every `fusion-cli run` on it queues, first come first served, for one
// of the server's GPUs; one run at a time per GPU; each waiting client is told its place in line (a progress
// line on stdout, which a remote client streams to its progress bar); a run over the time limit is stopped.
// The organiser turns it on with /etc/fusion-explorer/shared-gpu.json (docs/remote.md). The queue is kept by
// fusion-cli itself (flock'd files in one folder): it holds runs that go through fusion-cli, not other programs.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace fx::remote {

struct SharedGpuConfig {
  std::string queue_dir;      // a folder every user can write (mode 1777)
  int gpus = 1;               // runs at once: GPU i gets CUDA_VISIBLE_DEVICES=i
  double time_limit_s = 600;  // 0: none
};

// The server's config: $FX_SHARED_GPU_CONFIG, else /etc/fusion-explorer/shared-gpu.json; nullopt when there is
// none, or when this process is already a queued run (FX_SHARED_GPU_SLOT is set). A config that does not
// parse is reported in *error (and the run refused: an organiser's mistake must not let runs share a GPU).
std::optional<SharedGpuConfig> shared_gpu_config(std::string* error);

// Waits for a GPU, then runs argv (with FX_SHARED_GPU_SLOT and CUDA_VISIBLE_DEVICES set) within the time
// limit. The child's output goes straight to ours. Returns its exit code; 1 after the time limit, 130 after
// a SIGTERM/SIGINT/SIGHUP (passed on to the run), 2 for a queue folder it cannot use.
int run_in_queue(const SharedGpuConfig& config, const std::vector<std::string>& argv, std::ostream& out,
                 std::ostream& err);

}  // namespace fx::remote
