// ONNX tensors and attributes as plain values: element types, decoded constants, attribute reads.
#include <cmath>
#include <cstring>

#include "app/import/onnx_internal.h"

namespace fx::onnx_import {
namespace {

using TP = onnx::TensorProto;

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24
    const float v = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -v : v;
  }
  std::uint32_t bits = exponent == 0x1f ? (sign | 0x7f800000u | (mantissa << 13))
                                        : (sign | ((exponent + 112u) << 23) | (mantissa << 13));
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float bf16_to_float(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

template <typename T>
T read_le(const std::string& raw, std::size_t i) {
  T v;
  std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));  // ONNX raw_data is little-endian, as is x86/ARM
  return v;
}

std::size_t element_bytes(int type) {
  switch (type) {
    case TP::BOOL: case TP::INT8: case TP::UINT8: return 1;
    case TP::INT16: case TP::UINT16: case TP::FLOAT16: case TP::BFLOAT16: return 2;
    case TP::INT32: case TP::UINT32: case TP::FLOAT: return 4;
    case TP::INT64: case TP::UINT64: case TP::DOUBLE: return 8;
    default: return 0;
  }
}

// One element of raw_data as a double (floating types) or an int64 (the rest).
void decode_raw(const std::string& raw, int type, std::size_t n, ConstValue& out) {
  for (std::size_t i = 0; i < n; ++i) {
    switch (type) {
      case TP::FLOAT: out.reals.push_back(read_le<float>(raw, i)); break;
      case TP::DOUBLE: out.reals.push_back(read_le<double>(raw, i)); break;
      case TP::FLOAT16: out.reals.push_back(half_to_float(read_le<std::uint16_t>(raw, i))); break;
      case TP::BFLOAT16: out.reals.push_back(bf16_to_float(read_le<std::uint16_t>(raw, i))); break;
      case TP::BOOL: case TP::UINT8: out.ints.push_back(read_le<std::uint8_t>(raw, i)); break;
      case TP::INT8: out.ints.push_back(read_le<std::int8_t>(raw, i)); break;
      case TP::INT16: out.ints.push_back(read_le<std::int16_t>(raw, i)); break;
      case TP::UINT16: out.ints.push_back(read_le<std::uint16_t>(raw, i)); break;
      case TP::INT32: out.ints.push_back(read_le<std::int32_t>(raw, i)); break;
      case TP::UINT32: out.ints.push_back(read_le<std::uint32_t>(raw, i)); break;
      case TP::INT64: out.ints.push_back(read_le<std::int64_t>(raw, i)); break;
      case TP::UINT64: out.ints.push_back(static_cast<std::int64_t>(read_le<std::uint64_t>(raw, i))); break;
      default: return;
    }
  }
}

// The typed repeated fields, used when raw_data is empty. Which field holds which type is fixed by onnx.proto.
bool decode_typed(const TP& t, std::size_t n, ConstValue& out) {
  const int type = t.data_type();
  auto take = [&](const auto& field, auto convert) {
    if (static_cast<std::size_t>(field.size()) != n) return false;
    for (const auto& v : field) convert(v);
    return true;
  };
  switch (type) {
    case TP::FLOAT: return take(t.float_data(), [&](float v) { out.reals.push_back(v); });
    case TP::DOUBLE: return take(t.double_data(), [&](double v) { out.reals.push_back(v); });
    case TP::FLOAT16:
      return take(t.int32_data(), [&](std::int32_t v) { out.reals.push_back(half_to_float(static_cast<std::uint16_t>(v))); });
    case TP::BFLOAT16:
      return take(t.int32_data(), [&](std::int32_t v) { out.reals.push_back(bf16_to_float(static_cast<std::uint16_t>(v))); });
    case TP::INT64: return take(t.int64_data(), [&](std::int64_t v) { out.ints.push_back(v); });
    case TP::UINT32: case TP::UINT64:
      return take(t.uint64_data(), [&](std::uint64_t v) { out.ints.push_back(static_cast<std::int64_t>(v)); });
    case TP::BOOL: case TP::INT8: case TP::UINT8: case TP::INT16: case TP::UINT16: case TP::INT32:
      return take(t.int32_data(), [&](std::int32_t v) { out.ints.push_back(v); });
    default: return false;
  }
}

}  // namespace

