// What the tuning cache's CPU tests share: a temporary folder (removed with everything in it, permissions
// restored first) and a fixed device environment.
#pragma once

#include <stdlib.h>

#include <filesystem>

#include "kernels/tuning/tuning_cache.h"

namespace fx::gpu {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/fx-tuning-XXXXXX";
    path = ::mkdtemp(name);
  }
  ~TempDir() {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_directory()) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

inline TuningEnvironment h100() {
  return {"NVIDIA H100 80GB HBM3", "GPU-1234", 90, 85'000'000'000, "driver 580.159, CUDA 13.0, NVRTC 13.0"};
}

}  // namespace fx::gpu
