#include "kernels/profile/kernel_timer.h"

#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "kernels/common/cuda_call.h"
#include "kernels/common/sticky_error.h"
#include "kernels/profile/cupti_exclusion.h"

namespace fx::gpu {
namespace {

// RUNTIME and DRIVER are enabled only because CUPTI emits external-correlation records alongside API records;
// the driver kind is what covers cuBLASLt/cuDNN, which launch through the driver API. Their records are skipped.
constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                         CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME,
                                         CUPTI_ACTIVITY_KIND_DRIVER};
constexpr CUpti_ExternalCorrelationKind kStepKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr std::size_t kBufferBytes = std::size_t{4} << 20;  // a few thousand kernel records per buffer
constexpr std::size_t kRecordAlignment = 8;                 // ACTIVITY_RECORD_ALIGNMENT in cupti_activity.h

std::string demangle(const char* name) {
  if (name == nullptr) return "<unnamed>";
  int status = 0;
  char* readable = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || readable == nullptr) return name;  // extern "C" kernels (NVRTC, cuBLASLt) are not mangled
  std::string out(readable);
  std::free(readable);
  return out;
}

KernelRecord to_record(const CUpti_ActivityKernel10& k) {
  KernelRecord r;
  r.name = demangle(k.name);
  r.start_ns = k.start;
  r.end_ns = k.end;
  r.grid = {k.gridX, k.gridY, k.gridZ};
  r.block = {k.blockX, k.blockY, k.blockZ};
  r.stream_id = k.streamId;
  r.correlation_id = k.correlationId;
  return r;
}

// Filled from CUPTI's buffer-completed callback, which runs on a CUPTI thread or inside cuptiActivityFlushAll.
class Collector {
 public:
  void add(uint8_t* buffer, std::size_t valid_bytes, std::size_t dropped) {
    std::lock_guard lock(mutex_);
    dropped_ += dropped;
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid_bytes, &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        kernels_.push_back(to_record(*reinterpret_cast<const CUpti_ActivityKernel10*>(record)));
      } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const auto* c = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (c->externalKind == kStepKind) step_of_correlation_[c->correlationId] = c->externalId;
      }
    }
  }

  std::vector<KernelRecord> take() {
    std::lock_guard lock(mutex_);
    std::vector<KernelRecord> out = std::move(kernels_);
    for (KernelRecord& r : out) {
      auto it = step_of_correlation_.find(r.correlation_id);
      if (it != step_of_correlation_.end()) r.step_id = it->second;
    }
    kernels_.clear();
    step_of_correlation_.clear();
    return out;
  }

  void clear() {
    std::lock_guard lock(mutex_);
    kernels_.clear();
    step_of_correlation_.clear();
    dropped_ = 0;
  }

  std::uint64_t dropped() {
    std::lock_guard lock(mutex_);
    return dropped_;
  }

 private:
  std::mutex mutex_;
  std::vector<KernelRecord> kernels_;
  std::unordered_map<std::uint32_t, std::uint64_t> step_of_correlation_;
  std::uint64_t dropped_ = 0;
};

// Never destroyed: CUPTI may deliver a last buffer while static destructors run.
Collector& collector() {
  static Collector* instance = new Collector;
  return *instance;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kRecordAlignment, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t /*size*/,
                               size_t valid_bytes) {
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) != CUPTI_SUCCESS) dropped = 0;
  try {
    collector().add(buffer, valid_bytes, dropped);
  } catch (...) {  // out of memory on a CUPTI thread: lose these records rather than terminate
  }
  std::free(buffer);
}

void register_buffer_callbacks() {
  static std::once_flag once;
  std::call_once(once, [] { FX_CUDA_CALL(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)); });
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

struct KernelTimer::Impl {
  std::optional<detail::CuptiClaim> claim;
  std::string reason;
  std::vector<CUpti_ActivityKind> enabled;

  bool available() const { return reason.empty(); }

  void start() {
    std::string why_not;
    claim = detail::CuptiClaim::try_claim(detail::CuptiUse::activity_tracing, why_not);
    if (!claim) {
      reason = "not recorded: " + why_not;
      return;
    }
    if (auto no_device = detail::no_device_reason()) {
      reason = "not recorded: " + *no_device;
      claim.reset();
      return;
    }
    try {
      register_buffer_callbacks();
      collector().clear();
      for (CUpti_ActivityKind kind : kKinds) {
        FX_CUDA_CALL(cuptiActivityEnable(kind));
        enabled.push_back(kind);
      }
    } catch (const GpuError& e) {
      stop();
      if (is_sticky(e)) throw;  // a dead context is the run's end, not "not recorded"
      reason = "not recorded: " + first_line(e.what());
    }
  }

  void stop() noexcept {
    for (CUpti_ActivityKind kind : enabled) (void)cuptiActivityDisable(kind);
    if (!enabled.empty()) (void)cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    enabled.clear();
    try {
      collector().clear();
    } catch (...) {
    }
    claim.reset();
  }

  ~Impl() { stop(); }
};

KernelTimer::KernelTimer() : impl_(std::make_unique<Impl>()) { impl_->start(); }
KernelTimer::~KernelTimer() = default;
KernelTimer::KernelTimer(KernelTimer&& other) noexcept = default;
KernelTimer& KernelTimer::operator=(KernelTimer&& other) noexcept = default;

bool KernelTimer::available() const { return impl_ && impl_->available(); }

const std::string& KernelTimer::reason() const {
  static const std::string moved_from = "not recorded: this KernelTimer was moved from";
  return impl_ ? impl_->reason : moved_from;
}

void KernelTimer::push_step(std::uint64_t step_id) {
  if (available()) FX_CUDA_CALL(cuptiActivityPushExternalCorrelationId(kStepKind, step_id));
}

void KernelTimer::pop_step() {
  if (available()) FX_CUDA_CALL(cuptiActivityPopExternalCorrelationId(kStepKind, nullptr));
}

std::vector<KernelRecord> KernelTimer::flush() {
  if (!available()) return {};
  // Kernel records are written when kernels finish; after the sync a forced flush hands over every buffer.
  FX_CUDA_CALL(cudaDeviceSynchronize());
  FX_CUDA_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  std::vector<KernelRecord> records = collector().take();
  std::stable_sort(records.begin(), records.end(),
                   [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  return records;
}

std::uint64_t KernelTimer::dropped_records() const { return available() ? collector().dropped() : 0; }

}  // namespace fx::gpu
