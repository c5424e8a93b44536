// Where a plan keeps values channels-last and where it converts them (kernels/executor/channels_last_plan.h),
// without a GPU: a residual block as resnet18 has them, an output read NCHW, an elementwise kernel that cannot
// run NHWC, a pool run by its channels-last variant, and which kernels count as layout-free.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/graph/graph_io.h"
#include "kernels/executor/channels_last_plan.h"

namespace fx::gpu {
namespace {

using Role = LayoutStep::Role;

// x -> conv c0 -> max pool p -> conv c1 -> conv c2 -> s = c2 + p -> r = relu(s) -> conv c3 -> mean m, and values
// for the layout-free checks: z (an input of r's shape), bias [8, 1, 1], k (a scalar).
Graph block(const std::string& outputs) {
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "block", "inputs": [
      {"name": "x", "shape": [2, 8, 6, 6], "dtype": "f32"}, {"name": "w", "shape": [8, 8, 3, 3], "dtype": "f32"},
      {"name": "w3", "shape": [8, 8, 1, 1], "dtype": "f32"}, {"name": "z", "shape": [2, 8, 6, 6], "dtype": "f32"},
      {"name": "bias", "shape": [8, 1, 1], "dtype": "f32"}, {"name": "k", "shape": [], "dtype": "f32"}],
    "nodes": [
      {"name": "c0", "op": "conv2d", "inputs": ["x", "w"], "attrs": {"padding": 1}},
      {"name": "p", "op": "max_pool2d", "inputs": ["c0"], "attrs": {"kernel_size": 3, "padding": 1}},
      {"name": "c1", "op": "conv2d", "inputs": ["p", "w"], "attrs": {"padding": 1}},
      {"name": "c2", "op": "conv2d", "inputs": ["c1", "w"], "attrs": {"padding": 1}},
      {"name": "s", "op": "add", "inputs": ["c2", "p"]},
      {"name": "r", "op": "relu", "inputs": ["s"]},
      {"name": "c3", "op": "conv2d", "inputs": ["r", "w3"]},
      {"name": "m", "op": "mean", "inputs": ["c3"], "attrs": {"axis": [2, 3]}},
      {"name": "sz", "op": "add", "inputs": ["c2", "z"]},
      {"name": "sb", "op": "add", "inputs": ["c2", "bias"]},
      {"name": "sk", "op": "mul", "inputs": ["c2", "k"]},
      {"name": "dr", "op": "dropout", "inputs": ["c2"], "attrs": {"p": 0.1}}],
    "outputs": [)" + outputs + "]}");
  EXPECT_TRUE(g.ok()) << format_diagnostics(g.errors());
  return std::move(g).value();
}

struct Block {
  Graph g;
  ValueId v(const std::string& name) const { return *g.find_value(name); }
  NodeId n(const std::string& name) const { return *g.find_node(name); }
  LayoutStep conv(const std::string& x, const std::string& w, const std::string& y) const {
    return {Role::nhwc_conv, {v(x), v(w)}, {v(y)}, v(x)};
  }
  LayoutStep other(const std::vector<std::string>& in, const std::string& out) const {
    LayoutStep s{Role::nchw, {}, {v(out)}, -1};
    for (const auto& i : in) s.inputs.push_back(v(i));
    return s;
  }
  // The fused plan: conv, pool, conv, conv, add + relu as one kernel, conv, mean.
  std::vector<LayoutStep> steps() const {
    LayoutStep add_relu = other({"c2", "p"}, "r");
    add_relu.role = Role::layout_free;
    return {conv("x", "w", "c0"), other({"c0"}, "p"),        conv("p", "w", "c1"), conv("c1", "w", "c2"),
            add_relu,             conv("r", "w3", "c3"),     other({"c3"}, "m")};
  }
};

std::string describe(const Block& b, const ChannelsLastPlan& plan) {
  std::string s;
  for (const auto& c : plan.conversions) {
    s += b.g.value_name(c.value) + (c.to_nhwc ? " to NHWC" : " to NCHW") + " before " + std::to_string(c.position) + "; ";
  }
  return s;
}

