// Run-time compilation of generated kernels with NVRTC, to a CUBIN for one architecture (sm_XY), cached in
// memory and on disk ($XDG_CACHE_HOME/fusion-explorer/nvrtc or ~/.cache/fusion-explorer/nvrtc) under a hash of
// the source, the options and the NVRTC version. Needs no GPU: tests and `fusion-cli codegen --compile` use it
// on machines without one. Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
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

struct CompileStats {
  int compiled = 0, memory_hits = 0, disk_hits = 0;
  double compile_seconds = 0;
};

using Cubin = std::shared_ptr<const std::vector<char>>;

class NvrtcCompiler {
 public:
  // An empty cache_dir disables the disk cache.
  explicit NvrtcCompiler(std::filesystem::path cache_dir = default_cache_dir());

  // arch: "sm_90". Throws CompileError with the log on a compile error, GpuError on an NVRTC failure.
  Cubin compile(const std::string& source, const std::string& kernel_name, const std::string& arch);
  // The PTX of the same compile for arch's virtual architecture (not cached): what a kernel's memory accesses
  // became (ld.global.v4.f32: one 16-byte load). Throws as compile() does.
  std::string ptx(const std::string& source, const std::string& kernel_name, const std::string& arch) const;
  CompileStats stats() const;
  std::vector<std::string> options(const std::string& arch) const;

  static std::filesystem::path default_cache_dir();
  static std::string nvrtc_version();

 private:
  std::filesystem::path cache_dir_;
  mutable std::mutex mutex_;
  std::map<std::uint64_t, Cubin> memory_;
  CompileStats stats_;
};

// FNV-1a, 64 bits: the cache key (collisions are checked by storing the key text beside the CUBIN).
std::uint64_t fnv1a64(const std::string& text, std::uint64_t seed = 14695981039346656037ull);

}  // namespace fx::gpu
