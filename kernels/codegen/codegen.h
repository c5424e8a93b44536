// CUDA C++ source generation for fusion groups: one readable translation unit per kernel, compiled at run time
// by NVRTC. Both plans use this generator: the unfused plan is one group per node, so eager-style single-op
// kernels and fused kernels share one code path. Pure text: no CUDA header, no device needed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/graph/graph.h"

namespace fx::gpu {

enum class KernelKind : std::uint8_t {
  elementwise,        // any DAG of elementwise/broadcast/layout ops, one thread per kVec output elements
  row_reduction,      // reductions over the innermost axes, one block per row, the row kept in registers
  generic_reduction,  // any reduction axis, one thread per reduced fibre (slow, always correct)
  transpose_tiled,    // a 2-D transpose staged through a shared-memory tile (coalesced reads and writes)
  cub_sort,           // not generated: sort/topk through CUB's segmented sort (kernels/sort)
  window_pool,        // max_pool2d: one thread per output element, a loop over its window
};

std::string_view kernel_kind_name(KernelKind k);

// Another layout of the same kernel over the threads: same entry point, parameters and results, its own source
// and launch shape. The executor times a kernel's layouts on the device and keeps the fastest
// (RunOptions::autotune), as Inductor autotunes its pointwise block sizes: which one wins depends on the
// kernel and the device.
struct KernelLayout {
  std::string description;  // "4 elements per thread (16-byte accesses)"
  std::string source;
  int block = 256;
  std::int64_t grid = 1;
};

// One kernel: its source, the values it reads and writes (kernel parameters in that order: inputs, then
// outputs, each a device pointer), and how to launch it.
struct GeneratedKernel {
  std::string name;  // the extern "C" entry point, also the report's kernel name
  KernelKind kind = KernelKind::elementwise;
  std::string source;
  std::vector<NodeId> nodes;     // the graph nodes whose values it computes, in topological order
  std::vector<ValueId> inputs;   // read: graph inputs or values of earlier kernels
  std::vector<ValueId> outputs;  // written
  int block = 256;
  std::int64_t grid = 1;  // blocks; the kernels loop, so a grid capped at the device limit still covers all work
  std::int64_t bytes_moved = 0;  // minimum DRAM traffic: every input read once, every output written once
  std::string layout;            // how the work is spread over threads (elementwise kernels), for reports
  std::vector<KernelLayout> alternatives;  // other layouts worth timing against this one (may be empty)
};

// Makes `alt` the kernel's layout and the kernel's layout `alt` (an alternative of that kernel): whoever keeps
// the compiled functions swaps them alike.
void swap_layout(GeneratedKernel& k, KernelLayout& alt);

// What a group becomes. Usually one kernel; several when the group cannot be one kernel here (each reason in
// `note`, so reports say why the executor ran it split).
struct GroupCode {
  std::vector<GeneratedKernel> kernels;
  std::string note;
};

// Non-elementwise work the generator does not write: contraction (cuBLASLt/cuDNN), sort/topk (CUB) and
// custom ops. The executor routes these; the generator refuses them with this message.
std::string unsupported_reason(const Graph& graph, std::span<const NodeId> group);

struct CodegenOptions {
  int max_row_items = 32;  // registers per thread per row-level intermediate before the row leaves the chip
};

// Generates the kernels for one group (nodes in any order; they are sorted topologically), named
// `kernel_name` (the plan's generated_kernel_name, "fx_g_mul"; several kernels of one group get "_0", "_1").
// Throws std::invalid_argument when unsupported_reason() is not empty.
GroupCode generate_group(const Graph& graph, std::span<const NodeId> group, const std::string& kernel_name,
                         const CodegenOptions& options = {});
// The same with the values to write given (a plan's GroupIo::outputs): with rematerialisation a value read
// by another group may be recomputed there, and `group` then includes the recomputed producers.
GroupCode generate_group(const Graph& graph, std::span<const NodeId> group, const std::vector<ValueId>& outputs,
                         const std::string& kernel_name, const CodegenOptions& options = {});

// A layout conversion outside the graph: [batch, rows, cols] -> [batch, cols, rows] of one dtype, generated as
// the same tiled transpose a graph's transpose gets. The executor converts NCHW to NHWC (rows = C, cols = H*W)
// and back around cuDNN's channels-last convolutions with it. Named `name` (the served group's kernel name and
// what it converts, "fx_g_conv_x_to_nhwc"); its parameters are the source and the destination pointer. Throws
// std::invalid_argument for a non-positive size.
GeneratedKernel generate_layout_transpose(DType type, std::int64_t batch, std::int64_t rows, std::int64_t cols,
                                          const std::string& name);

// A convolution's x rearranged for its space-to-depth form (kernels/contraction/space_to_depth.h): [N, C, H, W]
// in, [N, out_h, out_w, out_c] out, element (n, i, j, (c*f + bh)*f + bw) = x[n, c, i*f + bh - pad_h,
// j*f + bw - pad_w], zero outside x and in the channels past C*f*f. One thread per output pixel. Named `name`
// ("fx_g_conv_x_space_to_depth"); its parameters are the source and the destination pointer. Throws
// std::invalid_argument for a non-positive size or fewer output channels than C*f*f.
struct SpaceToDepthShape {
  std::int64_t n = 1, c = 1, h = 1, w = 1;
  std::int64_t factor = 1, pad_h = 0, pad_w = 0;
  std::int64_t out_h = 1, out_w = 1, out_c = 1;
};
GeneratedKernel generate_space_to_depth(DType type, const SpaceToDepthShape& s, const std::string& name);

// Whether the generator writes a channels-last variant of a kernel of this kind over these nodes: max_pool2d
// over [N, C, H, W]. The executor runs it where the pool's input is kept NHWC between channels-last convolutions
// (kernels/executor/channels_last.h), so the values are pooled where they lie instead of converted for the pool.
bool has_channels_last_variant(const Graph& graph, KernelKind kind, std::span<const NodeId> nodes);
// That variant of kernel k: the same name, parameters, values and launch shape, every value of the kernel stored
// [N, H, W, C] (its shapes unchanged). Throws std::invalid_argument where there is none.
GeneratedKernel generate_channels_last_variant(const Graph& graph, const GeneratedKernel& k);

// The values of a group that must be written to memory: graph outputs, and values read outside the group.
std::vector<ValueId> group_outputs(const Graph& graph, std::span<const NodeId> group);
// The values a group reads from memory (graph inputs and other groups' values), in first-use order.
std::vector<ValueId> group_inputs(const Graph& graph, std::span<const NodeId> group);

}  // namespace fx::gpu
