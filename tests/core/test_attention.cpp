// Attention as one fused kernel (core/fusion/attention.h): the pattern, cuDNN's limits, the candidate that merges
// the whole chain with the bytes it saves, and each refusal with its reason.
#include <gtest/gtest.h>

#include "core/fusion/attention.h"
#include "core/fusion/kernel_names.h"
#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

using testing::graph_json;
using testing::graph_from;
using testing::node;
using testing::sample;
using testing::test_device;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// scores = q @ k^T (transpose_b) -> * scale -> + mask -> softmax -> @ v, with the pieces a test varies.
struct Chain {
  std::string dtype = "bf16";
  std::string q_shape = "[2, 4, 128, 64]", kv_shape = "[2, 4, 128, 64]", mask_shape = "[128, 128]";
  std::string softmax_axis = "-1";
  std::string outputs = R"(["o"])";
  bool mask_before_scale = false;

  Graph build() const {
    const std::string inputs = R"([{"name": "q", "shape": )" + q_shape + R"(, "dtype": ")" + dtype + R"("},
      {"name": "k", "shape": )" + kv_shape + R"(, "dtype": ")" + dtype + R"("},
      {"name": "v", "shape": )" + kv_shape + R"(, "dtype": ")" + dtype + R"("},
      {"name": "m", "shape": )" + mask_shape + R"(, "dtype": ")" + dtype + R"("}])";
    const std::string middle =
        mask_before_scale
            ? R"({"name": "u", "op": "add", "inputs": ["s", "m"]}, {"name": "t", "op": "mul", "inputs": ["u", 0.125]},
                 {"name": "p", "op": "softmax", "inputs": ["t"], "attrs": {"axis": )" + softmax_axis + "}}"
            : R"({"name": "t", "op": "mul", "inputs": ["s", 0.125]}, {"name": "u", "op": "add", "inputs": ["t", "m"]},
                 {"name": "p", "op": "softmax", "inputs": ["u"], "attrs": {"axis": )" + softmax_axis + "}}";
    return graph_from(graph_json(inputs, R"([{"name": "s", "op": "matmul", "inputs": ["q", "k"],
                                               "attrs": {"transpose_b": true}}, )" + middle +
                                                 R"(, {"name": "o", "op": "matmul", "inputs": ["p", "v"]}])",
                                 outputs));
  }
};

FusionDecision match_refusal(const Graph& g) {
  const AttentionMatch m = match_attention(g, node(g, "o"));
  if (const auto* d = std::get_if<FusionDecision>(&m)) return *d;
  return fused_attention_supports(std::get<AttentionPattern>(m));
}

std::optional<Candidate> attention_candidate(const FusionEngine& engine) {
  for (const Candidate& c : engine.candidates()) {
    if (c.kind == FusionKind::attention) return c;
  }
  return std::nullopt;
}

TEST(Attention, RecognisesTheChainWithItsShapesAndScale) {
  const Graph g = Chain{}.build();
  const AttentionMatch m = match_attention(g, node(g, "o"));
  ASSERT_TRUE(std::holds_alternative<AttentionPattern>(m)) << std::get<FusionDecision>(m).message;
  const AttentionPattern& p = std::get<AttentionPattern>(m);
  EXPECT_EQ(p.nodes.size(), 5u);
  EXPECT_EQ(p.batch, 2);
  EXPECT_EQ(p.heads, 4);
  EXPECT_EQ(p.seq_q, 128);
  EXPECT_EQ(p.seq_kv, 128);
  EXPECT_EQ(p.head_dim, 64);
  EXPECT_DOUBLE_EQ(p.scale, 0.125);
  EXPECT_FALSE(p.k_is_transposed);  // transpose_b: K read as stored, [T, D]
  ASSERT_TRUE(p.mask.has_value());
  EXPECT_EQ(g.value_name(*p.mask), "m");
  EXPECT_DOUBLE_EQ(p.flops(), 4.0 * 2 * 4 * 128 * 128 * 64);
  EXPECT_TRUE(fused_attention_supports(p).fuse);
}

