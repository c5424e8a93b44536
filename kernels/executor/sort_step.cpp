#include "kernels/executor/sort_step.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/common/cuda_call.h"

namespace fx::gpu {
namespace {

SortKey key_of(DType t) {
  switch (t) {
    case DType::f32: return SortKey::f32;
    case DType::f16: return SortKey::f16;
    case DType::bf16: return SortKey::bf16;
    case DType::i32: return SortKey::i32;
    case DType::i64: return SortKey::i64;
    case DType::boolean: return SortKey::u8;
  }
  return SortKey::f32;
}

// The node's work as sorts of rows: the sorted axis must be the innermost one that is not 1.
RowSort row_sort_of(const Graph& g, const Node& node) {
  const Shape& s = g.value_type(node.inputs[0].value).shape;
  const auto axis = static_cast<std::size_t>(*normalize_axis(node.attrs.get_int("axis"), s.size()));
  for (std::size_t d = axis + 1; d < s.size(); ++d) {
    if (s[d] != 1) {
      throw std::invalid_argument("node " + node.name + " (" + node.op + ") sorts axis " + std::to_string(axis) + " of " +
                                  shape_to_string(s) + "; the CUB path sorts the innermost axis only (transpose first)");
    }
  }
  RowSort r;
  r.key = key_of(node.type.dtype);
  r.length = s.empty() ? 1 : s[axis];
  r.rows = numel(s) / r.length;
  const bool topk = node.op_id() == OpId::topk;
  r.descending = topk || node.attrs.get_bool("descending");
  if (topk) r.keep = node.attrs.get_int("k");
  return r;
}

}  // namespace

std::string SortStep::describe() const {
  std::string s = "CUB segmented sort (" + std::string(sort_.descending ? "descending" : "ascending") + "), " +
                  std::to_string(sort_.rows) + " rows of " + std::to_string(sort_.length);
  if (sort_.keep > 0) s += ", first " + std::to_string(sort_.keep) + " kept";
  return s;
}

void SortStep::launch(const PlanBuffers& b, cudaStream_t stream) const {
  FX_CUDA_CALL(row_sort(sort_, b.value(input_), b.value(output_), b.memory.sort_workspace(),
                        b.memory.sort_workspace_bytes(), stream));
}

bool append_sort_step(CompiledProgram& im, PlanId p, const Group& group, const std::vector<NodeId>& nodes,
                      const std::string& stem) {
  const Graph& g = im.graph;
  NodeId sort_node = -1;
  for (NodeId n : nodes) {
    const OpId op = g.node(n).op_id();
    if (op == OpId::sort || op == OpId::topk) sort_node = n;
  }
  if (sort_node < 0) return false;
  const Node& node = g.node(sort_node);
  if (nodes.size() != 1) {
    throw std::invalid_argument("cannot run group " + group.id + ": node " + node.name + " (" + node.op +
                                ") runs through CUB as its own step and cannot share a group");
  }
  auto sort = std::make_shared<SortStep>(row_sort_of(g, node), node.inputs[0].value, g.value_of(sort_node));
  std::size_t workspace = 0;
  FX_CUDA_CALL(row_sort_workspace_bytes(sort->sort(), workspace));
  im.sort_workspace_bytes = std::max(im.sort_workspace_bytes, workspace);
  Step s = step_of_group(group, SortLaunch{std::move(sort)});
  s.kernel.name = "cub_" + stem;
  s.kernel.kind = KernelKind::cub_sort;
  s.kernel.nodes = {sort_node};
  s.kernel.inputs = {node.inputs[0].value};
  s.kernel.outputs = {g.value_of(sort_node)};
  s.kernel.bytes_moved = g.value_type(node.inputs[0].value).bytes() + node.type.bytes();
  im.plan(p).steps.push_back(std::move(s));
  return true;
}

}  // namespace fx::gpu
