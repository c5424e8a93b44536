// Scaled dot-product attention in f32 as one kernel, the flash-attention way: each block keeps 64 query rows on
// chip, walks K and V in tiles through shared memory and keeps a running softmax (maximum, sum) per row, so the
// [Tq, Tkv] score matrix is never written. Both products run on TF32 tensor cores (mma.sync m16n8k8, sm_80+), as
// the unfused chain's cuBLASLt GEMMs do when TF32 is allowed; the softmax and every sum stay in f32. Every operand
// is rounded to TF32 to nearest (Q once, each K and V tile once in shared memory, the probabilities in registers).
#include "kernels/contraction/flash_attention_tf32.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>

namespace fx::gpu {
namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 16;  // one m16 tile of queries per warp
constexpr int kBlockRows = kWarps * kRowsPerWarp;
constexpr int kPad = 4;  // row stride D + 4 words: the fragment loads below hit 32 distinct banks

// The instructions below exist from sm_80 on; a build for older GPUs compiles the kernel to a trap, and
// flash_attention_tf32_unsupported_reason() says so before anything runs.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define FX_TF32_MMA_UNAVAILABLE 1
#endif

__device__ __forceinline__ std::uint32_t to_tf32(float x) {
#ifdef FX_TF32_MMA_UNAVAILABLE
  __trap();
  return 0;
#else
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
#endif
}

// D (16x8, f32) += A (16x8, tf32, row-major) * B (8x8, tf32, column-major). Per lane, with g = lane / 4 and
// t = lane % 4: a = {A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4]}, b = {B[t][g], B[t+4][g]},
// d = {D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]} (PTX ISA, "Matrix fragments for mma.m16n8k8", .tf32).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                                         std::uint32_t b1) {
#ifdef FX_TF32_MMA_UNAVAILABLE
  __trap();
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

__device__ __forceinline__ float group_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

__device__ __forceinline__ float group_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Asynchronous copies global -> shared (sm_80+): 16 bytes, or 4 where rows are not 16-byte aligned. Bytes past
// the tensor's end (src_bytes 0) are filled with zeros.
#ifdef FX_TF32_MMA_UNAVAILABLE
__device__ __forceinline__ void copy_async16(void*, const void*, int) { __trap(); }
__device__ __forceinline__ void copy_async4(void*, const void*, int) { __trap(); }
__device__ __forceinline__ void copy_async_commit() {}
__device__ __forceinline__ void copy_async_wait_all() {}
#else
__device__ __forceinline__ void copy_async16(void* dst, const void* src, int src_bytes) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void copy_async4(void* dst, const void* src, int src_bytes) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void copy_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }
#endif

// Copies ROWS x COLS floats (row stride `stride` in memory, `ld` in shared memory) of which rows_in x cols_in
// exist; the rest is zero.
template <int ROWS, int COLS>
struct TileCopy {
  static constexpr int kThreads = kWarps * 32;
  float* smem;
  int ld;
  __device__ void issue(const float* src, long long stride, int rows_in, int cols_in, bool aligned16) const {
    if (aligned16) {
      for (int i = threadIdx.x; i < ROWS * COLS / 4; i += kThreads) {
        const int r = i / (COLS / 4), c = (i % (COLS / 4)) * 4;
        const bool in = r < rows_in && c < cols_in;  // cols_in is a multiple of 4 when aligned
        copy_async16(&smem[r * ld + c], in ? src + r * stride + c : src, in ? 16 : 0);
      }
    } else {
      for (int i = threadIdx.x; i < ROWS * COLS; i += kThreads) {
        const int r = i / COLS, c = i % COLS;
        const bool in = r < rows_in && c < cols_in;
        copy_async4(&smem[r * ld + c], in ? src + r * stride + c : src, in ? 4 : 0);
      }
    }
  }
  // Rounds the words this thread copied to TF32 in place, once per tile rather than at every warp's fragment
  // read; its own copies must have landed. cvt.rna keeps infinities, and NaNs whose payload reaches the top ten
  // mantissa bits (a payload below them reads as an infinity, as the tensor cores would read it anyway).
  __device__ void round_to_tf32(bool aligned16) const {
    if (aligned16) {
      for (int i = threadIdx.x; i < ROWS * COLS / 4; i += kThreads) {
        float* x = &smem[(i / (COLS / 4)) * ld + (i % (COLS / 4)) * 4];
        const float4 f = *reinterpret_cast<const float4*>(x);
        *reinterpret_cast<uint4*>(x) = make_uint4(to_tf32(f.x), to_tf32(f.y), to_tf32(f.z), to_tf32(f.w));
      }
    } else {
      for (int i = threadIdx.x; i < ROWS * COLS; i += kThreads) {
        float& x = smem[(i / COLS) * ld + i % COLS];
        x = __uint_as_float(to_tf32(x));
      }
    }
  }
};

