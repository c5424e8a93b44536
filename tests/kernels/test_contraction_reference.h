// Float64 CPU references for the contraction tests (no GPU): row-major matmul with the epilogues, and a
// direct NCHW/OIHW convolution. Shared by tests/kernels and tests/gpu.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace fx::test {

inline double relu_ref(double v) { return v > 0.0 ? v : 0.0; }
inline double gelu_tanh_ref(double v) {
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
}

// y[m, n] = sum_k x[m, k] * w[k, n] for packed row-major operands.
inline std::vector<double> matmul_ref(const std::vector<double>& x, const std::vector<double>& w, std::int64_t m,
                                      std::int64_t n, std::int64_t k) {
  std::vector<double> y(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t p = 0; p < k; ++p) {
      const double a = x[static_cast<std::size_t>(i * k + p)];
      for (std::int64_t j = 0; j < n; ++j) y[static_cast<std::size_t>(i * n + j)] += a * w[static_cast<std::size_t>(p * n + j)];
    }
  }
  return y;
}

struct ConvShape {
  std::int64_t n, c, h, w, k, r, s, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
  std::int64_t out_h() const { return (h + 2 * pad_h - dil_h * (r - 1) - 1) / stride_h + 1; }
  std::int64_t out_w() const { return (w + 2 * pad_w - dil_w * (s - 1) - 1) / stride_w + 1; }
};

// Direct cross-correlation, NCHW input, OIHW weight [k, c/groups, r, s], optional bias [k].
inline std::vector<double> conv2d_ref(const ConvShape& p, const std::vector<double>& x, const std::vector<double>& w,
                                      const std::vector<double>& bias) {
  const std::int64_t P = p.out_h(), Q = p.out_w(), cg = p.c / p.groups, kg = p.k / p.groups;
  std::vector<double> y(static_cast<std::size_t>(p.n * p.k * P * Q), 0.0);
  auto at = [](std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d, std::int64_t B, std::int64_t C,
               std::int64_t D) { return static_cast<std::size_t>(((a * B + b) * C + c) * D + d); };
  for (std::int64_t b = 0; b < p.n; ++b)
    for (std::int64_t o = 0; o < p.k; ++o)
      for (std::int64_t i = 0; i < P; ++i)
        for (std::int64_t j = 0; j < Q; ++j) {
          double acc = bias.empty() ? 0.0 : bias[static_cast<std::size_t>(o)];
          const std::int64_t g = o / kg;
          for (std::int64_t ci = 0; ci < cg; ++ci)
            for (std::int64_t u = 0; u < p.r; ++u)
              for (std::int64_t v = 0; v < p.s; ++v) {
                const std::int64_t hi = i * p.stride_h - p.pad_h + u * p.dil_h;
                const std::int64_t wi = j * p.stride_w - p.pad_w + v * p.dil_w;
                if (hi < 0 || hi >= p.h || wi < 0 || wi >= p.w) continue;
                acc += x[at(b, g * cg + ci, hi, wi, p.c, p.h, p.w)] * w[at(o, ci, u, v, cg, p.r, p.s)];
              }
          y[at(b, o, i, j, p.k, P, Q)] = acc;
        }
  return y;
}

// ||a - b|| / ||b||, the error measure of every contraction test.
inline double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0.0, ref = 0.0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    ref += b[i] * b[i];
  }
  if (a.size() != b.size()) return INFINITY;
  return ref > 0.0 ? std::sqrt(diff / ref) : std::sqrt(diff);
}

}  // namespace fx::test
