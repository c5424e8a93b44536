// The device helpers at the top of every generated translation unit. Self-contained (no #include): NVRTC
// then needs no include path, and the CPU reference (core/reference) mirrors each helper exactly.
#include "kernels/codegen/emit.h"

namespace fx::gpu::codegen {

const std::string& device_preamble() {
  static const std::string text = R"(// ---- Fusion Explorer device helpers (the same in every generated kernel) ----
// f16/bf16 live in registers as float and are rounded to their format after every op, exactly where the
// unfused plan's stores round them; memory holds their 16-bit patterns.
template <typename T, int N>
struct alignas(sizeof(T) * N) fx_vec { T v[N]; };  // N elements moved by one (up to 16-byte) access

__device__ __forceinline__ float fx_f16_to_f32(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short fx_f32_to_f16(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float fx_bf16_to_f32(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ __forceinline__ unsigned short fx_f32_to_bf16(float f) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float fx_round_f16(float f) { return fx_f16_to_f32(fx_f32_to_f16(f)); }
__device__ __forceinline__ float fx_round_bf16(float f) { return fx_bf16_to_f32(fx_f32_to_bf16(f)); }

// Loads with an L2 eviction policy (PTX createpolicy + ld.global.L2::cache_hint), as Triton's eviction_policy.
// fx_load_keep: an operand that many threads re-read (a bias, a mask or a layernorm weight broadcast over rows)
// stays in the L2 (evict_last); without it the streams around it push it out and it comes from DRAM again.
// fx_load_once: a stream a reduction reads once and stores nothing of (evict_first), so it displaces its own
// lines first. fx_load_row: the row a row kernel normalises and stores back (softmax, layernorm), with Triton's
// first-pass hints, L1 and L2 evict_last; the row stays in registers either way, but after a cache flush the
// hint keeps the L2's dirty lines from evicting it.
#define FX_LD_HINTED(L1, POLICY)                                                                              \
  if constexpr (sizeof(V) == 16) {                                                                            \
    asm("ld.global" L1 ".L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"                                   \
        : "=r"(u.r[0]), "=r"(u.r[1]), "=r"(u.r[2]), "=r"(u.r[3]) : "l"(p), "l"(POLICY));                       \
  } else if constexpr (sizeof(V) == 8) {                                                                      \
    asm("ld.global" L1 ".L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;" : "=r"(u.r[0]), "=r"(u.r[1]) : "l"(p), "l"(POLICY)); \
  } else {                                                                                                    \
    asm("ld.global" L1 ".L2::cache_hint.u32 %0, [%1], %2;" : "=r"(u.r[0]) : "l"(p), "l"(POLICY));             \
  }
// kMode 0: L2 evict_first (fx_load_once); 1: L2 evict_last (fx_load_keep); 2: L1 and L2 evict_last (fx_load_row).
template <int kMode, typename V>
__device__ __forceinline__ V fx_load_policy(const V* p) {
  static_assert(sizeof(V) == 4 || sizeof(V) == 8 || sizeof(V) == 16, "fx_load_policy: 4, 8 or 16 bytes");
  unsigned long long policy;
  if constexpr (kMode == 0) {
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  } else {
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  }
  union {
    unsigned int r[4];
    V v;
  } u = {{0u, 0u, 0u, 0u}};
  if constexpr (kMode == 2) {
    FX_LD_HINTED(".L1::evict_last", policy)
  } else {
    FX_LD_HINTED("", policy)
  }
  return u.v;
}
#undef FX_LD_HINTED
template <typename V> __device__ __forceinline__ V fx_load_once(const V* p) { return fx_load_policy<0>(p); }
template <typename V> __device__ __forceinline__ V fx_load_keep(const V* p) { return fx_load_policy<1>(p); }
template <typename V> __device__ __forceinline__ V fx_load_row(const V* p) { return fx_load_policy<2>(p); }

// relu/max/min propagate NaN as PyTorch does.
template <typename T> __device__ __forceinline__ T fx_relu(T x) { return x < T(0) ? T(0) : x; }
template <typename T> __device__ __forceinline__ T fx_abs(T x) { return x < T(0) ? -x : x; }
template <typename T> __device__ __forceinline__ T fx_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> __device__ __forceinline__ T fx_min(T a, T b) { return (a < b || a != a) ? a : b; }
__device__ __forceinline__ float fx_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float fx_silu(float x) { return x / (1.0f + expf(-x)); }
// The same for f16/bf16 results, with the hardware exp2 (__expf) and reciprocal (__fdividef): __expf's error
// is 2 + 1.17|x| ulp (under 1e-5 relative even near |x| = 88), far below the 2^-8 and 2^-11 at which bf16 and
// f16 round at worst, and it costs half the instructions. A 16-bit element moves half the bytes of an f32 one,
// so the precise version makes these kernels instruction-bound instead of memory-bound. e = exp(-|x|) lies in [0, 1], so 1 + e never
// overflows and __fdividef's denominator stays in [1, 2]; NaN and +-inf come out as from the precise version.
// Below x = -87.3 e is subnormal or 0, so silu may give -0 where the precise form gives a value under 1e-36.
__device__ __forceinline__ float fx_sigmoid_fast(float x) {
  const float e = __expf(-fabsf(x));
  const float s = __fdividef(1.0f, 1.0f + e);
  return x >= 0.0f ? s : e * s;
}
__device__ __forceinline__ float fx_silu_fast(float x) { return x * fx_sigmoid_fast(x); }
__device__ __forceinline__ float fx_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.707106781186547524f)); }
__device__ __forceinline__ float fx_gelu_tanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
}

// Philox4x32-10 (Salmon et al., SC'11), keyed by the seed, counter = element index: the mask depends on
// (seed, index) only, so every plan, fused or not, draws the same one without storing it.
__device__ __forceinline__ unsigned int fx_philox_bits24(unsigned long long seed, unsigned long long index) {
  unsigned int c0 = (unsigned int)index, c1 = (unsigned int)(index >> 32), c2 = 0u, c3 = 0u;
  unsigned int k0 = (unsigned int)seed, k1 = (unsigned int)(seed >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const unsigned int hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const unsigned int hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c0 >> 8;
}
// Keeps x (scaled by 1/(1-p)) when its 24-bit draw is >= threshold = ceil(p * 2^24).
__device__ __forceinline__ float fx_dropout(float x, unsigned int threshold, float scale, unsigned long long seed,
                                            unsigned long long index) {
  return fx_philox_bits24(seed, index) >= threshold ? x * scale : 0.0f;
}

// Block-wide reductions: a warp shuffle tree, then every thread combines the per-warp partials in warp order
// (deterministic). `scratch` is 32 elements of shared memory; blockDim.x is a multiple of 32.
struct fx_sum_op { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };
struct fx_max_op { template <typename T> __device__ T operator()(T a, T b) const { return fx_max(a, b); } };
struct fx_min_op { template <typename T> __device__ T operator()(T a, T b) const { return fx_min(a, b); } };

template <typename T, typename Op>
__device__ __forceinline__ T fx_warp_reduce(T v, Op op) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

template <typename T, typename Op>
__device__ __forceinline__ T fx_block_reduce(T v, Op op, T* scratch) {
  v = fx_warp_reduce(v, op);
  const int warps = (int)(blockDim.x >> 5);
  if (warps == 1) return v;
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  T r = scratch[0];
  for (int w = 1; w < warps; ++w) r = op(r, scratch[w]);
  __syncthreads();  // the next reduction reuses scratch
  return r;
}
// ---- end of helpers ----
)";
  return text;
}

}  // namespace fx::gpu::codegen
