// NVRTC compile and the two-level cache.
#include "kernels/nvrtc/nvrtc_compiler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "kernels/common/cuda_call.h"

namespace fx::gpu {

CompileError::CompileError(const std::string& kernel, std::string log, std::string source)
    : std::runtime_error("NVRTC could not compile kernel " + kernel + ":\n" + log),
      log_(std::move(log)),
      source_(std::move(source)) {}

std::uint64_t fnv1a64(const std::string& text, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::filesystem::path NvrtcCompiler::default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::filesystem::path(xdg) / "fusion-explorer" / "nvrtc";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "fusion-explorer" / "nvrtc";
  return {};
}

std::string NvrtcCompiler::nvrtc_version() {
  int major = 0, minor = 0;
  FX_CUDA_CALL(nvrtcVersion(&major, &minor));
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcCompiler::NvrtcCompiler(std::filesystem::path cache_dir) : cache_dir_(std::move(cache_dir)) {}

std::vector<std::string> NvrtcCompiler::options(const std::string& arch) const {
  // Always an explicit sm_XY: NVRTC's default (compute_75) would give PTX only and an empty CUBIN.
  return {"--gpu-architecture=" + arch, "-std=c++17", "--generate-line-info"};
}

CompileStats NvrtcCompiler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

namespace {

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::optional<std::vector<char>> read_cached(const std::filesystem::path& file, const std::string& key_text) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string header;
  if (!std::getline(in, header, '\0') || header != key_text) return std::nullopt;  // a hash collision or a stale file
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.empty()) return std::nullopt;
  return data;
}

void write_cached(const std::filesystem::path& file, const std::string& key_text, const std::vector<char>& cubin) {
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const auto tmp = file.string() + ".tmp" + std::to_string(std::rand());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;  // an unwritable cache only costs a recompile next time
    out.write(key_text.data(), static_cast<std::streamsize>(key_text.size() + 1));
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

// Owns an nvrtcProgram for the duration of one compile.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) nvrtcDestroyProgram(&p);
  }
};

// Compiles and returns the CUBIN, or with `ptx` the PTX (opts then name a virtual architecture).
std::vector<char> run_nvrtc(const std::string& source, const std::string& name, const std::vector<std::string>& opts,
                            bool ptx = false) {
  Program prog;
  const std::string file = name + ".cu";
  FX_CUDA_CALL(nvrtcCreateProgram(&prog.p, source.c_str(), file.c_str(), 0, nullptr, nullptr));
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(prog.p, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  FX_CUDA_CALL(nvrtcGetProgramLogSize(prog.p, &log_size));
  std::string log(log_size, '\0');
  if (log_size > 1) FX_CUDA_CALL(nvrtcGetProgramLog(prog.p, log.data()));
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (r == NVRTC_ERROR_COMPILATION) throw CompileError(name, log, source);
  FX_CUDA_CALL(r);
  std::size_t size = 0;
  if (ptx) {
    FX_CUDA_CALL(nvrtcGetPTXSize(prog.p, &size));
    std::vector<char> text(size);
    FX_CUDA_CALL(nvrtcGetPTX(prog.p, text.data()));
    return text;
  }
  FX_CUDA_CALL(nvrtcGetCUBINSize(prog.p, &size));
  std::vector<char> cubin(size);
  FX_CUDA_CALL(nvrtcGetCUBIN(prog.p, cubin.data()));
  if (cubin.empty()) throw CompileError(name, "NVRTC returned an empty CUBIN (was a virtual architecture given?)", source);
  return cubin;
}

}  // namespace

std::string NvrtcCompiler::ptx(const std::string& source, const std::string& kernel_name, const std::string& arch) const {
  auto opts = options(arch);
  if (arch.rfind("sm_", 0) == 0) opts.front() = "--gpu-architecture=compute_" + arch.substr(3);
  const std::vector<char> text = run_nvrtc(source, kernel_name, opts, true);
  return std::string(text.begin(), std::find(text.begin(), text.end(), '\0'));
}

Cubin NvrtcCompiler::compile(const std::string& source, const std::string& kernel_name, const std::string& arch) {
  const auto opts = options(arch);
  std::string key_text = "nvrtc " + nvrtc_version();
  for (const auto& o : opts) key_text += " " + o;
  const std::uint64_t key = fnv1a64(source, fnv1a64(key_text));
  {
    std::lock_guard lock(mutex_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
  }
  key_text += " " + hex(fnv1a64(source)) + " " + kernel_name;
  const auto file = cache_dir_.empty() ? std::filesystem::path{} : cache_dir_ / (hex(key) + ".cubin");
  if (!file.empty()) {
    if (auto data = read_cached(file, key_text)) {
      auto cubin = std::make_shared<const std::vector<char>>(std::move(*data));
      std::lock_guard lock(mutex_);
      ++stats_.disk_hits;
      return memory_[key] = cubin;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto data = run_nvrtc(source, kernel_name, opts);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!file.empty()) write_cached(file, key_text, data);
  auto cubin = std::make_shared<const std::vector<char>>(std::move(data));
  std::lock_guard lock(mutex_);
  ++stats_.compiled;
  stats_.compile_seconds += seconds;
  return memory_[key] = cubin;
}

}  // namespace fx::gpu
