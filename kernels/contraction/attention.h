// Scaled dot-product attention as one cuDNN call (its fused flash attention, reached through the backend graph
// API): O = softmax(scale * Q K^T + mask) V, with the [Tq, Tkv] scores kept on chip. The engine decides which
// graph chains this runs (core/fusion/attention.h); this runs the f16 and bf16 ones, flash_attention_tf32.h the
// f32 ones. Vendor types stay in the pimpl.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/graph/dtype.h"

struct CUstream_st;

namespace fx::gpu {

// Q [B, H, Tq, D], K [B, H, Tkv, D], V [B, H, Tkv, Dv], O [B, H, Tq, Dv], all packed row-major in `type` (K is
// read as K^T through swapped strides: cuDNN's fused attention wants the head dim contiguous); an optional additive mask [Tq, Tkv] per batch entry and head, broadcast over
// the batch and/or the heads where mask_batch / mask_heads is 1.
struct AttentionProblem {
  std::int64_t batch = 1, heads = 1, seq_q = 1, seq_kv = 1, head_dim = 64, value_dim = 64;
  DType type = DType::bf16;
  float scale = 1.0f;
  bool mask = false;
  std::int64_t mask_batch = 1, mask_heads = 1;
  bool k_transposed = false;  // K stored as K^T [B, H, D, Tkv] (the f32 kernel reads it; cuDNN is never given it)
  bool operator==(const AttentionProblem&) const = default;
};

// One line for reports: "cuDNN fused attention (flash), BF16, B 8 x H 12, Tq 1024, Tkv 1024, D 64, scale 0.125,
// additive mask [1024, 1024] broadcast over batch and heads; the score matrix is never written"; for f32, "TF32
// flash attention (Fusion Explorer's kernel, TF32 tensor cores, f32 softmax), F32, ...".
std::string describe_attention(const AttentionProblem& p);

// False in a build without cuDNN (attention_unavailable.cpp): nothing here can run then.
bool attention_available();

// Owns a cuDNN handle and a per-problem cache of execution plans and their workspaces. Not thread-safe; one per
// stream.
class Attention {
 public:
  Attention();  // throws NoDeviceError without a usable CUDA device, std::runtime_error without cuDNN
  ~Attention();
  Attention(Attention&&) noexcept;
  Attention& operator=(Attention&&) noexcept;
  Attention(const Attention&) = delete;
  Attention& operator=(const Attention&) = delete;

  // "" when cuDNN offers an engine for p on this device (the plan is then built and kept), else why not, in
  // cuDNN's words: the caller runs the chain unfused and says so. Throws GpuError only for a failing CUDA call.
  std::string unsupported_reason(const AttentionProblem& p);
  // Enqueues O = attention(Q, K, V, mask) on stream; mask is null without one. Throws std::runtime_error when
  // cuDNN has no engine for p (ask unsupported_reason first).
  void run(const AttentionProblem& p, const void* q, const void* k, const void* v, const void* mask, void* o,
           CUstream_st* stream);
  // The engine that runs p, once a plan exists: "cuDNN engine 8 (tensor cores), workspace 0 B".
  std::string engine(const AttentionProblem& p) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx::gpu
