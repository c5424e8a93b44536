#include "kernels/profile/cupti_exclusion.h"

#include <cupti_result.h>
#include <cuda_runtime_api.h>

#include <mutex>

namespace fx::gpu::detail {
namespace {

struct CuptiUsers {
  std::mutex mutex;
  int activity_tracers = 0;  // at most 1: activity buffers and their callbacks are process-wide
  int range_profilers = 0;   // at most 1: one range profiler session per context
};

CuptiUsers& users() {
  static CuptiUsers instance;
  return instance;
}

}  // namespace

std::optional<CuptiClaim> CuptiClaim::try_claim(CuptiUse use, std::string& why_not) {
  CuptiUsers& u = users();
  std::lock_guard lock(u.mutex);
  if (u.activity_tracers > 0) {
    why_not = use == CuptiUse::activity_tracing
                  ? "another KernelTimer is recording (CUPTI activity buffers are process-wide)"
                  : "a KernelTimer is recording: CUPTI activity tracing and the range profiler together give "
                    "wrong kernel records; destroy the timer first (timing and counters are separate passes)";
    return std::nullopt;
  }
  if (u.range_profilers > 0) {
    why_not = use == CuptiUse::range_profiling
                  ? "another DramProfiler measurement is running"
                  : "a DramProfiler measurement is running: CUPTI activity tracing and the range profiler "
                    "together give wrong kernel records";
    return std::nullopt;
  }
  (use == CuptiUse::activity_tracing ? u.activity_tracers : u.range_profilers) += 1;
  return CuptiClaim(use);
}

CuptiClaim::CuptiClaim(CuptiClaim&& other) noexcept : use_(other.use_), held_(other.held_) { other.held_ = false; }

CuptiClaim& CuptiClaim::operator=(CuptiClaim&& other) noexcept {
  if (this != &other) {
    release();
    use_ = other.use_;
    held_ = other.held_;
    other.held_ = false;
  }
  return *this;
}

CuptiClaim::~CuptiClaim() { release(); }

void CuptiClaim::release() noexcept {
  if (!held_) return;
  CuptiUsers& u = users();
  std::lock_guard lock(u.mutex);
  (use_ == CuptiUse::activity_tracing ? u.activity_tracers : u.range_profilers) -= 1;
  held_ = false;
}

std::optional<std::string> no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess && count > 0) return std::nullopt;
  if (status == cudaSuccess) return std::string("no CUDA device");
  // Otherwise the next caller that checks cudaGetLastError would see this failure as its own.
  (void)cudaGetLastError();
  return std::string("no CUDA device (") + cudaGetErrorName(status) + ": " + cudaGetErrorString(status) + ")";
}

std::string cupti_failure_reason(long long cupti_code, const std::string& detail) {
  switch (static_cast<CUptiResult>(cupti_code)) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return "not measured: profiling restricted to admin users (RmProfilingAdminOnly=1); run as root or load "
             "the NVIDIA driver with NVreg_RestrictProfilingToAdminUsers=0";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
      return "not measured: this GPU (or its virtualisation) does not support CUPTI hardware counters";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      return "not measured: another profiler (Nsight Systems/Compute or another CUPTI tool) holds CUPTI";
    default:
      return "not measured: " + detail;
  }
}

}  // namespace fx::gpu::detail
