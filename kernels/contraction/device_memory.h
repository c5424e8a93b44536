// Internal to kernels/contraction: an owned cudaMalloc allocation and the "is there a device" check.
// Vendor-free so the public headers may hold one behind their pimpl without pulling CUDA in.
#pragma once

#include <cstddef>

struct CUstream_st;

namespace fx::gpu::contraction_detail {

// Throws NoDeviceError when cudaGetDeviceCount reports no driver or no device, so callers can tell
// "no GPU here" from a failed call.
void require_cuda_device();

// Whether `stream` is being captured into a CUDA graph: nothing may be synchronised or allocated then, so the
// library searches (cuBLASLt's algorithms, cuDNN's engine configurations) do not time anything.
bool capturing(CUstream_st* stream);

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
