// The executor's decisions for contraction groups, without a GPU: which cuBLASLt epilogue or cuDNN fused path
// each group takes, how many launches it becomes, what is folded or merged at plan time, and the tolerances.
#include <cmath>
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "core/fusion/engine.h"
#include "core/fusion/kernel_names.h"
#include "core/graph/graph_io.h"
#include "kernels/executor/contraction_plan.h"
#include "kernels/executor/executor.h"

namespace fx::gpu {
namespace {

Graph load_sample(const std::string& name) {
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + name + ".json");
  EXPECT_TRUE(g.ok()) << name;
  return std::move(g).value();
}

Graph inline_graph(const std::string& inputs, const std::string& nodes, const std::string& outputs) {
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "t", "inputs": [)" + inputs +
                      R"(], "nodes": [)" + nodes + R"(], "outputs": [)" + outputs + "]}");
  EXPECT_TRUE(g.ok()) << format_diagnostics(g.errors());
  return std::move(g).value();
}

NodeId node(const Graph& g, const std::string& name) { return *g.find_node(name); }
ValueId value(const Graph& g, const std::string& name) { return *g.find_value(name); }

std::vector<std::string> names(const Graph& g, const std::vector<NodeId>& nodes) {
  std::vector<std::string> out;
  for (NodeId n : nodes) out.push_back(g.node(n).name);
  return out;
}

// The plan of the auto-fused group holding `member`, or of a group made of exactly `members`.
ContractionGroupPlan auto_group(const Graph& g, const std::string& member) {
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  engine.auto_fuse();
  const Group& group = engine.plan().group_of_node(node(g, member));
  return plan_contraction_group(g, group.nodes, group.io.outputs, kernel_stem(engine.plan(), engine.plan().group_of(node(g, member))));
}

ContractionGroupPlan group_of(const Graph& g, const std::vector<std::string>& members, bool cudnn_graph = true) {
  std::vector<GroupSpec> specs;
  std::vector<NodeId> mine;
  for (const auto& m : members) mine.push_back(node(g, m));
  specs.push_back({mine, {}});
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    if (std::find(mine.begin(), mine.end(), n) == mine.end()) specs.push_back({{n}, {}});
  }
  const Plan plan = Plan::from_groups(g, CostModel(DeviceDescription::h100_sxm()), specs);
  const Group& group = plan.group_of_node(mine[0]);
  return plan_contraction_group(g, group.nodes, group.io.outputs, kernel_stem(plan, plan.group_of(mine[0])),
                                cudnn_graph);
}

bool mentions(const std::vector<std::string>& notes, const std::string& text) {
  return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

// q @ transpose(k) with the transpose in the matmul's group: one cuBLASLt call that reads k with the right
// operand's transpose flag set; the transpose is in the call's nodes, so nothing is left to generate.
TEST(ContractionPlan, TransposedOperandIsReadWithTheTransposeFlag) {
  const Graph g = inline_graph(R"({"name": "q", "shape": [2, 64, 32], "dtype": "f32"},
                                  {"name": "k", "shape": [2, 64, 32], "dtype": "f32"})",
                               R"({"name": "kt", "op": "transpose", "inputs": ["k"], "attrs": {"perm": [0, 2, 1]}},
                                  {"name": "s", "op": "matmul", "inputs": ["q", "kt"]})",
                               R"("s")");
  const ContractionGroupPlan plan = group_of(g, {"kt", "s"});
  ASSERT_EQ(plan.calls.size(), 1u);
  const LibraryCall& call = plan.calls[0];
  EXPECT_EQ(call.b[0], value(g, "k"));
  EXPECT_TRUE(call.matmul.transpose_b);
  EXPECT_FALSE(call.matmul.transpose_a);
  EXPECT_EQ(call.matmul.m, 64);
  EXPECT_EQ(call.matmul.n, 64);
  EXPECT_EQ(call.matmul.k, 32);
  EXPECT_EQ(call.matmul.batch, 2);
  EXPECT_EQ(names(g, call.nodes), (std::vector<std::string>{"kt", "s"}));
  EXPECT_TRUE(plan.rest.empty());
  EXPECT_TRUE(mentions(plan.notes, "transpose kt folded into the GEMM")) << ::testing::PrintToString(plan.notes);
}

