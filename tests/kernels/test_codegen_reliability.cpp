// Code generation on names and literals graph files really contain (issue: reliability): any UTF-8 name,
// reserved-looking names, literals beyond f32, and wide concats, each compiled by NVRTC (no GPU needed) and
// checked by the codegen fuzzer's properties (tests/fuzz/codegen_properties.h), which the replay below also
// runs on every saved codegen regression.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "core/fusion/kernel_names.h"
#include "core/graph/graph_io.h"
#include "kernels/codegen/codegen.h"
#include "kernels/codegen/identifiers.h"
#include "kernels/nvrtc/nvrtc_compiler.h"
#include "tests/fuzz/codegen_properties.h"

namespace fx::gpu {
namespace {

namespace fs = std::filesystem;

// Time bounds are for the optimised build; sanitizer builds run several times slower.
#if defined(__SANITIZE_ADDRESS__)
constexpr double kSlowdown = 10;
#else
constexpr double kSlowdown = 1;
#endif

Graph load_text(const std::string& text) {
  auto g = load_graph(text);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : format_diagnostics(g.errors()));
  return std::move(g).value();
}

std::string chain_of(const std::vector<std::string>& names, const std::string& op = "relu") {
  std::string nodes, prev = "x";
  for (const std::string& n : names) {
    nodes += std::string(nodes.empty() ? "" : ",") + R"({"name": ")" + n + R"(", "op": ")" + op +
             R"(", "inputs": [")" + prev + R"("]})";
    prev = n;
  }
  return R"({"format": "fusion-explorer/graph", "version": 1, "name": "names",
    "inputs": [{"name": "x", "shape": [64, 128], "dtype": "f32"}], "nodes": [)" + nodes + R"(], "outputs": [")" +
         prev + R"("]})";
}

// Every kernel of the auto-fused plan compiles for sm_90 (NVRTC: seconds per kernel, so the unfused plan's
// kernels are checked as text only, by the fuzzer's properties).
void expect_compiles(const Graph& g) {
  NvrtcCompiler compiler{fs::path{}};
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  engine.auto_fuse();
  const Plan& plan = engine.plan();
  for (std::size_t i = 0; i < plan.groups().size(); ++i) {
    const Group& grp = plan.groups()[i];
    if (!unsupported_reason(g, grp.nodes).empty()) continue;
    for (const auto& k : generate_group(g, grp.nodes, grp.io.outputs, generated_kernel_name(plan, static_cast<int>(i))).kernels) {
      EXPECT_NO_THROW(compiler.compile(k.source, k.name, "sm_90")) << k.source;
    }
  }
  const auto bad = fuzz::check_codegen_document(save_graph(g));
  EXPECT_FALSE(bad.has_value()) << bad.value_or("");
}

// A single node named "ñ" or "__x" made codegen loop forever: the identifier's suffix loop could never
// leave a base that started with "__" (non-ASCII bytes become underscores) or "fx_".
TEST(CodegenReliability, AnyUtf8NameGeneratesCodeThatCompiles) {
  const std::vector<std::string> names = {"ñ", "énergie", "Δx", "__x", "fx_y", "_", "x_2", "float", "a\\\\"};
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Graph g = load_text(chain_of({name}));
    const auto start = std::chrono::steady_clock::now();
    const GroupCode code = generate_group(g, std::vector<NodeId>{0}, "fx_k");
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0 * kSlowdown);
    ASSERT_EQ(code.kernels.size(), 1u);
  }
  expect_compiles(load_text(chain_of(names)));  // one fused kernel holding every name
}

// Names that map to one identifier base ("ñ", "é", "x.", "x:") each get their own, in linear time.
TEST(CodegenReliability, ManyNamesWithOneIdentifierBaseStayDistinctAndFast) {
  std::vector<std::string> names;
  for (const char* n : {"ñ", "é", "ü", "Δ", "x.", "x:", "x;", "x_2", "x_3", "x,"}) names.push_back(n);
  const Graph g = load_text(chain_of(names));
  expect_compiles(g);
  std::vector<NodeId> all;
  for (NodeId n = 0; n < g.num_nodes(); ++n) all.push_back(n);
  const std::string src = generate_group(g, all, "fx_k").kernels.at(0).source;
  EXPECT_NE(src.find("const float t___2 ="), std::string::npos) << src;  // the second of "ñ", "é", ...
}

