// The vendor-free half of matmul_graph.h: names, validation and the report line.
#include "kernels/contraction/matmul_graph.h"

namespace fx::gpu {

std::string_view graph_op_name(GraphOp op) {
  switch (op) {
    case GraphOp::add_bias: return "add_bias";
    case GraphOp::add_tensor: return "add_tensor";
    case GraphOp::mul_scalar: return "mul_scalar";
    case GraphOp::relu: return "relu";
    case GraphOp::gelu_erf: return "gelu_erf";
    case GraphOp::gelu_tanh: return "gelu_tanh";
    case GraphOp::sigmoid: return "sigmoid";
    case GraphOp::tanh: return "tanh";
    case GraphOp::silu: return "silu";
  }
  return "?";
}

std::string validate_matmul_graph(const MatmulGraphProblem& p) {
  if (p.m < 1 || p.n < 1 || p.k < 1) return "sizes must be positive";
  if (p.type != DType::f16 && p.type != DType::bf16) return "the matmul graph takes f16 or bf16";
  // cuDNN's tensors are described 16-byte aligned: every row of A, B and Y starts on such a boundary.
  const std::int64_t per16 = 16 / dtype_size(p.type);
  if (p.m % per16 != 0 || p.n % per16 != 0 || p.k % per16 != 0) {
    return "M, N and K must be multiples of " + std::to_string(per16) + " (16-byte rows)";
  }
  return {};
}

std::string describe_matmul_graph(const MatmulGraphProblem& p) {
  std::string s = "cuDNN matmul graph";
  for (const GraphStep& step : p.tail) s += " + " + std::string(graph_op_name(step.op));
  s += std::string(", ") + (p.type == DType::bf16 ? "BF16" : "FP16") + ", f32 accumulation, " + std::to_string(p.m) +
       "x" + std::to_string(p.n) + "x" + std::to_string(p.k);
  return s;
}

}  // namespace fx::gpu
