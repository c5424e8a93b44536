#include "kernels/profile/gpu_clocks.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>

#include <cuda_runtime.h>

#include "kernels/common/event_timing.h"

namespace fx::gpu {

void ClockSpan::add(const ClockSample& s) {
  ++samples;
  if (s.reasons & kClockGpuIdle) return;
  sm_mhz_min = busy_samples == 0 ? s.sm_mhz : std::min(sm_mhz_min, s.sm_mhz);
  sm_mhz_max = std::max(sm_mhz_max, s.sm_mhz);
  power_w_max = std::max(power_w_max, s.power_w);
  temperature_c_max = std::max(temperature_c_max, s.temperature_c);
  reasons |= s.reasons & ~static_cast<std::uint64_t>(kClockGpuIdle);
  busy_sm_mhz.push_back(s.sm_mhz);
  ++busy_samples;
}

void ClockSpan::merge(const ClockSpan& other) {
  samples += other.samples;
  timeline.insert(timeline.end(), other.timeline.begin(), other.timeline.end());
  max_sm_mhz = std::max(max_sm_mhz, other.max_sm_mhz);
  power_limit_w = std::max(power_limit_w, other.power_limit_w);
  if (other.busy_samples == 0) return;
  sm_mhz_min = busy_samples == 0 ? other.sm_mhz_min : std::min(sm_mhz_min, other.sm_mhz_min);
  sm_mhz_max = std::max(sm_mhz_max, other.sm_mhz_max);
  power_w_max = std::max(power_w_max, other.power_w_max);
  temperature_c_max = std::max(temperature_c_max, other.temperature_c_max);
  reasons |= other.reasons;
  busy_sm_mhz.insert(busy_sm_mhz.end(), other.busy_sm_mhz.begin(), other.busy_sm_mhz.end());
  busy_samples += other.busy_samples;
}

unsigned ClockSpan::sm_mhz_median() const {
  if (busy_sm_mhz.empty()) return 0;
  std::vector<unsigned> v = busy_sm_mhz;
  return upper_median(v);
}

namespace {

struct ReasonName {
  std::uint64_t bit;
  const char* name;   // in a sentence: "held back by the power cap"
  const char* brief;  // in a tuning note
};

constexpr std::array<ReasonName, 8> kReasonNames = {{
    {kClockApplicationsSetting, "the applications clock setting", "app clocks"},
    {kClockSwPowerCap, "the power cap", "power cap"},
    {kClockHwSlowdown, "a hardware slowdown", "hw slowdown"},
    {kClockSyncBoost, "sync boost", "sync boost"},
    {kClockSwThermal, "thermal slowdown (software)", "thermal"},
    {kClockHwThermal, "thermal slowdown (hardware)", "hw thermal"},
    {kClockHwPowerBrake, "the power brake", "power brake"},
    {kClockDisplaySetting, "the display clock setting", "display clocks"},
}};

std::string join(const std::vector<std::string>& parts, const char* sep, const char* last) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += i + 1 == parts.size() ? last : sep;
    out += parts[i];
  }
  return out;
}

std::string mhz_range(const ClockSpan& s) {
  return std::to_string(s.sm_mhz_min) + "-" + std::to_string(s.sm_mhz_max);
}

std::string watts(double w) { return std::to_string(static_cast<long>(std::lround(w))) + " W"; }

}  // namespace

std::vector<std::string> clock_reason_names(std::uint64_t reasons) {
  std::vector<std::string> out;
  for (const ReasonName& r : kReasonNames) {
    if (reasons & r.bit) out.emplace_back(r.name);
  }
  return out;
}

std::string describe_clock_span(const ClockSpan& s) {
  if (s.samples == 0) return "";
  if (s.busy_samples == 0) {
    return "the GPU was idle in " + std::string(s.samples == 1 ? "the one sample" : "all " + std::to_string(s.samples) + " samples") +
           " of its clocks (the work ran between samples)";
  }
  std::string out = "SM clock " + std::to_string(s.sm_mhz_median()) + " MHz";
  const std::string highest = s.max_sm_mhz ? "highest " + std::to_string(s.max_sm_mhz) : "";
  if (s.sm_mhz_min != s.sm_mhz_max) {
    out += " (median; " + mhz_range(s) + (highest.empty() ? "" : ", " + highest) + ")";
  } else if (!highest.empty()) {
    out += " (" + highest + ")";
  }
  if (s.power_w_max > 0) {
    out += ", up to " + watts(s.power_w_max);
    if (s.power_limit_w > 0) out += " of " + watts(s.power_limit_w);
  }
  if (s.temperature_c_max) out += ", up to " + std::to_string(s.temperature_c_max) + " C";
  const std::vector<std::string> why = clock_reason_names(s.reasons);
  out += why.empty() ? "; nothing held the clocks back" : "; held back by " + join(why, ", ", " and ");
  out += " (" + std::to_string(s.busy_samples) + (s.busy_samples == 1 ? " sample)" : " samples)");
  return out;
}

