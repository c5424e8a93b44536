// `fusion-cli run --timings-on-request`, the protocol bench/python/paired.py speaks: one JSON line per timing on
// stdout, the next timing when stdin says `time`, the run's report (kept on timing 0) after `end` or the end of
// input, the text report on stderr. The real fusion-cli runs as a child process with stdin from a file.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/gpu/executor_test_support.h"

namespace fx::gpu {
namespace {

namespace fs = std::filesystem;

struct Served {
  int exit_code = -1;
  std::vector<nlohmann::json> lines;  // stdout, one JSON object per line
  std::string err;
  nlohmann::json report;
};

// fusion-cli run on relu_mul_add.json with `requests` on stdin.
Served serve(const std::string& requests, const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("fx-cli-timings-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "in.txt") << requests;
  std::ofstream(dir / "protocol.json") << R"({"preset": "do_bench", "warmup_ms": 5, "repeat_ms": 20, "rest_ms": 50})";
  const std::string cmd = std::string(FX_CLI_PATH) + " run " + FX_SOURCE_DIR + "/sample_graphs/relu_mul_add.json" +
                          " --auto --protocol " + (dir / "protocol.json").string() + " --no-profile" +
                          " --timings-on-request --json " + (dir / "report.json").string() + " < " +
                          (dir / "in.txt").string() + " > " + (dir / "out.txt").string() + " 2> " +
                          (dir / "err.txt").string();
  const int status = std::system(cmd.c_str());
  Served s;
  s.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::istringstream out(read_all(dir / "out.txt"));
  for (std::string line; std::getline(out, line);) s.lines.push_back(nlohmann::json::parse(line));
  s.err = read_all(dir / "err.txt");
  if (fs::exists(dir / "report.json")) s.report = nlohmann::json::parse(read_all(dir / "report.json"));
  fs::remove_all(dir);
  return s;
}

TEST(FusionCliTimings, EachRequestTimesBothPlansAgain) {
  FX_REQUIRE_DEVICE();
  ASSERT_TRUE(fs::exists(FX_CLI_PATH)) << FX_CLI_PATH << " missing: build the fusion-cli target";
  const Served s = serve("time\n\ntime\nend\ntime\n", "time");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  ASSERT_EQ(s.lines.size(), 3u) << s.err;  // timing 0, then two requests; nothing after `end`
  for (std::size_t i = 0; i < s.lines.size(); ++i) {
    const auto& t = s.lines[i];
    EXPECT_EQ(t["timing"], static_cast<int>(i));
    EXPECT_GT(t["unfused_ms"].get<double>(), 0.0) << t.dump();
    EXPECT_GT(t["fused_ms"].get<double>(), 0.0) << t.dump();
    EXPECT_LT(t["fused_ms"].get<double>(), t["unfused_ms"].get<double>()) << t.dump();  // 3 kernels against 1
    EXPECT_GT(t["round_ms"].get<double>(), 0.0) << t.dump();
    EXPECT_TRUE(t.contains("gpu_clocks")) << t.dump();
  }
  // The text report went to stderr; the JSON report holds timing 0.
  EXPECT_NE(s.err.find("speedup"), std::string::npos) << s.err;
  ASSERT_TRUE(s.report.contains("plans")) << s.report.dump(2);
  EXPECT_EQ(s.report["plans"][1]["total_ms"], s.lines[0]["fused_ms"]);
  EXPECT_EQ(s.report["timing"]["repeat"], s.lines[0]["repeat"]);
  // The protocol file's values, over the do_bench preset's: the report names it custom.
  EXPECT_EQ(s.report["timing"]["preset"], "custom");
  EXPECT_EQ(s.report["timing"]["cold_l2"], true);
  EXPECT_EQ(s.report["timing"]["rest_ms"], 50.0);
  EXPECT_EQ(s.report["timing"]["repeat_ms"], 20.0);
}

TEST(FusionCliTimings, AnUnknownRequestEndsTheTimingsAndTheRunStillReports) {
  FX_REQUIRE_DEVICE();
  ASSERT_TRUE(fs::exists(FX_CLI_PATH)) << FX_CLI_PATH << " missing: build the fusion-cli target";
  const Served s = serve("again\n", "unknown");
  EXPECT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(s.lines.size(), 1u) << s.err;
  EXPECT_NE(s.err.find("--timings-on-request reads `time` or `end`, not 'again'; no more timings"), std::string::npos)
      << s.err;
  EXPECT_EQ(s.report["status"], "ok") << s.report.dump(2);
}

}  // namespace
}  // namespace fx::gpu
