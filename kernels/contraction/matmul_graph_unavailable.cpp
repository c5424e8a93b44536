// The matmul graph in a build without cuDNN (kernels/CMakeLists.txt): every problem is refused saying so, and the
// executor runs the matmul on cuBLASLt and its tail as generated kernels.
#include <stdexcept>

#include "kernels/contraction/matmul_graph.h"

namespace fx::gpu {

struct MatmulGraph::Impl {};

MatmulGraph::MatmulGraph() = default;
MatmulGraph::~MatmulGraph() = default;
MatmulGraph::MatmulGraph(MatmulGraph&&) noexcept = default;
MatmulGraph& MatmulGraph::operator=(MatmulGraph&&) noexcept = default;

std::string MatmulGraph::unsupported_reason(const MatmulGraphProblem&) { return "this build has no cuDNN"; }
void MatmulGraph::run(const MatmulGraphProblem&, const void*, const void*, const std::vector<const void*>&, void*,
                      CUstream_st*) {
  throw std::runtime_error("matmul graph: this build has no cuDNN");
}
std::string MatmulGraph::engine(const MatmulGraphProblem&) const { return {}; }

}  // namespace fx::gpu
