// Views (core/analysis/views.h): a reshape alone in its group moves no byte and launches nothing. The cost model
// charges it nothing, plans do not count it as a kernel, the engine merges through it, and a graph output stays a
// copy where sharing a buffer would make two graph tensors one.
#include <algorithm>

#include "core/analysis/views.h"
#include "core/fusion/kernel_names.h"
#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

using testing::graph_from;
using testing::graph_json;
using testing::node;
using testing::sample;
using testing::test_device;

constexpr const char* kX = R"([{"name": "x", "shape": [64, 256], "dtype": "f32"}])";

const Group& group_of(const Plan& plan, const Graph& g, const std::string& name) {
  return plan.group_of_node(node(g, name));
}

TEST(Views, OnlyAViewOpAloneIsAView) {
  EXPECT_TRUE(op_def(OpId::reshape).view);
  for (const OpDef& d : OpRegistry::instance().ops()) {
    if (d.id != OpId::reshape) EXPECT_FALSE(d.view) << d.name;  // transpose, slice, concat move elements
  }
  const Graph g = graph_from(graph_json(kX, R"([{"name": "a", "op": "relu", "inputs": ["x"]},
                                                {"name": "r", "op": "reshape", "inputs": ["a"], "attrs": {"shape": [256, 64]}},
                                                {"name": "t", "op": "transpose", "inputs": ["r"], "attrs": {"perm": [1, 0]}}])",
                                        R"(["t"])"));
  const ViewVerdict r = lone_view(g, node(g, "r"));
  EXPECT_TRUE(r.is_view());
  EXPECT_EQ(r.source, g.value_of(node(g, "a")));
  EXPECT_TRUE(r.copy_reason.empty());
  EXPECT_FALSE(lone_view(g, node(g, "t")).is_view());
  EXPECT_FALSE(lone_view(g, node(g, "a")).is_view());
}

TEST(Views, AViewCostsNothingACopyCostsItsBytes) {
  const Graph g = graph_from(graph_json(kX, R"([{"name": "a", "op": "relu", "inputs": ["x"]},
                                                {"name": "r", "op": "reshape", "inputs": ["a"], "attrs": {"shape": [256, 64]}},
                                                {"name": "y", "op": "neg", "inputs": ["r"]},
                                                {"name": "o", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [-1]}}])",
                                        R"(["y", "o"])"));
  const CostModel model(test_device());
  const GroupCost view = model.single(g, node(g, "r"));
  EXPECT_EQ(view.bytes_moved(), 0);
  EXPECT_EQ(view.time_s, 0);
  EXPECT_EQ(view.launch_s, 0);
  // o is a graph output holding the bytes of the graph input x: a copy kernel, read and write.
  const GroupCost copy = model.single(g, node(g, "o"));
  EXPECT_EQ(copy.bytes_moved(), 2 * 64 * 256 * 4);
  EXPECT_GT(copy.time_s, 0);
  const Plan plan = Plan::unfused(g, model);
  EXPECT_EQ(plan.kernel_count(), 3);  // a, y and the copy o; not r
  EXPECT_EQ(plan.view_count(), 1);
  const Group& r = group_of(plan, g, "r");
  EXPECT_TRUE(r.is_view());
  EXPECT_FALSE(r.launched());
  EXPECT_EQ(r.view_of, g.value_of(node(g, "a")));
  EXPECT_EQ(group_kernel_name(g, plan, plan.group_of(node(g, "r"))), "");
  const Group& o = group_of(plan, g, "o");
  EXPECT_FALSE(o.is_view());
  EXPECT_TRUE(o.launched());
  EXPECT_NE(o.copy_reason.find("graph input x"), std::string::npos) << o.copy_reason;
  EXPECT_EQ(group_kernel_name(g, plan, plan.group_of(node(g, "o"))), "fx_g_o");
  // The plan's totals hold the kernels only.
  EXPECT_EQ(plan.bytes_moved(), model.single(g, node(g, "a")).bytes_moved() +
                                    model.single(g, node(g, "y")).bytes_moved() + copy.bytes_moved());
}

