// Conv2d in a build without cuDNN (kernels/CMakeLists.txt): every other path of the executor works, and a plan
// that needs a convolution stops with a message saying why instead of the build failing.
#include <stdexcept>

#include "kernels/contraction/conv.h"

namespace fx::gpu {

bool cudnn_available() { return false; }

struct Conv2d::Impl {};

Conv2d::Conv2d(ConvApi) {
  throw std::runtime_error(
      "this fusion-cli was built without cuDNN (not found at build time), so convolutions cannot run; "
      "install cuDNN for this CUDA version and rebuild");
}
Conv2d::~Conv2d() = default;
Conv2d::Conv2d(Conv2d&&) noexcept = default;
Conv2d& Conv2d::operator=(Conv2d&&) noexcept = default;

void Conv2d::run(const Conv2dProblem&, const void*, const void*, const void*, void*, CUstream_st*) {
  throw std::logic_error("Conv2d::run without cuDNN");  // unreachable: the constructor refused
}
std::string Conv2d::algorithm(const Conv2dProblem&) const { return {}; }
std::size_t Conv2d::cached_plan_count() const { return 0; }
void Conv2d::set_tuning_cache(TuningCache*, bool) {}

}  // namespace fx::gpu
