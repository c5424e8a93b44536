#include "kernels/profile/dram_profiler.h"

// cuda.h only for the CUcontext type the range profiler takes; no cu* function is linked (see current_context).
#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>

#include "kernels/common/cuda_call.h"
#include "kernels/common/sticky_error.h"
#include "kernels/profile/cupti_exclusion.h"
#include "kernels/profile/l2_flush.h"

namespace fx::gpu {
namespace {

// All four fit in one pass on Hopper, so kernel replay runs each kernel once per range.
constexpr std::array<const char*, 4> kMetrics = {"dram__bytes_read.sum", "dram__bytes_write.sum",
                                                 "gpu__time_duration.sum", "lts__t_sectors_srcunit_tex_op_write.sum"};
constexpr double kL2SectorBytes = 32.0;
// Ranges one window may hold: the launch's kernels (cuBLASLt and cuDNN calls start a handful); more would be
// dropped by the counter image and reported, never silently lost.
constexpr std::size_t kMaxRangesPerLaunch = 64;
// The flush reads this many times the L2 size: Hopper's L2 is split in two partitions with its own replacement
// policy, so reading exactly one L2's worth does not reliably evict everything.
constexpr std::size_t kL2FlushMultiple = 3;
constexpr std::size_t kMinFlushBytes = std::size_t{8} << 20;

// Every CUPTI profiler params struct starts with its size, the *_STRUCT_SIZE of the header we compiled against.
template <typename Params>
Params make_params(std::size_t struct_size) {
  Params p{};
  p.structSize = struct_size;
  return p;
}
#define FX_CUPTI_PARAMS(Type) make_params<Type>(Type##_STRUCT_SIZE)

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string human_reason(const GpuError& e) {
  if (e.library() == "CUPTI") return detail::cupti_failure_reason(e.code(), first_line(e.what()));
  return "not measured: " + first_line(e.what());
}

// The range profiler needs the CUcontext the runtime made current. Linking libcuda would stop programs from
// starting on machines without a driver, so the driver's cuCtxGetCurrent is looked up through the runtime.
CUcontext current_context() {
  using GetCurrent = CUresult (*)(CUcontext*);  // PFN_cuCtxGetCurrent_v4000
  void* symbol = nullptr;
  cudaDriverEntryPointQueryResult found{};
  FX_CUDA_CALL(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &symbol, 4000, cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || symbol == nullptr) {
    detail::throw_call_error("CUDA driver", found, "cudaDriverEntryPointQueryResult", "cuCtxGetCurrent not found",
                             "cudaGetDriverEntryPointByVersion(\"cuCtxGetCurrent\")", __FILE__, __LINE__);
  }
  CUcontext ctx = nullptr;
  const CUresult status = reinterpret_cast<GetCurrent>(symbol)(&ctx);
  if (status != CUDA_SUCCESS || ctx == nullptr) {
    detail::throw_call_error("CUDA driver", status, "CUresult", "no current context", "cuCtxGetCurrent(&ctx)",
                             __FILE__, __LINE__);
  }
  return ctx;
}

// cuptiProfilerInitialize/DeInitialize are process-wide; profilers may overlap in lifetime, so count users.
class ProfilerApi {
 public:
  static void retain() {
    std::lock_guard lock(mutex());
    if (users() == 0) {
      auto p = FX_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
      FX_CUDA_CALL(cuptiProfilerInitialize(&p));
    }
    ++users();
  }
  static void release() noexcept {
    std::lock_guard lock(mutex());
    if (--users() == 0) {
      auto p = FX_CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params);
      (void)cuptiProfilerDeInitialize(&p);
    }
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static int& users() {
    static int n = 0;
    return n;
  }
};

// Range profiling switched on for a context for one window; off again on every exit path.
class RangeSession {
 public:
  explicit RangeSession(CUcontext ctx) {
    auto p = FX_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
    p.ctx = ctx;
    FX_CUDA_CALL(cuptiRangeProfilerEnable(&p));
    object_ = p.pRangeProfilerObject;
  }
  ~RangeSession() {
    auto p = FX_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
    p.pRangeProfilerObject = object_;
    (void)cuptiRangeProfilerDisable(&p);
  }
  RangeSession(const RangeSession&) = delete;
  RangeSession& operator=(const RangeSession&) = delete;

  CUpti_RangeProfiler_Object* object() const { return object_; }

