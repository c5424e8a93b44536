// Every operator of the format as an id. Code decides per op by switching on an OpId or by reading the
// registry entry's traits, never by comparing names.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace fx {

// The one list of op names, in id order. Adding an op: a line here, its entry in op_registry.cpp, its case
// in the switches that evaluate (core/reference) and emit it (kernels/codegen), and its tests.
#define FX_OPS(X)                                                                                              \
  X(neg) X(abs) X(relu) X(gelu) X(gelu_tanh) X(silu) X(sigmoid) X(tanh) X(exp) X(log) X(sqrt) X(rsqrt) X(sin)   \
  X(cos) X(erf) X(reciprocal) X(square)                                                                          \
  X(add) X(sub) X(mul) X(div) X(maximum) X(minimum) X(pow)                                                       \
  X(gt) X(ge) X(lt) X(le) X(eq)                                                                                  \
  X(where) X(cast) X(dropout) X(batchnorm)                                                                       \
  X(sum) X(mean) X(max) X(min) X(softmax) X(layernorm) X(rmsnorm)                                                \
  X(matmul) X(conv2d) X(max_pool2d)                                                                              \
  X(transpose) X(reshape) X(concat) X(slice)                                                                     \
  X(sort) X(topk) X(custom)

enum class OpId : std::uint8_t {
#define FX_OP_ENUMERATOR(name) name,
  FX_OPS(FX_OP_ENUMERATOR)
#undef FX_OP_ENUMERATOR
};

inline constexpr std::array<std::string_view, 0
#define FX_OP_COUNT(name) +1
                                                  FX_OPS(FX_OP_COUNT)
#undef FX_OP_COUNT
                                                  >
    kOpNames = {
#define FX_OP_NAME(name) #name,
        FX_OPS(FX_OP_NAME)
#undef FX_OP_NAME
};

inline constexpr std::size_t kNumOps = kOpNames.size();

// The op's name in the graph format ("gelu_tanh").
constexpr std::string_view op_name(OpId id) { return kOpNames[static_cast<std::size_t>(id)]; }

// The id of a name in the format, or nullopt for a name the format does not know.
std::optional<OpId> find_op_id(std::string_view name);

}  // namespace fx
