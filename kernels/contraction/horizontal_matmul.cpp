#include "kernels/contraction/horizontal_matmul.h"

#include <stdexcept>

#include "kernels/common/cuda_call.h"
#include "kernels/contraction/device_memory.h"

namespace fx::gpu {

struct HorizontalMatmul::Impl {
  std::int64_t k = 0;
  DType type = DType::f32;
  std::vector<std::int64_t> widths;
  std::int64_t total_n = 0;
  contraction_detail::DeviceMemory weights;
  contraction_detail::DeviceMemory bias;
};

namespace {

void check_parts(std::span<const HorizontalPart> parts, std::int64_t k) {
  if (parts.empty()) throw std::invalid_argument("horizontal matmul: no parts");
  if (k < 1) throw std::invalid_argument("horizontal matmul: k must be positive");
  const bool first_has_bias = parts.front().bias != nullptr;
  for (const HorizontalPart& part : parts) {
    if (!part.weight || part.n < 1) throw std::invalid_argument("horizontal matmul: a part has no weight or n < 1");
    if ((part.bias != nullptr) != first_has_bias) {
      throw std::invalid_argument("horizontal matmul: give a bias for every part or for none");
    }
  }
}

}  // namespace

HorizontalMatmul::HorizontalMatmul(std::span<const HorizontalPart> parts, std::int64_t k, DType type,
                                   CUstream_st* stream)
    : impl_(std::make_unique<Impl>()) {
  check_parts(parts, k);
  contraction_detail::require_cuda_device();
  Impl& s = *impl_;
  s.k = k;
  s.type = type;
  for (const HorizontalPart& part : parts) {
    s.widths.push_back(part.n);
    s.total_n += part.n;
  }
  const auto element = static_cast<std::size_t>(dtype_size(type));
  const auto row_bytes = static_cast<std::size_t>(s.total_n) * element;
  s.weights = contraction_detail::DeviceMemory(row_bytes * static_cast<std::size_t>(k));
  if (parts.front().bias) s.bias = contraction_detail::DeviceMemory(row_bytes);
  std::size_t offset = 0;  // bytes from the start of a row of the merged matrix
  for (const HorizontalPart& part : parts) {
    const auto part_row = static_cast<std::size_t>(part.n) * element;
    // One 2-D copy per part: K rows of part_row bytes, into the merged rows at `offset`.
    FX_CUDA_CALL(cudaMemcpy2DAsync(static_cast<char*>(s.weights.get()) + offset, row_bytes, part.weight, part_row,
                                   part_row, static_cast<std::size_t>(k), cudaMemcpyDeviceToDevice, stream));
    if (part.bias) {
      FX_CUDA_CALL(cudaMemcpyAsync(static_cast<char*>(s.bias.get()) + offset, part.bias, part_row,
                                   cudaMemcpyDeviceToDevice, stream));
    }
    offset += part_row;
  }
}

HorizontalMatmul::~HorizontalMatmul() = default;
HorizontalMatmul::HorizontalMatmul(HorizontalMatmul&&) noexcept = default;
HorizontalMatmul& HorizontalMatmul::operator=(HorizontalMatmul&&) noexcept = default;

std::int64_t HorizontalMatmul::k() const { return impl_->k; }
std::int64_t HorizontalMatmul::total_n() const { return impl_->total_n; }
bool HorizontalMatmul::has_bias() const { return impl_->bias.get() != nullptr; }
const void* HorizontalMatmul::weights() const { return impl_->weights.get(); }
const void* HorizontalMatmul::bias() const { return impl_->bias.get(); }

MatmulProblem HorizontalMatmul::problem(std::int64_t m) const {
  MatmulProblem p;
  p.m = m;
  p.n = impl_->total_n;
  p.k = impl_->k;
  p.a_type = p.b_type = p.c_type = impl_->type;
  return p;
}

std::vector<ColumnView> HorizontalMatmul::run(Matmul& matmul, const MatmulProblem& p, const void* x, void* y,
                                              CUstream_st* stream) const {
  if (p.n != impl_->total_n || p.k != impl_->k || p.b_type != impl_->type || p.transpose_b || p.ldb ||
      p.batch != 1) {
    throw std::invalid_argument("horizontal matmul: the problem must keep the merged n, k, weight type and layout");
  }
  if (epilogue_has_bias(p.epilogue) && !has_bias()) {
    throw std::invalid_argument("horizontal matmul: the epilogue needs biases, and the parts had none");
  }
  matmul.run(p, x, weights(), epilogue_has_bias(p.epilogue) ? bias() : nullptr, y, stream);
  return views(y, p.m, resolve_layout(p).ldc, p.c_type);
}

std::vector<ColumnView> HorizontalMatmul::views(void* y, std::int64_t m, std::int64_t ldc, DType c_type) const {
  std::vector<ColumnView> out;
  std::int64_t column = 0;
  for (std::int64_t width : impl_->widths) {
    out.push_back({static_cast<char*>(y) + column * dtype_size(c_type), m, width, ldc});
    column += width;
  }
  return out;
}

}  // namespace fx::gpu
