// ONNX import: real files from Debian's libonnx-testdata, models built here with the ONNX protobuf types
// for the cases those files lack (symbolic dimensions, constants, shape arithmetic), and malformed files.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <unistd.h>
#include <onnx/onnx_pb.h>

#include "app/import/onnx_import.h"
#include "core/graph/graph_io.h"

namespace fx {
namespace {

namespace fs = std::filesystem;
const fs::path kTestData = FX_ONNX_TESTDATA;

#define REQUIRE_TESTDATA()                                                                         \
  if (!fs::exists(kTestData / "node")) GTEST_SKIP() << "libonnx-testdata is not installed at " << kTestData

Graph import_ok(const fs::path& file, const OnnxImportOptions& options, std::vector<std::string>& warnings) {
  auto spec = import_onnx_file(file, options, warnings);
  EXPECT_TRUE(spec.ok()) << (spec ? "" : format_diagnostics(spec.errors(), file.string()));
  if (!spec) return {};
  auto g = build_graph(*spec);
  EXPECT_TRUE(g.ok());
  return g ? *g : Graph{};
}

Graph import_ok(const fs::path& file) {
  std::vector<std::string> warnings;
  return import_ok(file, {}, warnings);
}

const Node& node_named(const Graph& g, const std::string& name) {
  auto id = g.find_node(name);
  EXPECT_TRUE(id.has_value()) << name;
  return g.node(id.value_or(0));
}

bool any_contains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

// ---- models built here ----

void add_value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name,
               std::vector<std::variant<std::int64_t, std::string>> dims, int elem = onnx::TensorProto::FLOAT) {
  auto* v = list->Add();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (auto* i = std::get_if<std::int64_t>(&d)) dim->set_dim_value(*i); else dim->set_dim_param(std::get<std::string>(d));
  }
}

onnx::NodeProto* add_node(onnx::GraphProto& g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(out.empty() ? op : out[0]);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

void add_int64_initializer(onnx::GraphProto& g, const std::string& name, std::vector<std::int64_t> values) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<std::int64_t>(values.size()));
  for (auto v : values) t->add_int64_data(v);
}

void add_scalar_constant(onnx::GraphProto& g, const std::string& name, float value) {
  auto* n = add_node(g, "Constant", {}, {name});
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_float_data(value);
}

std::string serialize(const std::function<void(onnx::GraphProto&)>& build, int opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  auto* g = m.mutable_graph();
  g->set_name("built");
  build(*g);
  return m.SerializeAsString();
}

Expected<GraphSpec> import_bytes(const std::string& bytes, std::vector<std::string>& warnings,
                                 const OnnxImportOptions& options = {}) {
  return import_onnx_bytes(bytes, "built.onnx", options, warnings);
}

// x[N, 64] @ W[64, 32] * 0.5 -> relu; N symbolic.
std::string dynamic_mlp() {
  return serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", {std::string("N"), 64});
    auto* w = g.add_initializer();
    w->set_name("W");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(64);
    w->add_dims(32);  // no data: as in a file whose weights were stripped
    add_scalar_constant(g, "half", 0.5f);
    add_node(g, "MatMul", {"x", "W"}, {"mm"});
    add_node(g, "Mul", {"mm", "half"}, {"scaled"});
    add_node(g, "Relu", {"scaled"}, {"y"});
    add_value(g.mutable_output(), "y", {std::string("N"), 32});
  });
}

TEST(OnnxImport, SymbolicDimensionsTakeDimOrTheDefaultWithAWarning) {
  ASSERT_TRUE(onnx_import_available());
  std::vector<std::string> warnings;
  OnnxImportOptions options;
  options.dims["N"] = 8;
  auto spec = import_bytes(dynamic_mlp(), warnings, options);
  ASSERT_TRUE(spec.ok()) << format_diagnostics(spec.errors());
  auto g = build_graph(*spec);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->value_type(*g->find_value("y")).shape, (Shape{8, 32}));
  EXPECT_FALSE(any_contains(warnings, "'N' has no value"));

  warnings.clear();
  auto fallback = import_bytes(dynamic_mlp(), warnings);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(build_graph(*fallback)->value_type(0).shape, (Shape{1, 64}));
  EXPECT_TRUE(any_contains(warnings, "dimension 'N' has no value; using 1")) << warnings.size();

  warnings.clear();
  options.dims = {{"batch", 4}};
  ASSERT_TRUE(import_bytes(dynamic_mlp(), warnings, options).ok());
  EXPECT_TRUE(any_contains(warnings, "--dim batch: no input dimension has that name"));
}