std::optional<DType> map_dtype(int onnx_type, bool& narrowed) {
  narrowed = false;
  switch (onnx_type) {
    case TP::FLOAT: return DType::f32;
    case TP::FLOAT16: return DType::f16;
    case TP::BFLOAT16: return DType::bf16;
    case TP::INT32: return DType::i32;
    case TP::INT64: return DType::i64;
    case TP::BOOL: return DType::boolean;
    case TP::DOUBLE: narrowed = true; return DType::f32;
    case TP::INT8: case TP::UINT8: case TP::INT16: case TP::UINT16: narrowed = true; return DType::i32;
    case TP::UINT32: case TP::UINT64: narrowed = true; return DType::i64;
    default: return std::nullopt;
  }
}

std::string onnx_dtype_name(int onnx_type) {
  if (TP::DataType_IsValid(onnx_type)) return TP::DataType_Name(static_cast<TP::DataType>(onnx_type));
  return "type " + std::to_string(onnx_type);
}

std::optional<ConstValue> decode_tensor(const TP& t, std::size_t max_values, std::string& error) {
  bool narrowed = false;
  auto dtype = map_dtype(t.data_type(), narrowed);
  if (!dtype) {
    error = "element type " + onnx_dtype_name(t.data_type()) + " has no equivalent in the graph format";
    return std::nullopt;
  }
  ConstValue c;
  c.type.dtype = *dtype;
  for (std::int64_t d : t.dims()) {
    if (d <= 0) {
      error = "dimension " + std::to_string(d) + " (the format has no empty tensors)";
      return std::nullopt;
    }
    c.type.shape.push_back(d);
  }
  auto n = checked_numel(c.type.shape);
  if (!n) {
    error = "element count overflows 64 bits";
    return std::nullopt;
  }
  const auto count = static_cast<std::size_t>(*n);
  // External data and stripped weights carry no values: their shape and dtype are all the graph needs.
  if (count > max_values || t.data_location() == TP::EXTERNAL) return c;
  if (!t.raw_data().empty()) {
    const std::size_t size = element_bytes(t.data_type());
    if (size == 0 || t.raw_data().size() != size * count) return c;
    decode_raw(t.raw_data(), t.data_type(), count, c);
    c.has_values = true;
  } else {
    c.has_values = decode_typed(t, count, c);
    if (!c.has_values) {
      c.ints.clear();
      c.reals.clear();
    }
  }
  return c;
}

std::optional<ConstValue> constant_node_value(const onnx::NodeProto& n, std::size_t max_values, std::string& error) {
  using A = onnx::AttributeProto;
  for (const auto& a : n.attribute()) {
    ConstValue c;
    c.has_values = true;
    if (a.name() == "value" && a.type() == A::TENSOR) return decode_tensor(a.t(), max_values, error);
    if (a.name() == "value_float" && a.type() == A::FLOAT) {
      c.type = {{}, DType::f32};
      c.reals = {static_cast<double>(a.f())};
    } else if (a.name() == "value_int" && a.type() == A::INT) {
      c.type = {{}, DType::i64};
      c.ints = {a.i()};
    } else if (a.name() == "value_floats" && a.type() == A::FLOATS && a.floats_size() > 0) {
      c.type = {{a.floats_size()}, DType::f32};
      c.reals.assign(a.floats().begin(), a.floats().end());
    } else if (a.name() == "value_ints" && a.type() == A::INTS && a.ints_size() > 0) {
      c.type = {{a.ints_size()}, DType::i64};
      c.ints.assign(a.ints().begin(), a.ints().end());
    } else {
      continue;
    }
    return c;
  }
  error = "a Constant of a kind the format cannot hold (sparse, string, or empty)";
  return std::nullopt;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::int64_t attr_int(const onnx::NodeProto& n, const std::string& name, std::int64_t fallback) {
  const auto* a = find_attr(n, name);
  return a && a->type() == onnx::AttributeProto::INT ? a->i() : fallback;
}

double attr_float(const onnx::NodeProto& n, const std::string& name, double fallback) {
  const auto* a = find_attr(n, name);
  return a && a->type() == onnx::AttributeProto::FLOAT ? static_cast<double>(a->f()) : fallback;
}

std::optional<std::vector<std::int64_t>> attr_ints(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = find_attr(n, name);
  if (!a || a->type() != onnx::AttributeProto::INTS) return std::nullopt;
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& fallback) {
  const auto* a = find_attr(n, name);
  return a && a->type() == onnx::AttributeProto::STRING ? a->s() : fallback;
}

}  // namespace fx::onnx_import
