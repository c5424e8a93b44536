// The persistent tuning cache in the executor: a second run on the same GPU takes every choice the first one
// timed from the cache (generated kernels' layouts, cuBLASLt searches and their finalists, cuDNN's engines,
// convolutions' NCHW/NHWC ways, horizontal GEMMs' one call or parts), verifies the same
// and says so per kernel; --retune times everything again. Skips with a message where no CUDA device exists.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"
#include "kernels/common/stream_gate.h"
#include "kernels/executor/executor.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

namespace fs = std::filesystem;

Graph sample(const std::string& name) {
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + name + ".json");
  EXPECT_TRUE(g.ok()) << name;
  return std::move(g).value();
}

RunReport run_with_cache(const Graph& g, const fs::path& cache, bool retune = false) {
  FusionEngine engine(g, DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  engine.auto_fuse();
  RunOptions opt;
  opt.timing.repeat = 3;
  opt.timing.warmup = 1;
  opt.tuning_cache_dir = cache.string();
  opt.retune = retune;
  Executor ex(engine.graph(), unfused, engine.plan(), opt);
  return ex.run();
}

int reused_kernels(const RunReport& r) {
  int n = 0;
  for (const PlanReport* p : {&r.unfused, &r.fused})
    for (const KernelReport& k : p->kernels) n += k.tuned_at.empty() ? 0 : 1;
  return n;
}

std::string paths(const RunReport& r) {
  std::string s;
  for (const PlanReport* p : {&r.unfused, &r.fused})
    for (const KernelReport& k : p->kernels) s += p->name + " " + k.name + ": " + k.path + "\n";
  for (const std::string& w : r.tuning_warnings) s += "warning: " + w + "\n";
  return s;
}

class TuningCacheGpu : public ::testing::TestWithParam<const char*> {};

TEST_P(TuningCacheGpu, ASecondRunReusesEveryChoiceAndRetuneTimesThemAgain) {
  FX_REQUIRE_DEVICE();
  char folder[] = "/tmp/fx-tuning-gpu-XXXXXX";
  const fs::path cache = ::mkdtemp(folder);
  const Graph g = sample(GetParam());

  const std::uint64_t gates_timed_out = StreamGate::timeouts();
  const RunReport first = run_with_cache(g, cache);
  EXPECT_TRUE(first.verified) << paths(first);
  // No timed window waited for the host: a way's first launch (a kernel loaded lazily) waits on the stream, and
  // behind a gate it stalls until the gate gives up (100 ms per way; a cold run's tuning was most of that).
  EXPECT_EQ(StreamGate::timeouts(), gates_timed_out) << paths(first);
  EXPECT_GT(first.tuned_steps, 0) << paths(first);
  EXPECT_EQ(first.reused_steps, 0);
  EXPECT_EQ(reused_kernels(first), 0) << paths(first);
  EXPECT_TRUE(first.tuning_warnings.empty()) << paths(first);

  const RunReport second = run_with_cache(g, cache);
  EXPECT_TRUE(second.verified) << paths(second);
  EXPECT_TRUE(second.tuning_warnings.empty()) << paths(second);
  EXPECT_EQ(second.tuned_steps, 0) << paths(second);
  EXPECT_EQ(second.reused_steps, first.tuned_steps) << paths(second);
  EXPECT_GT(reused_kernels(second), 0) << paths(second);
  EXPECT_NE(paths(second).find("reused from the tuning cache"), std::string::npos) << paths(second);
  // The same choices: every kernel runs in the same layout or configuration as the first run kept, and each
  // one whose choice the first run timed (a layout, a convolution's NCHW/NHWC way, a horizontal GEMM's one call
  // or parts) says it was reused.
  ASSERT_EQ(second.fused.kernels.size(), first.fused.kernels.size());
  for (const auto& [a, b] : {std::pair{&first.unfused, &second.unfused}, std::pair{&first.fused, &second.fused}}) {
    ASSERT_EQ(a->kernels.size(), b->kernels.size()) << paths(second);
    for (std::size_t i = 0; i < a->kernels.size(); ++i) {
      EXPECT_EQ(a->kernels[i].name, b->kernels[i].name);
      const bool tuned = a->kernels[i].path.find("timed here") != std::string::npos;
      const bool engine_searched = a->kernels[i].path.find("configurations timed (") != std::string::npos;  // cuDNN's
      if (!tuned && !engine_searched) continue;
      EXPECT_NE(b->kernels[i].path.find("reused from the tuning cache"), std::string::npos) << b->kernels[i].path;
      if (tuned) {
        EXPECT_FALSE(b->kernels[i].tuned_at.empty()) << b->kernels[i].name;
      }
    }
  }

  const RunReport again = run_with_cache(g, cache, /*retune=*/true);
  EXPECT_TRUE(again.verified);
  EXPECT_EQ(again.reused_steps, 0) << paths(again);
  EXPECT_EQ(again.tuned_steps, first.tuned_steps) << paths(again);
  EXPECT_EQ(paths(again).find("reused from the tuning cache"), std::string::npos) << paths(again);
  fs::remove_all(cache);
}

// A generated elementwise chain (layouts), an f32 MLP (a cuBLASLt search and its finalists in the plan), a bf16
// one, a convolution (its NCHW call against its NHWC way) and three projections of one x (a horizontal GEMM's
// one strided-batched call against its parts).
INSTANTIATE_TEST_SUITE_P(Samples, TuningCacheGpu,
                         ::testing::Values("relu_mul_add", "mlp_relu_f32", "mlp_relu_small_bf16", "conv_bn_relu",
                                           "qkv_bf16"));

}  // namespace
}  // namespace fx::gpu