// D is both head dims (Q.K and V); BN keys per tile; KT: K is read as K^T [D, Tkv]. Shared memory holds two
// stages of (K, V, mask) tiles: while one is computed on, the next is copied in.
template <int D, int BN, bool KT>
struct Layout {
  static constexpr int kLd = D + kPad;    // K [key][d] and V [key][d] rows
  static constexpr int kLdT = BN + 8;     // K^T [d][key] rows
  static constexpr int kLdMask = BN + 8;  // mask [query][key] rows: float2 reads hit distinct banks
  static constexpr int kKWords = KT ? D * kLdT : BN * kLd;
  static constexpr int kVWords = BN * kLd;
  static constexpr int kMaskWords = kBlockRows * kLdMask;
  static int stage_words(bool mask) { return kKWords + kVWords + (mask ? kMaskWords : 0); }
};

template <int D, int BN, bool KT>
__global__ void __launch_bounds__(kWarps * 32)
    flash_attention_tf32_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                                const float* __restrict__ mask, float* __restrict__ o, int heads, int seq_q, int seq_kv,
                                int q_tiles, long long mask_batch_stride, long long mask_head_stride, float scale) {
  using L = Layout<D, BN, KT>;
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  const int stage = L::kKWords + L::kVWords + (mask ? L::kMaskWords : 0);

  const int bh = blockIdx.x / q_tiles;
  const int q0 = (blockIdx.x % q_tiles) * kBlockRows;
  const int b = bh / heads, h = bh % heads;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const float* qb = q + static_cast<long long>(bh) * seq_q * D;
  const float* kb = k + static_cast<long long>(bh) * seq_kv * D;
  const float* vb = v + static_cast<long long>(bh) * seq_kv * D;
  const float* mb =
      mask ? mask + b * mask_batch_stride + h * mask_head_stride + static_cast<long long>(q0) * seq_kv : nullptr;
  const int rows_here = min(kBlockRows, seq_q - q0);
  const bool kv_aligned = (seq_kv % 4) == 0;               // K^T and mask rows are seq_kv floats long
  const int lr0 = warp * kRowsPerWarp + g, lr1 = lr0 + 8;  // this lane's rows within the block
  const int row0 = q0 + lr0, row1 = q0 + lr1;
  const bool in0 = row0 < seq_q, in1 = row1 < seq_q;

  auto issue = [&](int st, int kv0) {
    float* base = smem + st * stage;
    const int keys = min(BN, seq_kv - kv0);
    if constexpr (KT) {
      TileCopy<D, BN>{base, L::kLdT}.issue(kb + kv0, seq_kv, D, keys, kv_aligned);
    } else {
      TileCopy<BN, D>{base, L::kLd}.issue(kb + static_cast<long long>(kv0) * D, D, keys, D, true);
    }
    TileCopy<BN, D>{base + L::kKWords, L::kLd}.issue(vb + static_cast<long long>(kv0) * D, D, keys, D, true);
    if (mb) {
      TileCopy<kBlockRows, BN>{base + L::kKWords + L::kVWords, L::kLdMask}.issue(mb + kv0, seq_kv, rows_here, keys,
                                                                                 kv_aligned);
    }
    copy_async_commit();
  };
  // The unfused chain's TF32 GEMMs round K and V to nearest; a softmax of large scores turns a different
  // rounding of K into a different winner.
  auto round_stage = [&](int st) {
    float* base = smem + st * stage;
    if constexpr (KT) {
      TileCopy<D, BN>{base, L::kLdT}.round_to_tf32(kv_aligned);
    } else {
      TileCopy<BN, D>{base, L::kLd}.round_to_tf32(true);
    }
    TileCopy<BN, D>{base + L::kKWords, L::kLd}.round_to_tf32(true);
  };

  std::uint32_t qa[D / 8][4];
#pragma unroll
  for (int s = 0; s < D / 8; ++s) {
    qa[s][0] = to_tf32(in0 ? qb[static_cast<long long>(row0) * D + s * 8 + t] : 0.f);
    qa[s][1] = to_tf32(in1 ? qb[static_cast<long long>(row1) * D + s * 8 + t] : 0.f);
    qa[s][2] = to_tf32(in0 ? qb[static_cast<long long>(row0) * D + s * 8 + t + 4] : 0.f);
    qa[s][3] = to_tf32(in1 ? qb[static_cast<long long>(row1) * D + s * 8 + t + 4] : 0.f);
  }
  float acc[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
  // Running maximum and this lane's share of the running sum, for rows row0 and row1.
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
  const float log2e = 1.4426950408889634f;

  issue(0, 0);
  const int tiles = (seq_kv + BN - 1) / BN;
  for (int it = 0; it < tiles; ++it) {
    const int st = it & 1, kv0 = it * BN;
    copy_async_wait_all();
    round_stage(st);
    __syncthreads();  // this tile is in place for every warp, and every warp is done with the other stage
    if (it + 1 < tiles) issue(st ^ 1, kv0 + BN);

    const std::uint32_t* ks = reinterpret_cast<const std::uint32_t*>(smem + st * stage);
    const std::uint32_t* vs = ks + L::kKWords;
    const float* ms = smem + st * stage + L::kKWords + L::kVWords;

    float s[BN / 8][4];
#pragma unroll
    for (int n = 0; n < BN / 8; ++n) {
      s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
      for (int c = 0; c < D / 8; ++c) {
        if constexpr (KT) {  // B[d][key] = K^T[d][key]
          const std::uint32_t* kr = &ks[(c * 8 + t) * L::kLdT + n * 8 + g];
          mma_tf32(s[n], qa[c], kr[0], kr[4 * L::kLdT]);
        } else {  // B[d][key] = K[key][d]
          const std::uint32_t* kr = &ks[(n * 8 + g) * L::kLd + c * 8 + t];
          mma_tf32(s[n], qa[c], kr[0], kr[4]);
        }
      }
    }

    // Scale, mask and the keys past the end; then the tile's row maxima. Scores stay in natural units until a
    // difference is taken: a mask of -FLT_MAX times log2(e) would overflow to -inf.
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int n = 0; n < BN / 8; ++n) {
      const int c = n * 8 + 2 * t;
      float2 a0 = make_float2(0.f, 0.f), a1 = a0;
      if (mb) {
        a0 = *reinterpret_cast<const float2*>(&ms[lr0 * L::kLdMask + c]);
        a1 = *reinterpret_cast<const float2*>(&ms[lr1 * L::kLdMask + c]);
      }
      const bool keep0 = kv0 + c < seq_kv, keep1 = kv0 + c + 1 < seq_kv;
      s[n][0] = keep0 ? s[n][0] * scale + a0.x : -INFINITY;
      s[n][1] = keep1 ? s[n][1] * scale + a0.y : -INFINITY;
      s[n][2] = keep0 ? s[n][2] * scale + a1.x : -INFINITY;
      s[n][3] = keep1 ? s[n][3] * scale + a1.y : -INFINITY;
      mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
      mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
    }
    const float new0 = fmaxf(m0, group_max(mx0)), new1 = fmaxf(m1, group_max(mx1));
    // A row with every key so far masked to -inf keeps base 0: its terms are exp2(-inf) = 0, not NaN.
    const float base0 = new0 == -INFINITY ? 0.f : new0, base1 = new1 == -INFINITY ? 0.f : new1;
    const float alpha0 = exp2f((m0 - base0) * log2e), alpha1 = exp2f((m1 - base1) * log2e);
    m0 = new0;
    m1 = new1;
    l0 *= alpha0;
    l1 *= alpha1;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      acc[n][0] *= alpha0;
      acc[n][1] *= alpha0;
      acc[n][2] *= alpha1;
      acc[n][3] *= alpha1;
    }

    // P V. The score tile's accumulator layout holds keys 2t and 2t+1 of each 8 where the A operand wants keys
    // t and t+4; reading V's rows in that same order (2t and 2t+1) makes the product the same sum, shuffle-free.
#pragma unroll
    for (int kk = 0; kk < BN / 8; ++kk) {
      const float p00 = exp2f((s[kk][0] - base0) * log2e), p01 = exp2f((s[kk][1] - base0) * log2e);
      const float p10 = exp2f((s[kk][2] - base1) * log2e), p11 = exp2f((s[kk][3] - base1) * log2e);
      l0 += p00 + p01;
      l1 += p10 + p11;
      const std::uint32_t a[4] = {to_tf32(p00), to_tf32(p10), to_tf32(p01), to_tf32(p11)};
      const std::uint32_t* vr = &vs[(kk * 8 + 2 * t) * L::kLd + g];
#pragma unroll
      for (int n = 0; n < D / 8; ++n) {
        mma_tf32(acc[n], a, vr[n * 8], vr[L::kLd + n * 8]);
      }
    }
  }

  // A fully masked row divides 0 by 0, NaN, as the unfused softmax gives.
  const float inv0 = 1.f / group_sum(l0), inv1 = 1.f / group_sum(l1);
  float* ob = o + static_cast<long long>(bh) * seq_q * D;
