// The environment a tuning result holds in: this GPU and the software that compiled and ran the candidates.
#pragma once

#include "kernels/tuning/tuning_cache.h"

namespace fx::gpu {

// Reads the device's name, UUID, compute capability and memory, and the driver, CUDA runtime, NVRTC,
// cuBLASLt and cuDNN versions and this program's. Needs a CUDA device (the caller has one: it is tuning).
TuningEnvironment tuning_environment(int ordinal);

}  // namespace fx::gpu
