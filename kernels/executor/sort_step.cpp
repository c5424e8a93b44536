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
  r.descending = node.op == "topk" || node.attrs.get_bool("descending");
  if (node.op == "topk") r.keep = node.attrs.get_int("k");
  return r;
}

}  // namespace

std::string SortStep::describe() const {
  std::string s = "CUB segmented sort (" + std::string(sort_.descending ? "descending" : "ascending") + "), " +
                  std::to_string(sort_.rows) + " rows of " + std::to_string(sort_.length);
  if (sort_.keep > 0) s += ", first " + std::to_string(sort_.keep) + " kept";
  return s;
}

void SortStep::launch(Executor::Impl& im, PlanId plan) const {
  FX_CUDA_CALL(row_sort(sort_, im.pointer(plan, input_), im.pointer(plan, output_), im.arena + im.sort_workspace_offset,
                        im.sort_workspace_bytes, im.stream));
}

bool append_sort_step(Executor::Impl& im, PlanId p, const Group& group, const std::vector<NodeId>& nodes) {
  const Graph& g = im.graph;
  NodeId sort_node = -1;
  for (NodeId n : nodes) {
    if (g.node(n).op == "sort" || g.node(n).op == "topk") sort_node = n;
  }
  if (sort_node < 0) return false;
  const Node& node = g.node(sort_node);
  if (nodes.size() != 1) {
    throw std::invalid_argument("cannot run group " + group.id + ": node " + node.name + " (" + node.op +
                                ") runs through CUB as its own step and cannot share a group");
  }
  Step s;
  s.group = group.id;
  s.group_predicted_ms = group.cost.time_s * 1e3;
  s.group_predicted_bytes = group.cost.bytes_read + group.cost.bytes_written;
  s.kernel.name = "cub_" + node.op + "_" + node.name;
  s.kernel.kind = KernelKind::cub_sort;
  s.kernel.nodes = {sort_node};
  s.kernel.inputs = {node.inputs[0].value};
  s.kernel.outputs = {g.value_of(sort_node)};
  s.kernel.bytes_moved = g.value_type(node.inputs[0].value).bytes() + node.type.bytes();
  s.sort = std::make_shared<SortStep>(row_sort_of(g, node), node.inputs[0].value, g.value_of(sort_node));
  std::size_t workspace = 0;
  FX_CUDA_CALL(row_sort_workspace_bytes(s.sort->sort(), workspace));
  im.sort_workspace_bytes = std::max(im.sort_workspace_bytes, workspace);
  im.plan(p).steps.push_back(std::move(s));
  return true;
}

}  // namespace fx::gpu
