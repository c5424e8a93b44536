// Horizontal matmul: several products that share their input x (Q, K, V projections) as one GEMM.
// The weights [K, N_i] are copied once, on the device, into one row-major [K, N_1 + ... + N_p] matrix (and
// the biases into one vector); one GEMM then writes Y[M, sum N_i], and output i is the column view
// Y[:, offset_i : offset_i + N_i] with leading dimension ldc. On compute-bound shapes this saves launches,
// not time: x is read from L2 either way.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kernels/contraction/matmul.h"

namespace fx::gpu {

struct HorizontalPart {
  const void* weight = nullptr;  // device, row-major [K, n], packed
  std::int64_t n = 0;
  const void* bias = nullptr;  // device, [n] of the weight type; all parts have one or none do
};

// A column block of a row-major matrix: element (i, j) is at data + (i * ld + j) * element size.
struct ColumnView {
  void* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;
};

class HorizontalMatmul {
 public:
  // Enqueues the copies on `stream`; the source weights must stay valid until the stream has run them.
  HorizontalMatmul(std::span<const HorizontalPart> parts, std::int64_t k, DType type, CUstream_st* stream);
  ~HorizontalMatmul();
  HorizontalMatmul(HorizontalMatmul&&) noexcept;
  HorizontalMatmul& operator=(HorizontalMatmul&&) noexcept;
  HorizontalMatmul(const HorizontalMatmul&) = delete;
  HorizontalMatmul& operator=(const HorizontalMatmul&) = delete;

  std::int64_t k() const;
  std::int64_t total_n() const;
  bool has_bias() const;
  const void* weights() const;  // row-major [K, total_n]
  const void* bias() const;     // [total_n] or nullptr

  // The merged problem for m rows of x, no epilogue, output in the weight type; adjust the rest, keep n and k.
  MatmulProblem problem(std::int64_t m) const;

  // Runs the merged GEMM into y (row-major [m, ldc], ldc >= total_n) and returns one view per part.
  std::vector<ColumnView> run(Matmul& matmul, const MatmulProblem& p, const void* x, void* y,
                              CUstream_st* stream) const;

  // The per-part views of an output written by run (pure pointer arithmetic).
  std::vector<ColumnView> views(void* y, std::int64_t m, std::int64_t ldc, DType c_type) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fx::gpu
