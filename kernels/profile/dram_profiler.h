// Measured HBM (DRAM) traffic per launch, from the CUDA 13 CUPTI range profiler: dram__bytes_read.sum,
// dram__bytes_write.sum and gpu__time_duration.sum, with CUPTI_AutoRange + CUPTI_KernelReplay.
//
// measure(n, launch) calls launch(0) ... launch(n-1), one at a time, each in its own profiling window. Before
// each window a kernel reads a buffer three times the L2 size, leaving the L2 cold and clean; the same read runs
// again at the end of the window, so the dirty lines the launch left in the L2 are written back inside the window
// and counted as its writes (the flush itself writes nothing; its own range is not reported). A launch may start
// several kernels (cuBLASLt split-K, cuDNN): AutoRange makes one range per kernel and their counters are summed
// into that launch's record. Windows also bound the ranges per counter image, which drops ranges beyond its
// capacity.
//
// AutoRange serialises and synchronises around every kernel: `duration_ns` is the kernel alone on the GPU, not
// a pipeline timing. Take timings from KernelTimer in a separate pass; the two must not run together.
//
// Nothing is ever a silent zero: where counters cannot be read (no device, profiling restricted to admin
// users, another profiler attached, CUPTI failure) every record has available = false and a reason a person
// can act on.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fx::gpu {

// One kernel (one AutoRange range) of a launch.
struct RangeCounters {
  double bytes_read = 0.0;
  double bytes_written = 0.0;  // the launch's L2 write-back at the end of the window is added to its last kernel
  double duration_ns = 0.0;
};

struct KernelCounters {
  int launch_index = -1;
  bool available = false;
  std::string reason;        // why not measured; empty when available
  int kernels = 0;           // kernels (AutoRange ranges) the launch ran
  double bytes_read = 0.0;   // DRAM bytes, summed over the launch's kernels
  double bytes_written = 0.0;
  double duration_ns = 0.0;  // gpu__time_duration.sum, summed; serialised (see above)
  std::vector<RangeCounters> per_kernel;  // in launch order; sums to the totals above
};

class DramProfiler {
 public:
  // Prepares the profiler for `device` (made current). Never throws for "cannot measure here".
  explicit DramProfiler(int device = 0);
  ~DramProfiler();
  DramProfiler(DramProfiler&& other) noexcept;
  DramProfiler& operator=(DramProfiler&& other) noexcept;
  DramProfiler(const DramProfiler&) = delete;
  DramProfiler& operator=(const DramProfiler&) = delete;

  bool available() const;
  const std::string& reason() const;
  const std::string& chip_name() const;  // e.g. "GH100"; empty when it could not be read

  // One record per launch index, in order. `launch` must enqueue its work on the current device; it may throw,
  // and its exceptions (other than CUPTI's own) pass through after profiling is switched off.
  std::vector<KernelCounters> measure(int num_launches, const std::function<void(int i)>& launch);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx::gpu
