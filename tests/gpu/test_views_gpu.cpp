// Views on the GPU (core/analysis/views.h): a reshape alone launches nothing and its value is its source's
// buffer, in both plans; outputs that would share a buffer stay copies; a view of a value a convolution writes
// channels-last reads its NCHW bytes. Every run is verified fused against unfused and, where small, against the
// float64 reference. Skips with a message where no CUDA device exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"
#include "kernels/executor/executor.h"
#include "tests/gpu/executor_test_support.h"
#include "tests/gpu/test_contraction_support.h"

namespace fx::gpu {
namespace {

struct Plans {
  Plan unfused, fused;
};

Plans plans_of(const Graph& g) {
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  Plans p{Plan::unfused(g, engine.cost_model()), {}};
  engine.auto_fuse();
  p.fused = engine.plan();
  return p;
}

RunReport run_plans(const Graph& g, const Plans& p, RunOptions opt = {}) {
  opt.timing.repeat = 2;
  opt.timing.warmup = 1;
  Executor ex(g, p.unfused, p.fused, opt);
  return ex.run();
}

void expect_verified(const RunReport& r, const std::string& what, bool reference = true) {
  EXPECT_TRUE(r.verified) << what;
  for (const auto& checks : {r.checks, r.reference_checks}) {
    for (const auto& c : checks) {
      EXPECT_TRUE(c.passed) << what << ": " << c.name << " rel. error " << c.rel_error << " (limit " << c.threshold
                            << "), " << c.nan_count << " NaN";
    }
  }
  if (reference) {
    EXPECT_FALSE(r.reference_checks.empty()) << what << ": " << r.reference_note;
  }
}

// No kernel of the plan runs the named node.
bool runs(const PlanReport& p, const std::string& node) {
  return std::any_of(p.kernels.begin(), p.kernels.end(), [&](const KernelReport& k) {
    return std::find(k.nodes.begin(), k.nodes.end(), node) != k.nodes.end();
  });
}

bool has_note(const PlanReport& p, const std::string& text) {
  return std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

std::string notes(const PlanReport& p) {
  std::string s;
  for (const auto& n : p.notes) s += n + "\n";
  for (const auto& k : p.kernels) s += "  " + k.name + ": " + k.path + "\n";
  return s;
}

// The exported GPT-2 block at full size: its 12 reshapes sit between a GEMM and the residual add, around the head
// split and between the MLP's GEMMs. Unfused, each is a view: no kernel, no time, and the outputs agree.
TEST(ViewsGpu, Gpt2BlockRunsItsReshapesAsViews) {
  FX_REQUIRE_DEVICE();
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/gpt2_block_hf.json");
  ASSERT_TRUE(g.ok());
  const Plans p = plans_of(*g);
  ASSERT_EQ(p.unfused.view_count(), 12);
  RunOptions opt;
  opt.autotune = false;  // default layouts: the views are the point, not the layouts
  opt.reference = RunOptions::Reference::off;
  const RunReport r = run_plans(*g, p, opt);
  expect_verified(r, "gpt2_block_hf", false);
  for (const char* view : {"view", "view_1", "view_6", "view_8", "view_10"}) {
    EXPECT_FALSE(runs(r.unfused, view)) << view << "\n" << notes(r.unfused);
  }
  EXPECT_TRUE(has_note(r.unfused, "12 views launch nothing (view, view_1, view_2, view_3 and 8 more)")) << notes(r.unfused);
  // Each of its kernels is one launched group of the plan, none a view.
  EXPECT_GE(r.unfused.kernels.size(), static_cast<std::size_t>(p.unfused.kernel_count()));
  for (const KernelReport& k : r.unfused.kernels) EXPECT_FALSE(p.unfused.find(k.group)->is_view()) << k.name;
  EXPECT_LT(r.fused.kernels.size(), r.unfused.kernels.size());
}

// A reshape between two GEMMs joins neither (a library epilogue applies to the output in its own shape, a GEMM reads operands from
// memory): it stays a view in the fused plan too, and the second GEMM reads the first one's buffer.
TEST(ViewsGpu, AViewBetweenTwoGemmsStaysAViewInTheFusedPlan) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(
      R"({"name": "x", "shape": [64, 96], "dtype": "f32"}, {"name": "W1", "shape": [96, 128], "dtype": "f32"},
         {"name": "W2", "shape": [64, 32], "dtype": "f32"})",
      R"({"name": "m1", "op": "matmul", "inputs": ["x", "W1"]},
         {"name": "r", "op": "reshape", "inputs": ["m1"], "attrs": {"shape": [128, 64]}},
         {"name": "m2", "op": "matmul", "inputs": ["r", "W2"]})",
      R"("m2")");
  const Plans p = plans_of(g);
  ASSERT_TRUE(p.fused.group_of_node(*g.find_node("r")).is_view());
  const RunReport r = run_plans(g, p);
  expect_verified(r, "matmul -> reshape -> matmul");
  for (const PlanReport* plan : {&r.unfused, &r.fused}) {
    EXPECT_EQ(plan->kernels.size(), 2u) << notes(*plan);
    EXPECT_FALSE(runs(*plan, "r")) << notes(*plan);
    EXPECT_TRUE(has_note(*plan, "1 view launches nothing (r)")) << notes(*plan);
  }
}

