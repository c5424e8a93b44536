// Internal to kernels/profile: who may use CUPTI right now, and whether a CUDA device exists at all.
// CUPTI's activity tracing and its range profiler share process-wide state; used together they give wrong
// kernel records (0 ns durations, missing or CUPTI-internal kernels), so the
// timing pass and the counter pass must not overlap. These claims make that a reported reason, not a bad number.
#pragma once

#include <optional>
#include <string>

namespace fx::gpu::detail {

enum class CuptiUse { activity_tracing, range_profiling };

// Held for as long as its owner uses CUPTI; move-only; releases in its destructor.
class CuptiClaim {
 public:
  // The claim, or nothing with `why_not` saying who holds CUPTI.
  static std::optional<CuptiClaim> try_claim(CuptiUse use, std::string& why_not);

  CuptiClaim(CuptiClaim&& other) noexcept;
  CuptiClaim& operator=(CuptiClaim&& other) noexcept;
  CuptiClaim(const CuptiClaim&) = delete;
  CuptiClaim& operator=(const CuptiClaim&) = delete;
  ~CuptiClaim();

 private:
  explicit CuptiClaim(CuptiUse use) : use_(use), held_(true) {}
  void release() noexcept;

  CuptiUse use_;
  bool held_;
};

// "no CUDA device (cudaErrorInsufficientDriver: ...)" when cudaGetDeviceCount finds none or no driver; nothing
// when at least one device is usable.
std::optional<std::string> no_device_reason();

// Human text for a CUPTI failure, starting "not measured: ". Privilege and support errors get the
// explanation a user can act on; anything else keeps the call and code from the error.
std::string cupti_failure_reason(long long cupti_code, const std::string& detail);

}  // namespace fx::gpu::detail
