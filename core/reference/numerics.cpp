#include "core/reference/numerics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fx {

std::uint32_t philox_bits24(std::uint64_t seed, std::uint64_t index) {
  std::uint32_t c0 = static_cast<std::uint32_t>(index), c1 = static_cast<std::uint32_t>(index >> 32), c2 = 0, c3 = 0;
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c0, p1 = std::uint64_t{0xCD9E8D57u} * c2;
    const auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c0 >> 8;
}

std::uint32_t dropout_threshold(double p) { return static_cast<std::uint32_t>(std::ceil(p * 16777216.0)); }

namespace {

// Rounds to `bits` significant bits with exponents down to `min_exp` (the subnormal step) and overflow
// above `max_finite` to infinity: the binary16/bfloat16 rounding, computed on doubles (no double rounding).
double round_float_format(double v, int bits, int min_exp, double max_finite) {
  if (v == 0.0 || !std::isfinite(v)) return v;
  int e = 0;
  std::frexp(v, &e);  // |v| = m * 2^e, m in [0.5, 1)
  const int step = std::max(e - bits, min_exp);
  const double r = std::ldexp(std::nearbyint(std::ldexp(v, -step)), step);  // ties to even (default mode)
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), v);
  return r;
}

}  // namespace

double round_to_dtype(double v, DType t) {
  switch (t) {
    case DType::f32: return static_cast<double>(static_cast<float>(v));
    case DType::f16: return round_float_format(v, 11, -24, 65504.0);
    case DType::bf16: return round_float_format(v, 8, -133, 3.3895313892515355e38);
    case DType::i32:
    case DType::i64: return std::isfinite(v) ? std::trunc(v) : v;
    case DType::boolean: return v != 0.0 ? 1.0 : 0.0;
  }
  return v;
}

}  // namespace fx