TEST(Attention, SampleAutoFusesToOneAttentionKernelThatNeverWritesTheScores) {
  FusionEngine engine(sample("attention_bf16.json"), test_device());
  const std::optional<Candidate> c = attention_candidate(engine);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->id, "a:scores+ctx");
  EXPECT_TRUE(c->decision.fuse) << c->decision.message;
  const std::int64_t score_bytes = 8LL * 12 * 1024 * 1024 * 2;
  EXPECT_EQ(c->decision.numbers.at("score_bytes"), static_cast<double>(score_bytes));
  // The transpose of k is written and read once more; the score matrix 4 times written, 4 times read.
  const std::int64_t k_bytes = 8LL * 12 * 1024 * 64 * 2;
  EXPECT_EQ(c->bytes_before - c->bytes_after, 8 * score_bytes + 2 * k_bytes);
  EXPECT_TRUE(has(c->decision.message, "[8, 12, 1024, 1024] bf16 score matrix (192 MiB) never reaches HBM"))
      << c->decision.message;
  EXPECT_TRUE(has(c->decision.message, "moves 8 such matrices")) << c->decision.message;

  engine.auto_fuse();
  const Plan& plan = engine.plan();
  ASSERT_EQ(plan.kernel_count(), 1) << engine.decision_log_json();
  const Group& group = plan.groups()[0];
  EXPECT_EQ(group.nodes.size(), 6u);  // the transpose of k folds into the call
  EXPECT_EQ(group.kinds, std::vector<FusionKind>{FusionKind::attention});
  EXPECT_EQ(group.cost.tensors_read, 4);  // q, k, v, mask
  EXPECT_EQ(group.cost.tensors_written, 1);
  EXPECT_EQ(group_kernel_name(engine.graph(), plan, 0), "cudnn_g_kT");
  // Explained as one kernel, with what it saves.
  const Graph& g = engine.graph();
  const FusionDecision why = engine.explain(node(g, "scores"), node(g, "ctx"));
  EXPECT_TRUE(why.fuse);
  EXPECT_TRUE(has(why.message, "already in one kernel, g:kT: fused attention")) << why.message;
  EXPECT_TRUE(has(why.message, "never reaches HBM")) << why.message;
}

TEST(Attention, LongSequenceAndF16SamplesFuseToo) {
  for (const char* file : {"attention_long_bf16.json", "attention_f16.json"}) {
    FusionEngine engine(sample(file), test_device());
    engine.auto_fuse();
    ASSERT_EQ(engine.plan().kernel_count(), 1) << file;
    EXPECT_EQ(engine.plan().groups()[0].kinds, std::vector<FusionKind>{FusionKind::attention}) << file;
  }
  FusionEngine engine(sample("attention_long_bf16.json"), test_device());
  const std::optional<Candidate> c = attention_candidate(engine);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(has(c->decision.message, "[1, 12, 8192, 8192] bf16 score matrix (1.50 GiB)")) << c->decision.message;
}

TEST(Attention, F32AttentionRunsAsTheTf32FlashKernel) {
  FusionEngine engine(sample("gpt2_block.json"), test_device());
  const std::optional<Candidate> c = attention_candidate(engine);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->decision.fuse) << c->decision.message;
  EXPECT_TRUE(has(c->decision.message, "fused attention (TF32 flash attention kernel, one kernel): the [8, 12, 1024, "
                                       "1024] f32 score matrix (384 MiB) never reaches HBM"))
      << c->decision.message;

  engine.auto_fuse();
  const Graph& g = engine.graph();
  const Plan& plan = engine.plan();
  const int index = plan.group_of(node(g, "scores"));
  const Group& group = plan.groups()[static_cast<std::size_t>(index)];
  EXPECT_EQ(group.kinds, std::vector<FusionKind>{FusionKind::attention});
  EXPECT_EQ(group.nodes.size(), 5u);  // scores, scaled, masked, probs, ctx
  EXPECT_EQ(plan.group_of(node(g, "ctx")), index);
  EXPECT_EQ(group_kernel_name(g, plan, index).rfind("fx_flash_", 0), 0u) << group_kernel_name(g, plan, index);
  const FusionDecision why = engine.explain(node(g, "scores"), node(g, "ctx"));
  EXPECT_TRUE(has(why.message, "TF32 flash attention kernel")) << why.message;
}