#pragma unroll
  for (int n = 0; n < D / 8; ++n) {
    const int col = n * 8 + 2 * t;
    if (in0)
      *reinterpret_cast<float2*>(ob + static_cast<long long>(row0) * D + col) =
          make_float2(acc[n][0] * inv0, acc[n][1] * inv0);
    if (in1)
      *reinterpret_cast<float2*>(ob + static_cast<long long>(row1) * D + col) =
          make_float2(acc[n][2] * inv1, acc[n][3] * inv1);
  }
}

// Shared memory a block of the kernel may opt into on the current device (99 KiB on sm_86 and sm_89, 227 KiB on
// sm_90).
cudaError_t max_shared_bytes(int& bytes) {
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  return cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
}

template <int D, int BN, bool KT>
int shared_bytes(bool mask) {
  return 2 * Layout<D, BN, KT>::stage_words(mask) * static_cast<int>(sizeof(float));
}

// Opts the kernel into shared_bytes(true) (the larger of the two sizes) once per device.
template <int D, int BN, bool KT>
cudaError_t opt_in_shared_memory() {
  static std::atomic<unsigned long long> done{0};  // a bit per device that has it
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const unsigned long long bit = device < 64 ? 1ull << device : 0ull;
  if (bit != 0 && (done.load(std::memory_order_relaxed) & bit) != 0) return cudaSuccess;
  const cudaError_t e =
      cudaFuncSetAttribute(flash_attention_tf32_kernel<D, BN, KT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           shared_bytes<D, BN, KT>(true));
  if (e == cudaSuccess) done.fetch_or(bit, std::memory_order_relaxed);
  return e;
}