TEST(OnnxImport, InitializersBecomeWeightsAndScalarConstantsBecomeLiterals) {
  std::vector<std::string> warnings;
  auto spec = import_bytes(dynamic_mlp(), warnings);
  ASSERT_TRUE(spec.ok());
  auto g = build_graph(*spec);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->inputs().size(), 2u);  // x and W; the constant 0.5 is a literal
  EXPECT_EQ(g->inputs()[1].name, "W");
  EXPECT_EQ(g->inputs()[1].role, Role::weight);
  EXPECT_EQ(g->inputs()[1].type, (TensorType{{64, 32}, DType::f32}));
  const Node& mul = node_named(*g, "scaled");
  EXPECT_EQ(mul.op, "mul");
  ASSERT_EQ(mul.inputs.size(), 2u);
  EXPECT_TRUE(mul.inputs[1].is_scalar());
  EXPECT_DOUBLE_EQ(mul.inputs[1].scalar, 0.5);
  EXPECT_EQ(node_named(*g, "y").op, "relu");
}

// The pattern exporters emit for a dynamic reshape: Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
TEST(OnnxImport, ShapeArithmeticFoldsIntoAReshapeAndIsDropped) {
  auto bytes = serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", {std::string("B"), 12, 64});
    add_node(g, "Shape", {"x"}, {"shape"});
    add_int64_initializer(g, "zero", {0});
    add_node(g, "Gather", {"shape", "zero"}, {"batch"});
    add_int64_initializer(g, "rest", {-1});
    add_node(g, "Concat", {"batch", "rest"}, {"target"})->add_attribute()->CopyFrom([] {
      onnx::AttributeProto a;
      a.set_name("axis");
      a.set_type(onnx::AttributeProto::INT);
      a.set_i(0);
      return a;
    }());
    add_node(g, "Reshape", {"x", "target"}, {"flat"});
    add_node(g, "Tanh", {"flat"}, {"y"});
    add_value(g.mutable_output(), "y", {std::string("B"), 768});
  });
  std::vector<std::string> warnings;
  OnnxImportOptions options;
  options.dims["B"] = 2;
  auto spec = import_bytes(bytes, warnings, options);
  ASSERT_TRUE(spec.ok()) << format_diagnostics(spec.errors());
  auto g = build_graph(*spec);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->num_nodes(), 2);
  EXPECT_EQ(node_named(*g, "flat").op, "reshape");
  EXPECT_EQ(node_named(*g, "flat").type.shape, (Shape{2, 768}));
  EXPECT_EQ(g->inputs().size(), 1u);  // the folded integer constants are not graph inputs
}

// An ONNX node's 2-D kernel_shape attribute, for the pooling tests.
onnx::AttributeProto ints_attr(const char* name, std::vector<std::int64_t> values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (auto v : values) a.add_ints(v);
  return a;
}

onnx::AttributeProto int_attr(const char* name, std::int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

TEST(OnnxImport, UnknownOpsBecomeCustomWithTheirInferredShapeAndAWarning) {
  auto bytes = serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", {2, 3, 8, 8});
    add_node(g, "AveragePool", {"x"}, {"pooled"})->add_attribute()->CopyFrom(ints_attr("kernel_shape", {2, 2}));
    add_node(g, "Relu", {"pooled"}, {"y"});
    add_value(g.mutable_output(), "y", {});
    g.mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  });
  std::vector<std::string> warnings;
  auto spec = import_bytes(bytes, warnings);
  ASSERT_TRUE(spec.ok()) << format_diagnostics(spec.errors());
  auto g = build_graph(*spec);
  ASSERT_TRUE(g.ok());
  const Node& pool = node_named(*g, "pooled");
  EXPECT_EQ(pool.op, "custom");
  EXPECT_EQ(pool.label, "AveragePool");
  EXPECT_EQ(pool.type.shape, (Shape{2, 3, 7, 7}));
  EXPECT_TRUE(any_contains(warnings, "imported as opaque custom nodes (never fused): AveragePool x1"));
}

