// Fusion families the peers fuse (TorchInductor's pointwise cat, XLA's multi-output reduction fusion): the engine's
// decision for each, and the reason for each refusal around them.
#include <algorithm>
#include <cmath>
#include <variant>

#include "core/fusion/chained_reduction.h"
#include "core/fusion/legality.h"
#include "core/reference/reference.h"
#include "tests/core/fusion_test_util.h"

namespace fx {
namespace {

using testing::graph_from;
using testing::graph_json;
using testing::node;
using testing::sample;
using testing::test_device;

std::vector<std::string> names(const Graph& g, const std::vector<NodeId>& nodes) {
  std::vector<std::string> out;
  for (NodeId n : nodes) out.push_back(g.node(n).name);
  return out;
}

const char* kThree = R"([{"name": "x", "shape": [512, 256], "dtype": "f32"},
                         {"name": "y", "shape": [512, 256], "dtype": "f32"},
                         {"name": "z", "shape": [512, 128], "dtype": "f32"}])";

// relu(x), tanh(y), z * 0.5 concatenated on the last axis, then silu; `outputs` chooses what else is stored.
std::string concat_graph(const std::string& outputs, const std::string& extra = "") {
  return graph_json(kThree, R"([{"name": "rx", "op": "relu", "inputs": ["x"]},
                               {"name": "ty", "op": "tanh", "inputs": ["y"]},
                               {"name": "sz", "op": "mul", "inputs": ["z", 0.5]},
                               {"name": "cat", "op": "concat", "inputs": ["rx", "ty", "sz"], "attrs": {"axis": -1}},
                               {"name": "out", "op": "silu", "inputs": ["cat"]})" + extra + "]",
                    outputs);
}

// Inductor: 3 pointwise producers + concat + a pointwise consumer are 1 kernel. Here too: the kernel loops over
// the concat's output, reads x, y and z once and writes only `out`.
TEST(FusionConcat, PointwiseBranchesConcatAndConsumerAreOneKernel) {
  FusionEngine engine(sample("concat_branches.json"), test_device());
  EXPECT_EQ(engine.plan().kernel_count(), 5);
  const std::int64_t unfused_bytes = engine.plan().bytes_moved();
  engine.auto_fuse();
  const Plan& plan = engine.plan();
  ASSERT_EQ(plan.kernel_count(), 1) << engine.decision_log_json();
  const Group& grp = plan.groups()[0];
  EXPECT_EQ(names(engine.graph(), grp.nodes), (std::vector<std::string>{"rx", "ty", "sz", "cat", "out"}));
  EXPECT_EQ(grp.cost.tensors_read, 3);
  EXPECT_EQ(grp.cost.tensors_written, 1);
  const std::int64_t branch = 4096LL * 1024 * 4;
  EXPECT_EQ(unfused_bytes, 3 * 2 * branch + 2 * 3 * branch + 2 * 3 * branch);  // 3 branches, concat, silu
  EXPECT_EQ(plan.bytes_moved(), 3 * branch + 3 * branch);
  // The accepted merges that brought a branch in say where its values go.
  bool said = false;
  for (const LogEntry& e : engine.log()) {
    said = said || (e.action == "accepted" && e.message.find("written straight into its slice of the output") !=
                                                  std::string::npos);
  }
  EXPECT_TRUE(said) << engine.decision_log_json();
}

TEST(FusionConcat, BranchesOnALeadingAxisAndNestedConcatsFuseToo) {
  const Graph g = graph_from(graph_json(kThree, R"([{"name": "rx", "op": "relu", "inputs": ["x"]},
                                                   {"name": "ty", "op": "tanh", "inputs": ["y"]},
                                                   {"name": "inner", "op": "concat", "inputs": ["rx", "ty"], "attrs": {"axis": 0}},
                                                   {"name": "ex", "op": "exp", "inputs": ["x"]},
                                                   {"name": "outer", "op": "concat", "inputs": ["inner", "ex"], "attrs": {"axis": 0}},
                                                   {"name": "out", "op": "neg", "inputs": ["outer"]}])",
                                        R"(["out"])"));
  FusionEngine engine(g, test_device());
  engine.auto_fuse();
  EXPECT_EQ(engine.plan().kernel_count(), 1) << engine.decision_log_json();
  EXPECT_EQ(engine.plan().groups()[0].cost.tensors_read, 2);  // x (read by two branches) and y
}

