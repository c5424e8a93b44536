#include "tests/gpu/test_profile_kernels.h"

namespace fx::test {
namespace {

__global__ void copy_f32(const float* in, float* out, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
__global__ void mul_f32(const float* a, const float* b, float* out, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * b[i];
}
__global__ void add_f32(const float* a, const float* b, float* out, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
__global__ void relu_f32(const float* a, float* out, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(a[i], 0.0f);
}
__global__ void fused_mul_add_relu_f32(const float* x, const float* w, const float* b, float* out, std::size_t n) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i] * w[i] + b[i], 0.0f);
}

}  // namespace

cudaError_t launch_copy(const float* in, float* out, std::size_t n) {
  copy_f32<<<blocks_for(n), kThreadsPerBlock>>>(in, out, n);
  return cudaGetLastError();
}
cudaError_t launch_mul(const float* a, const float* b, float* out, std::size_t n) {
  mul_f32<<<blocks_for(n), kThreadsPerBlock>>>(a, b, out, n);
  return cudaGetLastError();
}
cudaError_t launch_add(const float* a, const float* b, float* out, std::size_t n) {
  add_f32<<<blocks_for(n), kThreadsPerBlock>>>(a, b, out, n);
  return cudaGetLastError();
}
cudaError_t launch_relu(const float* a, float* out, std::size_t n) {
  relu_f32<<<blocks_for(n), kThreadsPerBlock>>>(a, out, n);
  return cudaGetLastError();
}
cudaError_t launch_fused_mul_add_relu(const float* x, const float* w, const float* b, float* out, std::size_t n) {
  fused_mul_add_relu_f32<<<blocks_for(n), kThreadsPerBlock>>>(x, w, b, out, n);
  return cudaGetLastError();
}

}  // namespace fx::test
