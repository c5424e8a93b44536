// The graph format: every error kind names its JSON pointer and says what is wrong; valid files load,
// save canonically and round-trip.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/graph/graph_io.h"

namespace fx {
namespace {

// A minimal valid document with the given inputs/nodes/outputs spliced in.
std::string doc(const std::string& inputs, const std::string& nodes, const std::string& outputs) {
  return R"({"format": "fusion-explorer/graph", "version": 1, "name": "t", "inputs": [)" + inputs +
         R"(], "nodes": [)" + nodes + R"(], "outputs": [)" + outputs + "]}";
}

const std::string kX = R"({"name": "x", "shape": [4, 8], "dtype": "f32"})";

// Loads text that must fail and returns the first diagnostic whose message contains `fragment`.
Diagnostic expect_error(const std::string& text, const std::string& fragment) {
  auto g = load_graph(text);
  EXPECT_FALSE(g.ok()) << "loaded a bad graph";
  if (g.ok()) return {};
  for (const Diagnostic& d : g.errors()) {
    if (d.message.find(fragment) != std::string::npos) return d;
  }
  ADD_FAILURE() << "no error mentions '" << fragment << "'; got:\n" << format_diagnostics(g.errors());
  return {};
}

TEST(GraphFormat, LoadsAValidGraphAndInfersTypes) {
  auto g = load_graph(doc(kX + R"(, {"name": "b", "shape": [8], "dtype": "f32", "role": "weight"})",
                          R"({"name": "y", "op": "relu", "inputs": ["a"]}, {"name": "a", "op": "add", "inputs": ["x", "b"]})",
                          R"("y")"));
  ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors());
  EXPECT_EQ(g->num_nodes(), 2);
  EXPECT_EQ(g->node(0).type, (TensorType{{4, 8}, DType::f32}));
  EXPECT_EQ(g->topo_order(), (std::vector<NodeId>{1, 0}));  // file order is free; topo order follows edges
  EXPECT_EQ(g->consumers(*g->find_value("a")), (std::vector<NodeId>{0}));
  EXPECT_EQ(g->producers(0), (std::vector<NodeId>{1}));
  EXPECT_EQ(g->inputs()[1].role, Role::weight);
  EXPECT_TRUE(g->is_output(*g->find_value("y")));
}

// Messages name a node with its op, once where the name is the op's.
TEST(GraphFormat, NodeLabelsNameTheOpOnce) {
  auto g = load_graph(doc(kX, R"({"name": "relu", "op": "relu", "inputs": ["x"]}, {"name": "y", "op": "exp", "inputs": ["relu"]})",
                          R"("y")"));
  ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors());
  EXPECT_EQ(node_label(*g, *g->find_node("relu")), "relu");
  EXPECT_EQ(node_label(*g, *g->find_node("y")), "y (exp)");
}

TEST(GraphFormat, NotJsonGivesLineAndColumn) {
  auto g = load_graph("{\n  \"format\": \"fusion-explorer/graph\",\n  \"version\": 1,,\n}");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.errors()[0].line, 3);
  EXPECT_GT(g.errors()[0].column, 1);
  EXPECT_NE(g.errors()[0].message.find("not valid JSON"), std::string::npos);
}

TEST(GraphFormat, TruncatedJson) {
  auto g = load_graph(doc(kX, R"({"name": "y", "op": "relu", "inputs": ["x"]})", R"("y")").substr(0, 60));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.errors()[0].line, 1);
}

TEST(GraphFormat, WrongFormatAndVersion) {
  EXPECT_EQ(expect_error(R"({"format": "onnx", "version": 1})", "unknown format").pointer, "/format");
  EXPECT_EQ(expect_error(R"({"format": "fusion-explorer/graph", "version": 7})", "unsupported version").pointer,
            "/version");
  expect_error(R"([1, 2])", "a graph file is a JSON object");
}

