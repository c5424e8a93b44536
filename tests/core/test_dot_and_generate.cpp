#include <gtest/gtest.h>

#include "core/export/dot.h"
#include "core/generate/transformer.h"
#include "core/graph/graph_io.h"

namespace fx {
namespace {

Graph small_graph() {
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "mlp",
    "inputs": [{"name": "x", "shape": [2, 4], "dtype": "f32"},
               {"name": "W", "shape": [4, 3], "dtype": "f32", "role": "weight"}],
    "nodes": [{"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
              {"name": "y", "op": "relu", "inputs": ["mm"]}],
    "outputs": ["y"]})");
  EXPECT_TRUE(g.ok());
  return std::move(g).value();
}

TEST(Dot, NodesColouredByClassAndEdgesLabelledWithSizes) {
  const std::string expected = R"(digraph "mlp" {
  rankdir=TB;
  node [shape=box, style="rounded,filled", fontname="DejaVu Sans", fontsize=10];
  edge [fontname="DejaVu Sans", fontsize=8, color="#555555"];
  in0 [label="x\nf32[2, 4]", shape=ellipse, fillcolor="#ffffff"];
  in1 [label="W\nf32[4, 3]", shape=ellipse, fillcolor="#f4f4f4"];
  n0 [label="mm\nmatmul  f32[2, 3]", fillcolor="#c6dcf5"];
  n1 [label="y\nrelu  f32[2, 3]", fillcolor="#cfe8cf", penwidth=2];
  in0 -> n0 [label="32 B"];
  in1 -> n0 [label="48 B"];
  n0 -> n1 [label="24 B"];
  out_n1 [label="output", shape=plaintext, style=""];
  n1 -> out_n1;
}
)";
  EXPECT_EQ(to_dot(small_graph()), expected);
}

TEST(Dot, ClustersWrapTheirNodes) {
  DotOptions options;
  options.edge_labels = false;
  options.clusters.push_back({"g0", "g0 epilogue: mm+y", "#ffe0e0", {0, 1}});
  const std::string dot = to_dot(small_graph(), options);
  EXPECT_NE(dot.find("subgraph \"cluster_g0\" {\n    label=\"g0 epilogue: mm+y\""), std::string::npos) << dot;
  EXPECT_NE(dot.find("    n0 [label"), std::string::npos);
  EXPECT_EQ(dot.find("[label=\"32 B\"]"), std::string::npos);
}

TEST(Generate, FortyEightLayersGiveWellOverAThousandNodes) {
  TransformerShape shape;
  shape.layers = 48;
  auto g = build_graph(transformer_spec(shape));
  ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors());
  EXPECT_EQ(g->num_nodes(), 48 * 30);
  EXPECT_EQ(g->value_type(g->outputs()[0]).shape, (Shape{1, 1024, 768}));
  int softmaxes = 0;
  for (const Node& n : g->nodes()) softmaxes += n.op == "softmax";
  EXPECT_EQ(softmaxes, 48);
}

}  // namespace
}  // namespace fx
