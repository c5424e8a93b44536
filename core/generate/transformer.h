// A generated GPT-style decoder stack, so that scale (thousands of nodes) can be tested without shipping
// large files.
#pragma once

#include "core/graph/graph.h"

namespace fx {

struct TransformerShape {
  int layers = 2;
  std::int64_t hidden = 768;
  std::int64_t seq = 1024;
  std::int64_t batch = 1;
  std::int64_t heads = 12;
  std::int64_t mlp_ratio = 4;
  DType dtype = DType::f32;
};

// Per layer: layernorm, Q/K/V projections (+bias), head split, scaled scores, causal mask, softmax,
// attention @ V, head merge, output projection (+bias), residual add, layernorm, MLP with GELU, residual add.
GraphSpec transformer_spec(const TransformerShape& shape);

}  // namespace fx