// The identifier tables are flat and sized for 100,000s of names: identifiers stay the readable ones (a valid
// name as it is, a taken or reserved one with a counter), distinct through every regrowth of the tables, and a
// keyed identifier is found again.
TEST(CodegenReliability, IdentifiersStayReadableAndDistinctAtAnySize) {
  using codegen::Identifiers;
  Identifiers ids;
  EXPECT_EQ(ids.fresh("x"), "x");
  EXPECT_EQ(ids.fresh("x"), "x_2");
  EXPECT_EQ(ids.fresh("x_2"), "x_2_2");  // the name x_2 was taken by the second x
  EXPECT_EQ(ids.fresh("x"), "x_3");
  EXPECT_EQ(ids.fresh("c"), "c_2");      // a kernel local
  EXPECT_EQ(ids.fresh("c"), "c_3");
  EXPECT_EQ(ids.fresh("threadIdx"), "threadIdx_2");
  EXPECT_EQ(ids.fresh("x", "_v"), "x_v");
  EXPECT_EQ(ids.fresh("\xc3\xb1"), "t__");    // "ñ": two bytes C does not allow, and "__" is the compiler's
  EXPECT_EQ(ids.fresh("\xc3\xa9"), "t___2");  // "é" maps to the same base
  EXPECT_EQ(ids.fresh("fx_y"), "tfx_y");
  EXPECT_EQ(ids.fresh("2d"), "t_2d");
  EXPECT_EQ(ids.get(Identifiers::Kind::input_pointer, 7, "in_", "w"), "in_w");
  EXPECT_EQ(ids.get(Identifiers::Kind::output_pointer, 7, "out_", "w"), "out_w");
  EXPECT_EQ(ids.get(Identifiers::Kind::input_pointer, 8, "in_", "w"), "in_w_2");  // another value named like it

  std::unordered_set<std::string> seen;
  for (int i = 0; i < 100'000; ++i) {
    const std::string name = "x" + std::to_string(i % 50'000);  // each name twice: x0 ... x49999, x0_2 ...
    const std::string id = ids.fresh(name);
    EXPECT_TRUE(seen.insert(id).second) << id;
    EXPECT_EQ(id, i < 50'000 ? name : name + "_2");
    const std::string ptr = ids.get(Identifiers::Kind::input_pointer, 100 + i, "in_", name);
    EXPECT_TRUE(seen.insert(ptr).second) << ptr;
  }
  EXPECT_EQ(ids.fresh("x49999"), "x49999_3");
  EXPECT_EQ(ids.get(Identifiers::Kind::input_pointer, 8, "in_", "ignored"), "in_w_2");  // found again after growth
  EXPECT_EQ(ids.get(Identifiers::Kind::input_pointer, 100 + 60'000, "in_", "ignored"), "in_x10000_2");
}

// 1e308 as an f32 literal is infinity; printf wrote "inf.0f", which does not compile.
TEST(CodegenReliability, LiteralsBeyondF32AreInfinityConstantsThatCompile) {
  const Graph g = load_text(R"({"format": "fusion-explorer/graph", "version": 1, "name": "big",
    "inputs": [{"name": "x", "shape": [64, 128], "dtype": "f32"}, {"name": "i", "shape": [64, 128], "dtype": "i32"}],
    "nodes": [{"name": "m", "op": "mul", "inputs": ["x", 1e308]},
              {"name": "s", "op": "add", "inputs": ["m", -1e39]},
              {"name": "n", "op": "layernorm", "inputs": ["s"], "attrs": {"axis": -1, "eps": 1e39}},
              {"name": "k", "op": "add", "inputs": ["i", 1e300]}],
    "outputs": ["n", "k"]})");
  const std::string src = generate_group(g, std::vector<NodeId>{0}, "fx_k").kernels.at(0).source;
  EXPECT_NE(src.find("__int_as_float(0x7f800000)"), std::string::npos) << src;
  EXPECT_EQ(src.find("inf.0f"), std::string::npos) << src;
  const std::string ints = generate_group(g, std::vector<NodeId>{3}, "fx_k").kernels.at(0).source;
  EXPECT_NE(ints.find("9223372036854775807LL"), std::string::npos) << ints;  // saturated, not undefined
  expect_compiles(g);
}

// A concat of 20,000 operands took 78 s (a linear search per operand); now well under the budget below.
TEST(CodegenReliability, ConcatOfManyOperandsGeneratesInLinearTime) {
  std::string inputs, operands;
  constexpr int kOperands = 20'000;
  for (int i = 0; i < kOperands; ++i) {
    inputs += std::string(i ? "," : "") + R"({"name": "x)" + std::to_string(i) + R"(", "shape": [4, 1], "dtype": "f32"})";
    operands += std::string(i ? "," : "") + "\"x" + std::to_string(i) + "\"";
  }
  const Graph g = load_text(R"({"format": "fusion-explorer/graph", "version": 1, "name": "wide", "inputs": [)" +
                            inputs + R"(], "nodes": [{"name": "c", "op": "concat", "inputs": [)" + operands +
                            R"(], "attrs": {"axis": 1}}], "outputs": ["c"]})");
  const auto start = std::chrono::steady_clock::now();
  const GroupCode code = generate_group(g, std::vector<NodeId>{0}, "fx_k");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(code.kernels.size(), 1u);
  EXPECT_EQ(code.kernels[0].inputs.size(), static_cast<std::size_t>(kOperands));
  EXPECT_LT(seconds, 5.0 * kSlowdown);  // the quadratic version took 78 s; this one about 0.1 s
  // Still the graph's own names, each operand one branch.
  const std::string& src = code.kernels[0].source;
  EXPECT_NE(src.find("const float* __restrict__ in_x19999,"), std::string::npos);
  EXPECT_NE(src.find("} else if (((i) % 20000) < 19999) {\n        const float x19998 = in_x19998[(((i) / 20000))];\n"
                     "        c_2 = x19998;\n"),
            std::string::npos);
}

TEST(CodegenReliability, PropertiesCatchWhatTheyGuard) {
  EXPECT_TRUE(fuzz::check_kernel_source("fx_g0_y", "// ok\nfloat y = inf.0f;\n").has_value());
  EXPECT_TRUE(fuzz::check_kernel_source("fx_g0_y", "// name ends in \\\nint y;\n").has_value());
  EXPECT_TRUE(fuzz::check_kernel_source("fx_g0_y", "float \xc3\xb1 = 0;\n").has_value());
  EXPECT_TRUE(fuzz::check_kernel_source("fx_g0_y", "void f() {\n").has_value());
  EXPECT_TRUE(fuzz::check_kernel_source("__bad", "int y;\n").has_value());
  EXPECT_FALSE(fuzz::check_kernel_source("fx_g0_y", "// \xc3\xb1 {\nint y = f(1);\n").has_value());
}

TEST(CodegenReliability, EverySavedCodegenRegressionGeneratesCleanly) {
  for (const char* folder : {"tests/data/fuzz-regressions-codegen", "sample_graphs", "tests/fuzz/seeds-fused"}) {
    for (const auto& e : fs::directory_iterator(fs::path(FX_SOURCE_DIR) / folder)) {
      if (e.path().extension() != ".json") continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      auto bad = fuzz::check_codegen_document(ss.str());
      EXPECT_FALSE(bad.has_value()) << e.path().filename().string() << ": " << bad.value_or("");
    }
  }
}

}  // namespace
}  // namespace fx::gpu
