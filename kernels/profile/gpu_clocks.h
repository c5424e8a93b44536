// The GPU's SM clock, power and the reasons its clocks are held back, read through NVML while a timing runs.
//
// Compute-bound kernels run at the GPU's power limit, where the SM clock, and with it the time, depends on
// how long the GPU has been busy. A time measured on such a kernel is only true with the clocks it ran at, so
// a timing records them: a thread samples NVML every few milliseconds
// while the GPU works (ClockWatch) and the report says what the SM clock was and what held it back, as Nsight
// Compute reports the clocks it measured at.
//
// NVML is opened at run time (dlopen of the driver's libnvidia-ml.so.1), never linked: the toolkit on these
// machines ships no nvml.h and no stub, and a machine without the driver still runs everything else. Without
// it the monitor says why (ClockMonitor::why_not) and the report says that the clocks were not read.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fx::gpu {

// NVML's clocks-event reasons (nvmlClocksEventReason*, called nvmlClocksThrottleReason* before CUDA 12.2):
// bits of the stable C API, reproduced here so that nothing needs nvml.h.
enum ClockReason : std::uint64_t {
  kClockGpuIdle = 0x1,
  kClockApplicationsSetting = 0x2,
  kClockSwPowerCap = 0x4,
  kClockHwSlowdown = 0x8,
  kClockSyncBoost = 0x10,
  kClockSwThermal = 0x20,
  kClockHwThermal = 0x40,
  kClockHwPowerBrake = 0x80,
  kClockDisplaySetting = 0x100,
};

struct ClockSample {
  unsigned sm_mhz = 0;
  double power_w = 0;  // NVML's power reading (on Hopper an average over about a second)
  unsigned temperature_c = 0;
  std::uint64_t reasons = 0;  // ClockReason bits
};

// What the samples of one timing saw. Samples taken while the GPU idled (kClockGpuIdle: the host between two
// stretches of work) are counted but do not set the clock range, whose low end would be the idle clock. A
// sample as the work begins may still catch the clock ramping up from idle (the idle bit already clear), so the median is the clock the work ran at and the range says how far it strayed.
struct ClockSpan {
  int samples = 0, busy_samples = 0;
  unsigned sm_mhz_min = 0, sm_mhz_max = 0;
  std::vector<unsigned> busy_sm_mhz;  // every busy sample's SM clock, in order
  unsigned max_sm_mhz = 0;  // the device's highest SM clock; 0 where unknown
  double power_w_max = 0, power_limit_w = 0;
  unsigned temperature_c_max = 0;
  std::uint64_t reasons = 0;  // every reason seen in a busy sample
  // Every sample with its time in ms since the ClockWatch that took it started, idle ones included: the trace
  // export's counter tracks (core/export/timings_export.h). add() leaves it alone; merge() appends.
  std::vector<std::pair<double, ClockSample>> timeline;
  void add(const ClockSample& s);
  void merge(const ClockSpan& other);  // as if other's samples had been added here
  unsigned sm_mhz_median() const;  // the upper median of busy_sm_mhz; 0 without busy samples
};

// "the power cap", "thermal slowdown (software)", ... for each bit of `reasons` but kClockGpuIdle, in bit order.
std::vector<std::string> clock_reason_names(std::uint64_t reasons);
// "SM clock 1755 MHz (median; 1740-1980, highest 1980), up to 691 W of 700 W, up to 50 C; held back by the power
// cap (3 samples)"; for a span without busy samples, what it saw; "" for no samples.
std::string describe_clock_span(const ClockSpan& s);
// The short form for a tuning note: "SM 1755 MHz (1740-1980), power cap"; "" for fewer than kBriefSamples busy
// samples (a few milliseconds of tuning may hold one sample, perhaps of the clock ramping up from idle).
constexpr int kBriefSamples = 3;
std::string clock_span_brief(const ClockSpan& s);

// NVML for one CUDA device. Never throws: where NVML or the device cannot be read, available() is false and
// why_not() says why. A negative ordinal opens nothing (a run told not to read the clocks).
class ClockMonitor {
 public:
  explicit ClockMonitor(int cuda_ordinal);
  ~ClockMonitor();
  ClockMonitor(const ClockMonitor&) = delete;
  ClockMonitor& operator=(const ClockMonitor&) = delete;

  bool available() const;
  const std::string& why_not() const;
  std::optional<ClockSample> sample() const;  // nullopt when not available or the clock or reasons read failed
  std::string last_error() const;  // NVML's words for the last failed reading; "" if none failed
  unsigned max_sm_mhz() const;
  double power_limit_w() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Samples a monitor every `period` on a thread of its own, from construction until stop() (or destruction): the
// span of whatever the GPU ran meanwhile. With an unavailable monitor it starts no thread and stop() gives an
// empty span. With `first_done`, polled before each sample (from the sampling thread: it must be thread-safe,
// e.g. an atomic flag and cudaEventQuery), the samples taken before it first returns true make stop()'s span
// and the later ones rest()'s: the plan timing's whole rounds apart from the step-by-step rounds queued after.
inline constexpr std::chrono::milliseconds kClockPeriod{10};

class ClockWatch {
 public:
  explicit ClockWatch(const ClockMonitor& monitor, std::chrono::milliseconds period = kClockPeriod,
                      std::function<bool()> first_done = {});
  ~ClockWatch();  // stops and joins the thread, nothing more
  ClockWatch(const ClockWatch&) = delete;
  ClockWatch& operator=(const ClockWatch&) = delete;
  ClockSpan stop();        // the span (before `first_done`, where given); stops sampling, with a last sample
  ClockSpan rest() const;  // after stop(): the samples after `first_done` (empty without it)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx::gpu
