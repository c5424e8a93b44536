// Per-kernel GPU timings from the CUPTI Activity API, attributed to plan steps.
//
// Every kernel launched on this thread between push_step(id) and pop_step() carries that step id, including
// kernels that cuBLASLt and cuDNN launch internally: the id rides on CUPTI external correlation
// (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0), which CUPTI attaches to every runtime and driver API call.
// Timestamps are the GPU's own start/end of each kernel (CONCURRENT_KERNEL records, which do not serialise
// kernels), so these are real kernel timings, unlike the range profiler's (it serialises every kernel).
//
// One KernelTimer may exist at a time, and not while a DramProfiler is measuring: CUPTI's activity tracing and
// range profiler give wrong records together. Without a device or CUPTI the timer is a no-op with a reason.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fx::gpu {

struct KernelRecord {
  std::string name;                      // demangled where the C++ ABI demangler understands it
  std::optional<std::uint64_t> step_id;  // innermost push_step() at launch; empty when launched outside any step
  std::uint64_t start_ns = 0;            // CUPTI timestamps: nanoseconds on one clock shared by all records
  std::uint64_t end_ns = 0;
  std::array<int, 3> grid{};
  std::array<int, 3> block{};
  std::uint32_t stream_id = 0;       // CUPTI's stream id (not a cudaStream_t)
  std::uint32_t correlation_id = 0;  // the launching API call's CUPTI correlation id

  double duration_us() const { return static_cast<double>(end_ns - start_ns) / 1000.0; }
};

class KernelTimer {
 public:
  // Starts recording. Never throws for "cannot record here": check available() and reason().
  KernelTimer();
  ~KernelTimer();
  KernelTimer(KernelTimer&& other) noexcept;
  KernelTimer& operator=(KernelTimer&& other) noexcept;
  KernelTimer(const KernelTimer&) = delete;
  KernelTimer& operator=(const KernelTimer&) = delete;

  bool available() const;
  // Why nothing is recorded ("no CUDA device (...)", a CUPTI error, another timer active); empty when available.
  const std::string& reason() const;

  // Steps nest; kernels take the innermost id. Per calling thread, as CUPTI keeps the stack per thread.
  void push_step(std::uint64_t step_id);
  void pop_step();

  // Waits for the device, collects every kernel finished since the last flush, sorted by start time.
  std::vector<KernelRecord> flush();
  // Records CUPTI reported dropped for lack of buffer space since construction (0 in a healthy run).
  std::uint64_t dropped_records() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// push_step for a scope; pops on exit, exceptions included.
class StepScope {
 public:
  StepScope(KernelTimer& timer, std::uint64_t step_id) : timer_(timer) { timer_.push_step(step_id); }
  ~StepScope() {
    try {
      timer_.pop_step();
    } catch (...) {  // a destructor must not throw; a failed pop only loses attribution
    }
  }
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;

 private:
  KernelTimer& timer_;
};

}  // namespace fx::gpu
