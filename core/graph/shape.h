// Tensor shapes and the numpy broadcasting rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph/dtype.h"

namespace fx {

using Shape = std::vector<std::int64_t>;

std::string shape_to_string(const Shape& shape);  // "[8192, 4096]"

// Element count, or nullopt when it overflows int64.
std::optional<std::int64_t> checked_numel(const Shape& shape);
std::int64_t numel(const Shape& shape);  // asserts no overflow (validated graphs only)

// numpy broadcasting: align trailing dimensions; each pair must be equal or one of them 1.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// Normalises a possibly negative axis against a rank; nullopt when out of range.
std::optional<int> normalize_axis(std::int64_t axis, std::size_t rank);

struct TensorType {
  Shape shape;
  DType dtype = DType::f32;

  std::int64_t numel() const { return fx::numel(shape); }
  std::int64_t bytes() const { return numel() * dtype_size(dtype); }
  bool operator==(const TensorType&) const = default;
};

// Byte and element totals over a graph: each tensor fits int64, their sums need not (ten thousand tensors
// of 2^50 bytes). A sum saturates at INT64_MAX, which reports print as "8 EiB" ("at least").
inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return b > 0 ? INT64_MAX : INT64_MIN;
  return sum;
}

std::string type_to_string(const TensorType& type);  // "f32[8192, 4096]"
std::string format_bytes(double bytes);              // "256 MiB"

}  // namespace fx
