// The executor compiles both plans' kernels as one batch (NvrtcCompiler::compile_all) in the "compile" stage: a
// convolution's NHWC conversions with the generated kernels, nothing before it; a second run finds every kernel
// in the NVRTC disk cache. Skips with a message where no CUDA device exists.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"
#include "kernels/executor/executor.h"
#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

namespace fs = std::filesystem;

struct Seen {
  RunReport report;
  std::vector<std::pair<std::string, std::string>> progress;  // (stage, message) in order
  std::vector<std::string> stages() const {
    std::vector<std::string> s;
    for (const auto& [stage, message] : progress)
      if (s.empty() || s.back() != stage) s.push_back(stage);
    return s;
  }
  std::string text() const {
    std::string t;
    for (const auto& [stage, message] : progress) t += stage + ": " + message + "\n";
    return t;
  }
};

Seen run_sample(const std::string& name, const fs::path& tuning) {
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + name + ".json");
  EXPECT_TRUE(g.ok()) << name;
  FusionEngine engine(g.value(), DeviceDescription::h100_sxm());
  const Plan unfused = Plan::unfused(engine.graph(), engine.cost_model());
  engine.auto_fuse();
  Seen seen;
  RunOptions opt;
  opt.timing.repeat = 3;
  opt.timing.warmup = 1;
  opt.tuning_cache_dir = tuning.string();
  opt.progress = [&](const std::string& stage, double, const std::string& message) {
    seen.progress.emplace_back(stage, message);
  };
  Executor ex(engine.graph(), unfused, engine.plan(), opt);
  seen.report = ex.run();
  return seen;
}

TEST(ParallelCompileGpu, TheConversionsCompileInTheCompileStageAndASecondRunCompilesNothing) {
  FX_REQUIRE_DEVICE();
  char folder[] = "/tmp/fx-parallel-compile-XXXXXX";
  const fs::path root = ::mkdtemp(folder);
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", (root / "cache").c_str(), 1);  // a cold NVRTC cache

  const Seen cold = run_sample("conv_bn_relu", root / "tuning");
  EXPECT_TRUE(cold.report.verified) << cold.text();
  // device, generate, compile, in that order, nothing compiled before the compile stage.
  const std::vector<std::string> stages = cold.stages();
  ASSERT_GE(stages.size(), 3u) << cold.text();
  EXPECT_EQ(stages[0], "device");
  EXPECT_EQ(stages[1], "generate");
  EXPECT_EQ(stages[2], "compile");
  std::string compiled_message;
  for (const auto& [stage, message] : cold.progress)
    if (stage == "compile") compiled_message = message;
  // The convolution's two conversions, each in its layouts, are in the batch beside the generated kernels.
  EXPECT_NE(compiled_message.find("not in memory loaded (from the disk cache, or compiled)"), std::string::npos)
      << cold.text();
  EXPECT_GT(cold.report.kernels_compiled, 4) << cold.text();
  EXPECT_GT(cold.report.compile_seconds, 0);
  EXPECT_GT(cold.report.compile_wall_seconds, 0);

  const Seen warm = run_sample("conv_bn_relu", root / "tuning");
  EXPECT_TRUE(warm.report.verified) << warm.text();
  EXPECT_EQ(warm.report.kernels_compiled, 0) << warm.text();
  EXPECT_GE(warm.report.cache_hits, cold.report.kernels_compiled) << warm.text();

  if (old) {
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    ::unsetenv("XDG_CACHE_HOME");
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace fx::gpu