TEST(ContractionPlan, ReluBiasF32IsOneCublasLtCallWithTf32) {
  const Graph g = load_sample("mlp_relu_f32");
  const ContractionGroupPlan p = auto_group(g, "mm");
  ASSERT_EQ(p.calls.size(), 1u);
  const LibraryCall& c = p.calls[0];
  EXPECT_EQ(c.kind, LibraryCallKind::matmul);
  EXPECT_EQ(c.matmul.epilogue, MatmulEpilogue::relu_bias);
  EXPECT_TRUE(c.matmul.allow_tf32);
  EXPECT_EQ(c.matmul.m, 8192);
  EXPECT_EQ(c.matmul.n, 4096);
  EXPECT_EQ(c.matmul.k, 4096);
  EXPECT_EQ(c.bias, value(g, "b"));
  EXPECT_EQ(names(g, c.nodes), (std::vector<std::string>{"mm", "add", "y"}));
  EXPECT_EQ(c.outputs, std::vector<ValueId>{value(g, "y")});
  EXPECT_EQ(c.description, "cuBLASLt RELU_BIAS epilogue, TF32 tensor cores");
  EXPECT_EQ(c.name, "cublaslt_g_mm");  // the group's only call goes by the group's name (g:mm)
  EXPECT_TRUE(p.rest.empty());
}

TEST(ContractionPlan, GeluTanhBiasBf16IsOneCall) {
  const Graph g = load_sample("mlp_gelu_bf16");
  const ContractionGroupPlan p = auto_group(g, "mm");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].matmul.epilogue, MatmulEpilogue::gelu_tanh_bias);
  EXPECT_FALSE(p.calls[0].matmul.allow_tf32);
  EXPECT_NE(p.calls[0].description.find("GELU_BIAS epilogue (tanh approximation), BF16 tensor cores"), std::string::npos);
  EXPECT_TRUE(p.rest.empty());
}

// x @ W + b -> gelu (erf) with `dtype` operands.
Graph erf_gelu_mlp(const std::string& dtype) {
  const std::string t = R"(, "dtype": ")" + dtype + R"("})";
  return inline_graph(R"({"name": "x", "shape": [64, 32])" + t + R"(, {"name": "W", "shape": [32, 16])" + t +
                          R"(, {"name": "b", "shape": [16])" + t,
                      R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]}, {"name": "add", "op": "add", "inputs": ["mm", "b"]},
                         {"name": "y", "op": "gelu", "inputs": ["add"]})",
                      R"("y")");
}

// bf16: the matmul, the bias and the erf GELU are one cuDNN matmul graph, reading the bias as its own tensor.
TEST(ContractionPlan, ErfGeluAfterAHalfPrecisionMatmulIsOneCudnnMatmulGraph) {
  const Graph g = erf_gelu_mlp("bf16");
  const ContractionGroupPlan p = group_of(g, {"mm", "add", "y"});
  ASSERT_EQ(p.calls.size(), 1u);
  const LibraryCall& c = p.calls[0];
  EXPECT_EQ(c.kind, LibraryCallKind::matmul_graph);
  EXPECT_EQ(c.graph.m, 64);
  EXPECT_EQ(c.graph.n, 16);
  EXPECT_EQ(c.graph.k, 32);
  EXPECT_EQ(c.graph.tail, (std::vector<GraphStep>{{GraphOp::add_bias}, {GraphOp::gelu_erf}}));
  EXPECT_EQ(c.graph_operands, (std::vector<std::optional<ValueId>>{value(g, "b"), std::nullopt}));
  EXPECT_EQ(c.inputs, (std::vector<ValueId>{value(g, "x"), value(g, "W"), value(g, "b")}));
  EXPECT_EQ(c.outputs, std::vector<ValueId>{value(g, "y")});
  EXPECT_EQ(c.name, "cudnn_g_mm");
  EXPECT_EQ(c.description, "cuDNN matmul graph + add_bias + gelu_erf, BF16, f32 accumulation, 64x16x32");
  EXPECT_TRUE(p.rest.empty());
  // Where cuDNN offers no engine for it, the executor plans the group again without the graph.
  const ContractionGroupPlan apart = group_of(g, {"mm", "add", "y"}, /*cudnn_graph=*/false);
  ASSERT_EQ(apart.calls.size(), 1u);
  EXPECT_EQ(apart.calls[0].kind, LibraryCallKind::matmul);
  EXPECT_EQ(names(g, apart.rest), std::vector<std::string>{"y"});
}