TEST(OnnxImport, MaxPoolBecomesMaxPool2dUnlessItRoundsUp) {
  auto bytes = serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", {2, 3, 112, 112});
    auto* stem = add_node(g, "MaxPool", {"x"}, {"pooled"});
    stem->add_attribute()->CopyFrom(ints_attr("kernel_shape", {3, 3}));
    stem->add_attribute()->CopyFrom(ints_attr("strides", {2, 2}));
    stem->add_attribute()->CopyFrom(ints_attr("pads", {1, 1, 1, 1}));
    auto* up = add_node(g, "MaxPool", {"pooled"}, {"rounded_up"});
    up->add_attribute()->CopyFrom(ints_attr("kernel_shape", {2, 2}));
    up->add_attribute()->CopyFrom(ints_attr("strides", {2, 2}));
    up->add_attribute()->CopyFrom(int_attr("ceil_mode", 1));
    add_value(g.mutable_output(), "rounded_up", {});
    g.mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  });
  std::vector<std::string> warnings;
  auto spec = import_bytes(bytes, warnings);
  ASSERT_TRUE(spec.ok()) << format_diagnostics(spec.errors());
  auto g = build_graph(*spec);
  ASSERT_TRUE(g.ok()) << format_diagnostics(g.errors());
  const Node& pool = node_named(*g, "pooled");
  EXPECT_EQ(pool.op, "max_pool2d");
  EXPECT_EQ(pool.attrs.get_ints("kernel_size"), (std::vector<std::int64_t>{3, 3}));
  EXPECT_EQ(pool.attrs.get_ints("stride"), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(pool.attrs.get_ints("padding"), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(pool.type.shape, (Shape{2, 3, 56, 56}));
  const Node& up = node_named(*g, "rounded_up");
  EXPECT_EQ(up.op, "custom") << "ceil_mode=1 has no equivalent in the format";
  EXPECT_EQ(up.type.shape, (Shape{2, 3, 28, 28}));
  EXPECT_TRUE(any_contains(warnings, "MaxPool: ceil_mode=1 (the format's max_pool2d rounds down)"));
}

TEST(OnnxImport, ACustomOpWithoutAnyShapeIsAnErrorThatNamesTheNode) {
  auto bytes = serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", {4});
    auto* n = add_node(g, "MysteryOp", {"x"}, {"y"});
    n->set_domain("com.example");
    add_value(g.mutable_output(), "y", {});
    g.mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  });
  std::vector<std::string> warnings;
  auto spec = import_bytes(bytes, warnings);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.errors()[0].pointer, "/graph/node/0/output/0");
  EXPECT_NE(spec.errors()[0].message.find("com.example.MysteryOp"), std::string::npos) << spec.errors()[0].message;
}

TEST(OnnxImport, ANodeReadingNothingIsReportedOnce) {
  auto bytes = serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", {4});
    add_node(g, "Relu", {"ghost"}, {"a"});
    add_node(g, "Relu", {"a"}, {"y"});
    add_value(g.mutable_output(), "y", {4});
  });
  std::vector<std::string> warnings;
  auto spec = import_bytes(bytes, warnings);
  ASSERT_FALSE(spec.ok());
  ASSERT_EQ(spec.errors().size(), 1u) << format_diagnostics(spec.errors());
  EXPECT_EQ(spec.errors()[0].pointer, "/graph/node/0/input/0");
  EXPECT_NE(spec.errors()[0].message.find("'ghost'"), std::string::npos);
}

// ---- malformed files ----

TEST(OnnxImport, MalformedFilesGiveClearErrors) {
  std::vector<std::string> warnings;
  auto expect_error = [&](const std::string& bytes, const std::string& needle) {
    auto spec = import_bytes(bytes, warnings);
    ASSERT_FALSE(spec.ok()) << needle;
    EXPECT_NE(spec.errors()[0].message.find(needle), std::string::npos) << spec.errors()[0].message;
  };
  expect_error("", "is empty, not an ONNX model");
  expect_error("{\"format\": \"fusion-explorer/graph\"}", "not an ONNX model");
  expect_error(std::string("\x0a\xff\xff\xff\xff\x0f", 6), "does not parse as an ONNX ModelProto");
  const std::string good = dynamic_mlp();
  expect_error(good.substr(0, good.size() / 2), "not an ONNX model");
  onnx::ModelProto no_graph;
  no_graph.set_ir_version(8);
  expect_error(no_graph.SerializeAsString(), "has no graph nodes");
  auto missing = import_onnx_file("/nonexistent/model.onnx", {}, warnings);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.errors()[0].message.find("cannot open /nonexistent/model.onnx"), std::string::npos);
}

