#include "core/cost/cost_model.h"

#include <algorithm>

#include "core/analysis/views.h"

namespace fx {
namespace {

// Elementwise and reduction math runs on CUDA cores in f32 even for f16/bf16 data (loads are widened), so
// its peak is the f32 one; contractions run on tensor cores at the operand dtype's peak.
double node_compute_time(const Graph& g, const DeviceDescription& d, NodeId n) {
  const Node& node = g.node(n);
  const double flops = g.flops(n);
  if (flops <= 0) return 0;
  if (node.op_class() == OpClass::contraction) {
    const DType operand = g.value_type(node.inputs[0].value).dtype;
    return flops / d.peak_flops(operand, /*tensor_cores=*/true);
  }
  return flops / d.peak_flops(DType::f32, /*tensor_cores=*/false);
}

}  // namespace

GroupCost CostModel::cost(const Graph& g, const GroupIo& io, std::span<const NodeId> nodes,
                          std::span<const NodeId> recomputed) const {
  GroupCost c;
  if (io.outputs.empty()) return c;  // eliminated: every consumer recomputes it, nothing is launched
  // A view alone: its output is its input's buffer, so nothing is launched and no byte moves.
  if (nodes.size() == 1 && recomputed.empty() && lone_view(g, nodes.front()).is_view()) return c;
  for (ValueId v : io.inputs) c.bytes_read = saturating_add(c.bytes_read, g.value_type(v).bytes());
  for (ValueId v : io.outputs) c.bytes_written = saturating_add(c.bytes_written, g.value_type(v).bytes());
  c.tensors_read = static_cast<int>(io.inputs.size());
  c.tensors_written = static_cast<int>(io.outputs.size());
  for (NodeId n : nodes) {
    c.flops += g.flops(n);
    c.compute_time_s += node_compute_time(g, device_, n);
  }
  for (NodeId n : recomputed) {
    c.flops += g.flops(n);
    c.compute_time_s += node_compute_time(g, device_, n);
  }
  c.memory_time_s = static_cast<double>(c.bytes_moved()) / device_.hbm_bandwidth;
  c.launch_s = device_.launch_overhead_s;
  c.time_s = std::max(c.memory_time_s, c.compute_time_s) + c.launch_s;
  return c;
}

GroupCost CostModel::single(const Graph& g, NodeId n) const {
  GroupIo io;
  io.inputs = g.tensor_inputs(n);
  std::sort(io.inputs.begin(), io.inputs.end());
  io.inputs.erase(std::unique(io.inputs.begin(), io.inputs.end()), io.inputs.end());
  io.outputs = {g.value_of(n)};
  const NodeId nodes[] = {n};
  return cost(g, io, nodes, {});
}

double CostModel::time_of(std::int64_t bytes, double flops, DType dtype, bool tensor_cores) const {
  return std::max(static_cast<double>(bytes) / device_.hbm_bandwidth, flops / device_.peak_flops(dtype, tensor_cores)) +
         device_.launch_overhead_s;
}

std::string describe_traffic(const GroupCost& c) {
  return std::to_string(c.tensors_read) + (c.tensors_read == 1 ? " read + " : " reads + ") +
         std::to_string(c.tensors_written) + (c.tensors_written == 1 ? " write = " : " writes = ") +
         format_bytes(static_cast<double>(c.bytes_moved()));
}

}  // namespace fx