std::string clock_span_brief(const ClockSpan& s) {
  if (s.busy_samples < kBriefSamples) return "";
  std::string out = "SM " + std::to_string(s.sm_mhz_median()) + " MHz";
  if (s.sm_mhz_min != s.sm_mhz_max) out += " (" + mhz_range(s) + ")";
  for (const ReasonName& r : kReasonNames) {
    if (s.reasons & r.bit) out += std::string(", ") + r.brief;
  }
  return out;
}

// ---- NVML, opened at run time ----

namespace {

using NvmlDevice = struct nvmlDevice_st*;
using NvmlReturn = int;  // nvmlReturn_t; NVML_SUCCESS is 0
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlClockSm = 1;           // NVML_CLOCK_SM
constexpr int kNvmlTemperatureGpu = 0;    // NVML_TEMPERATURE_GPU

struct Nvml {
  void* lib = nullptr;
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*by_pci_bus_id)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*max_clock)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*power)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*power_limit)(NvmlDevice, unsigned*) = nullptr;
  NvmlReturn (*temperature)(NvmlDevice, int, unsigned*) = nullptr;
  NvmlReturn (*reasons)(NvmlDevice, unsigned long long*) = nullptr;

  std::string error(NvmlReturn r) const {
    return error_string ? std::string(error_string(r)) : "NVML error " + std::to_string(r);
  }
};

template <typename F>
bool find(void* lib, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

}  // namespace

struct ClockMonitor::Impl {
  Nvml nvml;
  bool initialised = false;
  NvmlDevice device = nullptr;
  std::string why_not;
  unsigned max_sm_mhz = 0;
  double power_limit_w = 0;
  mutable std::mutex error_mutex;  // sample() runs on a watch's thread
  mutable std::string last_error;

  explicit Impl(int ordinal) {
    if (ordinal < 0) {
      why_not = "not asked to read them";
      return;
    }
    nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!nvml.lib) {
      const char* e = dlerror();
      why_not = "NVML not found (" + std::string(e ? e : "libnvidia-ml.so.1") + ")";
      return;
    }
    // Renamed in CUDA 12.2's NVML; the old name stays for older drivers.
    if (!find(nvml.lib, "nvmlDeviceGetCurrentClocksEventReasons", nvml.reasons)) {
      find(nvml.lib, "nvmlDeviceGetCurrentClocksThrottleReasons", nvml.reasons);
    }
    find(nvml.lib, "nvmlErrorString", nvml.error_string);
    // Power, its limit, the temperature and the highest clock are extras: without them the SM clock and the
    // reasons still come.
    find(nvml.lib, "nvmlDeviceGetMaxClockInfo", nvml.max_clock);
    find(nvml.lib, "nvmlDeviceGetPowerUsage", nvml.power);
    find(nvml.lib, "nvmlDeviceGetEnforcedPowerLimit", nvml.power_limit);
    find(nvml.lib, "nvmlDeviceGetTemperature", nvml.temperature);
    if (!find(nvml.lib, "nvmlInit_v2", nvml.init) || !find(nvml.lib, "nvmlShutdown", nvml.shutdown) ||
        !find(nvml.lib, "nvmlDeviceGetHandleByPciBusId_v2", nvml.by_pci_bus_id) ||
        !find(nvml.lib, "nvmlDeviceGetClockInfo", nvml.clock) || !nvml.reasons) {
      why_not = "the driver's NVML lacks a function this needs (the SM clock, the clocks-event reasons)";
      return;
    }
    if (const NvmlReturn r = nvml.init(); r != kNvmlSuccess) {
      why_not = "NVML did not start: " + nvml.error(r);
      return;
    }
    initialised = true;
    // NVML numbers devices its own way; the PCI bus id names the one CUDA calls `ordinal` (CUDA_VISIBLE_DEVICES
    // included).
    std::array<char, 64> bus{};
    if (const cudaError_t e = cudaDeviceGetPCIBusId(bus.data(), static_cast<int>(bus.size()), ordinal); e != cudaSuccess) {
      cudaGetLastError();  // not an error of the run: leave no last error behind for a later check to find
      why_not = std::string("no PCI bus id for CUDA device ") + std::to_string(ordinal) + ": " + cudaGetErrorString(e);
      return;
    }
    if (const NvmlReturn r = nvml.by_pci_bus_id(bus.data(), &device); r != kNvmlSuccess) {
      why_not = "NVML has no device at " + std::string(bus.data()) + ": " + nvml.error(r);
      device = nullptr;
      return;
    }
    if (nvml.max_clock) nvml.max_clock(device, kNvmlClockSm, &max_sm_mhz);
    unsigned mw = 0;
    if (nvml.power_limit && nvml.power_limit(device, &mw) == kNvmlSuccess) power_limit_w = mw / 1000.0;
  }

  ~Impl() {
    if (initialised) nvml.shutdown();
    // The library stays loaded: NVML's own threads may still be winding down.
  }
};

