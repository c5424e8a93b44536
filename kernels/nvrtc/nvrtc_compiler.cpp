// NVRTC compile and the two-level cache.
#include "kernels/nvrtc/nvrtc_compiler.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

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

// Written to a file of its own, then renamed over the cache file: a reader sees the old file or the whole new one,
// and writers of the same key (threads, processes) never write into one file.
void write_cached(const std::filesystem::path& file, const std::string& key_text, const std::vector<char>& cubin) {
  static std::atomic<unsigned> serial{0};
  std::error_code ec;
  std::filesystem::create_directories(file.parent_path(), ec);
  const auto tmp = file.string() + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(serial++);
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;  // an unwritable cache only costs a recompile next time
    out.write(key_text.data(), static_cast<std::streamsize>(key_text.size() + 1));
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    if (!out.flush()) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return;
    }
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

// The memory cache's key (source, options, NVRTC version) and the disk cache's file and the text it checks.
struct NvrtcCompiler::Key {
  std::uint64_t hash = 0;
  std::string text;
  std::filesystem::path file;
};

NvrtcCompiler::Key NvrtcCompiler::key_of(const std::string& source, const std::string& kernel_name,
                                         const std::vector<std::string>& opts) const {
  Key k;
  k.text = "nvrtc " + nvrtc_version();
  for (const auto& o : opts) k.text += " " + o;
  k.hash = fnv1a64(source, fnv1a64(k.text));
  k.text += " " + hex(fnv1a64(source)) + " " + kernel_name;
  if (!cache_dir_.empty()) k.file = cache_dir_ / (hex(k.hash) + ".cubin");
  return k;
}

Cubin NvrtcCompiler::memory_hit(const Key& key) {
  std::lock_guard lock(mutex_);
  auto it = memory_.find(key.hash);
  if (it == memory_.end()) return nullptr;
  ++stats_.memory_hits;
  return it->second;
}

Cubin NvrtcCompiler::from_disk_or_nvrtc(const Key& key, const std::string& source, const std::string& kernel_name,
                                        const std::vector<std::string>& opts) {
  if (!key.file.empty()) {
    if (auto data = read_cached(key.file, key.text)) {
      auto cubin = std::make_shared<const std::vector<char>>(std::move(*data));
      std::lock_guard lock(mutex_);
      ++stats_.disk_hits;
      return memory_[key.hash] = cubin;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto data = run_nvrtc(source, kernel_name, opts);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!key.file.empty()) write_cached(key.file, key.text, data);
  auto cubin = std::make_shared<const std::vector<char>>(std::move(data));
  std::lock_guard lock(mutex_);
  ++stats_.compiled;
  stats_.compile_seconds += seconds;
  return memory_[key.hash] = cubin;
}

Cubin NvrtcCompiler::compile(const std::string& source, const std::string& kernel_name, const std::string& arch) {
  const auto opts = options(arch);
  const Key key = key_of(source, kernel_name, opts);
  if (Cubin hit = memory_hit(key)) return hit;
  const auto t0 = std::chrono::steady_clock::now();
  Cubin cubin = from_disk_or_nvrtc(key, source, kernel_name, opts);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard lock(mutex_);
  stats_.wall_seconds += seconds;
  return cubin;
}

std::size_t NvrtcCompiler::max_threads() {
  constexpr std::size_t kMostThreads = 16;
  return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, kMostThreads);
}

namespace {

// Runs job(i) for i in [0, n) on `threads` threads, each taking the next index as it becomes free, and tells
// `progress` on the calling thread as each finishes. job must not throw. NVRTC compiles separate programs on
// separate threads (its header names only nvrtcGetTypeName as not thread-safe).
void run_on_threads(std::size_t n, std::size_t threads, const std::function<void(std::size_t)>& job,
                    const CompileProgress& progress) {
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::condition_variable finished;
  std::size_t done = 0;
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      job(i);
      std::lock_guard lock(mutex);
      ++done;
      finished.notify_one();
    }
  };
  std::vector<std::jthread> pool;  // joined on leaving, also when starting one more throws
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(work);
  std::unique_lock lock(mutex);
  for (std::size_t told = 0; told < n;) {
    finished.wait(lock, [&] { return done > told; });
    told = done;
    if (progress) {
      lock.unlock();
      progress(told, n);
      lock.lock();
    }
  }
}

}  // namespace

std::vector<Cubin> NvrtcCompiler::compile_all(const std::vector<CompileRequest>& requests, const std::string& arch,
                                              const CompileProgress& progress) {
  const auto opts = options(arch);
  std::vector<Cubin> out(requests.size());
  // Requests in neither cache, each key once (pending); slot[i]: request i's place among them. A later request
  // with a key already pending takes the first one's CUBIN as a memory hit, as it would compiled in order.
  std::vector<std::size_t> pending;
  std::vector<Key> keys;
  std::map<std::uint64_t, std::size_t> slot_of_key;
  std::vector<std::optional<std::size_t>> slot(requests.size());
  std::vector<bool> repeated(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    Key key = key_of(requests[i].source, requests[i].kernel_name, opts);
    if (auto it = slot_of_key.find(key.hash); it != slot_of_key.end()) {
      slot[i] = it->second;
      repeated[i] = true;
    } else if (!(out[i] = memory_hit(key))) {
      slot[i] = slot_of_key[key.hash] = pending.size();
      pending.push_back(i);
      keys.push_back(std::move(key));
    }
  }
  std::vector<Cubin> made(pending.size());
  std::vector<std::exception_ptr> failed(pending.size());
  auto job = [&](std::size_t j) {
    const CompileRequest& r = requests[pending[j]];
    try {
      made[j] = from_disk_or_nvrtc(keys[j], r.source, r.kernel_name, opts);
    } catch (...) {
      failed[j] = std::current_exception();
    }
  };
  if (!pending.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    if (pending.size() == 1) {
      job(0);
      if (progress) progress(1, 1);
    } else {
      run_on_threads(pending.size(), std::min(pending.size(), max_threads()), job, progress);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard lock(mutex_);
    stats_.wall_seconds += seconds;
  }
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!slot[i]) continue;  // a memory hit
    if (failed[*slot[i]]) std::rethrow_exception(failed[*slot[i]]);
    out[i] = made[*slot[i]];
    if (repeated[i]) {
      std::lock_guard lock(mutex_);
      ++stats_.memory_hits;
    }
  }
  return out;
}

}  // namespace fx::gpu