// A graph output that is a view shares its source's buffer; bound to the caller's buffer, the step writing the
// source writes there. An output holding an input's bytes, or two outputs holding one value's, stay copies, and
// the plan says why.
TEST(ViewsGpu, OutputViewsAndTheCopiesThatStay) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(
      R"({"name": "x", "shape": [256, 384], "dtype": "f32"})",
      R"({"name": "a", "op": "exp", "inputs": ["x"]}, {"name": "y", "op": "reshape", "inputs": ["a"], "attrs": {"shape": [-1]}},
         {"name": "b", "op": "neg", "inputs": ["x"]}, {"name": "p", "op": "reshape", "inputs": ["b"], "attrs": {"shape": [384, 256]}},
         {"name": "q", "op": "reshape", "inputs": ["b"], "attrs": {"shape": [-1]}},
         {"name": "c", "op": "reshape", "inputs": ["x"], "attrs": {"shape": [-1]}})",
      R"("y", "p", "q", "c")");
  Plans p{Plan::unfused(g, CostModel(DeviceDescription::h100_sxm())), {}};
  p.fused = p.unfused;  // the same plan both ways: the views and copies are the point
  ASSERT_TRUE(p.unfused.group_of_node(*g.find_node("y")).is_view());
  const RunReport r = run_plans(g, p);
  expect_verified(r, "output views");
  EXPECT_FALSE(runs(r.unfused, "y")) << notes(r.unfused);
  for (const char* copy : {"p", "q", "c"}) EXPECT_TRUE(runs(r.unfused, copy)) << copy << "\n" << notes(r.unfused);
  EXPECT_TRUE(has_note(r.unfused, "g:c: a copy, not a view: c is a graph output holding the bytes of graph input x"))
      << notes(r.unfused);
  EXPECT_TRUE(has_note(r.unfused, "g:p: a copy, not a view: p and q are graph outputs holding the bytes of b"))
      << notes(r.unfused);

  // Bound: y into the caller's buffer, which then holds exp(x) as the plan's own buffer did.
  Executor ex(g, p.unfused, p.fused, RunOptions{});
  for (const OutputCheck& c : ex.prepare_with_inputs()) ASSERT_TRUE(c.passed) << c.name;
  constexpr std::size_t kN = 256 * 384, kBytes = kN * 4;
  auto stream = static_cast<cudaStream_t>(ex.stream());
  test::DeviceArray want(kBytes), y(kBytes);
  ex.enqueue(PlanId::unfused);
  ASSERT_EQ(cudaMemcpyAsync(want.get(), ex.buffer(PlanId::unfused, "y"), kBytes, cudaMemcpyDeviceToDevice, stream), cudaSuccess);
  EXPECT_EQ(ex.buffer(PlanId::unfused, "y"), ex.buffer(PlanId::unfused, "a"));  // one buffer, no copy
  ex.bind_outputs(PlanId::unfused, {{"y", y.get()}});
  EXPECT_EQ(ex.buffer(PlanId::unfused, "a"), y.get());
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  ASSERT_EQ(cudaMemset(y.get(), 0xFF, kBytes), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ex.enqueue(PlanId::unfused);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(test::count_different(y.get(), want.get(), kN, DType::f32), 0)
      << "elements of the bound view y that differ from the plan's own (NaN: never written)";
}

// Convolutions forced channels-last: c1 is written NHWC and read NHWC by c2, and a view r of it feeds the 1x1
// convolution c3 (a reshape joins neither convolution). The view reads c1's NCHW bytes, so c1 is converted back
// right after its convolution; without that conversion r would read the poisoned NCHW buffer and c3 be NaN.
TEST(ViewsGpu, AViewOfAChannelsLastValueReadsItsNchwBytes) {
  FX_REQUIRE_DEVICE();
  const Graph g = inline_graph(
      R"({"name": "x", "shape": [2, 8, 10, 10], "dtype": "f32"}, {"name": "w1", "shape": [8, 8, 3, 3], "dtype": "f32"},
         {"name": "w2", "shape": [8, 8, 3, 3], "dtype": "f32"}, {"name": "w3", "shape": [8, 8, 1, 1], "dtype": "f32"})",
      R"({"name": "c1", "op": "conv2d", "inputs": ["x", "w1"], "attrs": {"padding": 1}},
         {"name": "c2", "op": "conv2d", "inputs": ["c1", "w2"], "attrs": {"padding": 1}},
         {"name": "r", "op": "reshape", "inputs": ["c1"], "attrs": {"shape": [2, 8, 100, 1]}},
         {"name": "c3", "op": "conv2d", "inputs": ["r", "w3"]})",
      R"("c2", "c3")");
  const Plans p = plans_of(g);
  ASSERT_TRUE(p.fused.group_of_node(*g.find_node("r")).is_view());
  RunOptions opt;
  opt.force_layout = 1;  // every convolution NHWC; values kept channels-last between steps (keep_nhwc)
  const RunReport r = run_plans(g, p, opt);
  expect_verified(r, "conv -> view -> conv, channels-last");
  for (const PlanReport* plan : {&r.unfused, &r.fused}) {
    EXPECT_FALSE(runs(*plan, "r")) << notes(*plan);
    if (has_note(*plan, "values kept channels-last across steps: 3 convolutions run NHWC")) {
      EXPECT_TRUE(std::any_of(plan->kernels.begin(), plan->kernels.end(), [](const KernelReport& k) {
        return k.path.find("c1 converted NHWC -> NCHW for ") != std::string::npos &&
               k.path.find("the view r") != std::string::npos;
      })) << notes(*plan);
    } else {
      std::cout << "[ note ] " << plan->name << ": values not kept channels-last here\n" << notes(*plan);
    }
  }
}

}  // namespace
}  // namespace fx::gpu
