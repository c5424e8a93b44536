#include "kernels/tuning/tuning_environment.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "kernels/common/cuda_call.h"

#if FX_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace fx::gpu {
namespace {

std::string uuid_text(const cudaUUID_t& uuid) {
  std::string out = "GPU-";
  char byte[3];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(byte, sizeof byte, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    out += byte;
  }
  return out;
}

// The kernel module's version ("580.159.04"): cudaDriverGetVersion gives only the CUDA API level (13000), which
// stays the same across driver updates that can change generated code's speed.
std::string kernel_module_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  std::getline(in, line);
  const auto at = line.find("Kernel Module");
  if (at == std::string::npos) return "unknown";
  std::istringstream words(line.substr(at + 13));
  std::string version;
  words >> version;
  return version.empty() ? "unknown" : version;
}

}  // namespace

TuningEnvironment tuning_environment(int ordinal) {
  cudaDeviceProp p{};
  FX_CUDA_CALL(cudaGetDeviceProperties(&p, ordinal));
  int driver = 0, runtime = 0, nvrtc_major = 0, nvrtc_minor = 0;
  FX_CUDA_CALL(cudaDriverGetVersion(&driver));
  FX_CUDA_CALL(cudaRuntimeGetVersion(&runtime));
  FX_CUDA_CALL(nvrtcVersion(&nvrtc_major, &nvrtc_minor));
  std::string software = "fusion-explorer " FX_VERSION ", driver " + kernel_module_version() + " (API " + std::to_string(driver) + ")" + ", runtime " +
                         std::to_string(runtime) + ", NVRTC " + std::to_string(nvrtc_major) + "." +
                         std::to_string(nvrtc_minor) + ", cuBLASLt " + std::to_string(cublasLtGetVersion());
#if FX_HAVE_CUDNN
  software += ", cuDNN " + std::to_string(cudnnGetVersion());
#endif
  return {p.name, uuid_text(p.uuid), p.major * 10 + p.minor, static_cast<std::int64_t>(p.totalGlobalMem),
          std::move(software)};
}

}  // namespace fx::gpu