// SiLU written out after the bias (h * sigmoid(h)): h is read twice, a DAG cuBLASLt's epilogue cannot take and
// cuDNN's matmul graph can.
TEST(ContractionPlan, ADagAfterAHalfPrecisionMatmulIsOneCudnnMatmulGraph) {
  const Graph g = inline_graph(R"({"name": "x", "shape": [64, 32], "dtype": "bf16"},
                                  {"name": "W", "shape": [32, 16], "dtype": "bf16"},
                                  {"name": "b", "shape": [16], "dtype": "bf16"})",
                               R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                  {"name": "h", "op": "add", "inputs": ["mm", "b"]},
                                  {"name": "s", "op": "sigmoid", "inputs": ["h"]},
                                  {"name": "y", "op": "mul", "inputs": ["h", "s"]})",
                               R"("y")");
  const ContractionGroupPlan p = group_of(g, {"mm", "h", "s", "y"});
  ASSERT_EQ(p.calls.size(), 1u);
  const LibraryCall& c = p.calls[0];
  EXPECT_EQ(c.kind, LibraryCallKind::matmul_graph);
  EXPECT_EQ(c.graph.tail, (std::vector<GraphStep>{{GraphOp::add_bias},
                                                  {GraphOp::sigmoid},
                                                  {GraphOp::mul_value, 1.0f, 1, GraphStep::kPrevious}}));
  EXPECT_EQ(c.description, "cuDNN matmul graph + add_bias + sigmoid + mul_value(v1, v2), BF16, f32 accumulation, 64x16x32");
  EXPECT_EQ(validate_matmul_graph(c.graph), "");
  EXPECT_EQ(c.graph_operands, (std::vector<std::optional<ValueId>>{value(g, "b"), std::nullopt, std::nullopt}));
  EXPECT_EQ(c.outputs, std::vector<ValueId>{value(g, "y")});
  EXPECT_TRUE(p.rest.empty());
  // Without the graph: the bias in cuBLASLt's epilogue, the rest one generated kernel.
  const ContractionGroupPlan apart = group_of(g, {"mm", "h", "s", "y"}, /*cudnn_graph=*/false);
  ASSERT_EQ(apart.calls.size(), 1u);
  EXPECT_EQ(apart.calls[0].matmul.epilogue, MatmulEpilogue::bias);
  EXPECT_EQ(names(g, apart.rest), (std::vector<std::string>{"s", "y"}));
}

TEST(ContractionPlan, AMatmulGraphReadsOnlyValuesComputedBeforeEachStepAndEachOfThem) {
  MatmulGraphProblem p;
  p.m = 64, p.n = 16, p.k = 32;
  p.tail = {{GraphOp::sigmoid}, {GraphOp::mul_value, 1.0f, 0, 1}};
  EXPECT_EQ(validate_matmul_graph(p), "");
  EXPECT_EQ(describe_matmul_graph(p), "cuDNN matmul graph + sigmoid + mul_value(v0, v1), BF16, f32 accumulation, 64x16x32");
  p.tail[1].other = 2;  // its own result
  EXPECT_NE(validate_matmul_graph(p).find("step 2 reads value 2, not one computed before it"), std::string::npos)
      << validate_matmul_graph(p);
  p.tail = {{GraphOp::sigmoid, 1.0f, 0}, {GraphOp::tanh, 1.0f, 0}};  // the sigmoid's result is never read
  EXPECT_NE(validate_matmul_graph(p).find("step 1's result is read by no step"), std::string::npos)
      << validate_matmul_graph(p);
}

TEST(ContractionPlan, ErfGeluKeepsTheBiasEpilogueAndLeavesGeluToOneGeneratedKernel) {
  const Graph g = erf_gelu_mlp("f32");
  const ContractionGroupPlan p = group_of(g, {"mm", "add", "y"});
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].matmul.epilogue, MatmulEpilogue::bias);
  EXPECT_EQ(p.calls[0].outputs, std::vector<ValueId>{value(g, "add")});
  EXPECT_EQ(names(g, p.rest), std::vector<std::string>{"y"});
  EXPECT_EQ(p.rest_outputs, std::vector<ValueId>{value(g, "y")});
  EXPECT_TRUE(mentions(p.notes, "erf-based")) << ::testing::PrintToString(p.notes);
}