TEST(ChannelsLastPlan, AResidualBlockStaysNhwcAndConvertsOnlyForThePoolAndTheMean) {
  const Block b{block(R"("m")")};
  const ChannelsLastPlan plan = plan_channels_last(b.g, b.steps());
  // 4 conversions where each convolution converting its own x and y would launch 8.
  EXPECT_EQ(describe(b, plan), "x to NHWC before 0; c0 to NCHW before 1; p to NHWC before 2; c3 to NCHW before 6; ");
  EXPECT_EQ(plan.channels_last, (std::vector<bool>{false, false, false, false, true, false, false}));
  // p is kept in both layouts: the pool writes it NCHW, the add reads it NHWC (converted for c1 anyway).
  EXPECT_EQ(plan.nhwc_values, (std::vector<ValueId>{b.v("x"), b.v("c0"), b.v("p"), b.v("c1"), b.v("c2"), b.v("r"), b.v("c3")}));
  const std::int64_t value = 2 * 8 * 6 * 6 * 4;  // every value here is f32 [2, 8, 6, 6]
  EXPECT_EQ(plan.bytes, 4 * 2 * value);
  EXPECT_EQ(plan.bytes_around, 8 * 2 * value);
  EXPECT_TRUE(plan.gains());
}

// The same block with the pool run by its channels-last variant (as the executor plans it, the generator having
// one for max_pool2d): c0 is pooled where it lies, and only the graph's input and the mean's input are
// converted, where the NCHW pool cost two conversions more (c0 back, p in again).
TEST(ChannelsLastPlan, APoolWithAChannelsLastVariantPoolsWhereTheValuesLie) {
  const Block b{block(R"("m")")};
  std::vector<LayoutStep> steps = b.steps();
  steps[1].role = Role::nhwc_variant;
  const ChannelsLastPlan plan = plan_channels_last(b.g, steps);
  EXPECT_EQ(describe(b, plan), "x to NHWC before 0; c3 to NCHW before 6; ");
  EXPECT_EQ(plan.channels_last, (std::vector<bool>{false, true, false, false, true, false, false}));
  EXPECT_EQ(plan.nhwc_values, (std::vector<ValueId>{b.v("x"), b.v("c0"), b.v("p"), b.v("c1"), b.v("c2"), b.v("r"), b.v("c3")}));
  const std::int64_t value = 2 * 8 * 6 * 6 * 4;
  EXPECT_EQ(plan.bytes, 2 * 2 * value);
  EXPECT_TRUE(plan.gains());
  // Its output a graph output: converted back right after the pool, the pool still run NHWC.
  const Block out{block(R"("m", "p")")};
  const ChannelsLastPlan with_output = plan_channels_last(out.g, steps);
  EXPECT_TRUE(with_output.channels_last[1]);
  EXPECT_EQ(describe(out, with_output), "x to NHWC before 0; p to NCHW before 2; c3 to NCHW before 6; ");
  // Its input written NCHW (the first convolution run NCHW): the pool runs NCHW and p is converted for c1.
  steps[0] = out.other({"x", "w"}, "c0");
  const ChannelsLastPlan nchw_input = plan_channels_last(b.g, steps);
  EXPECT_FALSE(nchw_input.channels_last[1]);
  EXPECT_EQ(describe(b, nchw_input), "p to NHWC before 2; c3 to NCHW before 6; ");
}

// The first convolution in space-to-depth form (kernels/contraction/space_to_depth.h): a step before it rearranges
// x from its NCHW buffer into the convolution's own scratch, so x is never converted nor kept NHWC, and only y
// counts among the conversions around it.
TEST(ChannelsLastPlan, ASpaceToDepthConvolutionReadsItsInputAsNchw) {
  const Block b{block(R"("m")")};
  std::vector<LayoutStep> steps = b.steps();
  steps[0].conv_x = -1;
  steps[0].inputs = {b.v("w")};  // x is read by the rearrangement, not by the convolution
  steps[1].role = Role::nhwc_variant;
  steps.insert(steps.begin(), LayoutStep{Role::nchw, {b.v("x")}, {}, -1});  // the rearrangement
  const ChannelsLastPlan plan = plan_channels_last(b.g, steps);
  EXPECT_EQ(describe(b, plan), "c3 to NCHW before 7; ");
  EXPECT_EQ(plan.nhwc_values, (std::vector<ValueId>{b.v("c0"), b.v("p"), b.v("c1"), b.v("c2"), b.v("r"), b.v("c3")}));
  const std::int64_t value = 2 * 8 * 6 * 6 * 4;
  EXPECT_EQ(plan.bytes, 2 * value);
  EXPECT_EQ(plan.bytes_around, 7 * 2 * value);  // c0's y; x and y of c1, c2 and c3
  EXPECT_TRUE(plan.gains());
}