// Outputs are handed over as buffers of their own: an output holding another output's bytes, or two outputs
// holding the bytes of one value, stay copies. A view of an output that is no output itself is a view.
TEST(Views, OutputsSharingBytesStayCopies) {
  const Graph g = graph_from(graph_json(kX, R"([{"name": "a", "op": "relu", "inputs": ["x"]},
                                                {"name": "p", "op": "reshape", "inputs": ["a"], "attrs": {"shape": [-1]}},
                                                {"name": "q", "op": "reshape", "inputs": ["a"], "attrs": {"shape": [256, 64]}},
                                                {"name": "b", "op": "exp", "inputs": ["x"]},
                                                {"name": "s", "op": "reshape", "inputs": ["b"], "attrs": {"shape": [-1]}},
                                                {"name": "v", "op": "reshape", "inputs": ["b"], "attrs": {"shape": [256, 64]}},
                                                {"name": "w", "op": "reshape", "inputs": ["v"], "attrs": {"shape": [-1]}},
                                                {"name": "z", "op": "sin", "inputs": ["w"]}])",
                                        R"(["p", "q", "b", "s", "z"])"));
  const ViewVerdict p = lone_view(g, node(g, "p")), q = lone_view(g, node(g, "q"));
  EXPECT_FALSE(p.is_view());
  EXPECT_FALSE(q.is_view());
  EXPECT_NE(p.copy_reason.find("p and q are graph outputs holding the bytes of a"), std::string::npos) << p.copy_reason;
  const ViewVerdict s = lone_view(g, node(g, "s"));
  EXPECT_FALSE(s.is_view());
  EXPECT_NE(s.copy_reason.find("graph output b"), std::string::npos) << s.copy_reason;
  // v and w are no outputs: views of the output b, which nothing writes through.
  EXPECT_TRUE(lone_view(g, node(g, "v")).is_view());
  EXPECT_EQ(lone_view(g, node(g, "w")).source, g.value_of(node(g, "v")));
  EXPECT_EQ(view_root(g, g.value_of(node(g, "w"))), g.value_of(node(g, "b")));
}

