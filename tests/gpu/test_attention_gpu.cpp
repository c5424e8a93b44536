// cuDNN's fused attention (kernels/contraction/attention.h) and the TF32 flash attention kernel
// (flash_attention_tf32.h) on the GPU against a float64 reference computed from the same inputs: with and without
// the mask, per-head masks, Tq != Tkv, head dims 32, 64 and 128, f16, bf16 and f32. Skips with a message where no
// CUDA device exists.
#include <gtest/gtest.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <vector>

#include "core/fusion/engine.h"
#include "core/fusion/kernel_names.h"
#include "core/fusion/legality.h"
#include "core/graph/graph_io.h"
#include "kernels/contraction/attention.h"
#include "kernels/contraction/flash_attention_tf32.h"
#include "kernels/executor/executor.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

// Round-to-nearest-even f32 -> bf16 / f16 bits, and back: the host side of the device's 16-bit tensors.
std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<std::uint16_t>(u >> 16);
}
float from_bf16(std::uint16_t h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// IEEE half by hand (no compiler's 16-bit float type is portable): normal numbers rounded to nearest even, tiny ones
// flushed to zero (the test's values are never that small), overflow to infinity.
std::uint16_t to_f16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const int exponent = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
  if (exponent <= 0) return static_cast<std::uint16_t>(sign);
  if (exponent >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  std::uint32_t half = (static_cast<std::uint32_t>(exponent) << 10) | ((u >> 13) & 0x3ffu);
  const std::uint32_t rest = u & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into the exponent, as it should
  return static_cast<std::uint16_t>(sign | half);
}
float from_f16(std::uint16_t bits) {
  const std::uint32_t sign = (bits & 0x8000u) << 16;
  const std::uint32_t exponent = (bits >> 10) & 0x1fu, mantissa = bits & 0x3ffu;
  std::uint32_t u = sign;
  if (exponent == 31) {
    u |= 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    u |= ((exponent + 127 - 15) << 23) | (mantissa << 13);
  } else if (mantissa != 0) {  // subnormal: value = mantissa * 2^-24
    const float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A device copy of a host vector (at least one element, so an unused operand still has a pointer).
template <typename T>
struct DeviceCopy {
  T* ptr = nullptr;
  explicit DeviceCopy(const std::vector<T>& host) {
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&ptr), std::max<std::size_t>(host.size(), 1) * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceCopy() { cudaFree(ptr); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
};
using Device16 = DeviceCopy<std::uint16_t>;
using DeviceF32 = DeviceCopy<float>;

// Random values rounded to the type: the host keeps what the device reads.
std::vector<std::uint16_t> random16(std::size_t n, DType t, std::mt19937& rng, float lo, float hi,
                                    std::vector<float>& rounded) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<std::uint16_t> bits(n);
  rounded.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    bits[i] = t == DType::bf16 ? to_bf16(dist(rng)) : to_f16(dist(rng));
    rounded[i] = t == DType::bf16 ? from_bf16(bits[i]) : from_f16(bits[i]);
  }
  return bits;
}

// O = softmax(scale Q K^T + mask) V in float64; k as the problem stores it.
std::vector<double> reference(const AttentionProblem& p, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v, const std::vector<float>& mask) {
  const std::int64_t S = p.seq_q, T = p.seq_kv, D = p.head_dim, Dv = p.value_dim;
  std::vector<double> out(static_cast<std::size_t>(p.batch * p.heads * S * Dv));
  std::vector<double> row(static_cast<std::size_t>(T));
  for (std::int64_t b = 0; b < p.batch; ++b) {
    for (std::int64_t h = 0; h < p.heads; ++h) {
      const std::int64_t bh = b * p.heads + h;
      const std::int64_t mask_at = ((p.mask_batch > 1 ? b : 0) * p.mask_heads + (p.mask_heads > 1 ? h : 0)) * S * T;
      for (std::int64_t i = 0; i < S; ++i) {
        double top = -1e300;
        for (std::int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) {
            const double kv = k[static_cast<std::size_t>((bh * T + j) * D + d)];
            dot += q[static_cast<std::size_t>((bh * S + i) * D + d)] * kv;
          }
          row[static_cast<std::size_t>(j)] = dot * p.scale + (p.mask ? mask[static_cast<std::size_t>(mask_at + i * T + j)] : 0);
          top = std::max(top, row[static_cast<std::size_t>(j)]);
        }
        double sum = 0;
        for (double& x : row) sum += (x = std::exp(x - top));
        for (std::int64_t d = 0; d < Dv; ++d) {
          double acc = 0;
          for (std::int64_t j = 0; j < T; ++j) acc += row[static_cast<std::size_t>(j)] * v[static_cast<std::size_t>((bh * T + j) * Dv + d)];
          out[static_cast<std::size_t>((bh * S + i) * Dv + d)] = acc / sum;
        }
      }
    }
  }
  return out;
}

void check_problem(Attention& attention, const AttentionProblem& p) {
  SCOPED_TRACE(describe_attention(p));
  const std::string why = attention.unsupported_reason(p);
  ASSERT_TRUE(why.empty()) << why;
  std::mt19937 rng(7);
  std::vector<float> q, k, v, mask;
  const auto n = [](std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) { return static_cast<std::size_t>(a * b * c * d); };
  Device16 dq(random16(n(p.batch, p.heads, p.seq_q, p.head_dim), p.type, rng, -1, 1, q));
  Device16 dk(random16(n(p.batch, p.heads, p.seq_kv, p.head_dim), p.type, rng, -1, 1, k));
  Device16 dv(random16(n(p.batch, p.heads, p.seq_kv, p.value_dim), p.type, rng, -1, 1, v));
  // A causal-like mask: large negative above the diagonal, small values elsewhere.
  std::vector<std::uint16_t> mask_bits;
  if (p.mask) {
    mask_bits = random16(n(p.mask_batch, p.mask_heads, p.seq_q, p.seq_kv), p.type, rng, -0.5f, 0.5f, mask);
    for (std::size_t i = 0; i < mask.size(); ++i) {
      const std::int64_t row = static_cast<std::int64_t>(i / static_cast<std::size_t>(p.seq_kv)) % p.seq_q;
      if (static_cast<std::int64_t>(i % static_cast<std::size_t>(p.seq_kv)) > row) {
        mask_bits[i] = p.type == DType::bf16 ? to_bf16(-10000.0f) : to_f16(-10000.0f);
        mask[i] = p.type == DType::bf16 ? from_bf16(mask_bits[i]) : from_f16(mask_bits[i]);
      }
    }
  }
  Device16 dmask(p.mask ? mask_bits : std::vector<std::uint16_t>(1));
  std::vector<std::uint16_t> out_bits(n(p.batch, p.heads, p.seq_q, p.value_dim));
  Device16 dout(out_bits);
  attention.run(p, dq.ptr, dk.ptr, dv.ptr, p.mask ? dmask.ptr : nullptr, dout.ptr, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out_bits.data(), dout.ptr, out_bits.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  const std::vector<double> want = reference(p, q, k, v, mask);
  double err = 0, norm = 0, worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double got = p.type == DType::bf16 ? from_bf16(out_bits[i]) : from_f16(out_bits[i]);
    ASSERT_TRUE(std::isfinite(got)) << "output " << i;
    err += (got - want[i]) * (got - want[i]);
    norm += want[i] * want[i];
    worst = std::max(worst, std::abs(got - want[i]));
  }
  const double rel = std::sqrt(err / std::max(norm, 1e-30));
  std::cout << "  " << describe_attention(p) << "\n    " << attention.engine(p) << ": relative L2 error " << rel
            << ", largest error " << worst << "\n";
  // P is rounded to the 16-bit type before the second product (as the unfused chain stores it).
  EXPECT_LT(rel, p.type == DType::bf16 ? 1.5e-2 : 4e-3);
  EXPECT_FALSE(attention.engine(p).empty());
}

TEST(AttentionGpu, FusedAttentionMatchesTheFloat64Reference) {
  FX_REQUIRE_DEVICE();
  if (!attention_available()) GTEST_SKIP() << "built without cuDNN";
  Attention attention;
  AttentionProblem p;
  p.batch = 2, p.heads = 3, p.seq_q = p.seq_kv = 128, p.head_dim = p.value_dim = 64;
  p.type = DType::bf16, p.scale = 0.125f, p.mask = true;  // the mask broadcast over batch and heads
  check_problem(attention, p);
  p.mask = false, p.type = DType::f16;
  check_problem(attention, p);
  p.batch = 1, p.heads = 2, p.seq_q = 256, p.seq_kv = 512, p.head_dim = p.value_dim = 128;
  p.mask = true, p.mask_heads = 2, p.type = DType::bf16, p.scale = 1.0f / std::sqrt(128.0f);
  check_problem(attention, p);
}

// Masks beyond random values: -inf above the diagonal, or each matrix's first row all -FLT_MAX (a padding mask's
// finite "minus infinity": the softmax of that row is uniform).
enum class MaskShape { random, causal, first_row_lowest };

float float_from_bits(std::uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// The TF32 kernel on one problem against the float64 reference. With nan_operands, one element of K in the
// second head and one of V in the last are NaNs whose mantissa is all ones (the GPU's own NaN and its negation),
// which a rounding that adds to the bits would carry into the sign or wrap to zero: the NaNs must reach the
// output where the reference has them.
void check_tf32_problem(const AttentionProblem& p, MaskShape shape, bool nan_operands = false) {
  SCOPED_TRACE(describe_attention(p));
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  const auto random = [&](std::int64_t n) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (float& e : x) e = normal(rng);
    return x;
  };
  const std::int64_t bh = p.batch * p.heads;
  const std::vector<float> q = random(bh * p.seq_q * p.head_dim);
  std::vector<float> k = random(bh * p.seq_kv * p.head_dim), v = random(bh * p.seq_kv * p.value_dim);
  if (nan_operands) {
    ASSERT_GE(bh, 2) << "the NaNs go to two different heads";
    ASSERT_GT(p.seq_kv, 9);
    k[static_cast<std::size_t>(((1 % bh) * p.seq_kv + 5) * p.head_dim + 3)] = float_from_bits(0x7fffffffu);
    v[static_cast<std::size_t>(((bh - 1) * p.seq_kv + 9) * p.value_dim)] = float_from_bits(0xffffffffu);
  }
  std::vector<float> mask;
  if (p.mask) {
    mask = random(p.mask_batch * p.mask_heads * p.seq_q * p.seq_kv);
    for (std::size_t i = 0; i < mask.size(); ++i) {
      const auto row = static_cast<std::int64_t>(i / static_cast<std::size_t>(p.seq_kv)) % p.seq_q;
      const auto col = static_cast<std::int64_t>(i % static_cast<std::size_t>(p.seq_kv));
      if (shape == MaskShape::causal && col > row) mask[i] = -INFINITY;
      if (shape == MaskShape::first_row_lowest && row == 0) mask[i] = std::numeric_limits<float>::lowest();
    }
  }
  std::vector<float> k_stored = k;  // K^T [bh, D, Tkv] where the problem reads it so
  if (p.k_transposed) {
    for (std::int64_t b = 0; b < bh; ++b) {
      for (std::int64_t j = 0; j < p.seq_kv; ++j) {
        for (std::int64_t d = 0; d < p.head_dim; ++d) {
          k_stored[static_cast<std::size_t>((b * p.head_dim + d) * p.seq_kv + j)] =
              k[static_cast<std::size_t>((b * p.seq_kv + j) * p.head_dim + d)];
        }
      }
    }
  }
  DeviceF32 dq(q), dk(k_stored), dv(v), dmask(mask), dout(std::vector<float>(static_cast<std::size_t>(bh * p.seq_q * p.value_dim)));
  FlashAttentionTf32 f;
  f.batch = p.batch, f.heads = p.heads, f.seq_q = p.seq_q, f.seq_kv = p.seq_kv, f.head_dim = p.head_dim;
  f.scale = p.scale, f.k_transposed = p.k_transposed;
  f.mask_head_stride = p.mask_heads > 1 ? p.seq_q * p.seq_kv : 0;
  f.mask_batch_stride = p.mask_batch > 1 ? p.mask_heads * p.seq_q * p.seq_kv : 0;
  ASSERT_EQ(flash_attention_tf32(f, dq.ptr, dk.ptr, dv.ptr, p.mask ? dmask.ptr : nullptr, dout.ptr, nullptr), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> out(static_cast<std::size_t>(bh * p.seq_q * p.value_dim));
  ASSERT_EQ(cudaMemcpy(out.data(), dout.ptr, out.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  const std::vector<double> want = reference(p, q, k, v, mask);
  double err = 0, norm = 0;
  std::size_t nans = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(out[i])) << "output " << i << " is " << out[i] << " where the reference is NaN";
      ++nans;
      continue;
    }
    ASSERT_TRUE(std::isfinite(out[i])) << "output " << i;
    err += (out[i] - want[i]) * (out[i] - want[i]);
    norm += want[i] * want[i];
  }
  const double rel = std::sqrt(err / std::max(norm, 1e-30));
  if (nan_operands) {  // the second head's outputs all and the last head's first column
    EXPECT_EQ(nans, static_cast<std::size_t>(p.seq_q * (p.value_dim + 1)));
  }
  const char* shape_name[] = {"", ", causal -inf mask", ", first rows masked with -FLT_MAX"};
  std::cout << "  " << describe_attention(p) << shape_name[static_cast<int>(shape)] << ": relative L2 error " << rel
            << "\n";
  // Both products on TF32 (10-bit mantissa), as the chain's TF32 GEMMs.
  EXPECT_LT(rel, 3e-3);
}

TEST(AttentionGpu, Tf32FlashKernelMatchesTheFloat64Reference) {
  FX_REQUIRE_DEVICE();
  AttentionProblem p;
  p.type = DType::f32;
  p.batch = 2, p.heads = 3, p.seq_q = p.seq_kv = 128, p.head_dim = p.value_dim = 64;
  p.scale = 0.125f, p.mask = true;  // broadcast over batch and heads
  check_tf32_problem(p, MaskShape::random);
  check_tf32_problem(p, MaskShape::causal);
  check_tf32_problem(p, MaskShape::first_row_lowest);
  p.mask_batch = 2, p.mask_heads = 3;  // a mask per batch entry and head
  check_tf32_problem(p, MaskShape::causal);
  p.mask = false, p.mask_batch = 1, p.mask_heads = 1;
  check_tf32_problem(p, MaskShape::random);
  check_tf32_problem(p, MaskShape::random, true);
  // Odd lengths (tiles cut short; mask and K^T rows not 16-byte aligned), K stored transposed, a mask per head.
  p.seq_q = 100, p.seq_kv = 77, p.mask = true, p.mask_heads = 3;
  check_tf32_problem(p, MaskShape::causal);
  p.k_transposed = true;
  check_tf32_problem(p, MaskShape::random);
  check_tf32_problem(p, MaskShape::random, true);  // K^T rows of 77 keys: the copies and the rounding word by word
  p.k_transposed = false, p.mask_heads = 1;
  for (const std::int64_t d : {32, 128}) {
    p.batch = 1, p.heads = 2, p.seq_q = 130, p.seq_kv = 200, p.head_dim = p.value_dim = d;
    p.scale = 1.0f / std::sqrt(static_cast<float>(d));
    check_tf32_problem(p, MaskShape::causal);
    p.k_transposed = true;
    check_tf32_problem(p, MaskShape::first_row_lowest);
    p.k_transposed = false;
  }
  EXPECT_EQ(flash_attention_tf32_unsupported_reason(64), "");
  EXPECT_NE(flash_attention_tf32_unsupported_reason(80).find("head dims 32, 64 and 128"), std::string::npos);
}

RunReport run_auto_fused(const Graph& g, RunOptions opt, Plan& fused) {
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  engine.auto_fuse();
  fused = engine.plan();
  Executor ex(engine.graph(), unfused, fused, opt);
  return ex.run();
}

void expect_one_attention_kernel(const RunReport& r, const Plan& fused, const std::string& what) {
  EXPECT_TRUE(r.verified) << what;
  for (const auto& checks : {r.checks, r.reference_checks}) {
    for (const auto& c : checks) EXPECT_TRUE(c.passed) << what << ": " << c.name << " rel. error " << c.rel_error;
  }
  ASSERT_EQ(fused.kernel_count(), 1) << what;
  EXPECT_EQ(fused.groups()[0].kinds, std::vector<FusionKind>{FusionKind::attention}) << what;
  ASSERT_EQ(r.fused.kernels.size(), 1u) << what << ": " << (r.fused.notes.empty() ? "" : r.fused.notes[0]);
  const KernelReport& k = r.fused.kernels[0];
  EXPECT_EQ(k.library, "cuDNN") << what;
  EXPECT_EQ(k.name, "cudnn_" + c_identifier(fused.groups()[0].id)) << what;
  EXPECT_NE(k.path.find("cuDNN fused attention"), std::string::npos) << k.path;
  EXPECT_TRUE(r.fused.split_groups.empty()) << what;
  std::cout << "  " << what << ": unfused " << r.unfused.kernels.size() << " launches " << r.unfused.total_ms
            << " ms, fused " << r.fused.kernels.size() << " launch " << r.fused.total_ms << " ms ("
            << r.unfused.total_ms / std::max(r.fused.total_ms, 1e-9) << "x); " << k.name << ": " << k.path << "\n";
}

// o = softmax(0.2 q k^T + m) v over q, v [2, 3, 64, 32] and a mask per head [3, 64, 64], in `dtype`. k is
// [2, 3, 64, 32] read through a transpose node, or where `k_transposed_input` a graph input already holding K^T.
Graph small_chain(const std::string& dtype, bool k_transposed_input) {
  const auto input = [&](const char* name, const char* shape) {
    return std::string(R"({"name": ")") + name + R"(", "shape": )" + shape + R"(, "dtype": ")" + dtype + R"("})";
  };
  const std::string inputs = input("q", "[2, 3, 64, 32]") + ", " +
                             input("k", k_transposed_input ? "[2, 3, 32, 64]" : "[2, 3, 64, 32]") + ", " +
                             input("v", "[2, 3, 64, 32]") + ", " + input("m", "[3, 64, 64]");
  const std::string scores = k_transposed_input
                                 ? R"({"name": "s", "op": "matmul", "inputs": ["q", "k"]})"
                                 : R"({"name": "kT", "op": "transpose", "inputs": ["k"], "attrs": {"perm": [0, 1, 3, 2]}},
                                      {"name": "s", "op": "matmul", "inputs": ["q", "kT"]})";
  return inline_graph(inputs, scores + R"(, {"name": "t", "op": "mul", "inputs": ["s", 0.2]},
         {"name": "u", "op": "add", "inputs": ["t", "m"]}, {"name": "p", "op": "softmax", "inputs": ["u"]},
         {"name": "o", "op": "matmul", "inputs": ["p", "v"]})",
                      R"("o")");
}