template <int D, int BN, bool KT>
cudaError_t launch(const FlashAttentionTf32& p, const float* q, const float* k, const float* v, const float* mask,
                   float* o, cudaStream_t stream) {
  const int q_tiles = static_cast<int>((p.seq_q + kBlockRows - 1) / kBlockRows);
  const long long blocks = p.batch * p.heads * q_tiles;
  if (cudaError_t e = opt_in_shared_memory<D, BN, KT>(); e != cudaSuccess) return e;
  flash_attention_tf32_kernel<D, BN, KT>
      <<<static_cast<unsigned>(blocks), kWarps * 32, shared_bytes<D, BN, KT>(mask != nullptr), stream>>>(
          q, k, v, mask, o, static_cast<int>(p.heads), static_cast<int>(p.seq_q), static_cast<int>(p.seq_kv), q_tiles,
          p.mask_batch_stride, p.mask_head_stride, p.scale);
  return cudaGetLastError();
}

// The widest key tile whose two stages fit the device's shared memory.
template <int D, int BN>
cudaError_t launch(const FlashAttentionTf32& p, const float* q, const float* k, const float* v, const float* mask,
                   float* o, cudaStream_t stream) {
  if constexpr (BN > 32) {
    int limit = 0;
    if (cudaError_t e = max_shared_bytes(limit); e != cudaSuccess) return e;
    if (shared_bytes<D, BN, true>(true) > limit || shared_bytes<D, BN, false>(true) > limit) {
      return launch<D, BN / 2>(p, q, k, v, mask, o, stream);
    }
  }
  return p.k_transposed ? launch<D, BN, true>(p, q, k, v, mask, o, stream)
                        : launch<D, BN, false>(p, q, k, v, mask, o, stream);
}

}  // namespace

std::string flash_attention_tf32_unsupported_reason(std::int64_t head_dim) {
  cudaFuncAttributes attributes{};
  cudaError_t e = cudaErrorInvalidValue;
  switch (head_dim) {
    case 32: e = cudaFuncGetAttributes(&attributes, flash_attention_tf32_kernel<32, 64, false>); break;
    case 64: e = cudaFuncGetAttributes(&attributes, flash_attention_tf32_kernel<64, 64, false>); break;
    case 128: e = cudaFuncGetAttributes(&attributes, flash_attention_tf32_kernel<128, 32, false>); break;
    default:
      return "the TF32 flash attention kernel is built for head dims 32, 64 and 128 (here " + std::to_string(head_dim) +
             ")";
  }
  if (e != cudaSuccess) {
    cudaGetLastError();  // the query's error is answered here, not left for the next launch to report
    return std::string("the TF32 flash attention kernel has no code for this GPU in this build (") +
           cudaGetErrorString(e) + "; FX_CUDA_ARCHITECTURES names the GPUs it is built for)";
  }
  if (attributes.binaryVersion < 80) {
    return "the TF32 flash attention kernel needs TF32 tensor cores (compute capability 8.0 or newer); this build "
           "runs compute capability " +
           std::to_string(attributes.binaryVersion / 10) + "." + std::to_string(attributes.binaryVersion % 10) +
           " code here";
  }
  return {};
}

cudaError_t flash_attention_tf32(const FlashAttentionTf32& p, const float* q, const float* k, const float* v,
                                 const float* mask, float* o, cudaStream_t stream) {
  switch (p.head_dim) {
    case 32: return launch<32, 64>(p, q, k, v, mask, o, stream);
    case 64: return launch<64, 64>(p, q, k, v, mask, o, stream);
    case 128: return launch<128, 32>(p, q, k, v, mask, o, stream);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace fx::gpu
