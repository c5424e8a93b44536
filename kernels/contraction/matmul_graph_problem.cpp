// The vendor-free half of matmul_graph.h: names, validation and the report line.
#include "kernels/contraction/matmul_graph.h"

#include <vector>

namespace fx::gpu {
namespace {

bool reads_value(GraphOp op) { return op == GraphOp::add_value || op == GraphOp::mul_value; }

int resolved(int ref, std::size_t step) { return ref == GraphStep::kPrevious ? static_cast<int>(step) : ref; }

}  // namespace

std::string_view graph_op_name(GraphOp op) {
  switch (op) {
    case GraphOp::add_bias: return "add_bias";
    case GraphOp::add_tensor: return "add_tensor";
    case GraphOp::mul_bias: return "mul_bias";
    case GraphOp::mul_tensor: return "mul_tensor";
    case GraphOp::mul_scalar: return "mul_scalar";
    case GraphOp::add_scalar: return "add_scalar";
    case GraphOp::add_value: return "add_value";
    case GraphOp::mul_value: return "mul_value";
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
  // Value i + 1 is step i's result; a step reads values computed before it, and each value but Y is read.
  std::vector<bool> read(p.tail.size() + 1, false);
  for (std::size_t i = 0; i < p.tail.size(); ++i) {
    const GraphStep& step = p.tail[i];
    for (const int ref : {step.input, reads_value(step.op) ? step.other : step.input}) {
      const int v = resolved(ref, i);
      if (v < 0 || v > static_cast<int>(i)) {
        return "step " + std::to_string(i + 1) + " reads value " + std::to_string(ref) + ", not one computed before it";
      }
      read[static_cast<std::size_t>(v)] = true;
    }
  }
  for (std::size_t v = 0; v < p.tail.size(); ++v) {
    if (!read[v]) return (v == 0 ? std::string("the product") : "step " + std::to_string(v) + "'s result") + " is read by no step";
  }
  return {};
}

std::string describe_matmul_graph(const MatmulGraphProblem& p) {
  std::string s = "cuDNN matmul graph";
  // A chain reads as "+ add_bias + gelu_erf"; a step off the chain names its values: "+ mul_value(v2, v0)".
  for (std::size_t i = 0; i < p.tail.size(); ++i) {
    const GraphStep& step = p.tail[i];
    const int in = resolved(step.input, i);
    s += " + " + std::string(graph_op_name(step.op));
    if (reads_value(step.op)) {
      s += "(v" + std::to_string(in) + ", v" + std::to_string(resolved(step.other, i)) + ")";
    } else if (in != static_cast<int>(i)) {
      s += "(v" + std::to_string(in) + ")";
    }
  }
  s += std::string(", ") + (p.type == DType::bf16 ? "BF16" : "FP16") + ", f32 accumulation, " + std::to_string(p.m) +
       "x" + std::to_string(p.n) + "x" + std::to_string(p.k);
  return s;
}

}  // namespace fx::gpu