TEST(ContractionPlan, ResidualAddAfterBiasIsTheGemmsCInput) {
  // gpt2_block's attention projection: res1 = x + (merged @ Wo + bo) is one cuBLASLt call, x read as C.
  const Graph g = load_sample("gpt2_block");
  const ContractionGroupPlan p = group_of(g, {"o_mm", "o_b", "res1"});
  ASSERT_EQ(p.calls.size(), 1u);
  const LibraryCall& c = p.calls[0];
  EXPECT_EQ(c.matmul.epilogue, MatmulEpilogue::bias);
  EXPECT_TRUE(c.matmul.residual);
  EXPECT_EQ(c.residual, value(g, "x"));
  EXPECT_EQ(c.bias, value(g, "bo"));
  EXPECT_EQ(c.matmul.m, 8 * 1024);  // [8,1024,768] @ [768,768]: the batch folds into M, as it does for x
  EXPECT_EQ(c.matmul.batch, 1);
  EXPECT_EQ(c.inputs, (std::vector<ValueId>{value(g, "merged"), value(g, "Wo"), value(g, "bo"), value(g, "x")}));
  EXPECT_EQ(c.outputs, std::vector<ValueId>{value(g, "res1")});
  EXPECT_EQ(c.description, "cuBLASLt BIAS epilogue, residual added as C (beta = 1), TF32 tensor cores");
  EXPECT_TRUE(p.rest.empty());
}

TEST(ContractionPlan, BiasResidualReluIsOneCallAndAResidualAfterTheActivationIsASecondKernel) {
  const std::string inputs = R"({"name": "x", "shape": [2, 64, 32], "dtype": "bf16"},
                                {"name": "W", "shape": [32, 16], "dtype": "bf16"},
                                {"name": "b", "shape": [16], "dtype": "bf16"},
                                {"name": "r", "shape": [2, 64, 16], "dtype": "bf16"})";
  const Graph g = inline_graph(inputs, R"({"name": "mm", "op": "matmul", "inputs": ["x", "W"]},
                                          {"name": "add", "op": "add", "inputs": ["mm", "b"]},
                                          {"name": "res", "op": "add", "inputs": ["r", "add"]},
                                          {"name": "y", "op": "relu", "inputs": ["res"]},
                                          {"name": "z", "op": "add", "inputs": ["y", "r"]})",
                               R"("z")");
  const ContractionGroupPlan one = group_of(g, {"mm", "add", "res", "y"});
  ASSERT_EQ(one.calls.size(), 1u);
  EXPECT_EQ(one.calls[0].matmul.epilogue, MatmulEpilogue::relu_bias);
  EXPECT_TRUE(one.calls[0].matmul.residual);
  EXPECT_EQ(one.calls[0].residual, value(g, "r"));
  EXPECT_EQ(names(g, one.calls[0].nodes), (std::vector<std::string>{"mm", "add", "res", "y"}));
  EXPECT_TRUE(one.rest.empty());
  EXPECT_TRUE(one.notes.empty()) << ::testing::PrintToString(one.notes);
  // A second residual after the relu: cuBLASLt's call stops at the relu, z is a generated kernel, and the note
  // says why; cuDNN's matmul graph takes the whole chain.
  const ContractionGroupPlan graph = group_of(g, {"mm", "add", "res", "y", "z"});
  ASSERT_EQ(graph.calls.size(), 1u);
  EXPECT_EQ(graph.calls[0].kind, LibraryCallKind::matmul_graph);
  EXPECT_EQ(graph.calls[0].graph.tail, (std::vector<GraphStep>{{GraphOp::add_bias}, {GraphOp::add_tensor},
                                                              {GraphOp::relu}, {GraphOp::add_tensor}}));
  EXPECT_EQ(graph.calls[0].graph.m, 128);  // x's batch folded into M
  EXPECT_TRUE(graph.rest.empty());
  const ContractionGroupPlan two = group_of(g, {"mm", "add", "res", "y", "z"}, /*cudnn_graph=*/false);
  ASSERT_EQ(two.calls.size(), 1u);
  EXPECT_EQ(two.calls[0].outputs, std::vector<ValueId>{value(g, "y")});
  EXPECT_EQ(names(g, two.rest), std::vector<std::string>{"z"});
  EXPECT_TRUE(mentions(two.notes, "residual add comes after the activation")) << ::testing::PrintToString(two.notes);
}

