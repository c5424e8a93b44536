// Internals of the ONNX importer, shared by its .cpp files only: this header includes ONNX's protobuf types.
// The Importer walks the ONNX graph in order; each node is mapped by one function of the op table
// (onnx_ops.cpp) or, when no mapping applies, becomes an opaque `custom` node with the shape ONNX's own
// shape inference gives it.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include "app/import/onnx_import.h"

namespace fx::onnx_import {

// A tensor whose value is known at import time (an initializer with data, or a Constant node). Values are
// decoded only for small tensors: they feed attributes (reshape targets, axes, slice bounds) and literals.
struct ConstValue {
  TensorType type;
  bool is_initializer = false;
  bool has_values = false;
  std::vector<std::int64_t> ints;  // integer and bool tensors
  std::vector<double> reals;       // floating-point tensors
};

// ONNX element type -> the format's dtype. `narrowed` is set when the format has no exact match
// (f64 -> f32, 8/16-bit integers -> i32, unsigned 32/64 -> i64).
std::optional<DType> map_dtype(int onnx_type, bool& narrowed);
std::string onnx_dtype_name(int onnx_type);
// Decodes a TensorProto's type and, for tensors of at most `max_values` elements, its values.
std::optional<ConstValue> decode_tensor(const onnx::TensorProto& t, std::size_t max_values, std::string& error);

// The value of a Constant node (value, value_float(s), value_int(s)).
std::optional<ConstValue> constant_node_value(const onnx::NodeProto& n, std::size_t max_values, std::string& error);

// Attribute reads with ONNX's defaults.
const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name);
std::int64_t attr_int(const onnx::NodeProto& n, const std::string& name, std::int64_t fallback);
double attr_float(const onnx::NodeProto& n, const std::string& name, double fallback);
std::optional<std::vector<std::int64_t>> attr_ints(const onnx::NodeProto& n, const std::string& name);
std::string attr_string(const onnx::NodeProto& n, const std::string& name, const std::string& fallback);

using Operand = std::variant<std::string, double>;

class Importer {
 public:
  Importer(const onnx::ModelProto& model, const OnnxImportOptions& options, std::vector<std::string>& warnings);
  Expected<GraphSpec> run(const std::string& source_name);

  // ---- for the op mappers ----
  int opset() const { return opset_; }
  // Our type of an ONNX tensor (graph input, constant, or the output of an already mapped node).
  const TensorType* type_of(const std::string& onnx_name) const;
  // The type ONNX's shape inference gives a tensor, when it is complete (every dimension known).
  const TensorType* onnx_type_of(const std::string& onnx_name) const;
  // The type of one of our tensors (a node this importer emitted, or a graph input).
  const TensorType* our_type(const std::string& our_name) const;
  const ConstValue* constant(const std::string& onnx_name) const;
  // A constant's integer values, when known.
  std::optional<std::vector<std::int64_t>> const_ints(const std::string& onnx_name) const;
  // A single finite number held by a constant, when it has one element.
  std::optional<double> const_scalar(const std::string& onnx_name) const;
  // The format's name for an ONNX tensor used as a node input; constants become graph inputs on first use.
  std::string tensor(const std::string& onnx_name);
  // The name a mapped node producing ONNX output `i` of `node` must take.
  std::string output_name(const onnx::NodeProto& node, int i);
  // A fresh name for an intermediate node, derived from `base`.
  std::string temp_name(const std::string& base);
  // Appends a node after checking it with the op registry's own inference; false with `why` otherwise.
  bool emit(NodeSpec node, std::string& why);
  // The ONNX tensor `onnx_out` is the same tensor as `onnx_in` (Identity, inference Dropout).
  void alias(const std::string& onnx_out, const std::string& onnx_in);
  void warn(std::string message);

 private:
  struct Checkpoint {
    std::size_t nodes, inputs, journal;
  };
  void add_graph_inputs(Diagnostics& errors);
  void add_constant(const std::string& name, ConstValue value);
  bool check_node_inputs(const onnx::NodeProto& node, int index, Diagnostics& errors) const;
  void map_node(const onnx::NodeProto& node, int index, Diagnostics& errors);
  void map_node_checked(const onnx::NodeProto& node, int index, Diagnostics& errors);
  bool verify_outputs(const onnx::NodeProto& node, std::string& why) const;
  void import_as_custom(const onnx::NodeProto& node, int index, const std::string& why, Diagnostics& errors);
  Checkpoint checkpoint() const { return {spec_.nodes.size(), spec_.inputs.size(), journal_.size()}; }
  void rollback(const Checkpoint& c);
  void bind(const std::string& onnx_name, const std::string& our_name);
  void resolve_outputs(Diagnostics& errors);
  void remove_dead_nodes();
  void summarize_custom_ops();

  const onnx::ModelProto& model_;
  const onnx::GraphProto& graph_;
  const OnnxImportOptions& options_;
  std::vector<std::string>& warnings_;
  int opset_ = 1;
  GraphSpec spec_;
  std::set<std::string> reserved_;                          // every ONNX tensor name, and every name we gave
  std::unordered_map<std::string, std::string> names_;      // ONNX tensor -> our tensor
  std::unordered_map<std::string, TensorType> types_;       // our tensor -> type
  std::unordered_map<std::string, TensorType> onnx_types_;  // ONNX tensor -> type from ONNX shape inference
  std::unordered_map<std::string, ConstValue> constants_;   // ONNX tensor -> known value
  std::set<std::string> failed_;                            // ONNX tensors whose producer reported an error
  std::set<std::string> consumed_;                          // ONNX tensors some node or graph output reads
  std::vector<std::string> journal_;                        // ONNX names bound since the start, for rollback
  std::map<std::string, int> fallbacks_;                    // "Op: reason" -> count, for mapped ops that fell back
  std::string source_;  // NodeSpec::source of what emit() adds: the ONNX node being mapped
  std::set<std::string> warned_dtypes_;
};

// The value of a node whose inputs are all known at import time (shape arithmetic), or nullopt.
std::optional<ConstValue> fold_constant(const Importer& imp, const onnx::NodeProto& node);

// The op table: maps one ONNX node through the Importer, or returns why it cannot (the node then imports
// as `custom`). nullptr when the op has no mapping at all.
using MapFn = std::optional<std::string> (*)(Importer&, const onnx::NodeProto&);
MapFn find_mapper(const std::string& op_type);

}  // namespace fx::onnx_import