RunReport run_small_chain(const Graph& g, Plan& fused) {
  RunOptions opt;
  opt.reference = RunOptions::Reference::on;
  opt.timing.repeat = 3;
  const RunReport r = run_auto_fused(g, opt, fused);
  EXPECT_FALSE(r.reference_checks.empty()) << r.reference_note;
  return r;
}

// A small chain, both plans also checked against the float64 reference.
TEST(AttentionGpu, SmallChainAgreesWithTheFloat64Reference) {
  FX_REQUIRE_DEVICE();
  Plan fused;
  const RunReport r = run_small_chain(small_chain("bf16", false), fused);
  expect_one_attention_kernel(r, fused, "small chain, mask per head");
}

// An f32 chain, K^T a graph input: the TF32 kernel reads it as it is, one launch, checked against the unfused
// chain and the float64 reference.
TEST(AttentionGpu, F32ChainRunsAsOneTf32FlashKernel) {
  FX_REQUIRE_DEVICE();
  Plan fused;
  const RunReport r = run_small_chain(small_chain("f32", true), fused);
  EXPECT_TRUE(r.verified);
  for (const auto& checks : {r.checks, r.reference_checks}) {
    for (const auto& c : checks) EXPECT_TRUE(c.passed) << c.name << " rel. error " << c.rel_error;
  }
  ASSERT_EQ(fused.kernel_count(), 1);
  ASSERT_EQ(r.fused.kernels.size(), 1u) << (r.fused.notes.empty() ? "" : r.fused.notes[0]);
  const KernelReport& k = r.fused.kernels[0];
  EXPECT_EQ(k.library, "Fusion Explorer (nvcc)");
  EXPECT_EQ(k.name, "fx_flash_" + c_identifier(fused.groups()[0].id));
  EXPECT_NE(k.path.find("TF32 flash attention"), std::string::npos) << k.path;
  EXPECT_NE(k.path.find("K read as stored K^T"), std::string::npos) << k.path;
}