// Matmuls sharing x where one has a residual in the group: the strided-batched GEMM on stacked weights takes no
// epilogue of any part, so the two run as their own calls, the residual one reading its C.
TEST(ContractionPlan, AMatmulWithAResidualIsNotMergedIntoAHorizontalGemm) {
  const Graph g = inline_graph(R"({"name": "x", "shape": [64, 32], "dtype": "f32"},
                                  {"name": "W1", "shape": [32, 16], "dtype": "f32"},
                                  {"name": "W2", "shape": [32, 16], "dtype": "f32"},
                                  {"name": "r", "shape": [64, 16], "dtype": "f32"})",
                               R"({"name": "a", "op": "matmul", "inputs": ["x", "W1"]},
                                  {"name": "b", "op": "matmul", "inputs": ["x", "W2"]},
                                  {"name": "res", "op": "add", "inputs": ["b", "r"]})",
                               R"("a", "res")");
  const ContractionGroupPlan p = group_of(g, {"a", "b", "res"});
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].kind, LibraryCallKind::matmul);
  EXPECT_FALSE(p.calls[0].residual);
  EXPECT_EQ(p.calls[1].kind, LibraryCallKind::matmul);
  EXPECT_EQ(p.calls[1].residual, value(g, "r"));
  EXPECT_TRUE(p.rest.empty());
  // Without the residual the two merge.
  EXPECT_EQ(group_of(g, {"a", "b"}).calls.at(0).kind, LibraryCallKind::horizontal_matmul);
}

TEST(ContractionPlan, AttentionScoresAreOneBatchedTransposedGemm) {
  const Graph g = load_sample("gpt2_block");
  const ContractionGroupPlan p = group_of(g, {"scores", "scaled", "masked"});
  ASSERT_EQ(p.calls.size(), 1u);
  const MatmulProblem& mm = p.calls[0].matmul;
  EXPECT_EQ(mm.batch, 8 * 12);
  EXPECT_EQ(mm.m, 1024);
  EXPECT_EQ(mm.n, 1024);
  EXPECT_EQ(mm.k, 64);
  EXPECT_TRUE(mm.transpose_b);
  EXPECT_EQ(mm.epilogue, MatmulEpilogue::none);
  // scores * 0.125 is the GEMM's alpha: only the mask add is left for a second kernel.
  EXPECT_FLOAT_EQ(mm.alpha, 0.125f);
  EXPECT_EQ(names(g, p.rest), (std::vector<std::string>{"masked"}));
  // The [1024, 1024] mask broadcasts over batch and heads: not a residual of the scores' [8, 12, 1024, 1024].
  EXPECT_FALSE(mm.residual);
  EXPECT_TRUE(mentions(p.notes, "`add` of a tensor broadcast to the output")) << ::testing::PrintToString(p.notes);
  // The context GEMM alone is a batched GEMM too (the chain as separate kernels, where the attention kernel
  // cannot run).
  const ContractionGroupPlan ctx = group_of(g, {"ctx"});
  ASSERT_EQ(ctx.calls.size(), 1u);
  EXPECT_EQ(ctx.calls[0].matmul.batch, 96);
  EXPECT_EQ(ctx.calls[0].matmul.n, 64);
  EXPECT_EQ(ctx.calls[0].matmul.k, 1024);
}

// Auto-fuse makes gpt2_block's f32 attention chain one call of the TF32 flash attention kernel.
TEST(ContractionPlan, F32AttentionIsOneTf32FlashAttentionCall) {
  const Graph g = load_sample("gpt2_block");
  const ContractionGroupPlan p = auto_group(g, "ctx");
  ASSERT_EQ(p.calls.size(), 1u);
  const LibraryCall& c = p.calls[0];
  EXPECT_EQ(c.kind, LibraryCallKind::attention);
  EXPECT_EQ(c.name.rfind("fx_flash_", 0), 0u) << c.name;
  EXPECT_EQ(c.attention.type, DType::f32);
  EXPECT_EQ(c.attention.batch, 8);
  EXPECT_EQ(c.attention.heads, 12);
  EXPECT_EQ(c.attention.seq_q, 1024);
  EXPECT_EQ(c.attention.head_dim, 64);
  EXPECT_FLOAT_EQ(c.attention.scale, 0.125f);
  EXPECT_TRUE(c.attention.mask);
  EXPECT_EQ(c.attention.mask_batch, 1);  // one [1024, 1024] mask for every batch entry and head
  EXPECT_EQ(c.attention.mask_heads, 1);
  EXPECT_FALSE(c.attention.k_transposed);
  EXPECT_EQ(c.outputs, std::vector<ValueId>{value(g, "ctx")});
  EXPECT_NE(c.description.find("TF32 flash attention"), std::string::npos) << c.description;
  EXPECT_TRUE(p.rest.empty());
}

