// The op registry: one table entry per operator with its class, arity, attribute schema, shape and dtype
// inference, and FLOP count. Adding an op is one entry in op_registry.cpp plus its tests.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph/attrs.h"
#include "core/graph/diagnostic.h"
#include "core/graph/shape.h"

namespace fx {

// Ordered as TVM's OpPatternKind: combining two classes is std::max, and fusion legality is
// decided on the combined class.
enum class OpClass : std::uint8_t { elementwise = 0, layout = 1, reduction = 2, contraction = 3, opaque = 4 };

std::string_view op_class_name(OpClass c);
inline OpClass combine(OpClass a, OpClass b) { return a < b ? b : a; }

enum class AttrType : std::uint8_t { integer, integer_list, integer_or_list, number, dtype, string, boolean };

struct AttrSpec {
  std::string name;
  AttrType type;
  std::optional<AttrValue> default_value;  // nullopt: required
};

// An operand as the inference functions see it: a tensor type, or a scalar literal.
struct OperandType {
  std::optional<TensorType> tensor;  // nullopt for a scalar literal
  double scalar = 0.0;
};

struct InferResult {
  std::optional<TensorType> type;
  std::string error;           // set when type is empty
  std::string error_pointer;   // relative to the node, e.g. "/inputs/1" or "/attrs/axis"
  static InferResult ok(TensorType t) { return {std::move(t), {}, {}}; }
  static InferResult fail(std::string message, std::string pointer = {}) {
    return {std::nullopt, std::move(message), std::move(pointer)};
  }
};

using InferFn = std::function<InferResult(std::span<const OperandType> inputs, const Attrs& attrs)>;
using FlopFn = std::function<double(std::span<const OperandType> inputs, const TensorType& out, const Attrs& attrs)>;

struct OpDef {
  std::string name;
  OpClass op_class = OpClass::elementwise;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: any number
  std::vector<AttrSpec> attrs;
  bool random = false;          // draws random numbers (dropout)
  bool needs_declared_type = false;  // custom: the node states its output shape and dtype
  bool allows_scalar_inputs = false;
  InferFn infer;
  FlopFn flops;
  std::string summary;  // one line for tool tips and --help
};

class OpRegistry {
 public:
  static const OpRegistry& instance();
  const OpDef* find(std::string_view name) const;
  const std::vector<OpDef>& ops() const { return ops_; }

 private:
  OpRegistry();
  std::vector<OpDef> ops_;
};

}  // namespace fx
