#include "kernels/common/sticky_error.h"

#include "kernels/common/cuda_call.h"

namespace fx::gpu {

// The list is driver_types.h's (CUDA 13): the errors documented with "This leaves the process in an
// inconsistent state and any further CUDA work will return the same error", plus an uncorrectable ECC error,
// after which device memory cannot be trusted either.
bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorECCUncorrectable:
    case cudaErrorContained:
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
      return true;
    default:
      return false;
  }
}

bool is_sticky_cuda_error(long long code) { return is_sticky(static_cast<cudaError_t>(code)); }

bool is_sticky(const GpuError& e) { return e.library() == "CUDA" && is_sticky_cuda_error(e.code()); }

std::string cuda_error_message(long long code) { return cudaGetErrorString(static_cast<cudaError_t>(code)); }

void synchronize_device_checked() {
  FX_CUDA_CALL(cudaDeviceSynchronize());
  FX_CUDA_CALL(cudaGetLastError());
}

}  // namespace fx::gpu
