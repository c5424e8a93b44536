// Internal to kernels/codegen: the kernel templates behind generate_group().
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/codegen/codegen.h"
#include "kernels/codegen/emit.h"

namespace fx::gpu::codegen {

// Elementwise/layout DAG writing `outputs` (all of one shape). Nodes in topological order.
GeneratedKernel generate_elementwise(const Graph& g, const std::vector<NodeId>& nodes,
                                     const std::vector<ValueId>& outputs, const std::string& name);

// The same DAG as a tiled kernel when it holds a transpose that moves the innermost dimension (staged
// through shared memory so reads and writes stay coalesced); nullopt when the group has no such transpose.
std::optional<GeneratedKernel> generate_transpose_tiled(const Graph& g, const std::vector<NodeId>& nodes,
                                                        const std::vector<ValueId>& outputs, const std::string& name);

// A row-wise kernel for a group whose reductions all reduce the same trailing dimensions; nullopt with
// `why` set when the group does not have that shape (the caller then splits it).
std::optional<GeneratedKernel> generate_row_reduction(const Graph& g, const std::vector<NodeId>& nodes,
                                                      const std::vector<ValueId>& outputs, const std::string& name,
                                                      const CodegenOptions& options, std::string& why);

// A reduction and a reduction over the remaining axes of its result (core/fusion/chained_reduction.h): one block per
// outer row, a warp per segment. nullopt when the group is not such a chain (`why` set when the chain cannot be one
// kernel).
std::optional<GeneratedKernel> generate_chained_reduction(const Graph& g, const std::vector<NodeId>& nodes,
                                                          const std::vector<ValueId>& outputs, const std::string& name,
                                                          std::string& why);

// One reduction node (sum/mean/max/min over any axes, softmax over any axis, layernorm/rmsnorm), one thread
// per reduced fibre. Slow but correct for every axis.
GeneratedKernel generate_generic_reduction(const Graph& g, NodeId node, const std::string& name);

// One max_pool2d node, one thread per output element looping over its window; its values NCHW, or with
// `channels_last` stored [N, H, W, C] (the same shapes; see generate_channels_last_variant).
GeneratedKernel generate_max_pool2d(const Graph& g, NodeId node, const std::string& name, bool channels_last = false);

// Kernel signature pieces shared by the templates.
std::string kernel_signature(const Graph& g, const std::string& name, int block, const std::vector<ValueId>& inputs,
                             const std::vector<ValueId>& outputs, Identifiers& ids);
std::string header_comment(const Graph& g, const std::vector<NodeId>& nodes, const std::string& what);
std::int64_t bytes_of(const Graph& g, const std::vector<ValueId>& values);
// Bytes per element of the widest tensor a kernel reads (the group's inputs) or writes.
std::int64_t widest_bytes(const Graph& g, const std::vector<NodeId>& nodes, const std::vector<ValueId>& outputs);
// The source comment above a kernel with other layouts: "Layout: <layout>. A run also times this kernel with
// <a> and with <b> and keeps the fastest (RunOptions::autotune)." Empty when there are none.
std::string layout_note(const std::string& layout, const std::vector<std::string>& others);
std::string in_ptr(Identifiers& ids, const Graph& g, ValueId v);
std::string out_ptr(Identifiers& ids, const Graph& g, ValueId v);

// Whether a load of `vec` elements of `t` can carry an L2 eviction policy: the preamble's fx_load_policy takes
// 4-, 8- and 16-byte accesses.
inline bool takes_load_policy(DType t, int vec) {
  const std::int64_t bytes = dtype_size(t) * vec;
  return bytes == 4 || bytes == 8 || bytes == 16;
}

}  // namespace fx::gpu::codegen