// A branch value that must also be stored (a graph output, or read by another kernel) would need a second
// iteration space in the kernel: refused, naming the reader.
TEST(FusionConcat, ABranchStoredForOtherReadersIsRefusedWithTheReader) {
  FusionEngine as_output(graph_from(concat_graph(R"(["out", "rx"])")), test_device());
  const FusionDecision d = as_output.explain(node(as_output.graph(), "rx"), node(as_output.graph(), "cat"));
  EXPECT_EQ(d.reason, Reason::shape_mismatch) << d.message;
  EXPECT_NE(d.message.find("rx (relu) feeds cat (concat) but it is a graph output"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("cannot also store [512, 256]"), std::string::npos) << d.message;

  const std::string extra = R"(, {"name": "e", "op": "exp", "inputs": ["ty"]})";
  FusionEngine read_elsewhere(graph_from(concat_graph(R"(["out", "e"])", extra)), test_device());
  const Graph& g = read_elsewhere.graph();
  const FusionDecision r = read_elsewhere.explain(node(g, "ty"), node(g, "cat"));
  EXPECT_EQ(r.reason, Reason::shape_mismatch) << r.message;
  EXPECT_NE(r.message.find("e (exp) reads it outside the kernel"), std::string::npos) << r.message;
  // ty and its other reader e still fuse with each other (one iteration space), and the rest around the concat.
  read_elsewhere.auto_fuse();
  EXPECT_EQ(read_elsewhere.plan().kernel_count(), 2) << read_elsewhere.decision_log_json();
  EXPECT_NE(read_elsewhere.plan().group_of(node(g, "ty")), read_elsewhere.plan().group_of(node(g, "cat")));
}

// The legality rule alone: in one group with the concat, a branch iterates over its own shape only when nothing
// but the concat (or another branch) reads it.
TEST(FusionConcat, CheckGroupExemptsOnlyBranchesReadByTheConcat) {
  const Graph g = graph_from(concat_graph(R"(["out"])"));
  const std::vector<NodeId> fused = {node(g, "rx"), node(g, "ty"), node(g, "sz"), node(g, "cat"), node(g, "out")};
  EXPECT_TRUE(check_group(g, fused, {}).fuse);
  // w reads rx at rx's own shape inside the group: rx is no longer only a branch.
  const Graph h = graph_from(concat_graph(R"(["out", "w"])", R"(, {"name": "w", "op": "add", "inputs": ["rx", "x"]})"));
  const std::vector<NodeId> with_w = {node(h, "rx"), node(h, "ty"), node(h, "sz"), node(h, "cat"), node(h, "out"),
                                      node(h, "w")};
  const FusionDecision d = check_group(h, with_w, {});
  EXPECT_EQ(d.reason, Reason::shape_mismatch) << d.message;
  EXPECT_NE(d.message.find("another op of the kernel reads it at its own shape"), std::string::npos) << d.message;
}

// A concat of per-row statistics is not elementwise work over the rows: the reduction's kernel keeps it apart,
// with the reason.
TEST(FusionConcat, AConcatAfterAReductionStaysApartWithAReason) {
  const Graph g = graph_from(graph_json(kThree, R"([{"name": "s", "op": "sum", "inputs": ["x"], "attrs": {"axis": [-1]}},
                                                   {"name": "m", "op": "max", "inputs": ["y"], "attrs": {"axis": [-1]}},
                                                   {"name": "cat", "op": "concat", "inputs": ["s", "m"], "attrs": {"axis": 0}}])",
                                        R"(["cat"])"));
  FusionEngine engine(g, test_device());
  const FusionDecision d = engine.explain(node(g, "s"), node(g, "cat"));
  EXPECT_EQ(d.reason, Reason::reduction_axis) << d.message;
  EXPECT_NE(d.message.find("cat (concat) changes which elements form a row"), std::string::npos) << d.message;
}


