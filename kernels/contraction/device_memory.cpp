#include "kernels/contraction/device_memory.h"

#include <utility>

#include "kernels/common/cuda_call.h"

namespace fx::gpu::contraction_detail {

void require_cuda_device() {
  int count = 0;
  const cudaError_t r = cudaGetDeviceCount(&count);
  if (r == cudaErrorNoDevice || r == cudaErrorInsufficientDriver || (r == cudaSuccess && count == 0)) {
    cudaGetLastError();  // not sticky, but clear it so the next call does not report it
    throw NoDeviceError(std::string("no CUDA device: ") + cudaGetErrorString(r == cudaSuccess ? cudaErrorNoDevice : r));
  }
  FX_CUDA_CALL(r);
}

bool capturing(CUstream_st* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  FX_CUDA_CALL(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

DeviceMemory::DeviceMemory(std::size_t bytes) : bytes_(bytes) {
  if (bytes > 0) FX_CUDA_CALL(cudaMalloc(&ptr_, bytes));
}

DeviceMemory::~DeviceMemory() {
  if (ptr_) cudaFree(ptr_);  // a destructor cannot report; the driver reclaims at exit anyway
}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

}  // namespace fx::gpu::contraction_detail