// The exported GPT-2 block reshapes between almost every op: before fusion those reshapes are views, not the
// 48 MiB copy kernels they used to be counted as.
TEST(Views, Gpt2BlockCountsItsViewsAsNoKernels) {
  const Graph g = sample("gpt2_block_hf.json");
  FusionEngine engine(g, test_device());
  const Plan unfused = engine.plan();
  const auto reshapes = std::count_if(g.nodes().begin(), g.nodes().end(),
                                      [](const Node& n) { return n.op_id() == OpId::reshape; });
  EXPECT_EQ(reshapes, 12);
  EXPECT_EQ(unfused.view_count(), 12);
  EXPECT_EQ(unfused.kernel_count(), g.num_nodes() - 12);
  const Group& view_6 = group_of(unfused, g, "view_6");
  EXPECT_TRUE(view_6.is_view());
  EXPECT_EQ(view_6.cost.bytes_moved(), 0);
  EXPECT_EQ(g.value_name(view_6.view_of), "addmm_1");
  // The explanation of the pair says the view is none.
  const FusionDecision d = engine.explain(node(g, "view_6"), node(g, "add_1"));
  EXPECT_TRUE(d.fuse) << d.message;
  EXPECT_NE(d.message.find("view_6 is a view (no kernel, no HBM traffic)"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("in 1 kernel"), std::string::npos) << d.message;
  engine.auto_fuse();
  const Plan& fused = engine.plan();
  // Every reshape left alone is a view; none is a kernel.
  for (const Group& grp : fused.groups()) {
    if (grp.nodes.size() == 1 && g.node(grp.nodes[0]).op_id() == OpId::reshape) EXPECT_TRUE(grp.is_view()) << grp.id;
  }
  // view_6 joins neither the GEMM before it (a library call applies its epilogue to the output in its own shape)
  // nor needs to: the residual add reads the GEMM's buffer and joins the layernorm after it as a prologue.
  // 11 kernels (the attention chain is one of them), where counting view_6 as a copy kernel kept add_1 apart and
  // made one more.
  EXPECT_TRUE(group_of(fused, g, "view_6").is_view());
  EXPECT_EQ(fused.group_of(node(g, "add_1")), fused.group_of(node(g, "layer_norm_1")));
  EXPECT_EQ(fused.kernel_count(), 11) << engine.decision_log_json();
  EXPECT_EQ(fused.view_count(), 1);
  EXPECT_LT(fused.predicted_time_s(), unfused.predicted_time_s());
}

// A reshape inside a fused kernel is an index remapping that costs nothing: a chain through one fuses into one
// kernel that moves exactly what the chain without it moves. Merging through the view saves nothing by itself;
// the engine takes it so the kernels on either side can merge.
TEST(Views, AChainThroughAViewFusesAsIfTheViewWereNotThere) {
  const Graph with = graph_from(graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                                   {"name": "r", "op": "reshape", "inputs": ["a"], "attrs": {"shape": [256, 64]}},
                                                   {"name": "y", "op": "relu", "inputs": ["r"]}])",
                                           R"(["y"])"));
  const Graph without = graph_from(graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                                      {"name": "y", "op": "relu", "inputs": ["a"]}])",
                                              R"(["y"])"));
  FusionEngine e(with, test_device()), plain(without, test_device());
  EXPECT_EQ(e.plan().kernel_count(), 2);
  EXPECT_DOUBLE_EQ(e.plan().predicted_time_s(), plain.plan().predicted_time_s());
  const std::vector<Candidate> cands = e.candidates();
  ASSERT_EQ(cands.size(), 2u);
  for (const Candidate& c : cands) {
    EXPECT_TRUE(c.decision.fuse) << c.decision.message;
    EXPECT_EQ(c.saved_s(), 0) << c.id;
    EXPECT_NE(c.decision.message.find("r is a view (no kernel, no HBM traffic)"), std::string::npos) << c.decision.message;
  }
  e.auto_fuse();
  plain.auto_fuse();
  ASSERT_EQ(e.plan().kernel_count(), 1) << e.decision_log_json();
  EXPECT_EQ(e.plan().groups()[0].nodes.size(), 3u);
  EXPECT_EQ(e.plan().bytes_moved(), plain.plan().bytes_moved());
  EXPECT_DOUBLE_EQ(e.plan().predicted_time_s(), plain.plan().predicted_time_s());
}

// Merging a view into a producer whose value other kernels still read would write the same bytes twice: refused
// as not profitable, with the view counted as no kernel.
TEST(Views, AViewMergeThatWritesMoreIsRefused) {
  const Graph g = graph_from(graph_json(kX, R"([{"name": "a", "op": "exp", "inputs": ["x"]},
                                                {"name": "r", "op": "reshape", "inputs": ["a"], "attrs": {"shape": [256, 64]}},
                                                {"name": "m", "op": "sum", "inputs": ["a"], "attrs": {"axis": 0}},
                                                {"name": "t", "op": "transpose", "inputs": ["r"], "attrs": {"perm": [1, 0]}}])",
                                        R"(["t", "m"])"));
  FusionEngine engine(g, test_device());
  const FusionDecision d = engine.explain(node(g, "a"), node(g, "r"));
  EXPECT_FALSE(d.fuse) << d.message;
  EXPECT_EQ(d.reason, Reason::not_profitable) << d.message;
  EXPECT_NE(d.message.find("in 1 kernel"), std::string::npos) << d.message;
}

}  // namespace
}  // namespace fx