TEST(GraphFormat, MissingAndMistypedFields) {
  expect_error(R"({"format": "fusion-explorer/graph", "version": 1, "inputs": []})", "missing field \"nodes\"");
  EXPECT_EQ(expect_error(doc(R"({"name": "x", "shape": "big", "dtype": "f32"})", "", ""), "must be an array").pointer,
            "/inputs/0/shape");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": 3, "inputs": ["x"]})", R"("y")"), "must be a string").pointer,
            "/nodes/0/op");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "relu"})", R"("y")"), "missing field \"inputs\"").pointer,
            "/nodes/0");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "relu", "inputs": [true]})", R"("y")"), "name or a number")
                .pointer,
            "/nodes/0/inputs/0");
  EXPECT_EQ(expect_error(doc(R"({"name": "x", "shape": [4], "dtype": "f64"})", "", ""), "unknown dtype").pointer,
            "/inputs/0/dtype");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "relu", "inputs": ["x"], "input": 1})", R"("y")"),
                         "unknown field")
                .pointer,
            "/nodes/0/input");
}

TEST(GraphFormat, DuplicateNames) {
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "x", "op": "relu", "inputs": ["x"]})", R"("x")"), "duplicate name 'x'")
                .pointer,
            "/nodes/0/name");
}

TEST(GraphFormat, UnknownOp) {
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "frobnicate", "inputs": ["x"]})", R"("y")"), "unknown op")
                .pointer,
            "/nodes/0/op");
}

TEST(GraphFormat, WrongArity) {
  auto d = expect_error(doc(kX, R"({"name": "y", "op": "add", "inputs": ["x"]})", R"("y")"), "takes 2 inputs, got 1");
  EXPECT_EQ(d.pointer, "/nodes/0/inputs");
}

TEST(GraphFormat, UnknownInputName) {
  auto d = expect_error(doc(kX, R"({"name": "y", "op": "add", "inputs": ["x", "z"]})", R"("y")"), "unknown input 'z'");
  EXPECT_EQ(d.pointer, "/nodes/0/inputs/1");
}

TEST(GraphFormat, CycleNamesTheNodesOnIt) {
  auto d = expect_error(doc(kX, R"({"name": "a", "op": "add", "inputs": ["x", "c"]},
                                   {"name": "b", "op": "relu", "inputs": ["a"]},
                                   {"name": "c", "op": "exp", "inputs": ["b"]})",
                            R"("c")"),
                        "cycle");
  EXPECT_NE(d.message.find("a -> b -> c -> a"), std::string::npos) << d.message;
  EXPECT_EQ(d.pointer, "/nodes/0");
}

TEST(GraphFormat, ShapeMismatchSaysBothShapesAndTheRule) {
  auto d = expect_error(doc(kX + R"(, {"name": "w", "shape": [4, 3], "dtype": "f32"})",
                            R"({"name": "y", "op": "add", "inputs": ["x", "w"]})", R"("y")"),
                        "shape mismatch");
  EXPECT_NE(d.message.find("[4, 8]"), std::string::npos);
  EXPECT_NE(d.message.find("[4, 3]"), std::string::npos);
  EXPECT_NE(d.message.find("trailing dimensions"), std::string::npos);
  EXPECT_EQ(d.pointer, "/nodes/0/inputs/1");
  auto m = expect_error(doc(kX + R"(, {"name": "w", "shape": [4, 3], "dtype": "f32"})",
                            R"({"name": "y", "op": "matmul", "inputs": ["x", "w"]})", R"("y")"),
                        "inner dimensions differ");
  EXPECT_EQ(m.pointer, "/nodes/0/inputs/1");
}

TEST(GraphFormat, StatedShapeIsChecked) {
  auto d = expect_error(doc(kX, R"({"name": "y", "op": "relu", "inputs": ["x"], "shape": [8, 4]})", R"("y")"),
                        "differs from the inferred");
  EXPECT_EQ(d.pointer, "/nodes/0/shape");
}

TEST(GraphFormat, BadAttributes) {
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "softmax", "inputs": ["x"], "attrs": {"axis": 5}})", R"("y")"),
                         "out of range")
                .pointer,
            "/nodes/0/attrs/axis");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "softmax", "inputs": ["x"], "attrs": {"axis": "last"}})",
                             R"("y")"),
                         "must be an integer")
                .pointer,
            "/nodes/0/attrs/axis");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "relu", "inputs": ["x"], "attrs": {"alpha": 1}})", R"("y")"),
                         "unknown attribute")
                .pointer,
            "/nodes/0/attrs/alpha");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "transpose", "inputs": ["x"]})", R"("y")"),
                         "needs attribute 'perm'")
                .pointer,
            "/nodes/0/attrs");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "dropout", "inputs": ["x"], "attrs": {"p": 1.5}})", R"("y")"),
                         "p must be in [0, 1)")
                .pointer,
            "/nodes/0/attrs/p");
}

