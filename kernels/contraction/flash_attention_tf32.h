// f32 scaled dot-product attention as one kernel on TF32 tensor cores: O = softmax(scale * Q K^T + mask) V, the
// score matrix kept on chip. cuDNN's fused flash attention takes f16 and bf16 only; this is the f32 chain's
// one-kernel form where TF32 is allowed (the engine decides: core/fusion/attention.h). Compiled by nvcc for the
// project's CUDA architectures (sm_80 and newer); this header stays C++17 and free of CUDA device code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace fx::gpu {

// Q [B, H, Tq, D], K [B, H, Tkv, D] (or K^T [B, H, D, Tkv] where k_transposed), V [B, H, Tkv, D], O [B, H, Tq, D],
// all packed row-major f32, 16-byte aligned. The optional additive mask is [Tq, Tkv] at
// mask + b * mask_batch_stride + h * mask_head_stride (a stride of 0 broadcasts).
struct FlashAttentionTf32 {
  std::int64_t batch = 1, heads = 1, seq_q = 1, seq_kv = 1, head_dim = 64;
  float scale = 1.0f;
  bool k_transposed = false;
  long long mask_batch_stride = 0, mask_head_stride = 0;
};

// Why the kernel cannot run problems of this head dim on the current device: a head dim it is not built for
// (32, 64 and 128 are; Q.K and V share it), or no code for this GPU in this build (compute capability 8.0 or
// newer and FX_CUDA_ARCHITECTURES covering it); "" when it can.
std::string flash_attention_tf32_unsupported_reason(std::int64_t head_dim);

// Enqueues the kernel on stream; mask is null without one. cudaErrorInvalidValue for an unsupported head dim,
// else the launch's error.
cudaError_t flash_attention_tf32(const FlashAttentionTf32& p, const float* q, const float* k, const float* v,
                                 const float* mask, float* o, cudaStream_t stream);

}  // namespace fx::gpu
