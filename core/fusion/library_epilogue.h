// What vendor libraries can apply to a contraction's output before they store it: the executor runs a
// group holding a matmul or a convolution as one cuBLASLt / cuDNN call, and only an epilogue the library
// offers keeps it one kernel. Anything else after the contraction runs as a second kernel that reads and
// writes the contraction's output again, so the engine must not count it as fused.
//
// The executor's copy of these rules is authoritative: kernels/contraction/epilogue_choice.h
// (choose_matmul_epilogue) and conv_call in kernels/executor/contraction_plan.cpp. core cannot link kernels,
// so the rules are restated here; tests/core/test_library_epilogue.cpp pins the same list. Change both
// together.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/graph.h"

namespace fx {

// cuBLASLt epilogues (cuBLASLt API reference, cublasLtEpilogue_t; tested on the GPU): an optional bias add of a per-column [N]
// vector, then an optional relu or gelu_tanh (tanh approximation; erf `gelu` is not covered); multiplications by
// a scalar before both are its alpha. Tail ops are
// named as choose_matmul_epilogue names them: "add(bias)" for an [N] bias vector, "add" for a full-tensor
// add, "add_scalar", "mul_scalar" (alpha), and otherwise the op name ("relu", "gelu_tanh", "gelu", "silu", "mul", ...).
// A tail op by its label: "mul_scalar" is alpha, "add(bias)" (or "bias_add") the [N] bias vector, "add(...)" a full-tensor
// add, and an op name is classified by its registry entry's epilogue trait. kernels/contraction uses it too.
enum class TailOp : std::uint8_t { alpha, bias, relu, gelu_tanh, gelu_erf, full_add, other };
TailOp classify_tail(std::string_view label);

struct TailFit {
  std::size_t absorbed = 0;  // tail[0, absorbed) fits the epilogue
  std::string why_not;       // why tail[absorbed] does not; empty when the whole tail fits
  bool fully_expressible(std::size_t tail_size) const { return absorbed == tail_size; }
};
TailFit fit_cublaslt_epilogue(std::span<const std::string> tail);

// The verdict on a whole group: one contraction plus elementwise work after it.
struct LibraryEpilogue {
  std::string library;            // "cuBLASLt", "cuDNN", or "" for a contraction no library fuses
  std::vector<NodeId> absorbed;   // epilogue nodes the library applies, in order
  std::optional<NodeId> stop;     // the first node it cannot take (nullopt: the whole group fits)
  std::string message;            // why not, for people; empty when the whole group fits
  bool expressible() const { return !stop.has_value(); }
};

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