TEST(ContractionPlan, QkvIsOneStridedBatchedGemmOnStackedWeights) {
  const Graph g = load_sample("qkv_bf16");
  const ContractionGroupPlan p = auto_group(g, "q");
  ASSERT_EQ(p.calls.size(), 1u);
  const LibraryCall& c = p.calls[0];
  EXPECT_EQ(c.kind, LibraryCallKind::horizontal_matmul);
  EXPECT_EQ(c.matmul.batch, 3);
  EXPECT_EQ(c.matmul.batch_stride_a, 0);
  EXPECT_EQ(c.matmul.batch_stride_b, 4096 * 1024);
  EXPECT_EQ(c.outputs, (std::vector<ValueId>{value(g, "q"), value(g, "k"), value(g, "v")}));
  EXPECT_NE(c.description.find("stacked once at plan time"), std::string::npos);
  EXPECT_TRUE(p.rest.empty());
  // Its parts, the way it runs where the merged call times slower: each an ordinary GEMM on the graph's weight.
  ASSERT_EQ(c.parts.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const LibraryCall& part = c.parts[i];
    EXPECT_EQ(part.kind, LibraryCallKind::matmul);
    EXPECT_EQ(part.matmul.batch, 1);
    EXPECT_EQ(part.matmul.m, c.matmul.m);
    EXPECT_EQ(part.matmul.n, c.matmul.n);
    EXPECT_EQ(part.matmul.k, c.matmul.k);
    EXPECT_EQ(part.a, c.a);
    EXPECT_EQ(part.b, std::vector<ValueId>{c.b[i]});
    EXPECT_EQ(part.outputs, std::vector<ValueId>{c.outputs[i]});
    EXPECT_EQ(part.nodes, std::vector<NodeId>{c.nodes[i]});
    EXPECT_TRUE(part.parts.empty());
  }
  // Every call carries the group's name: the merged call, and its parts by their nodes.
  EXPECT_EQ(c.name, "cublaslt_g_q_x3");
  EXPECT_EQ(c.parts[1].name, "cublaslt_g_q_k");
  // gpt2's Q, K, V projections read the layernorm's [8,1024,768] output: the batch folds into M first.
  const Graph gpt = load_sample("gpt2_block");
  const ContractionGroupPlan q = group_of(gpt, {"q_mm", "k_mm", "v_mm"});
  ASSERT_EQ(q.calls.size(), 1u);
  EXPECT_EQ(q.calls[0].kind, LibraryCallKind::horizontal_matmul);
  EXPECT_EQ(q.calls[0].matmul.m, 8192);
}

TEST(ContractionPlan, SwigluMergedIsTwoLaunchesAndTheAutoPlanSaysWhySiluStaysApart) {
  const Graph g = load_sample("swiglu_bf16");
  const ContractionGroupPlan merged = group_of(g, {"g", "u", "act", "y"});
  ASSERT_EQ(merged.calls.size(), 1u);
  EXPECT_EQ(merged.calls[0].kind, LibraryCallKind::horizontal_matmul);
  EXPECT_EQ(names(g, merged.rest), (std::vector<std::string>{"act", "y"}));
  EXPECT_EQ(merged.rest_outputs, std::vector<ValueId>{value(g, "y")});
  // Auto-fuse keeps silu out of the GEMM (EPILOGUE_NOT_EXPRESSIBLE): {g, u} is one horizontal GEMM.
  const ContractionGroupPlan gemm = auto_group(g, "g");
  ASSERT_EQ(gemm.calls.size(), 1u);
  EXPECT_EQ(gemm.calls[0].kind, LibraryCallKind::horizontal_matmul);
  EXPECT_TRUE(gemm.rest.empty());
  // g and silu alone: one cuDNN matmul graph (cuBLASLt has no silu epilogue; without the graph, a note says so).
  const ContractionGroupPlan gate = group_of(g, {"g", "act"});
  ASSERT_EQ(gate.calls.size(), 1u);
  EXPECT_EQ(gate.calls[0].kind, LibraryCallKind::matmul_graph);
  EXPECT_EQ(gate.calls[0].graph.tail, std::vector<GraphStep>{{GraphOp::silu}});
  const ContractionGroupPlan apart = group_of(g, {"g", "act"}, /*cudnn_graph=*/false);
  EXPECT_EQ(apart.calls[0].matmul.epilogue, MatmulEpilogue::none);
  EXPECT_TRUE(mentions(apart.notes, "cuBLASLt has no `silu` epilogue")) << ::testing::PrintToString(apart.notes);
}

