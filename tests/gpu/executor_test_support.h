// Helpers shared by the GPU tests (test_executor, test_executor_contraction, test_reference_gpu, and those that run
// fusion-cli as a child): the no-device skip, the list of samples the generated kernels can run alone, and
// reading back what a child wrote.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/graph/graph_io.h"
#include "kernels/codegen/codegen.h"
#include "kernels/common/gpu_error.h"
#include "kernels/executor/executor.h"

namespace fx::gpu {

// A graph written inline in a test: its inputs, nodes and outputs as JSON array contents.
inline Graph inline_graph(const std::string& inputs, const std::string& nodes, const std::string& outputs) {
  auto g = load_graph(R"({"format": "fusion-explorer/graph", "version": 1, "name": "t", "inputs": [)" + inputs +
                      R"(], "nodes": [)" + nodes + R"(], "outputs": [)" + outputs + "]}");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : format_diagnostics(g.errors()));
  return std::move(g).value();
}

// True when device 0 can be queried; otherwise false with the reason in `why`.
inline bool have_device(std::string& why) {
  try {
    query_device(0);
    return true;
  } catch (const NoDeviceError& e) {
    why = e.what();
    return false;
  }
}

// Skips the current test, with the reason, where no CUDA device exists.
#define FX_REQUIRE_DEVICE()                                  \
  do {                                                       \
    std::string why_;                                        \
    if (!::fx::gpu::have_device(why_)) GTEST_SKIP() << why_; \
  } while (0)

// Samples the generated kernels can run alone: elementwise, layout and reduction ops only (no
// matmul/conv/sort/custom), sorted by file name.
inline std::vector<std::string> runnable_samples() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(std::string(FX_SOURCE_DIR) + "/sample_graphs")) {
    if (e.path().extension() != ".json") continue;
    auto g = load_graph_file(e.path());
    if (!g) continue;
    std::vector<NodeId> all;
    for (NodeId n = 0; n < g->num_nodes(); ++n) all.push_back(n);
    if (unsupported_reason(*g, all).empty()) out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The whole text of a file (empty where it cannot be read): a child process's output.
inline std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace fx::gpu
