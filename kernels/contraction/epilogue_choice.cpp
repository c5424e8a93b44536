#include "kernels/contraction/epilogue_choice.h"

#include <optional>

#include "core/fusion/library_epilogue.h"

namespace fx::gpu {
namespace {

MatmulEpilogue combine(bool bias, std::optional<TailOp> activation) {
  if (!activation) return bias ? MatmulEpilogue::bias : MatmulEpilogue::none;
  if (*activation == TailOp::relu) return bias ? MatmulEpilogue::relu_bias : MatmulEpilogue::relu;
  return bias ? MatmulEpilogue::gelu_tanh_bias : MatmulEpilogue::gelu_tanh;
}

// Why op (at its position, after what was absorbed) ends the epilogue; none if it can join.
EpilogueStop stop_reason(TailOp op, bool have_bias, bool have_activation) {
  switch (op) {
    case TailOp::alpha: return have_bias || have_activation ? EpilogueStop::scale_after_epilogue : EpilogueStop::none;
    case TailOp::bias:
      if (have_activation) return EpilogueStop::activation_then_bias;
      return have_bias ? EpilogueStop::second_bias : EpilogueStop::none;
    case TailOp::relu:
    case TailOp::gelu_tanh: return have_activation ? EpilogueStop::second_activation : EpilogueStop::none;
    case TailOp::gelu_erf: return EpilogueStop::erf_gelu;
    case TailOp::full_add: return EpilogueStop::full_tensor_add;
    case TailOp::other: return EpilogueStop::unsupported_op;
  }
  return EpilogueStop::unsupported_op;
}

std::string explain(EpilogueStop stop, const std::string& op) {
  switch (stop) {
    case EpilogueStop::none: return {};
    case EpilogueStop::erf_gelu:
      return "`gelu` is erf-based; cuBLASLt's GELU epilogue is the tanh approximation, exact only for `gelu_tanh`";
    case EpilogueStop::full_tensor_add:
      return "`" + op + "` adds a full M x N tensor, not an [N] bias vector";
    case EpilogueStop::activation_then_bias:
      return "the bias comes after the activation; cuBLASLt adds the bias before it";
    case EpilogueStop::second_bias: return "a second bias add; fold both biases into one first";
    case EpilogueStop::second_activation: return "cuBLASLt applies one activation per epilogue";
    case EpilogueStop::scale_after_epilogue:
      return "a multiplication by a scalar after the bias or activation; cuBLASLt's alpha scales the product before them";
    case EpilogueStop::unsupported_op: return "`" + op + "` has no cuBLASLt epilogue";
  }
  return {};
}

}  // namespace

std::string_view epilogue_stop_name(EpilogueStop s) {
  switch (s) {
    case EpilogueStop::none: return "none";
    case EpilogueStop::erf_gelu: return "erf_gelu";
    case EpilogueStop::full_tensor_add: return "full_tensor_add";
    case EpilogueStop::activation_then_bias: return "activation_then_bias";
    case EpilogueStop::second_bias: return "second_bias";
    case EpilogueStop::second_activation: return "second_activation";
    case EpilogueStop::scale_after_epilogue: return "scale_after_epilogue";
    case EpilogueStop::unsupported_op: return "unsupported_op";
  }
  return "?";
}

EpilogueChoice choose_matmul_epilogue(const std::vector<std::string>& tail) {
  bool have_bias = false;
  std::optional<TailOp> activation;
  EpilogueChoice choice;
  for (; choice.absorbed < tail.size(); ++choice.absorbed) {
    const std::string& op = tail[choice.absorbed];
    const TailOp kind = classify_tail(op);
    choice.stop = stop_reason(kind, have_bias, activation.has_value());
    if (choice.stop != EpilogueStop::none) break;
    if (kind == TailOp::alpha) continue;  // folded into alpha (the caller multiplies the scalars)
    if (kind == TailOp::bias) {
      have_bias = true;
    } else {
      activation = kind;
    }
  }
  choice.epilogue = combine(have_bias, activation);
  const std::string covered = "cuBLASLt " + std::string(cublaslt_epilogue_name(choice.epilogue)) + " epilogue";
  if (choice.fully_expressible()) {
    choice.message = covered + " covers the whole tail";
    if (activation == TailOp::gelu_tanh) choice.message += " (tanh approximation)";
    return choice;
  }
  const std::string& op = tail[choice.absorbed];
  choice.message = "not expressible from `" + op + "` on: " + explain(choice.stop, op) + ". " + covered +
                   " covers the first " + std::to_string(choice.absorbed) + " op(s); the remaining " +
                   std::to_string(tail.size() - choice.absorbed) +
                   " need a second kernel that reads and writes the M x N output again";
  return choice;
}

}  // namespace fx::gpu