TEST(GraphFormat, DtypeMismatch) {
  auto d = expect_error(doc(kX + R"(, {"name": "h", "shape": [4, 8], "dtype": "f16"})",
                            R"({"name": "y", "op": "mul", "inputs": ["x", "h"]})", R"("y")"),
                        "dtype mismatch: f32 vs f16");
  EXPECT_EQ(d.pointer, "/nodes/0/inputs/1");
}

TEST(GraphFormat, NonPositiveDimension) {
  EXPECT_EQ(expect_error(doc(R"({"name": "x", "shape": [4, 0], "dtype": "f32"})", "", ""), "must be positive").pointer,
            "/inputs/0/shape/1");
  EXPECT_EQ(expect_error(doc(R"({"name": "x", "shape": [-3], "dtype": "f32"})", "", ""), "must be positive").pointer,
            "/inputs/0/shape/0");
}

TEST(GraphFormat, OverflowingSizes) {
  EXPECT_EQ(expect_error(doc(R"({"name": "x", "shape": [4294967296, 4294967296], "dtype": "f32"})", "", ""),
                         "element count")
                .pointer,
            "/inputs/0/shape");
  EXPECT_EQ(expect_error(doc(R"({"name": "x", "shape": [4611686018427387904], "dtype": "f32"})", "", ""),
                         "byte size")
                .pointer,
            "/inputs/0/shape");
  EXPECT_EQ(expect_error(doc(R"({"name": "x", "shape": [1e30], "dtype": "f32"})", "", ""), "must be an integer").pointer,
            "/inputs/0/shape/0");
  EXPECT_EQ(expect_error(doc(R"({"name": "x", "shape": [18446744073709551615], "dtype": "f32"})", "", ""),
                         "does not fit in 64 bits")
                .pointer,
            "/inputs/0/shape/0");
}

// An integer literal outside int64 is refused where it stands (json::parse keeps one beyond uint64 as a float,
// which read as an integer saturated); the edges of the range load, and the ignored metadata may hold anything.
TEST(GraphFormat, IntegersBeyondInt64AreRefusedWithTheirPointer) {
  const std::string relu = R"({"name": "y", "op": "relu", "inputs": ["x"]})";
  const auto softmax = [](const std::string& axis) {
    return R"({"name": "y", "op": "softmax", "inputs": ["x"], "attrs": {"axis": )" + axis + "}}";
  };
  EXPECT_EQ(expect_error(doc(kX, softmax("-9223372036854775809"), R"("y")"), "does not fit in 64 bits").pointer,
            "/nodes/0/attrs/axis");
  EXPECT_EQ(expect_error(doc(kX, softmax("[1, 99999999999999999999999]"), R"("y")"), "99999999999999999999999")
                .pointer,
            "/nodes/0/attrs/axis/1");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "mul", "inputs": ["x", 9223372036854775808]})", R"("y")"),
                         "does not fit in 64 bits")
                .pointer,
            "/nodes/0/inputs/1");
  EXPECT_TRUE(load_graph(doc(kX, R"({"name": "y", "op": "mul", "inputs": ["x", -9223372036854775808]})", R"("y")")).ok());
  EXPECT_TRUE(load_graph(doc(kX, relu, R"("y")").substr(0, doc(kX, relu, R"("y")").size() - 1) +
                         R"(, "metadata": {"step": 123456789012345678901234567890}})")
                  .ok());
}

TEST(GraphFormat, EmptyGraphAndBadOutputs) {
  EXPECT_EQ(expect_error(doc(kX, "", R"("x")"), "the graph is empty").pointer, "/nodes");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "relu", "inputs": ["x"]})", R"("nothing")"), "names nothing")
                .pointer,
            "/outputs/0");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "relu", "inputs": ["x"]})", ""), "no outputs").pointer,
            "/outputs");
}