TEST(ContractionPlan, ConvBatchnormReluFoldsAndFusesIntoOneCudnnCall) {
  const Graph g = load_sample("conv_bn_relu");
  const ContractionGroupPlan p = auto_group(g, "conv");
  ASSERT_EQ(p.calls.size(), 1u);
  const LibraryCall& c = p.calls[0];
  EXPECT_EQ(c.kind, LibraryCallKind::conv2d);
  EXPECT_EQ(c.conv.epilogue, ConvEpilogue::relu_bias);
  EXPECT_EQ(c.folded_batchnorm, node(g, "bn"));
  EXPECT_TRUE(c.prepared_bias());
  EXPECT_TRUE(c.conv.allow_tf32);
  EXPECT_EQ(c.conv.pad_h, 1);
  EXPECT_EQ(c.bias_terms, std::vector<ValueId>{value(g, "bias")});
  EXPECT_NE(c.description.find("batchnorm folded into conv weights at plan time"), std::string::npos);
  EXPECT_NE(c.description.find("TF32 tensor cores allowed"), std::string::npos);
  EXPECT_EQ(c.name, "cudnn_g_conv");
  EXPECT_TRUE(p.rest.empty());
}

TEST(ContractionPlan, UnfusedNodesTakeNoEpilogue) {
  const Graph g = load_sample("conv_bn_relu");
  const ContractionGroupPlan conv = group_of(g, {"conv"});
  ASSERT_EQ(conv.calls.size(), 1u);
  EXPECT_EQ(conv.calls[0].conv.epilogue, ConvEpilogue::bias);  // conv2d's own bias operand
  EXPECT_FALSE(conv.calls[0].prepared_bias());
  EXPECT_FALSE(conv.calls[0].folded_batchnorm);
  const Graph m = load_sample("mlp_relu_f32");
  const ContractionGroupPlan mm = group_of(m, {"mm"});
  ASSERT_EQ(mm.calls.size(), 1u);
  EXPECT_EQ(mm.calls[0].matmul.epilogue, MatmulEpilogue::none);
  EXPECT_EQ(mm.calls[0].description, "cuBLASLt GEMM, no epilogue, TF32 tensor cores");
}

TEST(ContractionPlan, PartialBatchBroadcastIsRefusedWithTheNodeName) {
  const Graph g = inline_graph(R"({"name": "a", "shape": [2, 3, 4, 5], "dtype": "f32"},
                                  {"name": "b", "shape": [2, 1, 5, 6], "dtype": "f32"})",
                               R"({"name": "mm", "op": "matmul", "inputs": ["a", "b"]})", R"("mm")");
  try {
    group_of(g, {"mm"});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("matmul mm"), std::string::npos) << e.what();
  }
}

TEST(ContractionPlan, Tf32ToleranceForF32OutputsDownstreamOfAContraction) {
  const Graph f32 = load_sample("mlp_relu_f32");
  const auto t = tf32_output_tolerances(f32);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_DOUBLE_EQ(t.at(value(f32, "y")), 2e-3);
  EXPECT_TRUE(tf32_output_tolerances(load_sample("mlp_gelu_bf16")).empty());  // bf16 keeps its 1e-2
  EXPECT_TRUE(tf32_output_tolerances(load_sample("relu_mul_add")).empty());   // no contraction
  // gpt2_block: ln1 -> q_mm -> scores -> ctx -> o_mm -> fc -> pr_mm is a chain of 6 TF32 contractions.
  const Graph gpt2 = load_sample("gpt2_block");
  const auto deep = tf32_output_tolerances(gpt2);
  ASSERT_EQ(deep.size(), 1u);
  EXPECT_DOUBLE_EQ(deep.begin()->second, 2e-3 * std::sqrt(6.0));
}

}  // namespace
}  // namespace fx::gpu