// XLA's multi-output fusion of sibling reductions: mean(x), mean(x*x) and max(x) of each row read x once, in one
// row-wise kernel with three outputs (the variance is computed from the two means on the row's values).
TEST(FusionReductions, SiblingReductionsOfOneInputAreOneKernelWithSeveralOutputs) {
  FusionEngine engine(sample("mean_variance.json"), test_device());
  EXPECT_EQ(engine.plan().kernel_count(), 6);
  engine.auto_fuse();
  const Plan& plan = engine.plan();
  ASSERT_EQ(plan.kernel_count(), 1) << engine.decision_log_json();
  const Group& grp = plan.groups()[0];
  EXPECT_EQ(grp.cost.tensors_read, 1);
  EXPECT_EQ(grp.cost.tensors_written, 3);
  EXPECT_EQ(plan.bytes_moved(), 16384LL * 2048 * 4 + 3 * 16384 * 4);
  EXPECT_NE(std::find(grp.kinds.begin(), grp.kinds.end(), FusionKind::horizontal), grp.kinds.end());
}

TEST(FusionReductions, SumAndMaxOfOneTensorFuseHorizontally) {
  const Graph g = graph_from(graph_json(R"([{"name": "x", "shape": [4096, 1024], "dtype": "f32"}])",
                                        R"([{"name": "s", "op": "sum", "inputs": ["x"], "attrs": {"axis": -1}},
                                            {"name": "m", "op": "max", "inputs": ["x"], "attrs": {"axis": -1}}])",
                                        R"(["s", "m"])"));
  FusionEngine engine(g, test_device());
  const FusionDecision d = engine.explain(node(g, "s"), node(g, "m"));
  EXPECT_TRUE(d.fuse) << d.message;
  EXPECT_NE(d.message.find("horizontal g:s + g:m"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("fused 1 read + 2 writes"), std::string::npos) << d.message;
  // Over other axes the rows differ: no row-wise kernel holds both.
  const Graph h = graph_from(graph_json(R"([{"name": "x", "shape": [4096, 1024], "dtype": "f32"}])",
                                        R"([{"name": "s", "op": "sum", "inputs": ["x"], "attrs": {"axis": -1}},
                                            {"name": "c", "op": "sum", "inputs": ["x"], "attrs": {"axis": 0}}])",
                                        R"(["s", "c"])"));
  FusionEngine columns(h, test_device());
  EXPECT_EQ(columns.explain(node(h, "s"), node(h, "c")).reason, Reason::reduction_axis);
}

// [rows, 64, 128]: a sum over the last axis, then a max over the 64 sums of each row, plus work between them.
std::string chain_graph(int rows, const std::string& extra_nodes = "", const std::string& outputs = R"(["m"])",
                        int segments = 64, int inner = 128) {
  const std::string shape = "[" + std::to_string(rows) + ", " + std::to_string(segments) + ", " + std::to_string(inner) + "]";
  return graph_json(R"([{"name": "x", "shape": )" + shape + R"(, "dtype": "f32"}])",
                    R"([{"name": "sq", "op": "mul", "inputs": ["x", "x"]},
                        {"name": "s", "op": "sum", "inputs": ["sq"], "attrs": {"axis": -1}},
                        {"name": "r", "op": "sqrt", "inputs": ["s"]},
                        {"name": "m", "op": "max", "inputs": ["r"], "attrs": {"axis": -1}})" + extra_nodes + "]",
                    outputs);
}