ClockMonitor::ClockMonitor(int cuda_ordinal) : impl_(std::make_unique<Impl>(cuda_ordinal)) {}
ClockMonitor::~ClockMonitor() = default;

bool ClockMonitor::available() const { return impl_->device != nullptr; }
const std::string& ClockMonitor::why_not() const { return impl_->why_not; }
unsigned ClockMonitor::max_sm_mhz() const { return impl_->max_sm_mhz; }
double ClockMonitor::power_limit_w() const { return impl_->power_limit_w; }

std::string ClockMonitor::last_error() const {
  std::lock_guard<std::mutex> lock(impl_->error_mutex);
  return impl_->last_error;
}

std::optional<ClockSample> ClockMonitor::sample() const {
  if (!available()) return std::nullopt;
  const Nvml& n = impl_->nvml;
  ClockSample s;
  unsigned long long reasons = 0;
  unsigned mw = 0;
  NvmlReturn r = n.clock(impl_->device, kNvmlClockSm, &s.sm_mhz);
  if (r == kNvmlSuccess) r = n.reasons(impl_->device, &reasons);
  if (r != kNvmlSuccess) {
    std::lock_guard<std::mutex> lock(impl_->error_mutex);
    impl_->last_error = n.error(r);
    return std::nullopt;
  }
  s.reasons = reasons;
  if (n.power && n.power(impl_->device, &mw) == kNvmlSuccess) s.power_w = mw / 1000.0;
  if (n.temperature) n.temperature(impl_->device, kNvmlTemperatureGpu, &s.temperature_c);
  return s;
}

struct ClockWatch::Impl {
  const ClockMonitor& monitor;
  std::chrono::milliseconds period;
  std::function<bool()> first_done;
  std::mutex m;
  std::condition_variable cv;
  bool stopping = false, in_rest = false;
  ClockSpan span, after;
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::thread thread;

  Impl(const ClockMonitor& mon, std::chrono::milliseconds p, std::function<bool()> done)
      : monitor(mon), period(p), first_done(std::move(done)) {
    for (ClockSpan* s : {&span, &after}) {
      s->max_sm_mhz = mon.max_sm_mhz();
      s->power_limit_w = mon.power_limit_w();
    }
  }

  void take() {
    // Polled before the sample: a sample taken once the first part is done belongs to the rest.
    const bool rest = in_rest || (first_done && first_done());
    const std::optional<ClockSample> s = monitor.sample();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    std::lock_guard<std::mutex> lock(m);
    in_rest = rest;
    if (!s) return;
    ClockSpan& into = rest ? after : span;
    into.add(*s);
    into.timeline.emplace_back(ms, *s);
  }

  void run() {
    std::unique_lock<std::mutex> lock(m);
    while (!stopping) {
      lock.unlock();
      take();
      lock.lock();
      cv.wait_for(lock, period, [&] { return stopping; });
    }
  }

  // Stops the thread and joins it; true if it was running.
  bool halt() {
    {
      std::lock_guard<std::mutex> lock(m);
      stopping = true;
    }
    cv.notify_all();
    if (!thread.joinable()) return false;
    thread.join();
    return true;
  }
};

ClockWatch::ClockWatch(const ClockMonitor& monitor, std::chrono::milliseconds period, std::function<bool()> first_done)
    : impl_(std::make_unique<Impl>(monitor, period, std::move(first_done))) {
  if (monitor.available()) {
    Impl* impl = impl_.get();
    impl->thread = std::thread([impl] { impl->run(); });
  }
}

ClockWatch::~ClockWatch() { impl_->halt(); }

ClockSpan ClockWatch::stop() {
  if (impl_->halt()) impl_->take();  // the state as the work ended
  std::lock_guard<std::mutex> lock(impl_->m);
  return impl_->span;
}

ClockSpan ClockWatch::rest() const {
  std::lock_guard<std::mutex> lock(impl_->m);
  return impl_->after;
}

}  // namespace fx::gpu
