// Helpers for the contraction GPU tests: the no-device skip, owned device arrays, and host data rounded to
// f32/f16/bf16 exactly as the device stores it, so references see the same inputs as the GPU.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/graph/dtype.h"

namespace fx::test {

// Empty when a device is usable; otherwise why not. No driver (error 35) and no device both mean "skip".
inline std::string no_device_reason() {
  int count = 0;
  const cudaError_t r = cudaGetDeviceCount(&count);
  if (r == cudaSuccess && count > 0) return {};
  cudaGetLastError();
  return std::string("no CUDA device (") + cudaGetErrorName(r == cudaSuccess ? cudaErrorNoDevice : r) +
         "): GPU test skipped";
}

#define FX_SKIP_WITHOUT_CUDA_DEVICE()                                           \
  do {                                                                          \
    if (const std::string why = ::fx::test::no_device_reason(); !why.empty()) { \
      GTEST_SKIP() << why;                                                      \
    }                                                                           \
  } while (0)

#define FX_TEST_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t bytes) : bytes_(bytes) {
    if (cudaMalloc(&ptr_, bytes) != cudaSuccess) throw std::runtime_error("cudaMalloc failed in a test");
  }
  ~DeviceArray() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceArray(DeviceArray&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Host bytes of `values` in the device type, and the values after that rounding.
inline std::vector<unsigned char> encode(const std::vector<float>& values, DType t, std::vector<double>* rounded) {
  const auto size = static_cast<std::size_t>(dtype_size(t));
  std::vector<unsigned char> bytes(values.size() * size);
  if (rounded) rounded->resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    float back = values[i];
    if (t == DType::f16) {
      const __half h = __float2half_rn(values[i]);
      std::memcpy(&bytes[i * size], &h, size);
      back = __half2float(h);
    } else if (t == DType::bf16) {
      const __nv_bfloat16 h = __float2bfloat16_rn(values[i]);
      std::memcpy(&bytes[i * size], &h, size);
      back = __bfloat162float(h);
    } else {
      std::memcpy(&bytes[i * size], &values[i], size);
    }
    if (rounded) (*rounded)[i] = back;
  }
  return bytes;
}

inline std::vector<double> decode(const std::vector<unsigned char>& bytes, DType t) {
  const auto size = static_cast<std::size_t>(dtype_size(t));
  std::vector<double> out(bytes.size() / size);
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (t == DType::f16) {
      __half h;
      std::memcpy(&h, &bytes[i * size], size);
      out[i] = __half2float(h);
    } else if (t == DType::bf16) {
      __nv_bfloat16 h;
      std::memcpy(&h, &bytes[i * size], size);
      out[i] = __bfloat162float(h);
    } else {
      float f;
      std::memcpy(&f, &bytes[i * size], size);
      out[i] = f;
    }
  }
  return out;
}

inline std::vector<float> random_values(std::size_t count, float scale, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(count);
  for (float& f : v) f = dist(rng);
  return v;
}

// A device operand and the exact values it holds.
struct Operand {
  DeviceArray device;
  std::vector<double> host;
};

inline Operand upload(const std::vector<float>& values, DType t) {
  Operand op;
  const std::vector<unsigned char> bytes = encode(values, t, &op.host);
  op.device = DeviceArray(bytes.size());
  if (cudaMemcpy(op.device.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice) != cudaSuccess) {
    throw std::runtime_error("upload failed");
  }
  return op;
}

inline Operand random_operand(std::size_t count, DType t, float scale, unsigned seed) {
  return upload(random_values(count, scale, seed), t);
}

inline std::vector<double> download(const void* device, std::size_t count, DType t) {
  std::vector<unsigned char> bytes(count * static_cast<std::size_t>(dtype_size(t)));
  if (cudaDeviceSynchronize() != cudaSuccess ||
      cudaMemcpy(bytes.data(), device, bytes.size(), cudaMemcpyDeviceToHost) != cudaSuccess) {
    throw std::runtime_error("download failed");
  }
  return decode(bytes, t);
}

// Elements of two device arrays that are not equal (a NaN never equals anything).
inline int count_different(const void* a, const void* b, std::size_t count, DType t) {
  const std::vector<double> x = download(a, count, t), y = download(b, count, t);
  int differ = 0;
  for (std::size_t i = 0; i < count; ++i) differ += !(x[i] == y[i]);
  return differ;
}

}  // namespace fx::test
