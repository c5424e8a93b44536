// A reduction feeding another reduction over the remaining axes (sum over D of [B, N, D], then max over N) as one
// kernel: one block per outer row; its warps reduce the row's N segments of D elements each, keep the per-segment
// values the outer reduction reads in shared memory, and the block reduces them. What such a kernel can compute is
// stated here once, CUDA-free: the engine's legality and the code generator (kernels/codegen) both read it.
#pragma once

#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "core/fusion/decision.h"
#include "core/graph/graph.h"

namespace fx {

// Where a node of a chained group is computed: per element (inside a segment's loop), per segment (after the
// inner reductions), per outer row (after the outer reductions).
enum class ChainLevel : std::uint8_t { element, segment, row };

struct ChainedReduction {
  std::int64_t rows = 0;      // outer rows: one block each
  std::int64_t segments = 0;  // segments per row: one inner-reduction result each
  std::int64_t inner = 0;     // elements per segment
  std::vector<ChainLevel> level;      // per node of the group, in the group's order
  std::vector<NodeId> staged;         // per-segment values an outer reduction reads: kept in shared memory
  std::int64_t shared_bytes = 0;      // what `staged` takes per block
};

// Shared memory a chained kernel may take for its per-segment values: under the 48 KiB of static shared memory a
// kernel gets without opting in (CUDA C++ Programming Guide, "Shared Memory"), with room for the reduction scratch.
constexpr std::int64_t kChainSharedBytes = 32 * 1024;
// One block per outer row streams all of that row's elements: below this many rows most of the GPU's SMs would
// idle (an H100 SXM has 132 SMs: NVIDIA H100 Tensor Core GPU Architecture whitepaper), so the chain is not fused.
constexpr std::int64_t kChainMinRows = 132;

// Not a chain (std::monostate: the reductions' extents are not a reduction and one over its remaining axes), a
// chain one kernel cannot compute (the refusal, with its reason), or the plan of that kernel. `nodes` in
// topological order.
using ChainVerdict = std::variant<std::monostate, FusionDecision, ChainedReduction>;
ChainVerdict plan_chained_reduction(const Graph& g, std::span<const NodeId> nodes);

}  // namespace fx
