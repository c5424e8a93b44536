// Scaled dot-product attention as one kernel: matmul(Q, K^T) -> scale -> (additive mask) -> softmax over the last
// axis -> matmul(., V), the chain flash attention computes without ever writing the [.., Tq, Tkv] score matrix.
// The pattern and what each attention kernel can run are stated here once, CUDA-free: the engine reads them to
// propose and price the group, the executor (kernels/executor/contraction_plan.cpp) to build the call from the
// same match.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/cost/cost_model.h"
#include "core/fusion/decision.h"
#include "core/graph/graph.h"

namespace fx {

struct AttentionPattern {
  NodeId scores = -1;                  // matmul(Q, K^T)
  std::optional<NodeId> k_transpose;   // a transpose of K's last two dims that only `scores` reads (folded)
  std::optional<NodeId> scale_node;    // mul by a scalar literal, or div by one
  double scale = 1.0;
  std::optional<NodeId> mask_node;     // add of a tensor read from memory
  std::optional<ValueId> mask;
  NodeId softmax = -1;
  NodeId context = -1;                 // matmul(P, V)
  ValueId q = -1, k = -1, v = -1;      // what the fused call reads (k: see k_is_transposed)
  bool k_is_transposed = false;        // k holds K^T ([.., D, Tkv]) in memory rather than K ([.., Tkv, D])
  std::int64_t batch = 1, heads = 1, seq_q = 0, seq_kv = 0, head_dim = 0, value_dim = 0;
  DType dtype = DType::f32;
  std::vector<NodeId> nodes;           // the chain (with the folded transpose), in topological order

  // Bytes of one [B, H, Tq, Tkv] score matrix in the chain's dtype.
  std::int64_t score_bytes() const { return batch * heads * seq_q * seq_kv * dtype_size(dtype); }
  // 4 B H Tq Tkv D: the two matrix products (each a multiply and an add per element).
  double flops() const {
    return 2.0 * static_cast<double>(batch * heads * seq_q * seq_kv) * static_cast<double>(head_dim + value_dim);
  }
};

// The attention chain that ends at `context` (a matmul of a softmax by V), or why it is none: a FusionDecision
// with Reason::attention_unsupported and the first thing that does not fit (the softmax axis, the scores used
// elsewhere, a mask of another shape, ...). `fold_k_transpose`: whether a transpose of K feeding the scores is
// taken into the chain (a transpose that is part of another kernel is read from memory as K^T instead).
// Says nothing about dtypes or sizes: fused_attention_supports does.
using AttentionMatch = std::variant<AttentionPattern, FusionDecision>;
AttentionMatch match_attention(const Graph& g, NodeId context, bool fold_k_transpose = true);

// The kernel that runs a matched chain as one: cuDNN's fused flash attention (its fused scaled-dot-product
// attention graph) for f16 and bf16, Fusion Explorer's flash attention on TF32 tensor cores for f32
// (kernels/contraction/flash_attention_tf32.h; the chain's f32 matmuls run on TF32 as well, contraction_plan.h).
enum class AttentionKernel : std::uint8_t { cudnn_flash, tf32_flash };
AttentionKernel attention_kernel(const AttentionPattern& p);
// "cuDNN's fused flash attention" or "the TF32 flash attention kernel", for messages.
std::string attention_kernel_name(AttentionKernel k);
// The start of the group's kernel name in plans and run reports: "cudnn_" or "fx_flash_".
std::string attention_kernel_prefix(AttentionKernel k);

// Whether attention_kernel(p) runs the pattern. cuDNN: f16 or bf16, K with its head dim contiguous, head dims that
// are multiples of 8 and at most 128. TF32 kernel: one head dim of 32, 64 or 128 for Q.K and V. A refusal says
// which limit.
FusionDecision fused_attention_supports(const AttentionPattern& p);

// The pattern a group is, when its nodes are exactly one attention chain (with or without the transpose of K)
// that a fused attention kernel supports; nullopt otherwise.
std::optional<AttentionPattern> attention_group(const Graph& g, std::span<const NodeId> nodes);
// The refusal for a group holding two contractions where one is the end of an attention chain: why the chain
// does not fit or what else is in the group; nullopt when no matmul of the group ends an attention chain.
std::optional<FusionDecision> attention_group_refusal(const Graph& g, std::span<const NodeId> nodes);

// For people: what one kernel saves over the chain as separate kernels, e.g. "the [8, 12, 1024, 1024] bf16 score
// matrix (192 MiB) never reaches HBM: ...". `bytes_before`/`bytes_after`: the traffic of the chain's kernels and of
// the fused one, as the cost model prices them.
std::string attention_explanation(const Graph& g, const AttentionPattern& p, std::int64_t bytes_before,
                                  std::int64_t bytes_after);

// The explanation of a plan's group (its nodes and cost) when it is one attention chain, with what it saves over the
// chain's ops as kernels of their own; "" for any other group. `fusion-cli explain` and the GUI's Explanation say it.
std::string attention_group_explanation(const Graph& g, const CostModel& model, std::span<const NodeId> nodes,
                                        const GroupCost& cost);

}  // namespace fx
