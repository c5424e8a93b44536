// Device measurements for the cost model: device-to-device copy bandwidth (counting bytes read plus written,
// as VERIFIED-FACTS.md's 4.22 TB/s on the H200 does) and per-kernel launch overhead.
#pragma once

#include <cstdint>

#include "kernels/executor/executor.h"

namespace fx::gpu {

struct Calibration {
  DeviceInfo device;
  std::int64_t copy_bytes = 0;         // buffer size copied
  double memcpy_bandwidth = 0;         // bytes/s, cudaMemcpyAsync device to device, read + write
  double copy_kernel_bandwidth = 0;    // bytes/s, a generated 16-byte-vector copy kernel, read + write
  double launch_overhead_s = 0;        // back-to-back empty kernels, per launch
  double copy_bandwidth() const { return copy_kernel_bandwidth > memcpy_bandwidth ? copy_kernel_bandwidth : memcpy_bandwidth; }
};

// Throws NoDeviceError without a device. `bytes` is the size of the copied buffer.
Calibration calibrate_device(std::int64_t bytes = std::int64_t{1} << 30, int repeat = 20);

}  // namespace fx::gpu
