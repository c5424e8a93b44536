// Which cuBLASLt epilogue can absorb the elementwise ops that follow a matmul: core's rule mapped onto
// cuBLASLt's epilogue enum, with the executor's one-line message.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/fusion/library_epilogue.h"
#include "kernels/contraction/matmul.h"

namespace fx::gpu {

// The rule is core's (core/fusion/library_epilogue.h, cublaslt_tail), read by the fusion engine too.
using ::fx::EpilogueStop;
using ::fx::epilogue_stop_name;

// `epilogue` (with the residual as C, beta = 1, where `residual`) covers tail[0, absorbed); tail[absorbed, end)
// needs a second kernel that reads and writes the M x N output once more (the honest two-kernel path).
// `message` is one line for people.
struct EpilogueChoice {
  MatmulEpilogue epilogue = MatmulEpilogue::none;
  bool residual = false;
  std::size_t absorbed = 0;
  EpilogueStop stop = EpilogueStop::none;
  std::string message;

  bool fully_expressible() const { return stop == EpilogueStop::none; }
};

// tail: the ops after the matmul in order, labelled as core's matmul_tail_op labels them ("add(bias)",
// "add(residual)", "mul_scalar", "relu", ...: core/fusion/library_epilogue.h).
EpilogueChoice choose_matmul_epilogue(const std::vector<std::string>& tail);

}  // namespace fx::gpu