TEST(GraphFormat, ControlCharactersInNames) {
  EXPECT_EQ(expect_error(doc(R"({"name": "x\u0007", "shape": [4], "dtype": "f32"})", "", ""), "control characters")
                .pointer,
            "/inputs/0/name");
}

TEST(GraphFormat, DeepNestingIsRejectedWithoutRecursion) {
  std::string deep(100000, '[');
  auto g = load_graph(deep);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.errors()[0].message.find("nesting deeper"), std::string::npos);
  EXPECT_EQ(g.errors()[0].line, 1);
}

TEST(GraphFormat, NodeCountLimit) {
  LoadLimits limits;
  limits.max_nodes = 1;
  auto g = load_graph(doc(kX, R"({"name": "a", "op": "relu", "inputs": ["x"]}, {"name": "b", "op": "relu", "inputs": ["a"]})",
                          R"("b")"),
                      limits);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.errors()[0].pointer, "/nodes");
  EXPECT_NE(g.errors()[0].message.find("exceed the limit"), std::string::npos);
}

TEST(GraphFormat, ScalarLiteralsAndAttributesRoundTrip) {
  const std::string text = doc(kX, R"({"name": "s", "op": "mul", "inputs": ["x", 0.5]},
      {"name": "t", "op": "transpose", "inputs": ["s"], "attrs": {"perm": [1, 0]}},
      {"name": "r", "op": "sum", "inputs": ["t"], "attrs": {"axis": [0], "keepdim": true}},
      {"name": "c", "op": "cast", "inputs": ["r"], "attrs": {"dtype": "f16"}})",
                               R"("c", "s")");
  auto g = load_graph(text);
  ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors());
  EXPECT_EQ(g->node(2).type, (TensorType{{1, 4}, DType::f32}));
  EXPECT_EQ(g->node(3).type.dtype, DType::f16);
  const std::string saved = save_graph(*g);
  auto again = load_graph(saved);
  ASSERT_TRUE(again.ok()) << format_diagnostics(again.errors()) << saved;
  EXPECT_EQ(*again, *g);
  EXPECT_EQ(save_graph(*again), saved) << "save must be stable byte for byte";
}

TEST(GraphFormat, CustomNodesStateTheirType) {
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "y", "op": "custom", "inputs": ["x"]})", R"("y")"), "must state").pointer,
            "/nodes/0");
  auto g = load_graph(doc(kX, R"({"name": "y", "op": "custom", "inputs": ["x"], "attrs": {"label": "my_op"},
                                  "shape": [2], "dtype": "f16"})",
                          R"("y")"));
  ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors());
  EXPECT_EQ(g->node(0).type, (TensorType{{2}, DType::f16}));
  EXPECT_EQ(g->node(0).label, "my_op");
}

TEST(GraphFormat, OpsInferTheirShapes) {
  auto g = load_graph(doc(R"({"name": "x", "shape": [2, 3, 8, 8], "dtype": "f32"},
      {"name": "w", "shape": [6, 3, 3, 3], "dtype": "f32", "role": "weight"},
      {"name": "a", "shape": [5, 2, 7, 4], "dtype": "f32"}, {"name": "b", "shape": [2, 4, 9], "dtype": "f32"},
      {"name": "g", "shape": [8], "dtype": "f32"})",
                          R"({"name": "conv", "op": "conv2d", "inputs": ["x", "w"], "attrs": {"stride": 2, "padding": 1}},
      {"name": "bmm", "op": "matmul", "inputs": ["a", "b"]},
      {"name": "tk", "op": "topk", "inputs": ["x"], "attrs": {"k": 3}},
      {"name": "cat", "op": "concat", "inputs": ["x", "x"], "attrs": {"axis": 1}},
      {"name": "sl", "op": "slice", "inputs": ["x"], "attrs": {"axis": 3, "start": 1, "end": -1, "step": 2}},
      {"name": "rs", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [6, -1]}},
      {"name": "ln", "op": "layernorm", "inputs": ["x", "g", "g"]},
      {"name": "mx", "op": "max", "inputs": ["x"], "attrs": {"axis": [1, 2]}})",
                          R"("conv", "bmm", "tk", "cat", "sl", "rs", "ln", "mx")"));
  ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors());
  auto shape_of = [&](const char* n) { return g->value_type(*g->find_value(n)).shape; };
  EXPECT_EQ(shape_of("conv"), (Shape{2, 6, 4, 4}));
  EXPECT_EQ(shape_of("bmm"), (Shape{5, 2, 7, 9}));
  EXPECT_EQ(shape_of("tk"), (Shape{2, 3, 8, 3}));
  EXPECT_EQ(shape_of("cat"), (Shape{2, 6, 8, 8}));
  EXPECT_EQ(shape_of("sl"), (Shape{2, 3, 8, 3}));
  EXPECT_EQ(shape_of("rs"), (Shape{6, 64}));
  EXPECT_EQ(shape_of("ln"), (Shape{2, 3, 8, 8}));
  EXPECT_EQ(shape_of("mx"), (Shape{2, 8}));
  EXPECT_DOUBLE_EQ(g->flops(1), 2.0 * 5 * 2 * 7 * 9 * 4);
}

