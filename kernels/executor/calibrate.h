// Device measurements for the cost model: device-to-device copy bandwidth (counting bytes read plus written)
// and per-kernel launch overhead.
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
  // Dense matrix rates measured with cuBLASLt on random data (0 when skipped): 2*M*N*K / median time.
  std::int64_t gemm_size = 0;          // M = N = K
  double bf16_tensor_flops = 0;        // bf16 inputs, f32 accumulation
  double tf32_tensor_flops = 0;        // f32 inputs on TF32 tensor cores
  double copy_bandwidth() const { return copy_kernel_bandwidth > memcpy_bandwidth ? copy_kernel_bandwidth : memcpy_bandwidth; }
};

// Throws NoDeviceError without a device. `bytes` is the size of the copied buffer; `gemm_size` the M = N = K of
// the square GEMMs that measure the tensor-core rates (0 skips them).
Calibration calibrate_device(std::int64_t bytes = std::int64_t{1} << 30, int repeat = 20,
                             std::int64_t gemm_size = 8192);

}  // namespace fx::gpu
