// The kernels of the fusion families the peers fuse (a concat with its pointwise branches, sibling reductions, a
// reduction chained into one over the remaining axes): one kernel each, what it reads and writes, and an NVRTC
// compile for sm_90 (no GPU needed).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/fusion/engine.h"
#include "core/fusion/kernel_names.h"
#include "core/graph/graph_io.h"
#include "kernels/codegen/codegen.h"
#include "kernels/nvrtc/nvrtc_compiler.h"

namespace fx::gpu {
namespace {

Graph inline_graph(const std::string& inputs, const std::string& nodes, const std::string& outputs) {
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "t", "inputs": [)" + inputs +
                      R"(], "nodes": [)" + nodes + R"(], "outputs": [)" + outputs + "]}");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : format_diagnostics(g.errors()));
  return std::move(g).value();
}

Graph load(const std::string& name) {
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + name);
  EXPECT_TRUE(g.ok()) << name;
  return std::move(g).value();
}

std::vector<std::string> value_names(const Graph& g, const std::vector<ValueId>& values) {
  std::vector<std::string> out;
  for (ValueId v : values) out.push_back(g.value_name(v));
  return out;
}

// The one kernel of the auto-fused plan's only group.
GeneratedKernel only_fused_kernel(const Graph& graph) {
  FusionEngine engine(graph, DeviceDescription::h100_sxm());
  engine.auto_fuse();
  EXPECT_EQ(engine.plan().groups().size(), 1u) << engine.decision_log_json();
  const Group& group = engine.plan().groups().front();
  GroupCode code = generate_group(engine.graph(), group.nodes, group.io.outputs, generated_kernel_name(engine.plan(), 0));
  EXPECT_EQ(code.kernels.size(), 1u) << code.note;
  EXPECT_TRUE(code.note.empty()) << code.note;
  return code.kernels.empty() ? GeneratedKernel{} : std::move(code.kernels.front());
}

void expect_compiles(const GeneratedKernel& k) {
  NvrtcCompiler compiler{std::filesystem::path{}};  // no disk cache: compile for real
  std::vector<const std::string*> sources = {&k.source};
  for (const KernelLayout& alt : k.alternatives) sources.push_back(&alt.source);
  for (const std::string* source : sources) {
    try {
      EXPECT_GT(compiler.compile(*source, k.name, "sm_90")->size(), 1000u) << k.name;
    } catch (const CompileError& e) {
      ADD_FAILURE() << k.name << ":\n" << e.log() << "\n" << *source;
    }
  }
}

// relu(x), tanh(y) and z * 0.5 concatenated, then silu: one loop over the concat's output reading x, y and z once;
// each branch is computed inside its slice's branch and nothing but `out` is stored.
TEST(CodegenConcat, BranchesAreComputedInsideTheirSlicesOfOneLoop) {
  const Graph g = load("concat_branches.json");
  const GeneratedKernel k = only_fused_kernel(g);
  EXPECT_EQ(k.kind, KernelKind::elementwise);
  EXPECT_EQ(value_names(g, k.inputs), (std::vector<std::string>{"x", "y", "z"}));
  EXPECT_EQ(value_names(g, k.outputs), std::vector<std::string>{"out"});
  EXPECT_EQ(k.bytes_moved, 2 * 4096LL * 3072 * 4);
  EXPECT_NE(k.source.find("if ("), std::string::npos) << k.source;
  EXPECT_NE(k.source.find(" < 1024) {"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("} else if ("), std::string::npos) << k.source;
  EXPECT_NE(k.source.find(" - 2048)"), std::string::npos) << "z's slice starts at column 2048\n" << k.source;
  EXPECT_NE(k.source.find("rx = fx_relu("), std::string::npos) << k.source;
  EXPECT_EQ(k.source.find("out_rx"), std::string::npos) << "a branch is never stored\n" << k.source;
  EXPECT_EQ(k.source.find("out_cat"), std::string::npos) << k.source;
  expect_compiles(k);
}

// Concats along a leading axis, nested, in bf16: still one kernel, and it compiles.
TEST(CodegenConcat, NestedConcatsOnALeadingAxisCompileInBf16) {
  const Graph g = inline_graph(R"({"name": "x", "shape": [96, 40], "dtype": "bf16"}, {"name": "y", "shape": [32, 40], "dtype": "bf16"})",
                               R"({"name": "rx", "op": "relu", "inputs": ["x"]},
                                  {"name": "ty", "op": "sigmoid", "inputs": ["y"]},
                                  {"name": "inner", "op": "concat", "inputs": ["rx", "ty"], "attrs": {"axis": 0}},
                                  {"name": "outer", "op": "concat", "inputs": ["inner", "y"], "attrs": {"axis": 0}},
                                  {"name": "out", "op": "mul", "inputs": ["outer", 2.0]})",
                               R"("out")");
  const GeneratedKernel k = only_fused_kernel(g);
  EXPECT_EQ(value_names(g, k.inputs), (std::vector<std::string>{"x", "y"}));
  EXPECT_NE(k.source.find("fx_bf16"), std::string::npos);
  expect_compiles(k);
}

// mean(x), mean(x*x) - mean(x)^2 and max(x): one row kernel reading x once and storing three per-row values.
TEST(CodegenReductions, SiblingReductionsAreOneRowKernelWithThreeOutputs) {
  const Graph g = load("mean_variance.json");
  const GeneratedKernel k = only_fused_kernel(g);
  EXPECT_EQ(k.kind, KernelKind::row_reduction);
  EXPECT_EQ(value_names(g, k.inputs), std::vector<std::string>{"x"});
  EXPECT_EQ(k.outputs.size(), 3u);
  EXPECT_EQ(k.bytes_moved, 16384LL * 2048 * 4 + 3 * 16384 * 4);
  EXPECT_NE(k.source.find("fx_max_op()"), std::string::npos) << k.source;
  expect_compiles(k);
}

