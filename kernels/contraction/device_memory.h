// Internal to kernels/contraction: an owned cudaMalloc allocation and the "is there a device" check.
// Vendor-free so the public headers may hold one behind their pimpl without pulling CUDA in.
#pragma once

#include <cstddef>

namespace fx::gpu::contraction_detail {

// Throws NoDeviceError when cudaGetDeviceCount reports no driver or no device, so callers can tell
// "no GPU here" from a failed call.
void require_cuda_device();

class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr, o.bytes_ = 0; }
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace fx::gpu::contraction_detail
