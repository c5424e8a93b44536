// The inference and FLOP functions the op table (op_registry.cpp) refers to; internal to core/graph.
#pragma once

#include <optional>

#include "core/graph/op_registry.h"

namespace fx::op_infer {

using Inputs = std::span<const OperandType>;

// The first tensor operand's type: scalars adopt the dtype of the tensors they combine with.
std::optional<TensorType> first_tensor(Inputs in);

InferResult infer_unary(Inputs in, const Attrs& attrs);
InferResult infer_binary(Inputs in, const Attrs& attrs);
InferResult infer_compare(Inputs in, const Attrs& attrs);
InferResult infer_where(Inputs in, const Attrs& attrs);
InferResult infer_cast(Inputs in, const Attrs& attrs);
InferResult infer_dropout(Inputs in, const Attrs& attrs);
InferResult infer_batchnorm(Inputs in, const Attrs& attrs);
InferResult infer_reduce(Inputs in, const Attrs& attrs);
InferResult infer_softmax(Inputs in, const Attrs& attrs);
InferResult infer_layernorm(Inputs in, const Attrs& attrs);
InferResult infer_rmsnorm(Inputs in, const Attrs& attrs);
InferResult infer_matmul(Inputs in, const Attrs& attrs);
InferResult infer_conv2d(Inputs in, const Attrs& attrs);
InferResult infer_max_pool2d(Inputs in, const Attrs& attrs);
InferResult infer_transpose(Inputs in, const Attrs& attrs);
InferResult infer_reshape(Inputs in, const Attrs& attrs);
InferResult infer_concat(Inputs in, const Attrs& attrs);
InferResult infer_slice(Inputs in, const Attrs& attrs);
InferResult infer_sort(Inputs in, const Attrs& attrs);
InferResult infer_topk(Inputs in, const Attrs& attrs);

FlopFn per_output_element(double flops);
FlopFn per_input_element(double flops);
double matmul_flops(Inputs in, const TensorType& out, const Attrs& attrs);
double conv_flops(Inputs in, const TensorType& out, const Attrs& attrs);
double pool_flops(Inputs in, const TensorType& out, const Attrs& attrs);
double sort_flops(Inputs in, const TensorType& out, const Attrs& attrs);

}  // namespace fx::op_infer
