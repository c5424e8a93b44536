// The matmul graph in a build without cuDNN (kernels/CMakeLists.txt): constructing a MatmulGraph throws saying so.
#include <stdexcept>

#include "kernels/contraction/matmul_graph.h"

namespace fx::gpu {

struct MatmulGraph::Impl {};

MatmulGraph::MatmulGraph() {
  throw std::runtime_error(
      "this fusion-cli was built without cuDNN (not found at build time), so a matmul graph cannot run; install "
      "cuDNN for this CUDA version and rebuild");
}
MatmulGraph::~MatmulGraph() = default;
MatmulGraph::MatmulGraph(MatmulGraph&&) noexcept = default;
MatmulGraph& MatmulGraph::operator=(MatmulGraph&&) noexcept = default;

std::string MatmulGraph::unsupported_reason(const MatmulGraphProblem&) { return "this build has no cuDNN"; }
void MatmulGraph::run(const MatmulGraphProblem&, const void*, const void*, const std::vector<const void*>&, void*,
                      CUstream_st*) {
  throw std::logic_error("MatmulGraph::run without cuDNN");  // unreachable: the constructor refused
}
std::string MatmulGraph::engine(const MatmulGraphProblem&) const { return {}; }

}  // namespace fx::gpu
