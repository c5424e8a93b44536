// Attention in a build without cuDNN (kernels/CMakeLists.txt): the executor runs attention chains unfused and says
// why; constructing an Attention throws saying so.
#include <stdexcept>

#include "kernels/contraction/attention.h"

namespace fx::gpu {

bool attention_available() { return false; }

struct Attention::Impl {};

Attention::Attention() {
  throw std::runtime_error(
      "this fusion-cli was built without cuDNN (not found at build time), so fused attention cannot run; install "
      "cuDNN for this CUDA version and rebuild");
}
Attention::~Attention() = default;
Attention::Attention(Attention&&) noexcept = default;
Attention& Attention::operator=(Attention&&) noexcept = default;

std::string Attention::unsupported_reason(const AttentionProblem&) { return "this build has no cuDNN"; }
void Attention::run(const AttentionProblem&, const void*, const void*, const void*, const void*, void*, CUstream_st*) {
  throw std::logic_error("Attention::run without cuDNN");  // unreachable: the constructor refused
}
std::string Attention::engine(const AttentionProblem&) const { return {}; }

}  // namespace fx::gpu
