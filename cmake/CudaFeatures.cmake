# fx_check_cuda_features(OUT_MISSING): the newer toolkit APIs the executor uses, each compiled once against
# the toolkit's headers. An older toolkit that has CUDA, NVRTC and cuBLASLt but not these would otherwise fail
# in the middle of the build; with the list, configure builds everything else and says what the executor needs.
include(CheckCXXSourceCompiles)
include(CMakePushCheckState)

function(fx_check_cuda_features out_missing)
  cmake_push_check_state(RESET)
  set(CMAKE_REQUIRED_INCLUDES ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_CUPTI_INCLUDE_DIR})
  set(CMAKE_REQUIRED_QUIET ON)
  # Compiled, not linked: only the headers are in question, and no program here may link the driver.
  set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
  check_cxx_source_compiles([[
    #include <cuda_runtime.h>
    int main() { cudaLibrary_t l{}; cudaKernel_t k{}; return cudaLibraryGetKernel(&k, l, "f") == cudaSuccess; }
  ]] FX_CUDA_HAS_LIBRARY_API)
  check_cxx_source_compiles([[
    #include <cupti.h>
    int main() { const char* m = nullptr; CUpti_ActivityKernel10 k{}; (void)k;
                 return cuptiGetErrorMessage(CUPTI_SUCCESS, &m) == CUPTI_SUCCESS; }
  ]] FX_CUDA_HAS_CUPTI_ACTIVITY10)
  check_cxx_source_compiles([[
    #include <cupti_range_profiler.h>
    int main() { return 0; }
  ]] FX_CUDA_HAS_RANGE_PROFILER)
  check_cxx_source_compiles([[
    #include <cublasLt.h>
    int main() { return CUBLASLT_MATMUL_STAGES_768xAUTO + CUBLASLT_MATMUL_TILE_256x32; }
  ]] FX_CUDA_HAS_CUBLASLT_TILES)
  cmake_pop_check_state()

  set(missing "")
  if(NOT FX_CUDA_HAS_LIBRARY_API)
    list(APPEND missing "the runtime's library API (cudaLibraryLoadData, cudaKernel_t)")
  endif()
  if(NOT FX_CUDA_HAS_CUPTI_ACTIVITY10)
    list(APPEND missing "CUPTI's CUpti_ActivityKernel10 and cuptiGetErrorMessage")
  endif()
  if(NOT FX_CUDA_HAS_RANGE_PROFILER)
    list(APPEND missing "CUPTI's range profiler (cupti_range_profiler.h)")
  endif()
  if(NOT FX_CUDA_HAS_CUBLASLT_TILES)
    list(APPEND missing "cuBLASLt's 256x32 tile and 768-stage configurations")
  endif()
  set(${out_missing} "${missing}" PARENT_SCOPE)
endfunction()
