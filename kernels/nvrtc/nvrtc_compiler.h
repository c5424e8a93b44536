// Run-time compilation of generated kernels with NVRTC, to a CUBIN for one architecture (sm_XY), cached in
// memory and on disk ($XDG_CACHE_HOME/fusion-explorer/nvrtc or ~/.cache/fusion-explorer/nvrtc) under a hash of
// the source, the options and the NVRTC version. Needs no GPU: tests and `fusion-cli codegen --compile` use it
// on machines without one. Thread-safe; compile_all compiles a batch on several threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace fx::gpu {

// A failed compile: the NVRTC log and the source, so the report shows both.
class CompileError : public std::runtime_error {
 public:
  CompileError(const std::string& kernel, std::string log, std::string source);
  const std::string& log() const { return log_; }
  const std::string& source() const { return source_; }

 private:
  std::string log_, source_;
};

// compile_seconds sums each NVRTC compile's own time; wall_seconds is how long callers waited for what was not
// in memory (NVRTC and disk reads). With compile_all's threads the sum exceeds the wait (it is near the CPU time
// the compiles took).
struct CompileStats {
  int compiled = 0, memory_hits = 0, disk_hits = 0;
  double compile_seconds = 0, wall_seconds = 0;
};

using Cubin = std::shared_ptr<const std::vector<char>>;

// One kernel of a batch: its source and the name of its kernel (for errors and the disk cache's check).
struct CompileRequest {
  std::string source, kernel_name;
};

// Told on the calling thread as a batch's compiles finish: how many of how many.
using CompileProgress = std::function<void(std::size_t done, std::size_t total)>;

class NvrtcCompiler {
 public:
  // An empty cache_dir disables the disk cache.
  explicit NvrtcCompiler(std::filesystem::path cache_dir = default_cache_dir());

  // arch: "sm_90". Throws CompileError with the log on a compile error, GpuError on an NVRTC failure.
  Cubin compile(const std::string& source, const std::string& kernel_name, const std::string& arch);
  // The CUBINs of `requests`, in order, as compile() gives each (the same bytes, counted in stats() the same
  // way); those in neither cache compile several at once, on up to max_threads() threads that each take the next
  // one as they finish (no thread for a single one). Every request is tried; then the first that failed, in request order, rethrows its error
  // here (a CompileError with its log and source), the others compiled and cached.
  std::vector<Cubin> compile_all(const std::vector<CompileRequest>& requests, const std::string& arch,
                                 const CompileProgress& progress = {});
  // Threads compile_all uses at most: the hardware's, and no more than 16 (NVRTC takes a core and a few hundred
  // MB per compile; a plan's batch seldom has more kernels than that to wait for at once).
  static std::size_t max_threads();
  // The PTX of the same compile for arch's virtual architecture (not cached): what a kernel's memory accesses
  // became (ld.global.v4.f32: one 16-byte load). Throws as compile() does.
  std::string ptx(const std::string& source, const std::string& kernel_name, const std::string& arch) const;
  CompileStats stats() const;
  std::vector<std::string> options(const std::string& arch) const;

  static std::filesystem::path default_cache_dir();
  static std::string nvrtc_version();

 private:
  struct Key;
  Key key_of(const std::string& source, const std::string& kernel_name, const std::vector<std::string>& opts) const;
  Cubin memory_hit(const Key& key);  // null when not in memory
  // The disk cache's CUBIN, else NVRTC's; kept in memory either way.
  Cubin from_disk_or_nvrtc(const Key& key, const std::string& source, const std::string& kernel_name,
                           const std::vector<std::string>& opts);

  std::filesystem::path cache_dir_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, Cubin> memory_;
  CompileStats stats_;
};

// FNV-1a, 64 bits: the cache key (collisions are checked by storing the key text beside the CUBIN).
std::uint64_t fnv1a64(const std::string& text, std::uint64_t seed = 14695981039346656037ull);

}  // namespace fx::gpu
