// What vendor libraries can apply to a contraction's output before they store it: the executor runs a
// group holding a matmul or a convolution as one cuBLASLt / cuDNN call, and only an epilogue the library
// offers keeps it one kernel. Anything else after the contraction runs as a second kernel that reads and
// writes the contraction's output again, so the engine must not count it as fused.
//
// The cuBLASLt rule lives here once (cublaslt_tail, with matmul_tail_op labelling the ops), CUDA-free: the engine
// reads it through library_epilogue and the executor through kernels/contraction/epilogue_choice.h, which only
// maps it onto cuBLASLt's enum. cuDNN's rule is still restated in conv_call (kernels/executor/contraction_plan.cpp);
// tests/core/test_library_epilogue.cpp pins it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"

namespace fx {

// cuBLASLt epilogues (cuBLASLt API reference: cublasLtMatmul computes D = epilogue(alpha * A*B + beta * C), and
// cublasLtEpilogue_t's bias and activation apply to that sum; tested on the GPU): an optional residual, a full
// tensor of the output's shape and dtype read as C with beta = 1, and an optional bias add of a per-column [N]
// vector, in either order (addition commutes), then an optional relu or gelu_tanh (tanh approximation; erf `gelu`
// is not covered); multiplications by a scalar before all of them are its alpha.
//
// Tail ops are labelled as matmul_tail_op labels them:
//   "mul_scalar"      a multiplication by a scalar literal (alpha)
//   "add(bias)"       an add of a per-column [N] vector (also "bias_add")
//   "add(residual)"   an add of a tensor in memory of the output's shape and dtype (C, beta = 1)
//   "add(broadcast)"  an add of a tensor in memory that broadcasts to the output and is not an [N] vector
//   "add(itself)"     an add of the chain's value to itself
//   "add(computed)"   an add of a value computed in the same group
//   "add_scalar"      an add of a scalar literal
// and otherwise the op's name ("relu", "gelu_tanh", "gelu", "silu", "mul", ...), classified by its registry
// entry's epilogue trait. kernels/contraction uses the same labels.
enum class TailOp : std::uint8_t {
  alpha, bias, residual, relu, gelu_tanh, gelu_erf, broadcast_add, self_add, computed_add, other
};
TailOp classify_tail(std::string_view label);

// Why a tail stops being expressible: stable codes the UI can group by.
enum class EpilogueStop : std::uint8_t {
  none,                       // the whole tail fits the epilogue
  erf_gelu,                   // `gelu` is erf-based; cuBLASLt's GELU is the tanh approximation
  broadcast_add,              // an add of a tensor broadcast to the output that is not an [N] bias vector
  self_add,                   // an add of the value to itself: C must be another tensor
  computed_add,               // an add of a value computed in the group: C is read from memory before the call
  residual_after_activation,  // a residual add after the activation: C is added before it
  second_residual,            // a second residual add: one C input
  activation_then_bias,       // a bias after the activation: cuBLASLt adds the bias first
  second_bias,                // a second bias add (fold it into the first on the host instead)
  second_activation,          // one activation per epilogue
  scale_after_epilogue,       // a scalar multiply after the residual, bias or activation (alpha scales A*B only)
  unsupported_op,             // anything else (sigmoid, mul, ...)
};
std::string_view epilogue_stop_name(EpilogueStop s);

enum class EpilogueActivation : std::uint8_t { none, relu, gelu_tanh };

// The epilogue that covers tail[0, absorbed): a residual (C, beta = 1) or not, a bias or not, one activation or
// none; `stop` and `why_not` say why tail[absorbed] cannot join (none and "" when the whole tail fits).
struct CublasLtTail {
  bool residual = false;
  bool bias = false;
  EpilogueActivation activation = EpilogueActivation::none;
  std::size_t absorbed = 0;
  EpilogueStop stop = EpilogueStop::none;
  std::string why_not;
};
CublasLtTail cublaslt_tail(std::span<const std::string> tail);

// One op of a matmul's tail as the rule reads it: its label, the tensor it reads from memory (the bias vector or
// the residual), and the scalar of a "mul_scalar" (1 otherwise).
struct MatmulTailOp {
  std::string label;
  std::optional<ValueId> operand;
  double scale = 1.0;
};
// `n` in the group `nodes` reads `v`, the matmul's output or the value of the tail op before it (so v has the
// output's type). The executor labels its tails with it too (kernels/executor/contraction_plan.cpp).
MatmulTailOp matmul_tail_op(const Graph& g, std::span<const NodeId> nodes, NodeId n, ValueId v);

struct TailFit {
  std::size_t absorbed = 0;  // tail[0, absorbed) fits the epilogue
  std::string why_not;       // why tail[absorbed] does not; empty when the whole tail fits
  bool fully_expressible(std::size_t tail_size) const { return absorbed == tail_size; }
};
TailFit fit_cublaslt_epilogue(std::span<const std::string> tail);

// cuDNN's matmul graph (kernels/contraction/matmul_graph.h) takes what cuBLASLt's epilogue cannot: pointwise steps
// computed in f32 on chip after the product, each one of these. The steps need not be a chain: a step may read
// the product or any earlier step's result (x * sigmoid(x), TVM's add(conv, add(conv, 1)), a GELU written out op
// by op), as long as only the last one is stored.
enum class CudnnPointwise : std::uint8_t {
  mul_scalar, add_scalar, add_bias, add_tensor, mul_bias, mul_tensor, add_value, mul_value,
  relu, gelu_erf, gelu_tanh, sigmoid, tanh, silu
};
// The unary step or the step with a tensor or scalar operand of one tail label (matmul_tail_op's), nullopt where
// the graph has none.
std::optional<CudnnPointwise> cudnn_pointwise(std::string_view label);

// One step of the graph: its node and op, the value it applies to and, for add_value / mul_value, the second
// value (0 is the product, i + 1 step i's result), the tensor a bias or tensor step reads, the scalar of
// mul_scalar / add_scalar.
struct CudnnTailStep {
  NodeId node = -1;
  CudnnPointwise op = CudnnPointwise::relu;
  int input = 0, other = 0;
  std::optional<ValueId> operand;
  double scalar = 1.0;
};
struct CudnnMatmulTail {
  std::vector<CudnnTailStep> steps;  // every node of the group after the matmul, in order; the last writes Y
  std::optional<NodeId> stop;        // the first node the graph cannot take
  std::string why_not;               // what fails first; empty when the whole group is one graph
  bool fits() const { return why_not.empty(); }
};
// Whether the matmul `mm` of group `nodes` (any order) and every node after it run as one cuDNN matmul
// graph: f16 or bf16, A and B as stored (no transpose), B one [K, N] weight, M, N and K multiples of 8 (16-byte
// rows), every other node a step of the output's shape and dtype reading the product, earlier steps, scalars, a
// bias vector or a residual, and no value but the last one stored.
CudnnMatmulTail cudnn_matmul_tail(const Graph& g, std::span<const NodeId> nodes, NodeId mm);

// Why a convolution's fused call stops at an `add` of another tensor of its output's shape and dtype (a residual):
// the same message for the engine and the executor.
std::string conv_residual_refusal();

// The verdict on a whole group: one contraction plus elementwise work after it.
struct LibraryEpilogue {
  std::string library;            // "cuBLASLt", "cuDNN", or "" for a contraction no library fuses
  std::vector<NodeId> absorbed;   // epilogue nodes the library applies, in order
  std::optional<NodeId> stop;     // the first node it cannot take (nullopt: the whole group fits)
  std::string message;            // why not, for people; empty when the whole group fits
  bool expressible() const { return !stop.has_value(); }
};

// "mm (matmul) and the 10 ops after it run as one cuDNN call": a group of one contraction whose library takes
// everything after it; "" for any other group. Codegen and the engine's explanations say it.
std::string library_call_summary(const Graph& g, std::span<const NodeId> nodes);

// `nodes` in topological order, holding exactly one contraction `c`, nodes downstream of it and transposes
// folded into its operands (folds_into_operand; the legality checks reject other work before a contraction
// first). Values used outside `nodes` (or graph outputs) are stored by the group.
LibraryEpilogue library_epilogue(const Graph& g, std::span<const NodeId> nodes, NodeId c);

// True when `n`, in the group `nodes`, is a transpose of the last two dims read only by the matmul `c`, whose
// input comes from memory: cuBLASLt reads that input with the operand's transpose flag flipped, so the
// transpose is never written (XLA's TransposeFolding; Inductor passes such a view to its GEMM as strides).
// The executor reads the operands through it: matmul_operands in kernels/executor/contraction_plan.cpp.
bool folds_into_operand(const Graph& g, std::span<const NodeId> nodes, NodeId n, NodeId c);

// The scalar of a multiplication of a tensor by a scalar literal (`mul(x, 0.125)`); nullopt for any other node.
// Right after a matmul it is cuBLASLt's alpha (the "mul_scalar" tail op), so it costs no second kernel.
std::optional<double> scalar_multiplier(const Graph& g, NodeId n);

}  // namespace fx