// A reduction feeding a reduction over the remaining axes: one kernel where the outer row (64 per-segment values)
// fits on chip; the inner result is stored only because it is an output.
TEST(FusionReductions, AReductionOverTheRemainingAxesOfAnotherChainsIntoOneKernel) {
  const Graph g = graph_from(chain_graph(2048, "", R"(["m", "s"])"));
  FusionEngine engine(g, test_device());
  const FusionDecision d = engine.explain(node(g, "r"), node(g, "m"));
  EXPECT_TRUE(d.fuse) << d.message;
  engine.auto_fuse();
  ASSERT_EQ(engine.plan().kernel_count(), 1) << engine.decision_log_json();
  EXPECT_EQ(engine.plan().groups()[0].cost.tensors_read, 1);
  EXPECT_EQ(engine.plan().groups()[0].cost.tensors_written, 2);
  const auto verdict = plan_chained_reduction(g, engine.plan().groups()[0].nodes);
  const auto* chain = std::get_if<ChainedReduction>(&verdict);
  ASSERT_NE(chain, nullptr);
  EXPECT_EQ(chain->rows, 2048);
  EXPECT_EQ(chain->segments, 64);
  EXPECT_EQ(chain->inner, 128);
  EXPECT_EQ(names(g, chain->staged), std::vector<std::string>{"r"});
  EXPECT_EQ(chain->shared_bytes, 64 * 4);
}

TEST(FusionReductions, ChainsTheKernelCannotComputeAreRefusedWithTheReason) {
  // After auto-fuse the inner and the outer reduction sit in two kernels; merging those two is what is refused.
  auto refusal = [](const std::string& json, const std::string& a, const std::string& b) {
    const Graph g = graph_from(json);
    FusionEngine engine(g, test_device());
    engine.auto_fuse();
    EXPECT_NE(engine.plan().group_of(node(g, a)), engine.plan().group_of(node(g, b)));
    return engine.explain(node(g, a), node(g, b));
  };
  const FusionDecision few = refusal(chain_graph(8), "s", "m");
  EXPECT_EQ(few.reason, Reason::reduction_followed_by_reduction) << few.message;
  EXPECT_NE(few.message.find("only 8 outer rows"), std::string::npos) << few.message;

  const FusionDecision wide = refusal(chain_graph(256, "", R"(["m"])", 16384, 4), "s", "m");
  EXPECT_EQ(wide.reason, Reason::reduction_followed_by_reduction) << wide.message;
  EXPECT_NE(wide.message.find("16384 per-segment values take 65536 bytes of shared memory"), std::string::npos)
      << wide.message;
  EXPECT_NE(wide.message.find("the row does not fit on chip"), std::string::npos) << wide.message;

  const FusionDecision stored = refusal(chain_graph(2048, "", R"(["m", "sq"])"), "s", "m");
  EXPECT_EQ(stored.reason, Reason::reduction_followed_by_reduction) << stored.message;

  // Centring x on its segment's sum reads a per-segment value inside the loop that computes it.
  const std::string two_pass = graph_json(R"([{"name": "x", "shape": [2048, 64, 128], "dtype": "f32"}])",
                                          R"([{"name": "s", "op": "sum", "inputs": ["x"], "attrs": {"axis": -1, "keepdim": true}},
                                              {"name": "d", "op": "sub", "inputs": ["x", "s"]},
                                              {"name": "q", "op": "sum", "inputs": ["d"], "attrs": {"axis": -1}},
                                              {"name": "m", "op": "max", "inputs": ["q"], "attrs": {"axis": -1}}])",
                                          R"(["m"])");
  const Graph tp = graph_from(two_pass);
  const std::vector<NodeId> all = {node(tp, "s"), node(tp, "d"), node(tp, "q"), node(tp, "m")};
  const FusionDecision across = check_group(tp, all, {});
  EXPECT_EQ(across.reason, Reason::reduction_followed_by_reduction) << across.message;
  EXPECT_NE(across.message.find("d (sub) reads the per-segment value s"), std::string::npos) << across.message;

  const std::string softmax = graph_json(R"([{"name": "x", "shape": [2048, 64, 128], "dtype": "f32"}])",
                                         R"([{"name": "s", "op": "mean", "inputs": ["x"], "attrs": {"axis": -1}},
                                             {"name": "p", "op": "softmax", "inputs": ["s"], "attrs": {"axis": -1}}])",
                                         R"(["p"])");
  const FusionDecision soft = refusal(softmax, "s", "p");
  EXPECT_EQ(soft.reason, Reason::reduction_followed_by_reduction) << soft.message;
  EXPECT_NE(soft.message.find("p (softmax) is not a sum, mean, max or min"), std::string::npos) << soft.message;
}