TEST(OnnxImport, ATensorFileFromTheTestDataIsNotAModel) {
  REQUIRE_TESTDATA();
  std::vector<std::string> warnings;
  auto spec = import_onnx_file(kTestData / "node/test_relu/test_data_set_0/input_0.pb", {}, warnings);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.errors()[0].message.find("not an ONNX model"), std::string::npos) << spec.errors()[0].message;
}

TEST(OnnxImport, CliExitsTwoOnAMalformedFileAndWritesAGraphForAGoodOne) {
  REQUIRE_TESTDATA();
  const fs::path bad = fs::temp_directory_path() / "fx_onnx_bad.onnx";
  std::ofstream(bad) << "definitely not protobuf \xff\xff";
  const std::string cli = FX_CLI_PATH;
  EXPECT_EQ(WEXITSTATUS(std::system((cli + " import " + bad.string() + " -o /dev/null 2>/dev/null").c_str())), 2);
  const fs::path out = fs::temp_directory_path() / "fx_onnx_gemm.json";
  const std::string ok = cli + " import " + (kTestData / "node/test_gemm_all_attributes/model.onnx").string() +
                         " -o " + out.string() + " --quiet";
  ASSERT_EQ(WEXITSTATUS(std::system(ok.c_str())), 0);
  EXPECT_TRUE(load_graph_file(out).ok());
  fs::remove(bad);
  fs::remove(out);
}

// Invalid UTF-8 in a name ended the CLI with exit 1 and nlohmann's raw message when the graph was saved.
TEST(OnnxImport, InvalidUtf8InANameIsRefusedNamingTheField) {
  const std::string bytes = serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", {4, 8});
    add_node(g, "Relu", {"x"}, {std::string("y\xff")});
    add_value(g.mutable_output(), std::string("y\xff"), {4, 8});
  });
  std::vector<std::string> warnings;
  auto spec = import_bytes(bytes, warnings);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.errors()[0].pointer, "/graph/output/0/name") << format_diagnostics(spec.errors());
  bool node_output = false;
  for (const Diagnostic& d : spec.errors()) {
    node_output = node_output || (d.pointer == "/graph/node/0/output/0" &&
                                  d.message.find("not valid UTF-8 (byte 0xFF at offset 1)") != std::string::npos);
  }
  EXPECT_TRUE(node_output) << format_diagnostics(spec.errors());
  const fs::path file = fs::temp_directory_path() / ("fx_onnx_utf8_" + std::to_string(::getpid()) + ".onnx");
  std::ofstream(file, std::ios::binary) << bytes;
  const std::string cli = std::string(FX_CLI_PATH) + " import " + file.string() + " -o /dev/null 2>/dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(cli.c_str())), 2);
  fs::remove(file);
}

// The format has no f64: a Cast to DOUBLE imports as a cast to f32, and now says so.
TEST(OnnxImport, CastToDoubleWarnsThatItBecomesF32) {
  const std::string bytes = serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", {4, 8});
    add_node(g, "Cast", {"x"}, {"d"})->add_attribute()->CopyFrom(int_attr("to", onnx::TensorProto::DOUBLE));
    add_node(g, "Relu", {"d"}, {"y"});
    add_value(g.mutable_output(), "y", {4, 8}, onnx::TensorProto::DOUBLE);
  });
  std::vector<std::string> warnings;
  auto spec = import_bytes(bytes, warnings);
  ASSERT_TRUE(spec.ok()) << format_diagnostics(spec.errors());
  EXPECT_TRUE(any_contains(warnings, "Cast 'd' to DOUBLE imported as a cast to f32")) << testing::PrintToString(warnings);
}

// A rank-40 tensor was imported, and the graph saved from it did not load (the format's limit is rank 16).
TEST(OnnxImport, ARankBeyondTheFormatsLimitIsRefusedAtTheInput) {
  const std::string bytes = serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", std::vector<std::variant<std::int64_t, std::string>>(40, std::int64_t{1}));
    add_node(g, "Relu", {"x"}, {"y"});
    add_value(g.mutable_output(), "y", std::vector<std::variant<std::int64_t, std::string>>(40, std::int64_t{1}));
  });
  std::vector<std::string> warnings;
  auto spec = import_bytes(bytes, warnings);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.errors()[0].pointer, "/graph/input/0") << format_diagnostics(spec.errors());
  EXPECT_NE(spec.errors()[0].message.find("rank 40, over the format's limit of 16"), std::string::npos);
}