// K^T computed in another kernel (after a negation) would be read keys-contiguous: the engine makes no attention
// group of it, cuDNN is never asked, and the chain runs and verifies as separate kernels.
TEST(AttentionGpu, AStoredKTransposeRunsAsSeparateKernels) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(
      R"({"name": "q", "shape": [1, 2, 64, 32], "dtype": "bf16"}, {"name": "k", "shape": [1, 2, 64, 32], "dtype": "bf16"},
         {"name": "v", "shape": [1, 2, 64, 32], "dtype": "bf16"})",
      R"({"name": "k2", "op": "neg", "inputs": ["k"]}, {"name": "kT", "op": "transpose", "inputs": ["k2"], "attrs": {"perm": [0, 1, 3, 2]}},
         {"name": "s", "op": "matmul", "inputs": ["q", "kT"]}, {"name": "p", "op": "softmax", "inputs": ["s"]},
         {"name": "o", "op": "matmul", "inputs": ["p", "v"]})",
      R"("o")");
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  ASSERT_TRUE(engine.accept("v:k2+kT").fuse);
  std::vector<NodeId> chain;
  for (const char* n : {"s", "p", "o"}) chain.push_back(*engine.graph().find_node(n));
  const FusionDecision refused = check_group(engine.graph(), chain, engine.options());
  EXPECT_FALSE(refused.fuse);
  EXPECT_NE(refused.message.find("K is read as a stored K^T"), std::string::npos) << refused.message;
  engine.auto_fuse();
  RunOptions opt;
  opt.timing.repeat = 3;
  Executor ex(engine.graph(), unfused, engine.plan(), opt);
  const RunReport r = ex.run();
  EXPECT_TRUE(r.verified);
  for (const KernelReport& k : r.fused.kernels) EXPECT_NE(k.library, "cuDNN") << k.name;
}

// Each attention sample: auto-fuse makes it one cuDNN call, which verifies against the unfused chain; the times of
// both are printed.
TEST(AttentionGpu, SamplesFuseToOneVerifiedCudnnCall) {
  FX_REQUIRE_DEVICE();
  for (const char* name : {"attention_bf16", "attention_f16", "attention_long_bf16"}) {
    SCOPED_TRACE(name);
    auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + name + ".json");
    ASSERT_TRUE(g.ok());
    RunOptions opt;
    opt.timing.repeat = 10;
    opt.timing.warmup = 2;
    Plan fused;
    const RunReport r = run_auto_fused(*g, opt, fused);
    expect_one_attention_kernel(r, fused, name);
  }
}

}  // namespace
}  // namespace fx::gpu
