// The persistent tuning cache: what a run chose by timing (a generated kernel's layout, a cuBLASLt call's
// configuration, a convolution's NCHW or NHWC way, a horizontal GEMM whole or split), kept on disk so that the
// next run on the same GPU and software skips the search, as torch.compile keeps its autotuning results.
//
// An entry is valid only for the environment it was tuned in (device, driver, CUDA, NVRTC, cuBLASLt, cuDNN
// and this program's version) and for its problem (a kernel's source, a library call's shapes, dtypes,
// layouts and epilogue). One file per entry, written atomically: concurrent runs writing at once lose and
// corrupt nothing (the last writer of one entry wins, and both wrote the same kind of answer). A damaged
// entry is a miss with a warning; a cache folder that cannot be written is used read-only with a warning.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fx::gpu {

// What decides whether a tuning result still holds, beyond the problem itself.
struct TuningEnvironment {
  std::string device;       // "NVIDIA H100 80GB HBM3"
  std::string uuid;         // the device's UUID where known (two boards of one model may tune alike, but need not)
  int compute_capability = 0;  // 90
  std::int64_t memory_bytes = 0;
  std::string software;     // driver, runtime, NVRTC, cuBLASLt, cuDNN and program versions, in one line
  nlohmann::json to_json() const;
};

// One tuned decision: its kind ("layout", "gemm", "conv_nhwc", "split") and the problem it was tuned for, in
// full (a kernel's source hash and alternatives, a library problem's description).
struct TuningKey {
  std::string kind;
  std::string problem;
};

struct TuningEntry {
  nlohmann::json choice;  // what was chosen, in the tuner's own form
  std::string tuned_at;   // UTC, "2026-11-26 23:40:12 UTC"
};

class TuningCache {
 public:
  // $XDG_CACHE_HOME/fusion-explorer/tuning, else ~/.cache/fusion-explorer/tuning; empty when neither is set.
  static std::filesystem::path default_dir();

  // An empty dir disables the cache: every find misses and nothing is stored.
  TuningCache(std::filesystem::path dir, TuningEnvironment environment);

  bool enabled() const { return !dir_.empty(); }
  std::optional<TuningEntry> find(const TuningKey& key);
  // Records a choice; a failed write (read-only folder, full disk) is a warning, never an error: the run
  // goes on, uncached. Returns whether it was written.
  bool store(const TuningKey& key, const nlohmann::json& choice);

  // What went wrong with the cache during this run, for people: each damaged entry, the first failed write.
  const std::vector<std::string>& warnings() const { return warnings_; }
  // Where an entry of this key lives (tests, and the report's "reused from").
  std::filesystem::path entry_path(const TuningKey& key) const;

 private:
  std::filesystem::path dir_;  // the folder of this environment's entries
  nlohmann::json environment_;
  std::vector<std::string> warnings_;
  bool write_failed_ = false;
};

// The current time as TuningEntry::tuned_at writes it.
std::string utc_timestamp();

}  // namespace fx::gpu