// ---- real files from libonnx-testdata ----

TEST(OnnxImportTestData, GemmWithEveryAttributeBecomesMatmulScaleAndBiasAdd) {
  REQUIRE_TESTDATA();
  Graph g = import_ok(kTestData / "node/test_gemm_all_attributes/model.onnx");
  const Node& mm = node_named(g, "y/matmul");
  EXPECT_EQ(mm.op, "matmul");
  EXPECT_TRUE(mm.attrs.get_bool("transpose_a"));
  EXPECT_TRUE(mm.attrs.get_bool("transpose_b"));
  EXPECT_DOUBLE_EQ(node_named(g, "y/alpha").inputs[1].scalar, 0.25);
  EXPECT_EQ(node_named(g, "y").op, "add");
  EXPECT_EQ(node_named(g, "y").type.shape, (Shape{3, 5}));
}

TEST(OnnxImportTestData, PyTorchConvAndBatchNormMapWithTheirAttributes) {
  REQUIRE_TESTDATA();
  Graph conv = import_ok(kTestData / "pytorch-converted/test_Conv2d_padding/model.onnx");
  ASSERT_EQ(conv.num_nodes(), 1);
  EXPECT_EQ(conv.node(0).op, "conv2d");
  EXPECT_EQ(conv.node(0).attrs.get_ints("padding"), (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(conv.node(0).attrs.get_ints("stride"), (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(conv.node(0).type.shape, (Shape{2, 4, 3, 3}));

  Graph bn = import_ok(kTestData / "pytorch-converted/test_BatchNorm2d_eval/model.onnx");
  ASSERT_EQ(bn.num_nodes(), 1);
  EXPECT_EQ(bn.node(0).op, "batchnorm");
  // ONNX's (X, scale, B, mean, var) reordered to the format's (x, mean, var, gamma, beta).
  const auto& in = bn.node(0).inputs;
  EXPECT_EQ(bn.value_name(in[1].value), "3");
  EXPECT_EQ(bn.value_name(in[3].value), "1");
}

TEST(OnnxImport, LayerNormalizationWithOnlyYReadMapsToLayernorm) {
  auto bytes = serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", {8, 16, 768});
    add_value(g.mutable_input(), "gamma", {768});
    add_value(g.mutable_input(), "beta", {768});
    add_node(g, "LayerNormalization", {"x", "gamma", "beta"}, {"y", "", ""});
    add_value(g.mutable_output(), "y", {8, 16, 768});
  });
  std::vector<std::string> warnings;
  auto spec = import_bytes(bytes, warnings);
  ASSERT_TRUE(spec.ok()) << format_diagnostics(spec.errors());
  auto g = build_graph(*spec);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(node_named(*g, "y").op, "layernorm");
  EXPECT_EQ(node_named(*g, "y").attrs.get_int("axis"), -1);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
}

TEST(OnnxImportTestData, LayerNormWhoseMeanIsReadImportsAsCustom) {
  REQUIRE_TESTDATA();
  std::vector<std::string> warnings;
  // The test model reads Mean and InvStdDev too, which the format's layernorm does not produce: custom.
  Graph all = import_ok(kTestData / "node/test_layer_normalization_4d_axis1/model.onnx", {}, warnings);
  EXPECT_EQ(node_named(all, "Y").op, "custom");
  EXPECT_TRUE(any_contains(warnings, "output 'Mean' has no mapping"));
}

TEST(OnnxImportTestData, EveryFileImportsOrFailsWithDiagnostics) {
  REQUIRE_TESTDATA();
  int imported = 0, refused = 0;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    for (const auto& dir : fs::directory_iterator(kTestData / suite)) {
      const fs::path model = dir.path() / "model.onnx";
      if (!fs::exists(model)) continue;
      std::vector<std::string> warnings;
      auto spec = import_onnx_file(model, {}, warnings);
      if (!spec) {
        ++refused;
        EXPECT_FALSE(spec.errors().empty());
        for (const auto& e : spec.errors()) EXPECT_EQ(e.message.find("importer bug"), std::string::npos) << model;
        continue;
      }
      ++imported;
      EXPECT_TRUE(build_graph(*spec).ok()) << model;
    }
  }
  // Measured with libonnx-testdata 1.12: 976 of 1072 import; the rest use sequences, optionals, strings,
  // empty tensors, or compute nothing but identities.
  EXPECT_GE(imported, 950);
  EXPECT_LE(refused, 120);
}

// ---- a whole network exported by PyTorch (tools/export_onnx_resnet.py) ----

TEST(OnnxImportNetwork, TorchvisionResNet18) {
  const fs::path file = fs::path(FX_SOURCE_DIR) / "tests/data/onnx/resnet18.onnx";
  if (!fs::exists(file)) GTEST_SKIP() << file << " is missing: run tools/export_onnx_resnet.py on a machine with torch";
  std::vector<std::string> warnings;
  OnnxImportOptions options;
  options.dims["N"] = 32;
  Graph g = import_ok(file, options, warnings);
  std::map<std::string, int> ops;
  for (const Node& n : g.nodes()) ++ops[n.op == "custom" ? "custom:" + n.label : n.op];
  EXPECT_EQ(ops["conv2d"], 20);
  EXPECT_EQ(ops["batchnorm"], 20);
  EXPECT_EQ(ops["relu"], 17);
  EXPECT_EQ(ops["add"], 8 + 1);  // residual adds, and the classifier's bias
  EXPECT_EQ(ops["max_pool2d"], 1);
  EXPECT_EQ(ops.count("custom:MaxPool"), 0u);
  EXPECT_EQ(ops["mean"], 1);  // GlobalAveragePool
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.value_type(g.outputs()[0]).shape, (Shape{32, 1000}));
}

}  // namespace
}  // namespace fx