// A convolution tuning kept NCHW between channels-last neighbours (c1, after the pool run NHWC): run NCHW it
// costs two conversions (p back to NCHW for it, c1 to NHWC for c2). Weighed again with the times tuning took, it
// runs NHWC when its call alone plus the conversions then launched beats the NCHW call plus those launched now,
// the conversions costed at the rate its own were timed at; else it stays as tuned.
TEST(ChannelsLastPlan, AConvolutionKeptNchwIsWeighedAgainWithoutTheConversionsThePlanDoesNotLaunch) {
  const Block b{block(R"("m")")};
  std::vector<LayoutStep> steps = b.steps();
  steps[1].role = Role::nhwc_variant;
  steps[2] = b.other({"p", "w"}, "c1");
  const std::int64_t value = 2 * 8 * 6 * 6 * 4;
  // Its own conversions (x and y, each read and written) took 0.008 ms for 4 values' bytes: 0.002 ms a value.
  NchwConvolution c1{2, b.v("p"), 0.010, 0.012, 0.020, 4 * value};
  const ChannelsLastPlan as_tuned = plan_channels_last(b.g, steps);
  EXPECT_EQ(describe(b, as_tuned), "x to NHWC before 0; p to NCHW before 2; c1 to NHWC before 3; c3 to NCHW before 6; ");
  const std::vector<NchwConvolution> worth = {c1};
  const Reweighed rw = reweigh_nchw_convolutions(b.g, steps, worth);
  ASSERT_EQ(rw.nhwc.size(), 1u);
  EXPECT_EQ(rw.nhwc[0].first, 2u);
  EXPECT_NEAR(rw.nhwc[0].second, -0.002 + 0.008, 1e-12);  // 2 fewer conversions: 4 values' bytes at 0.002 ms
  EXPECT_EQ(rw.steps[2].role, Role::nhwc_conv);
  EXPECT_EQ(rw.steps[2].conv_x, b.v("p"));
  EXPECT_EQ(describe(b, rw.plan), "x to NHWC before 0; c3 to NCHW before 6; ");
  EXPECT_NEAR(nhwc_saving_ms(c1, as_tuned.bytes, rw.plan.bytes), 0.006, 1e-12);
  // Its NHWC call alone 0.009 ms slower than NCHW: the 0.008 ms of conversions saved do not make up for it.
  c1.nhwc_alone_ms = 0.019;
  const std::vector<NchwConvolution> not_worth = {c1};
  const Reweighed kept = reweigh_nchw_convolutions(b.g, steps, not_worth);
  EXPECT_TRUE(kept.nhwc.empty());
  EXPECT_EQ(kept.steps[2].role, Role::nchw);
  EXPECT_EQ(describe(b, kept.plan), describe(b, as_tuned));
  // Between NCHW neighbours it would add its own two conversions: never worth what tuning refused.
  const std::vector<LayoutStep> alone = {b.other({"x", "w"}, "c0")};
  const NchwConvolution c0{0, b.v("x"), 0.010, 0.012, 0.020, 4 * value};
  EXPECT_TRUE(reweigh_nchw_convolutions(b.g, alone, std::vector<NchwConvolution>{c0}).nhwc.empty());
}

// One convolution between NCHW neighbours converts its x and y either way; an elementwise kernel run NHWC whose
// two outputs are read NCHW converts more than the convolution's own pair would: neither is worth applying.
TEST(ChannelsLastPlan, APlanThatConvertsNoFewerBytesDoesNotGain) {
  const Block b{block(R"("m")")};
  const ChannelsLastPlan one = plan_channels_last(b.g, std::vector<LayoutStep>{b.conv("x", "w", "c0"), b.other({"c0"}, "p")});
  EXPECT_EQ(one.conversions.size(), 2u);
  EXPECT_EQ(one.bytes, one.bytes_around);
  EXPECT_FALSE(one.gains());

  LayoutStep two_outputs{Role::layout_free, {b.v("c0")}, {b.v("sz"), b.v("sk")}, -1};
  const ChannelsLastPlan more = plan_channels_last(
      b.g, std::vector<LayoutStep>{b.conv("x", "w", "c0"), two_outputs, b.other({"sz"}, "m"), b.other({"sk"}, "dr")});
  EXPECT_TRUE(more.channels_last[1]);
  EXPECT_EQ(more.conversions.size(), 3u);  // x in; sz and sk out, where the convolution's own pair was x in, c0 out
  EXPECT_GT(more.bytes, more.bytes_around);
  EXPECT_FALSE(more.gains());
}

TEST(ChannelsLastPlan, AGraphOutputIsConvertedBackRightAfterItsWriter) {
  const Block b{block(R"("m", "r")")};
  const ChannelsLastPlan plan = plan_channels_last(b.g, b.steps());
  EXPECT_EQ(describe(b, plan),
            "x to NHWC before 0; c0 to NCHW before 1; p to NHWC before 2; r to NCHW before 5; c3 to NCHW before 6; ");
  EXPECT_TRUE(plan.channels_last[4]);
}

