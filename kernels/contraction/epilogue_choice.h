// Which cuBLASLt epilogue can absorb the elementwise ops that follow a matmul. A pure function on op names,
// so the fusion engine's reports, the executor and the no-GPU tests all use the same rule.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/contraction/matmul.h"

namespace fx::gpu {

// Why the tail stops being expressible: stable codes the UI can group by.
enum class EpilogueStop : std::uint8_t {
  none,                  // the whole tail fits the epilogue
  erf_gelu,              // `gelu` is erf-based; cuBLASLt's GELU is the tanh approximation
  full_tensor_add,       // an add of a full [M,N] tensor (residual), not a bias vector
  activation_then_bias,  // a bias after the activation: cuBLASLt adds the bias first
  second_bias,           // a second bias add (fold it into the first on the host instead)
  second_activation,     // one activation per epilogue
  scale_after_epilogue,  // a scalar multiply after the bias or activation (alpha scales the product only)
  unsupported_op,        // anything else (sigmoid, mul, ...)
};

std::string_view epilogue_stop_name(EpilogueStop s);

// `epilogue` covers tail[0, absorbed); tail[absorbed, end) needs a second kernel that reads and writes the
// M x N output once more (the honest two-kernel path). `message` is one line for people.
struct EpilogueChoice {
  MatmulEpilogue epilogue = MatmulEpilogue::none;
  std::size_t absorbed = 0;
  EpilogueStop stop = EpilogueStop::none;
  std::string message;

  bool fully_expressible() const { return stop == EpilogueStop::none; }
};

// tail: op names in order after the matmul. "add(bias)" (also "bias_add") is an add of an [N] vector
// broadcast over rows; "add" alone is a full-tensor add. "mul_scalar" (a multiplication by a scalar literal)
// before any bias or activation is cuBLASLt's alpha. "relu", "gelu_tanh" and "gelu" (erf) are activations.
EpilogueChoice choose_matmul_epilogue(const std::vector<std::string>& tail);

}  // namespace fx::gpu