namespace fx {
namespace {

// Each imported node names the ONNX node it came from (what Netron and the exporter show), and the graph file
// keeps that through a save and a load; a node that maps to several (Gemm: matmul, scale, bias add) names it on
// each.
TEST(OnnxImport, NodesKeepTheOnnxNodeTheyCameFrom) {
  std::vector<std::string> warnings;
  const std::string bytes = serialize([](onnx::GraphProto& g) {
    add_value(g.mutable_input(), "x", {4, 64});
    add_value(g.mutable_input(), "w", {64, 32});
    add_node(g, "MatMul", {"x", "w"}, {"mm"})->set_name("/encoder/layer.0/MatMul");
    add_node(g, "Relu", {"mm"}, {"y"})->set_name("/encoder/layer.0/act/Relu");
    add_value(g.mutable_output(), "y", {4, 32});
  });
  auto spec = import_bytes(bytes, warnings);
  ASSERT_TRUE(spec.ok()) << format_diagnostics(spec.errors());
  auto g = build_graph(*spec);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(node_named(*g, "mm").source, "onnx node '/encoder/layer.0/MatMul' (MatMul)");
  EXPECT_EQ(node_named(*g, "y").source, "onnx node '/encoder/layer.0/act/Relu' (Relu)");
  auto again = load_graph(save_graph(*g));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(node_named(*again, "y").source, "onnx node '/encoder/layer.0/act/Relu' (Relu)");
}

TEST(OnnxImportTestData, EveryNodeOfAGemmNamesTheOnnxNode) {
  REQUIRE_TESTDATA();
  Graph g = import_ok(kTestData / "node/test_gemm_all_attributes/model.onnx");
  for (const std::string name : {"y/matmul", "y/alpha", "y"}) {
    EXPECT_NE(node_named(g, name).source.find("(Gemm)"), std::string::npos) << name << ": " << node_named(g, name).source;
  }
}

}  // namespace
}  // namespace fx

namespace fx {
namespace {

// `import -o -` writes the graph to stdout (never a file named "-"), `import -` reads the model from stdin.
TEST(OnnxImportTestData, CliReadsStdinAndWritesStdoutForDash) {
  REQUIRE_TESTDATA();
  const fs::path dir = fs::temp_directory_path() / "fx_onnx_cli_dash";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string model = (kTestData / "node/test_relu/model.onnx").string();
  const std::string cli = FX_CLI_PATH;
  for (const std::string& args : {" import " + model + " -o - --quiet", " import - --quiet < " + model}) {
    const std::string command = "cd '" + dir.string() + "' && " + cli + args + " > out.json";
    ASSERT_EQ(WEXITSTATUS(std::system(command.c_str())), 0) << args;
    auto g = load_graph_file(dir / "out.json");
    ASSERT_TRUE(g.ok()) << args;
    EXPECT_EQ(g->num_nodes(), 1) << args;
  }
  EXPECT_FALSE(fs::exists(dir / "-"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fx