TEST(Attention, RefusalsSayWhichPartDoesNotFit) {
  Chain axis;
  axis.softmax_axis = "2";
  EXPECT_TRUE(has(match_refusal(axis.build()).message, "normalises over axis 2, not the last"));

  Chain escaping;
  escaping.outputs = R"(["o", "t"])";
  EXPECT_TRUE(has(match_refusal(escaping.build()).message, "t (mul) is a graph output"));

  Chain row_mask;
  row_mask.mask_shape = "[1, 128]";
  EXPECT_TRUE(has(match_refusal(row_mask.build()).message, "the mask [1, 128] is not a [128, 128] matrix"));

  Chain per_batch_mask;
  per_batch_mask.mask_shape = "[2, 1, 128, 128]";
  EXPECT_TRUE(match_refusal(per_batch_mask.build()).fuse);

  Chain wide;
  wide.q_shape = wide.kv_shape = "[2, 4, 128, 160]";
  EXPECT_TRUE(has(match_refusal(wide.build()).message, "the head dim is 160"));

  Chain f32;
  f32.dtype = "f32";
  EXPECT_TRUE(match_refusal(f32.build()).fuse);  // the TF32 kernel
  Chain f32_odd_head;
  f32_odd_head.dtype = "f32";
  f32_odd_head.q_shape = f32_odd_head.kv_shape = "[2, 4, 128, 48]";
  const FusionDecision d = match_refusal(f32_odd_head.build());
  EXPECT_EQ(d.reason, Reason::attention_unsupported);
  EXPECT_TRUE(has(d.message, "the head dims are 48 (Q.K) and 48 (V): the TF32 flash attention kernel is built for one "
                             "head dim of 32, 64 or 128"))
      << d.message;
  Chain bf16_odd_head;
  bf16_odd_head.q_shape = bf16_odd_head.kv_shape = "[2, 4, 128, 48]";
  EXPECT_TRUE(match_refusal(bf16_odd_head.build()).fuse);  // cuDNN takes multiples of 8

  Chain order;
  order.mask_before_scale = true;
  EXPECT_TRUE(has(match_refusal(order.build()).message,
                  "u (add) comes before t (mul): fused attention takes, between the two matrix products, a scalar "
                  "scale, then an additive mask"));

  Chain heads;
  heads.kv_shape = "[1, 4, 128, 64]";
  EXPECT_TRUE(has(match_refusal(heads.build()).message, "differ in their leading dims"));
}

TEST(Attention, AGroupHoldsTheWholeChainAndNothingElse) {
  const Graph g = Chain{}.build();
  const EngineOptions options;
  std::vector<NodeId> chain = {node(g, "s"), node(g, "t"), node(g, "u"), node(g, "p"), node(g, "o")};
  EXPECT_TRUE(check_group(g, chain, options).fuse);
  const std::vector<NodeId> partial = {node(g, "s"), node(g, "u"), node(g, "p"), node(g, "o")};
  const FusionDecision missing = check_group(g, partial, options);
  EXPECT_EQ(missing.reason, Reason::attention_unsupported);
  EXPECT_TRUE(has(missing.message, "t (mul) of the attention ending at o (matmul) is not in the group")) << missing.message;
}

TEST(Attention, WorkAfterTheChainCannotJoinItsKernel) {
  const Graph g = graph_from(graph_json(
      R"([{"name": "q", "shape": [1, 2, 64, 32], "dtype": "f16"}, {"name": "k", "shape": [1, 2, 64, 32], "dtype": "f16"},
          {"name": "v", "shape": [1, 2, 64, 32], "dtype": "f16"}])",
      R"([{"name": "s", "op": "matmul", "inputs": ["q", "k"], "attrs": {"transpose_b": true}},
          {"name": "p", "op": "softmax", "inputs": ["s"]}, {"name": "o", "op": "matmul", "inputs": ["p", "v"]},
          {"name": "r", "op": "relu", "inputs": ["o"]}])",
      R"(["r"])"));
  const std::vector<NodeId> with_relu = {node(g, "s"), node(g, "p"), node(g, "o"), node(g, "r")};
  const FusionDecision d = check_group(g, with_relu, EngineOptions{});
  EXPECT_EQ(d.reason, Reason::attention_unsupported);
  EXPECT_TRUE(has(d.message, "r (relu) would share the kernel of the attention ending at o (matmul)")) << d.message;
  // Without a scale or a mask the chain is still attention.
  FusionEngine engine(g, test_device());
  engine.auto_fuse();
  EXPECT_EQ(engine.plan().group_of_node(node(g, "s")).kinds, std::vector<FusionKind>{FusionKind::attention});
  EXPECT_EQ(engine.plan().kernel_count(), 2);
}