Graph chain(const std::string& dtype, int rows, const std::string& outputs) {
  return inline_graph(R"({"name": "x", "shape": [)" + std::to_string(rows) + R"(, 64, 100], "dtype": ")" + dtype +
                          R"("}, {"name": "w", "shape": [100], "dtype": ")" + dtype + R"("})",
                      R"({"name": "xw", "op": "mul", "inputs": ["x", "w"]},
                         {"name": "s", "op": "mean", "inputs": ["xw"], "attrs": {"axis": -1}},
                         {"name": "r", "op": "abs", "inputs": ["s"]},
                         {"name": "m", "op": "max", "inputs": ["r"], "attrs": {"axis": -1}},
                         {"name": "t", "op": "sum", "inputs": ["s"], "attrs": {"axis": -1}},
                         {"name": "y", "op": "mul", "inputs": ["m", "t"]})",
                      outputs);
}

// A mean over the last axis chained into a max and a sum over the remaining one: a warp per segment, the segments'
// values in shared memory, a block reduction per outer row; x is read once and only y and s are stored.
TEST(CodegenReductions, AChainedReductionIsOneKernelWithTheSegmentsOnChip) {
  const Graph g = chain("f32", 256, R"("y", "s")");
  const GeneratedKernel k = only_fused_kernel(g);
  EXPECT_EQ(k.kind, KernelKind::row_reduction);
  EXPECT_EQ(k.grid, 256);
  EXPECT_EQ(value_names(g, k.inputs), (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(value_names(g, k.outputs), (std::vector<std::string>{"s", "y"}));
  EXPECT_NE(k.source.find("__shared__ float seg_r[64];"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("__shared__ float seg_s[64];"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("fx_warp_reduce(s_acc, fx_sum_op())"), std::string::npos) << k.source;
  // The node named m is renamed: m is the template's segment index.
  EXPECT_NE(k.source.find("fx_block_reduce(m_2_acc, fx_max_op(), fx_scratch_f)"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("for (int m = warp; m < M; m += warps) {"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("if (lane == 0) out_s[seg] = "), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("if (threadIdx.x == 0) out_y[row] = "), std::string::npos) << k.source;
  expect_compiles(k);
  expect_compiles(only_fused_kernel(chain("bf16", 256, R"("y")")));
}

// Integer statistics accumulate in long long from integer identities, in a row kernel and in a chained one; both
// compile (a sum's identity once read "long long(0)", which is not C++).
TEST(CodegenReductions, IntegerStatisticsAccumulateInLongLongAndCompile) {
  const Graph rows = inline_graph(R"({"name": "x", "shape": [1024, 512], "dtype": "i32"})",
                                  R"({"name": "a", "op": "max", "inputs": ["x"], "attrs": {"axis": -1}},
                                     {"name": "b", "op": "min", "inputs": ["x"], "attrs": {"axis": -1}},
                                     {"name": "c", "op": "sum", "inputs": ["x"], "attrs": {"axis": -1}})",
                                  R"("a", "b", "c")");
  const GeneratedKernel row = only_fused_kernel(rows);
  EXPECT_EQ(row.kind, KernelKind::row_reduction);
  EXPECT_NE(row.source.find("long long a_2_acc = (-9223372036854775807LL - 1);"), std::string::npos) << row.source;
  EXPECT_NE(row.source.find("long long b_2_acc = 9223372036854775807LL;"), std::string::npos) << row.source;
  EXPECT_NE(row.source.find("long long c_2_acc = 0LL;"), std::string::npos) << row.source;
  EXPECT_NE(row.source.find("c_2_acc += x[k];"), std::string::npos) << row.source;
  expect_compiles(row);

  const Graph chained = inline_graph(R"({"name": "x", "shape": [256, 64, 100], "dtype": "i32"})",
                                     R"({"name": "s", "op": "sum", "inputs": ["x"], "attrs": {"axis": -1}},
                                        {"name": "m", "op": "min", "inputs": ["s"], "attrs": {"axis": -1}},
                                        {"name": "t", "op": "sum", "inputs": ["s"], "attrs": {"axis": -1}},
                                        {"name": "y", "op": "add", "inputs": ["m", "t"]})",
                                     R"("y")");
  const GeneratedKernel chain_kernel = only_fused_kernel(chained);
  EXPECT_NE(chain_kernel.source.find("long long s_acc = 0LL;"), std::string::npos) << chain_kernel.source;
  EXPECT_NE(chain_kernel.source.find("fx_min(m_2_acc, (long long)seg_s[m])"), std::string::npos) << chain_kernel.source;
  expect_compiles(chain_kernel);
}

// A chain the engine refuses (too few outer rows) is not generated as one kernel either: the group runs as a kernel
// per node, and the note says why.
TEST(CodegenReductions, AChainWithTooFewRowsRunsAsAKernelPerNodeAndSaysWhy) {
  const Graph g = chain("f32", 8, R"("y")");
  std::vector<NodeId> all;
  for (NodeId n = 0; n < g.num_nodes(); ++n) all.push_back(n);
  const GroupCode code = generate_group(g, all, "fx_k");
  EXPECT_EQ(code.kernels.size(), all.size());
  EXPECT_NE(code.note.find("only 8 outer rows"), std::string::npos) << code.note;
}

}  // namespace
}  // namespace fx::gpu
