// One macro checks every CUDA runtime, driver, NVRTC, cuBLASLt, cuDNN and CUPTI call. A failure throws
// fx::gpu::GpuError carrying the call text, file and line; RAII owners free what was allocated as the
// exception unwinds, and the program reports instead of aborting. (After nvbench's cuda_call.cuh.)
// This header is internal to kernels/: it includes the vendor headers.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#if FX_HAVE_CUDNN
#include <cudnn.h>
#endif
#include <cupti_result.h>
#include <nvrtc.h>

#include "kernels/common/gpu_error.h"

namespace fx::gpu::detail {

[[noreturn]] void throw_call_error(const char* library, long long code, const char* code_name, std::string message,
                                   const char* call, const char* file, int line);

inline void check_call(cudaError_t r, const char* call, const char* file, int line) {
  if (r != cudaSuccess) {
    throw_call_error("CUDA", r, cudaGetErrorName(r), cudaGetErrorString(r), call, file, line);
  }
}
inline void check_call(nvrtcResult r, const char* call, const char* file, int line) {
  if (r != NVRTC_SUCCESS) throw_call_error("NVRTC", r, nvrtcGetErrorString(r), {}, call, file, line);
}
inline void check_call(cublasStatus_t r, const char* call, const char* file, int line) {
  if (r != CUBLAS_STATUS_SUCCESS) {
    throw_call_error("cuBLASLt", r, cublasLtGetStatusName(r), cublasLtGetStatusString(r), call, file, line);
  }
}
#if FX_HAVE_CUDNN
inline void check_call(cudnnStatus_t r, const char* call, const char* file, int line) {
  if (r != CUDNN_STATUS_SUCCESS) throw_call_error("cuDNN", r, cudnnGetErrorString(r), {}, call, file, line);
}
#endif
inline void check_call(CUptiResult r, const char* call, const char* file, int line) {
  if (r != CUPTI_SUCCESS) {
    const char* name = nullptr;
    const char* message = nullptr;
    if (cuptiGetResultString(r, &name) != CUPTI_SUCCESS) name = nullptr;
    if (cuptiGetErrorMessage(r, &message) != CUPTI_SUCCESS) message = nullptr;
    throw_call_error("CUPTI", r, name, message ? message : "", call, file, line);
  }
}

}  // namespace fx::gpu::detail

namespace fx::gpu {
// Whether `e` leaves the context dead (kernels/common/sticky_error.h has the vendor-free forms).
bool is_sticky(cudaError_t e);
}  // namespace fx::gpu

#define FX_CUDA_CALL(expr) ::fx::gpu::detail::check_call((expr), #expr, __FILE__, __LINE__)
