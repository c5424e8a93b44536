#include "kernels/contraction/epilogue_choice.h"

namespace fx::gpu {
namespace {

MatmulEpilogue combine(bool bias, EpilogueActivation activation) {
  switch (activation) {
    case EpilogueActivation::none: return bias ? MatmulEpilogue::bias : MatmulEpilogue::none;
    case EpilogueActivation::relu: return bias ? MatmulEpilogue::relu_bias : MatmulEpilogue::relu;
    case EpilogueActivation::gelu_tanh: break;
  }
  return bias ? MatmulEpilogue::gelu_tanh_bias : MatmulEpilogue::gelu_tanh;
}

}  // namespace

EpilogueChoice choose_matmul_epilogue(const std::vector<std::string>& tail) {
  const CublasLtTail t = cublaslt_tail(tail);
  EpilogueChoice choice;
  choice.epilogue = combine(t.bias, t.activation);
  choice.residual = t.residual;
  choice.absorbed = t.absorbed;
  choice.stop = t.stop;
  const std::string covered = "cuBLASLt " + std::string(cublaslt_epilogue_name(choice.epilogue)) + " epilogue" +
                              (t.residual ? " with the residual as C (beta = 1)" : "");
  if (choice.fully_expressible()) {
    choice.message = covered + " covers the whole tail";
    if (t.activation == EpilogueActivation::gelu_tanh) choice.message += " (tanh approximation)";
    return choice;
  }
  const std::string& op = tail[choice.absorbed];
  choice.message = "not expressible from `" + op + "` on: " + t.why_not + ". " + covered + " covers the first " +
                   std::to_string(choice.absorbed) + " op(s); the remaining " +
                   std::to_string(tail.size() - choice.absorbed) +
                   " need a second kernel that reads and writes the M x N output again";
  return choice;
}

}  // namespace fx::gpu
