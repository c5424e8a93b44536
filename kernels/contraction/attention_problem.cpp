// How an attention call reads in reports, whichever kernel runs it (cuDNN's or the TF32 one); no cuDNN needed.
#include <cstdio>
#include <string>

#include "kernels/contraction/attention.h"

namespace fx::gpu {

std::string describe_attention(const AttentionProblem& p) {
  const bool tf32 = p.type == DType::f32;
  const std::string type = p.type == DType::bf16  ? "BF16"
                           : p.type == DType::f16 ? "FP16"
                           : tf32                 ? "F32"
                                                  : std::string(dtype_name(p.type));
  char text[320];
  std::snprintf(text, sizeof text, "%s, %s, B %lld x H %lld, Tq %lld, Tkv %lld, D %lld, scale %g",
                tf32 ? "TF32 flash attention (Fusion Explorer's kernel, TF32 tensor cores, f32 softmax)"
                     : "cuDNN fused attention (flash)",
                type.c_str(), static_cast<long long>(p.batch), static_cast<long long>(p.heads),
                static_cast<long long>(p.seq_q), static_cast<long long>(p.seq_kv), static_cast<long long>(p.head_dim),
                static_cast<double>(p.scale));
  std::string out = text;
  if (p.k_transposed) out += ", K read as stored K^T";
  if (p.mask) {
    out += ", additive mask [" + std::to_string(p.seq_q) + ", " + std::to_string(p.seq_kv) + "]";
    if (p.mask_batch == 1 && p.batch > 1) out += " broadcast over batch";
    if (p.mask_heads == 1 && p.heads > 1)
      out += p.mask_batch == 1 && p.batch > 1 ? " and heads" : " broadcast over heads";
  }
  return out + "; the score matrix is never written";
}

}  // namespace fx::gpu