 private:
  CUpti_RangeProfiler_Object* object_ = nullptr;
};

// Between cuptiRangeProfilerStart and Stop; stops on unwinding too, so a throwing launch leaves no open window.
class RunningWindow {
 public:
  explicit RunningWindow(CUpti_RangeProfiler_Object* object) : object_(object) {
    auto p = FX_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
    p.pRangeProfilerObject = object_;
    FX_CUDA_CALL(cuptiRangeProfilerStart(&p));
  }
  // True when every replay pass was submitted (always, with kernel replay and a one-pass config).
  bool stop() {
    auto p = FX_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
    p.pRangeProfilerObject = object_;
    running_ = false;
    FX_CUDA_CALL(cuptiRangeProfilerStop(&p));
    return p.isAllPassSubmitted != 0;
  }
  ~RunningWindow() {
    if (!running_) return;
    auto p = FX_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
    p.pRangeProfilerObject = object_;
    (void)cuptiRangeProfilerStop(&p);
  }
  RunningWindow(const RunningWindow&) = delete;
  RunningWindow& operator=(const RunningWindow&) = delete;

 private:
  CUpti_RangeProfiler_Object* object_;
  bool running_ = true;
};

std::vector<KernelCounters> not_measured(int num_launches, const std::string& reason) {
  std::vector<KernelCounters> out(static_cast<std::size_t>(std::max(num_launches, 0)));
  for (int i = 0; i < num_launches; ++i) {
    out[i].launch_index = i;
    out[i].reason = reason;
  }
  return out;
}

}  // namespace

struct DramProfiler::Impl {
  int device = 0;
  std::string reason;
  std::string chip;
  bool api_retained = false;
  CUcontext ctx = nullptr;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<std::uint8_t> availability;
  std::vector<std::uint8_t> config;
  float* flush_buffer = nullptr;
  std::size_t flush_count = 0;
  int* flush_sink = nullptr;

  void setup();
  void read_chip_and_availability();
  void build_config_image();
  void allocate_flush_buffer();
  void flush_l2();
  std::vector<std::uint8_t> counter_image(CUpti_RangeProfiler_Object* object);
  void configure_window(CUpti_RangeProfiler_Object* object, std::vector<std::uint8_t>& image);
  bool run_window(int i, const std::function<void(int)>& launch, CUpti_RangeProfiler_Object* object);
  KernelCounters measure_one(int i, const std::function<void(int)>& launch, CUpti_RangeProfiler_Object* object,
                             std::vector<std::uint8_t>& image);
  std::array<double, kMetrics.size()> evaluate(const std::vector<std::uint8_t>& image, std::size_t range);
  KernelCounters read_ranges(int i, const std::vector<std::uint8_t>& image);
  ~Impl();
};

void DramProfiler::Impl::setup() {
  FX_CUDA_CALL(cudaSetDevice(device));
  FX_CUDA_CALL(cudaFree(nullptr));  // creates and makes current the primary context, shared with cuBLASLt/cuDNN
  ctx = current_context();
  ProfilerApi::retain();
  api_retained = true;
  read_chip_and_availability();
  build_config_image();
  allocate_flush_buffer();
}

void DramProfiler::Impl::read_chip_and_availability() {
  auto chip_params = FX_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  chip_params.deviceIndex = static_cast<std::size_t>(device);
  FX_CUDA_CALL(cuptiDeviceGetChipName(&chip_params));
  chip = chip_params.pChipName ? chip_params.pChipName : "";

  auto avail = FX_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
  avail.ctx = ctx;
  FX_CUDA_CALL(cuptiProfilerGetCounterAvailability(&avail));  // first call: size only
  availability.assign(avail.counterAvailabilityImageSize, 0);
  avail.pCounterAvailabilityImage = availability.data();
  FX_CUDA_CALL(cuptiProfilerGetCounterAvailability(&avail));
}

void DramProfiler::Impl::build_config_image() {
  auto init = FX_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  init.pChipName = chip.c_str();
  init.pCounterAvailabilityImage = availability.data();
  FX_CUDA_CALL(cuptiProfilerHostInitialize(&init));
  host = init.pHostObject;

  std::array<const char*, kMetrics.size()> names = kMetrics;
  auto add = FX_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  add.pHostObject = host;
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  FX_CUDA_CALL(cuptiProfilerHostConfigAddMetrics(&add));

  auto size = FX_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  size.pHostObject = host;
  FX_CUDA_CALL(cuptiProfilerHostGetConfigImageSize(&size));
  config.assign(size.configImageSize, 0);
  auto image = FX_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  image.pHostObject = host;
  image.configImageSize = config.size();
  image.pConfigImage = config.data();
  FX_CUDA_CALL(cuptiProfilerHostGetConfigImage(&image));

  // Kernel replay replays each kernel once per pass by itself; more passes only cost time, so no check here.
  auto passes = FX_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  passes.configImageSize = config.size();
  passes.pConfigImage = config.data();
  FX_CUDA_CALL(cuptiProfilerHostGetNumOfPasses(&passes));
}

void DramProfiler::Impl::allocate_flush_buffer() {
  int l2_bytes = 0;
  FX_CUDA_CALL(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
  const std::size_t bytes = std::max(kL2FlushMultiple * static_cast<std::size_t>(l2_bytes), kMinFlushBytes);
  flush_count = bytes / sizeof(float) / 4 * 4;  // whole float4s
  FX_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&flush_buffer), flush_count * sizeof(float)));
  FX_CUDA_CALL(cudaMemset(flush_buffer, 0, flush_count * sizeof(float)));
  FX_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&flush_sink), sizeof(int)));
  FX_CUDA_CALL(cudaDeviceSynchronize());
}