TEST(Attention, KReadAsAStoredTransposeIsRefused) {
  // kT is computed in a kernel with other work (a negation of k), so the chain would read K^T from memory, keys
  // contiguous: cuDNN's fused attention is never asked about that layout.
  const Graph g = graph_from(graph_json(
      R"([{"name": "q", "shape": [1, 2, 64, 32], "dtype": "bf16"}, {"name": "k", "shape": [1, 2, 64, 32], "dtype": "bf16"},
          {"name": "v", "shape": [1, 2, 64, 32], "dtype": "bf16"}])",
      R"([{"name": "k2", "op": "neg", "inputs": ["k"]},
          {"name": "kT", "op": "transpose", "inputs": ["k2"], "attrs": {"perm": [0, 1, 3, 2]}},
          {"name": "s", "op": "matmul", "inputs": ["q", "kT"]}, {"name": "p", "op": "softmax", "inputs": ["s"]},
          {"name": "o", "op": "matmul", "inputs": ["p", "v"]}])",
      R"(["o"])"));
  const std::vector<NodeId> chain = {node(g, "s"), node(g, "p"), node(g, "o")};
  EXPECT_FALSE(attention_group(g, chain).has_value());
  const FusionDecision d = check_group(g, chain, EngineOptions{});
  EXPECT_EQ(d.reason, Reason::attention_unsupported);
  EXPECT_TRUE(has(d.message, "K is read as a stored K^T ([.., 32, 64], the keys contiguous)")) << d.message;
  // With the transpose in the group it is folded (K read through swapped strides) and the chain fuses.
  const std::vector<NodeId> with_transpose = {node(g, "kT"), node(g, "s"), node(g, "p"), node(g, "o")};
  const auto p = attention_group(g, with_transpose);
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->k_is_transposed);
  EXPECT_EQ(g.value_name(p->k), "k2");
  // A graph input holding K^T is refused the same way.
  const Graph stored = graph_from(graph_json(
      R"([{"name": "q", "shape": [1, 2, 64, 32], "dtype": "f16"}, {"name": "kT", "shape": [1, 2, 32, 64], "dtype": "f16"},
          {"name": "v", "shape": [1, 2, 64, 32], "dtype": "f16"}])",
      R"([{"name": "s", "op": "matmul", "inputs": ["q", "kT"]}, {"name": "p", "op": "softmax", "inputs": ["s"]},
          {"name": "o", "op": "matmul", "inputs": ["p", "v"]}])",
      R"(["o"])"));
  EXPECT_TRUE(has(match_refusal(stored).message, "K is read as a stored K^T")) << match_refusal(stored).message;
}

TEST(Attention, TheKindCanBeSwitchedOffAndAFusedFileKeepsTheGroup) {
  EngineOptions off;
  off.disabled_kinds = {FusionKind::attention};
  FusionEngine engine(sample("attention_bf16.json"), test_device(), off);
  const std::optional<Candidate> c = attention_candidate(engine);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->decision.reason, Reason::kind_disabled);

  FusionEngine on(sample("attention_bf16.json"), test_device());
  ASSERT_TRUE(on.accept("a:scores+ctx").fuse);
  const std::string file = on.save_fused_graph();
  EXPECT_TRUE(has(file, "\"attention\""));
  auto loaded = FusionEngine::load_fused_graph(file, test_device());
  ASSERT_TRUE(loaded.ok()) << format_diagnostics(loaded.errors());
  EXPECT_EQ(loaded->plan(), on.plan());
  EXPECT_EQ(loaded->plan().kernel_count(), 1);
}

}  // namespace
}  // namespace fx