// The sample at small sizes (every dimension above 64 cut to 5 + d % 7, consistently), evaluated by the float64
// reference on inputs i * 0.37 mod 3 - 1.5: the values the GPU runs are checked against.
std::vector<HostTensor> reference_of_small(const std::string& file, Graph& small) {
  auto text = read_text_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + file, 1 << 20);
  auto spec = parse_graph_spec(*text);
  EXPECT_TRUE(spec.ok());
  for (auto& in : spec->inputs) {
    for (auto& d : in.type.shape) d = d > 64 ? 5 + d % 7 : d;
  }
  for (auto& n : spec->nodes) n.shape.reset();
  auto g = build_graph(*spec);
  EXPECT_TRUE(g.ok()) << file;
  small = std::move(g).value();
  std::vector<HostTensor> inputs;
  for (const auto& in : small.inputs()) {
    HostTensor t{in.type, {}};
    for (std::int64_t i = 0; i < in.type.numel(); ++i) t.values.push_back(std::fmod(i * 0.37, 3.0) - 1.5);
    inputs.push_back(std::move(t));
  }
  auto values = evaluate_reference(small, inputs);
  EXPECT_TRUE(values.ok());
  return std::move(values).value();
}

TEST(FusionFamilySamples, TheReferenceComputesWhatTheSamplesDescribe) {
  Graph g;
  const auto cat = reference_of_small("concat_branches.json", g);
  const Shape& s = g.value_type(g.value_of(node(g, "out"))).shape;  // [rows, 3 * cols]
  const std::int64_t cols = s[1] / 3;
  const auto& x = cat[0].values;
  const auto& y = cat[1].values;
  const auto& z = cat[2].values;
  const auto& out = cat[static_cast<std::size_t>(g.value_of(node(g, "out")))].values;
  const auto silu = [](double v) { return v / (1 + std::exp(-v)); };
  for (std::int64_t r = 0; r < s[0]; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto i = static_cast<std::size_t>(r * cols + c), o = static_cast<std::size_t>(r * s[1] + c);
      EXPECT_NEAR(out[o], silu(std::max(x[i], 0.0)), 1e-12);
      EXPECT_NEAR(out[o + static_cast<std::size_t>(cols)], silu(std::tanh(y[i])), 1e-12);
      EXPECT_NEAR(out[o + 2 * static_cast<std::size_t>(cols)], silu(z[i] * 0.5), 1e-12);
    }
  }
  Graph h;
  const auto mv = reference_of_small("mean_variance.json", h);
  const Shape& xs = h.inputs()[0].type.shape;
  const auto& var = mv[static_cast<std::size_t>(h.value_of(node(h, "var")))].values;
  const auto& peak = mv[static_cast<std::size_t>(h.value_of(node(h, "peak")))].values;
  ASSERT_EQ(var.size(), static_cast<std::size_t>(xs[0]));
  for (std::int64_t r = 0; r < xs[0]; ++r) {
    double sum = 0, sq = 0, most = -1e300;
    for (std::int64_t c = 0; c < xs[1]; ++c) {
      const double v = mv[0].values[static_cast<std::size_t>(r * xs[1] + c)];
      sum += v, sq += v * v, most = std::max(most, v);
    }
    const double mean = sum / static_cast<double>(xs[1]);
    double centred = 0;
    for (std::int64_t c = 0; c < xs[1]; ++c) centred += std::pow(mv[0].values[static_cast<std::size_t>(r * xs[1] + c)] - mean, 2);
    EXPECT_NEAR(var[static_cast<std::size_t>(r)], centred / static_cast<double>(xs[1]), 1e-12) << "population variance";
    EXPECT_EQ(peak[static_cast<std::size_t>(r)], most);
  }
}

}  // namespace
}  // namespace fx
