// Constant folding of the shape arithmetic exporters emit (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape): with every input shape fixed at import, these are known integers, and folding them lets
// Reshape and friends map to the format's ops even where ONNX's own data propagation gives up.
#include <algorithm>

#include "app/import/onnx_internal.h"

namespace fx::onnx_import {
namespace {

ConstValue int_vector(std::vector<std::int64_t> values, bool scalar = false) {
  ConstValue c;
  c.type = {scalar ? Shape{} : Shape{static_cast<std::int64_t>(values.size())}, DType::i64};
  c.has_values = true;
  c.ints = std::move(values);
  return c;
}

std::optional<ConstValue> fold_shape(const Importer& imp, const onnx::NodeProto& node) {
  const TensorType* x = imp.type_of(node.input(0));
  if (!x || x->shape.empty()) return std::nullopt;
  const auto rank = static_cast<std::int64_t>(x->shape.size());
  auto clamp = [rank](std::int64_t v) { return std::clamp(v < 0 ? v + rank : v, std::int64_t{0}, rank); };
  const std::int64_t start = clamp(attr_int(node, "start", 0)), end = clamp(attr_int(node, "end", rank));
  if (end <= start) return std::nullopt;
  return int_vector(std::vector<std::int64_t>(x->shape.begin() + start, x->shape.begin() + end));
}

// Gather on axis 0 of a 1-D integer constant by constant indices.
std::optional<ConstValue> fold_gather(const Importer& imp, const onnx::NodeProto& node) {
  auto data = imp.const_ints(node.input(0));
  auto idx = imp.const_ints(node.input(1));
  const ConstValue* ic = imp.constant(node.input(1));
  if (!data || !idx || attr_int(node, "axis", 0) != 0 || imp.constant(node.input(0))->type.shape.size() != 1) {
    return std::nullopt;
  }
  std::vector<std::int64_t> out;
  const auto n = static_cast<std::int64_t>(data->size());
  for (std::int64_t i : *idx) {
    if (i < -n || i >= n) return std::nullopt;
    out.push_back((*data)[static_cast<std::size_t>(i < 0 ? i + n : i)]);
  }
  return int_vector(std::move(out), ic->type.shape.empty());
}

std::optional<ConstValue> fold_concat(const Importer& imp, const onnx::NodeProto& node) {
  std::vector<std::int64_t> out;
  for (const auto& in : node.input()) {
    auto v = imp.const_ints(in);
    if (!v || imp.constant(in)->type.shape.size() != 1) return std::nullopt;
    out.insert(out.end(), v->begin(), v->end());
  }
  return int_vector(std::move(out));
}

// Unsqueeze of an integer scalar to a one-element vector (the other case exporters use it for).
std::optional<ConstValue> fold_unsqueeze(const Importer& imp, const onnx::NodeProto& node) {
  auto v = imp.const_ints(node.input(0));
  if (!v || !imp.constant(node.input(0))->type.shape.empty()) return std::nullopt;
  return int_vector(*v);
}

}  // namespace

std::optional<ConstValue> fold_constant(const Importer& imp, const onnx::NodeProto& node) {
  if (node.input_size() == 0 || node.output_size() != 1) return std::nullopt;
  const std::string& op = node.op_type();
  if (op == "Shape") return fold_shape(imp, node);
  if (op == "Gather" && node.input_size() == 2) return fold_gather(imp, node);
  if (op == "Concat") return fold_concat(imp, node);
  if (op == "Unsqueeze") return fold_unsqueeze(imp, node);
  return std::nullopt;
}

}  // namespace fx::onnx_import
