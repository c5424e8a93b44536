// The float64 reference evaluator: every op of the graph format computed on the CPU, plainly, in double
// precision. It shares no code with the generated kernels (only the numerics that define the format: the
// dropout mask and f16/bf16 rounding), so tests can check both plans against something independent of them.
// Meant for small shapes: it is a loop nest per op, not a fast path.
#pragma once

#include <string>
#include <vector>

#include "core/graph/diagnostic.h"
#include "core/graph/graph.h"

namespace fx {

// A tensor's values as doubles (f16/bf16 exactly as stored, bool 0/1, integers exact up to 2^53).
struct HostTensor {
  TensorType type;
  std::vector<double> values;  // row-major, numel() of them
};

// Every value of the graph (indexed by ValueId: graph inputs first, then one per node) from the graph
// inputs given in order. f16/bf16 results are rounded to their format and integers truncated toward zero
// after every node, as stores round them; f32 results keep float64 precision. Errors (as diagnostics
// naming the node): inputs that do not match the graph, and custom ops, which have no semantics.
Expected<std::vector<HostTensor>> evaluate_reference(const Graph& graph, std::vector<HostTensor> inputs);

// Work the reference would do for a graph (element visits plus multiply-adds), to decide whether a check
// against it is affordable.
double reference_cost(const Graph& graph);

namespace reference_detail {
// One node's result from its operands' values (scalars as rank-0 tensors); throws std::invalid_argument.
HostTensor evaluate_node(const Graph& graph, const Node& node, const std::vector<const HostTensor*>& operands);
HostTensor evaluate_reduction(const Node& node, const std::vector<const HostTensor*>& in);
HostTensor evaluate_contraction(const Node& node, const std::vector<const HostTensor*>& in);
HostTensor evaluate_layout(const Node& node, const std::vector<const HostTensor*>& in);
HostTensor evaluate_opaque(const Node& node, const std::vector<const HostTensor*>& in);

// Row-major strides of a shape.
std::vector<std::int64_t> strides_of(const Shape& s);
// A tensor's flat offset for the output element at `coords` (of the output's shape), numpy broadcasting.
std::int64_t broadcast_offset(const Shape& in, const Shape& out, const std::vector<std::int64_t>& coords);
// (outer, length, inner) of a shape around one axis: element (o, j, i) sits at (o * length + j) * inner + i.
struct AxisSplit {
  std::int64_t outer = 1, length = 1, inner = 1;
};
AxisSplit split_at(const Shape& s, std::size_t axis);
}  // namespace reference_detail

}  // namespace fx