namespace fx::gpu {
namespace {

// An attention group is one cuDNN fused attention call: the problem read off the chain (K through the folded
// transpose, the mask broadcast over batch and heads), named after the group, with the op-by-op parts it runs as
// where cuDNN has no engine for it.
TEST(ContractionPlan, AttentionGroupIsOneCudnnCallWithItsFallbackParts) {
  const Graph g = load_sample("attention_bf16");
  const ContractionGroupPlan plan = auto_group(g, "scores");
  ASSERT_EQ(plan.calls.size(), 1u);
  EXPECT_TRUE(plan.rest.empty());
  const LibraryCall& c = plan.calls[0];
  EXPECT_EQ(c.kind, LibraryCallKind::attention);
  EXPECT_EQ(c.name, "cudnn_g_kT");
  EXPECT_EQ(c.attention.batch, 8);
  EXPECT_EQ(c.attention.heads, 12);
  EXPECT_EQ(c.attention.seq_q, 1024);
  EXPECT_EQ(c.attention.seq_kv, 1024);
  EXPECT_EQ(c.attention.head_dim, 64);
  EXPECT_EQ(c.attention.type, DType::bf16);
  EXPECT_FLOAT_EQ(c.attention.scale, 0.125f);
  // k itself, read through swapped strides
  EXPECT_TRUE(c.attention.mask);
  EXPECT_EQ(c.attention.mask_batch, 1);
  EXPECT_EQ(c.attention.mask_heads, 1);
  EXPECT_EQ(c.k, value(g, "k"));
  EXPECT_EQ(c.inputs, (std::vector<ValueId>{value(g, "q"), value(g, "k"), value(g, "v"), value(g, "mask")}));
  EXPECT_EQ(c.outputs, std::vector<ValueId>{value(g, "ctx")});
  EXPECT_NE(c.description.find("cuDNN fused attention (flash), BF16, B 8 x H 12"), std::string::npos) << c.description;
  EXPECT_TRUE(mentions(plan.notes, "transpose kT folded into the attention call"));
  std::vector<std::vector<std::string>> parts;
  for (const auto& part : attention_fallback_parts(g, c)) parts.push_back(names(g, part));
  EXPECT_EQ(parts, (std::vector<std::vector<std::string>>{{"kT", "scores"}, {"scaled"}, {"masked"}, {"probs"}, {"ctx"}}));
}

TEST(ContractionPlan, AttentionWithTransposeBAndAMaskPerHead) {
  const Graph g = inline_graph(
      R"({"name": "q", "shape": [2, 3, 64, 32], "dtype": "f16"}, {"name": "k", "shape": [2, 3, 64, 32], "dtype": "f16"},
         {"name": "v", "shape": [2, 3, 64, 32], "dtype": "f16"}, {"name": "m", "shape": [3, 64, 64], "dtype": "f16"})",
      R"({"name": "s", "op": "matmul", "inputs": ["q", "k"], "attrs": {"transpose_b": true}},
         {"name": "t", "op": "div", "inputs": ["s", 4.0]},
         {"name": "u", "op": "add", "inputs": ["m", "t"]}, {"name": "p", "op": "softmax", "inputs": ["u"]},
         {"name": "o", "op": "matmul", "inputs": ["p", "v"]})",
      R"("o")");
  const ContractionGroupPlan plan = group_of(g, {"s", "t", "u", "p", "o"});
  ASSERT_EQ(plan.calls.size(), 1u);
  const AttentionProblem& p = plan.calls[0].attention;
  EXPECT_EQ(plan.calls[0].k, value(g, "k"));
  EXPECT_FLOAT_EQ(p.scale, 0.25f);
  EXPECT_EQ(p.mask_batch, 1);
  EXPECT_EQ(p.mask_heads, 3);
  EXPECT_EQ(p.seq_kv, 64);
  EXPECT_EQ(plan.calls[0].mask, value(g, "m"));
}

}  // namespace
}  // namespace fx::gpu
