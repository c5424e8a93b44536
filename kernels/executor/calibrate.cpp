// Copy bandwidth and launch overhead, timed with CUDA events (medians).
#include "kernels/executor/calibrate.h"

#include <algorithm>
#include <vector>

#include "kernels/codegen/emit.h"
#include "kernels/common/cuda_call.h"
#include "kernels/common/event_timing.h"
#include "kernels/contraction/device_memory.h"
#include "kernels/contraction/matmul.h"
#include "kernels/nvrtc/nvrtc_compiler.h"

namespace fx::gpu {
namespace {

const char* kCopySource = R"(// Calibration: a 16-byte-vector copy, one vector per thread, as the generated elementwise kernels move data.
extern "C" __global__ void __launch_bounds__(256) fx_copy(const float4* __restrict__ in, float4* __restrict__ out, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) out[i] = in[i];
}
extern "C" __global__ void fx_empty() {}
// Random values in [-1, 1) from a hash of the index: matrix units run measurably faster on zeros or constants.
__device__ float fx_uniform(long long i) {
  unsigned int h = (unsigned int)(i * 2654435761ll) ^ 0x9e3779b9u;
  h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
  return (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
}
extern "C" __global__ void fx_fill_f32(float* p, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) p[i] = fx_uniform(i);
}
extern "C" __global__ void fx_fill_bf16(unsigned short* p, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) p[i] = (unsigned short)(__float_as_uint(fx_uniform(i)) >> 16);
}
)";

// The owned allocation kernels/contraction already has (the executor's contraction steps use it too).
using Buffer = contraction_detail::DeviceMemory;

template <typename F>
double median_ms(int repeat, F&& body) {
  body();  // warm-up
  return median_event_ms(nullptr, repeat, body);
}

// 2*n^3 FLOP over the median time of a square cuBLASLt GEMM on random inputs (f32 runs on TF32 tensor cores).
double gemm_rate(std::int64_t n, DType dtype, cudaKernel_t fill, int repeat) {
  const std::int64_t elements = n * n;
  const std::int64_t bytes = elements * dtype_size(dtype);
  Buffer a(static_cast<std::size_t>(bytes)), b(static_cast<std::size_t>(bytes)), out(static_cast<std::size_t>(bytes));
  long long count = elements;
  for (void* p : {a.get(), b.get()}) {
    void* args[] = {&p, &count};
    FX_CUDA_CALL(cudaLaunchKernel(reinterpret_cast<const void*>(fill), dim3(1024), dim3(256), args, 0, nullptr));
  }
  Matmul matmul;
  MatmulProblem problem;
  problem.m = problem.n = problem.k = n;
  problem.a_type = problem.b_type = problem.c_type = dtype;
  problem.allow_tf32 = dtype == DType::f32;
  const double ms = median_ms(repeat, [&] { matmul.run(problem, a.get(), b.get(), nullptr, out.get(), nullptr); });
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / (ms * 1e-3);
}

}  // namespace

Calibration calibrate_device(std::int64_t bytes, int repeat, std::int64_t gemm_size) {
  Calibration c;
  c.device = query_device(0);
  bytes = bytes / 16 * 16;
  c.copy_bytes = bytes;
  Buffer src(static_cast<std::size_t>(bytes)), dst(static_cast<std::size_t>(bytes));
  FX_CUDA_CALL(cudaMemset(src.get(), 1, static_cast<std::size_t>(bytes)));
  const double memcpy_ms = median_ms(repeat, [&] {
    FX_CUDA_CALL(cudaMemcpyAsync(dst.get(), src.get(), static_cast<std::size_t>(bytes), cudaMemcpyDeviceToDevice, nullptr));
  });
  c.memcpy_bandwidth = 2.0 * static_cast<double>(bytes) / (memcpy_ms * 1e-3);

  NvrtcCompiler compiler;
  const Cubin cubin = compiler.compile(kCopySource, "fx_copy", c.device.arch());
  cudaLibrary_t lib = nullptr;
  FX_CUDA_CALL(cudaLibraryLoadData(&lib, cubin->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  struct Unload {
    cudaLibrary_t l;
    ~Unload() { cudaLibraryUnload(l); }
  } unload{lib};
  cudaKernel_t copy = nullptr, empty = nullptr;
  FX_CUDA_CALL(cudaLibraryGetKernel(&copy, lib, "fx_copy"));
  FX_CUDA_CALL(cudaLibraryGetKernel(&empty, lib, "fx_empty"));
  long long n = bytes / 16;
  void* in = src.get();
  void* out = dst.get();
  void* args[] = {&in, &out, &n};
  const auto blocks = static_cast<unsigned>(std::min<long long>((n + 255) / 256, 1 << 30));
  const double kernel_ms = median_ms(repeat, [&] {
    FX_CUDA_CALL(cudaLaunchKernel(reinterpret_cast<const void*>(copy), dim3(blocks), dim3(256), args, 0, nullptr));
  });
  c.copy_kernel_bandwidth = 2.0 * static_cast<double>(bytes) / (kernel_ms * 1e-3);

  constexpr int kLaunches = 1000;
  const double launches_ms = median_ms(5, [&] {
    for (int i = 0; i < kLaunches; ++i) {
      FX_CUDA_CALL(cudaLaunchKernel(reinterpret_cast<const void*>(empty), dim3(1), dim3(32), nullptr, 0, nullptr));
    }
  });
  c.launch_overhead_s = launches_ms * 1e-3 / kLaunches;
  if (gemm_size > 0) {
    cudaKernel_t fill_f32 = nullptr, fill_bf16 = nullptr;
    FX_CUDA_CALL(cudaLibraryGetKernel(&fill_f32, lib, "fx_fill_f32"));
    FX_CUDA_CALL(cudaLibraryGetKernel(&fill_bf16, lib, "fx_fill_bf16"));
    c.gemm_size = gemm_size;
    c.bf16_tensor_flops = gemm_rate(gemm_size, DType::bf16, fill_bf16, repeat);
    c.tf32_tensor_flops = gemm_rate(gemm_size, DType::f32, fill_f32, repeat);
  }
  return c;
}

}  // namespace fx::gpu
