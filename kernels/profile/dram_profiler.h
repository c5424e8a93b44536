// Measured HBM (DRAM) traffic per launch, from the CUDA 13 CUPTI range profiler: dram__bytes_read.sum,
// dram__bytes_write.sum and gpu__time_duration.sum, with CUPTI_AutoRange + CUPTI_KernelReplay.
//
// measure(n, launch) calls launch(0) ... launch(n-1), one at a time, each in its own profiling window. Before
// each window (outside it) a kernel reads a buffer three times the L2 size, leaving the L2 cold: every launch
// reads its inputs from DRAM, and the dirty lines the previous launch left behind are written back outside
// any range. A launch may start several kernels (cuBLASLt split-K, cuDNN): AutoRange makes one range per
// kernel and their counters are summed into that launch's record. Windows also bound the ranges per counter
// image, which drops ranges beyond its capacity.
//
// What a window does not count: writes still dirty in the L2 when the launch's last kernel ends. For outputs
// several times the L2 size these are a few MiB (a streaming kernel's L2 keeps little dirty data: relu over
// 256 MiB writes back nearly all of it within the window); for a footprint below the L2 size most writes may stay in the L2.
// `l2_bytes_written` (sectors the SMs stored into the L2) says what the launch wrote regardless; compare the
// two to see how much had not reached DRAM. Closing each window with a second flush to count that write-back
// would not work: the flush's own range adds DRAM writes of its own, so the bytes would not be the launch's.
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
  double bytes_written = 0.0;     // DRAM writes during the kernel (see above for writes left in the L2)
  double duration_ns = 0.0;
  double l2_bytes_written = 0.0;  // bytes the SMs stored into the L2 (lts__t_sectors_srcunit_tex_op_write x 32)
};

struct KernelCounters {
  int launch_index = -1;
  bool available = false;
  std::string reason;        // why not measured; empty when available
  int kernels = 0;           // kernels (AutoRange ranges) the launch ran
  double bytes_read = 0.0;   // DRAM bytes, summed over the launch's kernels
  double bytes_written = 0.0;
  double l2_bytes_written = 0.0;
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
  // and its exceptions (other than CUPTI's own) pass through after profiling is switched off. `before_window(i)`,
  // where given, runs before window i's flush, outside any range, and is waited for: work that must precede the
  // launch (the steps a caller does not measure but whose outputs the launch reads) counts in no window.
  std::vector<KernelCounters> measure(int num_launches, const std::function<void(int i)>& launch,
                                      const std::function<void(int i)>& before_window = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx::gpu
