// Element types of the graph format and their sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fx {

enum class DType : std::uint8_t { f32, f16, bf16, i32, i64, boolean };

constexpr std::int64_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::boolean: return 1;
  }
  return 0;
}

constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);

}  // namespace fx