void DramProfiler::Impl::flush_l2() {
  FX_CUDA_CALL(detail::launch_l2_flush(flush_buffer, flush_count, flush_sink, nullptr));
  FX_CUDA_CALL(cudaDeviceSynchronize());
}

std::vector<std::uint8_t> DramProfiler::Impl::counter_image(CUpti_RangeProfiler_Object* object) {
  std::array<const char*, kMetrics.size()> names = kMetrics;
  auto size = FX_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  size.pRangeProfilerObject = object;
  size.pMetricNames = names.data();
  size.numMetrics = names.size();
  size.maxNumOfRanges = kMaxRangesPerLaunch;
  size.maxNumRangeTreeNodes = static_cast<std::uint32_t>(kMaxRangesPerLaunch);
  FX_CUDA_CALL(cuptiRangeProfilerGetCounterDataSize(&size));
  return std::vector<std::uint8_t>(size.counterDataSize, 0);
}

void DramProfiler::Impl::configure_window(CUpti_RangeProfiler_Object* object, std::vector<std::uint8_t>& image) {
  auto init = FX_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  init.pRangeProfilerObject = object;
  init.counterDataSize = image.size();
  init.pCounterData = image.data();
  FX_CUDA_CALL(cuptiRangeProfilerCounterDataImageInitialize(&init));

  auto set = FX_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
  set.pRangeProfilerObject = object;
  set.configSize = config.size();
  set.pConfig = config.data();
  set.counterDataImageSize = image.size();
  set.pCounterDataImage = image.data();
  set.range = CUPTI_AutoRange;
  set.replayMode = CUPTI_KernelReplay;
  set.maxRangesPerPass = kMaxRangesPerLaunch;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  FX_CUDA_CALL(cuptiRangeProfilerSetConfig(&set));
}

// Window layout: [launch(i)'s kernels...] and nothing else. No closing flush inside the window: its range
// reported DRAM writes of its own (see dram_profiler.h), so the launch's leftover dirty lines are left to the
// next window's opening flush, outside any range, and `l2_bytes_written` tells how much the launch stored.
bool DramProfiler::Impl::run_window(int i, const std::function<void(int)>& launch, CUpti_RangeProfiler_Object* object) {
  RunningWindow window(object);
  launch(i);
  FX_CUDA_CALL(cudaDeviceSynchronize());
  return window.stop();
}

// One profiler session (Enable ... Disable) serves every window of a measure() call: enabling range profiling
// costs far more than a window, and a run profiles dozens of steps. Each window initialises the counter image
// again and sets the config again, as CUPTI's multi-pass sequence does between passes, so range indices start
// at 0 and every range in the image belongs to this launch. The flush runs between windows, never in a range.
KernelCounters DramProfiler::Impl::measure_one(int i, const std::function<void(int)>& launch,
                                               CUpti_RangeProfiler_Object* object, std::vector<std::uint8_t>& image) {
  flush_l2();
  std::fill(image.begin(), image.end(), std::uint8_t{0});
  configure_window(object, image);
  const bool all_passes = run_window(i, launch, object);
  auto decode = FX_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  decode.pRangeProfilerObject = object;
  KernelCounters counters;
  counters.launch_index = i;
  try {
    FX_CUDA_CALL(cuptiRangeProfilerDecodeData(&decode));
  } catch (const GpuError& e) {
    // A window can hold zero ranges; should CUPTI refuse to decode such a window, that is this launch's
    // "no kernel", not a reason to drop every other launch's counters.
    if (e.library() != "CUPTI") throw;
    counters.reason = "not measured: CUPTI could not decode the window (" + first_line(e.what()) +
                      "); a launch that runs no kernel gives this";
    return counters;
  }
  if (!all_passes) {
    counters.reason = "not measured: the metrics needed more replay passes than one window submitted";
  } else if (decode.numOfRangeDropped > 0) {
    counters.reason = "not measured: the launch ran more than " + std::to_string(kMaxRangesPerLaunch) +
                      " kernels; " + std::to_string(decode.numOfRangeDropped) + " were dropped by the counter image";
  } else {
    counters = read_ranges(i, image);
  }
  return counters;
}