// A view (a reshape alone: no step, core/analysis/views.h) reads its source's NCHW buffer in row-major order, so
// a value a view reads is converted back right after its writer, as for a graph output; the reweighing of a
// convolution kept NCHW counts that conversion too.
TEST(ChannelsLastPlan, AValueAViewReadsIsConvertedBackRightAfterItsWriter) {
  const Block b{block(R"("m")")};
  const std::vector<ValueId> view_sources = {b.v("c1")};
  const ChannelsLastPlan kept = plan_channels_last(b.g, b.steps());
  const ChannelsLastPlan viewed = plan_channels_last(b.g, b.steps(), view_sources);
  EXPECT_EQ(describe(b, viewed),
            "x to NHWC before 0; c0 to NCHW before 1; p to NHWC before 2; c1 to NCHW before 3; c3 to NCHW before 6; ");
  EXPECT_EQ(viewed.bytes, kept.bytes + 2 * 2 * 8 * 6 * 6 * 4);
  const Reweighed rw = reweigh_nchw_convolutions(b.g, b.steps(), {}, view_sources);
  EXPECT_EQ(describe(b, rw.plan), describe(b, viewed));
}

// An elementwise kernel with an input no convolution reads NHWC runs NCHW: its NHWC input is converted back,
// and its output converted for the convolution after it.
TEST(ChannelsLastPlan, AnElementwiseKernelWithAnNchwOnlyInputStaysNchw) {
  const Block b{block(R"("m")")};
  std::vector<LayoutStep> steps = b.steps();
  steps[4].inputs = {b.v("c2"), b.v("z")};
  const ChannelsLastPlan plan = plan_channels_last(b.g, steps);
  EXPECT_FALSE(plan.channels_last[4]);
  EXPECT_EQ(describe(b, plan), "x to NHWC before 0; c0 to NCHW before 1; p to NHWC before 2; c2 to NCHW before 4; "
                               "r to NHWC before 5; c3 to NCHW before 6; ");
}

// Without an input written NHWC there is nothing to keep: an elementwise kernel between NCHW values stays so.
TEST(ChannelsLastPlan, NoConvolutionNoChange) {
  const Block b{block(R"("m")")};
  LayoutStep add = b.other({"c2", "p"}, "r");
  add.role = Role::layout_free;
  const ChannelsLastPlan plan = plan_channels_last(b.g, std::vector<LayoutStep>{add});
  EXPECT_TRUE(plan.conversions.empty());
  EXPECT_EQ(plan.channels_last, std::vector<bool>{false});
  EXPECT_TRUE(plan.nhwc_values.empty());
}

TEST(ChannelsLastPlan, LayoutFreeKernelsAreElementwiseOverOneShape) {
  const Block b{block(R"("m")")};
  auto free = [&](KernelKind kind, const std::vector<std::string>& nodes, const std::vector<std::string>& in,
                  const std::string& out) {
    std::vector<NodeId> ns;
    std::vector<ValueId> is;
    for (const auto& n : nodes) ns.push_back(b.n(n));
    for (const auto& i : in) is.push_back(b.v(i));
    const std::vector<ValueId> os = {b.v(out)};
    return is_layout_free(b.g, kind, ns, is, os);
  };
  EXPECT_TRUE(free(KernelKind::elementwise, {"s", "r"}, {"c2", "p"}, "r"));
  EXPECT_TRUE(free(KernelKind::elementwise, {"sz"}, {"c2", "z"}, "sz"));
  EXPECT_TRUE(free(KernelKind::elementwise, {"sk"}, {"c2", "k"}, "sk")) << "a scalar has one layout";
  EXPECT_FALSE(free(KernelKind::elementwise, {"sb"}, {"c2", "bias"}, "sb")) << "a per-channel broadcast";
  EXPECT_FALSE(free(KernelKind::elementwise, {"dr"}, {"c2"}, "dr")) << "dropout's mask follows the element index";
  EXPECT_FALSE(free(KernelKind::row_reduction, {"s", "r"}, {"c2", "p"}, "r"));
  EXPECT_FALSE(free(KernelKind::window_pool, {"p"}, {"c0"}, "p"));
  // A pool is not layout-free (its window follows H and W), but the generator has its channels-last variant.
  const std::vector<NodeId> pool = {b.n("p")}, add_relu = {b.n("s"), b.n("r")};
  EXPECT_TRUE(has_channels_last_variant(b.g, KernelKind::window_pool, pool));
  EXPECT_FALSE(has_channels_last_variant(b.g, KernelKind::elementwise, add_relu));
  EXPECT_FALSE(has_channels_last_variant(b.g, KernelKind::row_reduction, std::vector<NodeId>{b.n("m")}));
}

}  // namespace
}  // namespace fx::gpu
