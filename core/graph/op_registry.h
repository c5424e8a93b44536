// The op registry: one table entry per operator, found by OpId, with its class, arity, attribute schema,
// shape and dtype inference, FLOP count and the traits the passes decide by. Adding an op is its id in
// op_id.h, one entry in op_registry.cpp, the switches the compiler then names, and its tests.
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
#include "core/graph/op_id.h"
#include "core/graph/shape.h"

namespace fx {

// Ordered as TVM's OpPatternKind: combining two classes is std::max, and fusion legality is
// decided on the combined class.
enum class OpClass : std::uint8_t { elementwise = 0, layout = 1, reduction = 2, contraction = 3, opaque = 4 };

std::string_view op_class_name(OpClass c);
inline OpClass combine(OpClass a, OpClass b) { return a < b ? b : a; }

// What a vendor library's epilogue can apply to a GEMM's or convolution's output, by op
// (core/fusion/library_epilogue.cpp reads it): a bias or tensor add, an activation, an inference batchnorm
// folded into the weights. gelu_erf is named so the refusal can say why the tanh form is the one offered.
enum class EpilogueOp : std::uint8_t { none, add, relu, gelu_tanh, gelu_erf, batchnorm };

// How a reduction-class op reduces: a statistic over attrs.axis (sum, mean, max, min: the output drops the
// axes or keeps them as 1) or a normalisation of rows (softmax, layernorm, rmsnorm: the input's shape).
enum class ReductionKind : std::uint8_t { none, statistic, normalization };

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
  OpId id = OpId::custom;
  std::string name;  // op_name(id)
  OpClass op_class = OpClass::elementwise;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: any number
  std::vector<AttrSpec> attrs;
  bool random = false;          // draws random numbers (dropout)
  bool needs_declared_type = false;  // custom: the node states its output shape and dtype
  bool allows_scalar_inputs = false;
  bool comparison = false;  // elementwise a, b -> bool
  // Moves no byte: its output is its input's bytes read with another shape (a reshape of a row-major tensor).
  // Alone in a group it launches nothing and its output shares its input's buffer (core/analysis/views.h).
  bool view = false;
  ReductionKind reduction = ReductionKind::none;
  EpilogueOp epilogue = EpilogueOp::none;
  InferFn infer;
  FlopFn flops;
  std::string summary;  // one line for tool tips and --help
};

class OpRegistry {
 public:
  static const OpRegistry& instance();
  const OpDef* find(std::string_view name) const;  // nullptr for a name the format does not know
  const OpDef& get(OpId id) const { return ops_[static_cast<std::size_t>(id)]; }
  const std::vector<OpDef>& ops() const { return ops_; }

 private:
  OpRegistry();
  void add_reductions();
  void add_contractions_and_windows();
  void add_layout_and_opaque();
  void index_by_id();
  std::vector<OpDef> ops_;  // indexed by OpId
};

inline const OpDef& op_def(OpId id) { return OpRegistry::instance().get(id); }

}  // namespace fx