std::array<double, kMetrics.size()> DramProfiler::Impl::evaluate(const std::vector<std::uint8_t>& image,
                                                                std::size_t range) {
  std::array<const char*, kMetrics.size()> names = kMetrics;
  std::array<double, kMetrics.size()> values{};
  auto eval = FX_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  eval.pHostObject = host;
  eval.pCounterDataImage = image.data();
  eval.counterDataImageSize = image.size();
  eval.rangeIndex = range;
  eval.ppMetricNames = names.data();
  eval.numMetrics = names.size();
  eval.pMetricValues = values.data();
  FX_CUDA_CALL(cuptiProfilerHostEvaluateToGpuValues(&eval));
  return values;
}

// Ranges are stored in launch order (AutoRange names them "0", "1", ...); every one is a kernel of launch(i).
KernelCounters DramProfiler::Impl::read_ranges(int i, const std::vector<std::uint8_t>& image) {
  auto info = FX_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
  info.pCounterDataImage = image.data();
  info.counterDataImageSize = image.size();
  FX_CUDA_CALL(cuptiRangeProfilerGetCounterDataInfo(&info));

  KernelCounters counters;
  counters.launch_index = i;
  if (info.numTotalRanges == 0) {
    counters.reason = "not measured: the launch ran no kernel";
    return counters;
  }
  counters.kernels = static_cast<int>(info.numTotalRanges);
  for (std::size_t r = 0; r < info.numTotalRanges; ++r) {
    const auto values = evaluate(image, r);
    counters.per_kernel.push_back({values[0], values[1], values[2], values[3] * kL2SectorBytes});
  }
  for (const RangeCounters& k : counters.per_kernel) {
    counters.bytes_read += k.bytes_read;
    counters.bytes_written += k.bytes_written;
    counters.l2_bytes_written += k.l2_bytes_written;
    counters.duration_ns += k.duration_ns;
  }
  counters.available = true;
  return counters;
}

DramProfiler::Impl::~Impl() {
  // Errors are ignored: this also runs at exit, when the runtime may already be torn down.
  if (flush_buffer) (void)cudaFree(flush_buffer);
  if (flush_sink) (void)cudaFree(flush_sink);
  if (host) {
    auto p = FX_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
    p.pHostObject = host;
    (void)cuptiProfilerHostDeinitialize(&p);
  }
  if (api_retained) ProfilerApi::release();
}

DramProfiler::DramProfiler(int device) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  if (auto no_device = detail::no_device_reason()) {
    impl_->reason = "not measured: " + *no_device;
    return;
  }
  try {
    impl_->setup();
  } catch (const GpuError& e) {
    if (is_sticky(e)) throw;  // a dead context is the run's end, not "not measured"
    impl_->reason = human_reason(e);
  }
}

DramProfiler::~DramProfiler() = default;
DramProfiler::DramProfiler(DramProfiler&& other) noexcept = default;
DramProfiler& DramProfiler::operator=(DramProfiler&& other) noexcept = default;

bool DramProfiler::available() const { return impl_ && impl_->reason.empty(); }

const std::string& DramProfiler::reason() const {
  static const std::string moved_from = "not measured: this DramProfiler was moved from";
  return impl_ ? impl_->reason : moved_from;
}

const std::string& DramProfiler::chip_name() const {
  static const std::string none;
  return impl_ ? impl_->chip : none;
}

std::vector<KernelCounters> DramProfiler::measure(int num_launches, const std::function<void(int i)>& launch,
                                                  const std::function<void(int i)>& before_window) {
  if (!available()) return not_measured(num_launches, reason());
  std::string why_not;
  std::optional<detail::CuptiClaim> claim = detail::CuptiClaim::try_claim(detail::CuptiUse::range_profiling, why_not);
  if (!claim) return not_measured(num_launches, "not measured: " + why_not);

  FX_CUDA_CALL(cudaSetDevice(impl_->device));  // measure() may run on another thread than the constructor
  std::vector<KernelCounters> results;
  try {
    RangeSession session(impl_->ctx);
    std::vector<std::uint8_t> image = impl_->counter_image(session.object());
    for (int i = 0; i < num_launches; ++i) {
      if (before_window) {
        before_window(i);
        FX_CUDA_CALL(cudaDeviceSynchronize());  // its work is done before the flush and outside every range
      }
      results.push_back(impl_->measure_one(i, launch, session.object(), image));
    }
  } catch (const GpuError& e) {
    if (e.library() != "CUPTI") throw;  // a failing launch is the caller's error, not "not measured"
    return not_measured(num_launches, human_reason(e));
  }
  return results;
}

}  // namespace fx::gpu
