// A matmul and the pointwise operations after it as one cuDNN operation graph, run by cuDNN's generic run-time
// fusion engines: for the epilogues cuBLASLt lacks (an erf GELU, sigmoid, SiLU, tanh, a GELU written out op by op;
// cuBLASLt's GELU is the tanh approximation). Every value between the product and Y is kept on chip in f32.
// Inputs and Y are f16 or bf16 with f32 accumulation (the documented and measured cases). Vendor types stay in
// the pimpl.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/dtype.h"

struct CUstream_st;

namespace fx::gpu {

// One pointwise step after the product. A step applies to one value (`input`); add_bias and mul_bias also read a
// vector of N values broadcast over rows, add_tensor and mul_tensor a tensor of Y's shape (a residual, a gate),
// mul_scalar and add_scalar `scalar`, add_value and mul_value a second value of the graph (`other`); the rest
// are unary. Values are numbered: 0 is the product, i + 1 the result of step i. The last step writes Y and every other value is read by a later step,
// so the steps form a DAG with one output: x * sigmoid(x) reads the product twice.
enum class GraphOp : std::uint8_t {
  add_bias, add_tensor, mul_bias, mul_tensor, mul_scalar, add_scalar, add_value, mul_value,
  relu, gelu_erf, gelu_tanh, sigmoid, tanh, silu
};
struct GraphStep {
  static constexpr int kPrevious = -1;  // the value just before the step: a chain
  GraphOp op = GraphOp::relu;
  float scalar = 1.0f;     // mul_scalar, add_scalar
  int input = kPrevious;   // the value the step applies to
  int other = kPrevious;   // add_value, mul_value: the second value
  bool operator==(const GraphStep&) const = default;
};
std::string_view graph_op_name(GraphOp op);  // "add_bias", "gelu_erf", ...

// Y[M, N] = tail(A B): A is [M, K] (stored [K, M] when transpose_a), B is [K, N] (stored [N, K] when
// transpose_b), all row-major and packed; bias vectors and residuals of `type` too.
struct MatmulGraphProblem {
  std::int64_t m = 1, n = 1, k = 1;
  bool transpose_a = false, transpose_b = false;
  DType type = DType::bf16;
  std::vector<GraphStep> tail;
  bool operator==(const MatmulGraphProblem&) const = default;
};

// Empty when well formed; otherwise the first problem found.
std::string validate_matmul_graph(const MatmulGraphProblem& p);
// "cuDNN matmul graph + add_bias + gelu_erf, BF16, f32 accumulation, 8192x4096x4096".
std::string describe_matmul_graph(const MatmulGraphProblem& p);

// Owns a cuDNN handle and a per-problem cache of execution plans and their workspaces. Not thread-safe; one per
// stream.
class MatmulGraph {
 public:
  MatmulGraph();  // throws NoDeviceError without a usable CUDA device (a build without cuDNN refuses every problem)
  ~MatmulGraph();
  MatmulGraph(MatmulGraph&&) noexcept;
  MatmulGraph& operator=(MatmulGraph&&) noexcept;
  MatmulGraph(const MatmulGraph&) = delete;
  MatmulGraph& operator=(const MatmulGraph&) = delete;

  // "" when cuDNN offers an engine for p on this device (the plan is then built, compiled where the engine is
  // compiled at run time, and kept), else why not, in cuDNN's words. Throws GpuError only for a failing CUDA call.
  std::string unsupported_reason(const MatmulGraphProblem& p);
  // Enqueues y = tail(a b) on stream. `operands` holds one pointer per tail step: the bias vector or the residual,
  // null for the other steps. Throws std::invalid_argument for a malformed problem or a missing operand,
  // std::runtime_error when cuDNN has no engine for p (ask unsupported_reason first).
  void run(const MatmulGraphProblem& p, const void* a, const void* b, const std::vector<const void*>& operands, void* y,
           CUstream_st* stream);
  // The engine that runs p, once a plan exists: "cuDNN engine 4 (tensor cores) (compiled at run time), ...".
  std::string engine(const MatmulGraphProblem& p) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx::gpu