TEST(GraphFormat, MaxPool2dInfersItsWindowAndRefusesBadOnes) {
  const std::string x = R"({"name": "x", "shape": [2, 3, 112, 112], "dtype": "f32"})";
  auto g = load_graph(doc(x, R"({"name": "p", "op": "max_pool2d", "inputs": ["x"],
                                 "attrs": {"kernel_size": 3, "stride": 2, "padding": 1}},
                                {"name": "r", "op": "max_pool2d", "inputs": ["x"], "attrs": {"kernel_size": [2, 4], "stride": [2, 4]}})",
                          R"("p", "r")"));
  ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors());
  EXPECT_EQ(g->value_type(*g->find_value("p")).shape, (Shape{2, 3, 56, 56}));  // ResNet's stem pool
  EXPECT_EQ(g->value_type(*g->find_value("r")).shape, (Shape{2, 3, 56, 28}));
  EXPECT_DOUBLE_EQ(g->flops(0), 2.0 * 3 * 56 * 56 * 9);
  EXPECT_EQ(g->node(0).op_class(), OpClass::opaque);
  auto pool = [&](const std::string& attrs) {
    return doc(x, R"({"name": "p", "op": "max_pool2d", "inputs": ["x"], "attrs": )" + attrs + "}", R"("p")");
  };
  EXPECT_EQ(expect_error(pool(R"({"kernel_size": 3, "padding": 2})"), "more than half the window").pointer,
            "/nodes/0/attrs/padding");
  EXPECT_EQ(expect_error(pool(R"({"kernel_size": 0})"), "must be positive").pointer, "/nodes/0/attrs/kernel_size");
  EXPECT_EQ(expect_error(pool(R"({"kernel_size": 200})"), "larger than the padded input").pointer,
            "/nodes/0/attrs/kernel_size");
  EXPECT_EQ(expect_error(pool(R"({"kernel_size": 2, "stride": 0})"), "must be positive").pointer,
            "/nodes/0/attrs/stride");
  expect_error(pool(R"({"stride": 2})"), "kernel_size");
  EXPECT_EQ(expect_error(doc(kX, R"({"name": "p", "op": "max_pool2d", "inputs": ["x"], "attrs": {"kernel_size": 2}})",
                             R"("p")"),
                         "must be NCHW")
                .pointer,
            "/nodes/0/inputs/0");
}

TEST(GraphFormat, EverySampleGraphValidatesAndRoundTrips) {
  const std::filesystem::path dir = std::filesystem::path(FX_SOURCE_DIR) / "sample_graphs";
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++count;
    auto g = load_graph_file(entry.path());
    ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors(), entry.path().string());
    EXPECT_FALSE(g->description().empty()) << entry.path() << " needs a description saying what it teaches";
    auto again = load_graph(save_graph(*g));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *g) << entry.path();
  }
  EXPECT_GE(count, 20) << "the foundation issue asks for at least 20 sample graphs";
}

}  // namespace
}  // namespace fx
