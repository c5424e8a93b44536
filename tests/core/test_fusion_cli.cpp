// fusion-cli's fusion verbs, run as a program (FX_CLI_PATH): analyze, fuse, explain, dot --plan.
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

struct CliResult {
  int status;
  std::string out;
};

CliResult cli(const std::string& args) {
  const std::string command = std::string(FX_CLI_PATH) + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe.get())) out.append(buf.data(), n);
  const int status = pclose(pipe.release());
  return {WEXITSTATUS(status), out};
}

std::string sample(const std::string& name) { return std::string(FX_SOURCE_DIR) + "/sample_graphs/" + name; }

TEST(FusionCli, AnalyzeListsCandidatesAsJson) {
  const CliResult r = cli("analyze " + sample("relu_mul_add.json") + " --json --device h100");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["device"], "H100 SXM");
  EXPECT_EQ(j["kernels"], 3);
  ASSERT_EQ(j["candidates"].size(), 2u);
  EXPECT_EQ(j["candidates"][0]["id"], "v:mul+add");
  EXPECT_EQ(j["candidates"][0]["reason"], "FUSIBLE");
}

TEST(FusionCli, FuseWritesAFusedGraphThatDotDraws) {
  const auto dir = std::filesystem::temp_directory_path() / "fx_fusion_cli_test";
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "swiglu.fused.json").string();
  CliResult r = cli("fuse " + sample("swiglu_bf16.json") + " --auto -o " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("2 kernels"), std::string::npos) << r.out;
  r = cli("dot " + sample("swiglu_bf16.json") + " --plan " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("subgraph \"cluster_g0\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#fde9cf"), std::string::npos) << r.out;  // horizontal colour: the two GEMMs as one
  r = cli("explain " + out + " u act");
  EXPECT_NE(r.out.find("EPILOGUE_NOT_EXPRESSIBLE"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

TEST(FusionCli, FuseByIdAndBadIds) {
  CliResult r = cli("fuse " + sample("relu_mul_add.json") + " --accept v:mul+add --json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kernels"], 2);
  r = cli("fuse " + sample("relu_mul_add.json") + " --accept v:no+such");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("cannot accept v:no+such"), std::string::npos) << r.out;
  r = cli("fuse " + sample("relu_mul_add.json") + " --auto --disable sideways");
  EXPECT_EQ(r.status, 2);
}

TEST(FusionCli, ExplainNamesTheReasonAsJson) {
  // After auto-fuse the scores GEMM and the softmax share the attention kernel, and the answer says which.
  const CliResult r = cli("explain " + sample("gpt2_block.json") + " scores probs --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["fuse"], true);
  EXPECT_EQ(j["reason"], "FUSIBLE");
  EXPECT_NE(j["message"].get<std::string>().find("TF32 flash attention kernel"), std::string::npos) << r.out;
}

// The answers the GUI gives (core/fusion/explain.cpp), from the command line: roles named right, the user's
// nodes named with their kernels, a path through other kernels with the op that blocks it, and a scalar
// multiplication after a matmul taken as the GEMM's alpha.
TEST(FusionCli, ExplainNamesRolesNodesAndPaths) {
  // ln1 feeds q_mm: the matmul reads the layernorm's output, not the other way round.
  CliResult r = cli("explain " + sample("gpt2_block.json") + " ln1 q_mm --unfused --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  const std::string roles = j["message"];
  EXPECT_EQ(j["reason"], "CONTRACTION_PROLOGUE") << roles;
  EXPECT_NE(roles.find("q_mm (matmul) reads the output of ln1 (layernorm)"), std::string::npos) << roles;
  EXPECT_EQ(roles.find("ln1 (layernorm) reduces whole rows"), std::string::npos) << roles;

  // After auto-fuse q_b shares a kernel named after q_mm: the answer names q_b and says where it is.
  r = cli("explain " + sample("gpt2_block.json") + " q_b q_r --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  const std::string named = j["message"];
  EXPECT_EQ(named.rfind("q_b (in kernel g:q_mm)", 0), 0u) << named;

  // q_b reaches scaled only through other kernels: the path and the hop that is refused, not NOT_RELATED.
  r = cli("explain " + sample("gpt2_block.json") + " q_b masked --json");
  ASSERT_EQ(r.status, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  const std::string path = j["message"];
  EXPECT_NE(j["reason"], "NOT_RELATED") << path;
  EXPECT_EQ(j["path"].front(), "q_b");
  EXPECT_EQ(j["path"].back(), "masked");
  ASSERT_TRUE(j["blocking"].is_array()) << path;
  // "q_b (add) -> q_r (reshape) -> ... -> masked": the refused hop in full, the path's ends named.
  EXPECT_NE(path.find(j["blocking"][0].get<std::string>() + " ("), std::string::npos) << path;
  EXPECT_NE(path.find("-> " + j["blocking"][1].get<std::string>() + " ("), std::string::npos) << path;
  EXPECT_NE(path.find("masked"), std::string::npos) << path;

  // scores * 0.125 is the GEMM's alpha: fusible on the unfused graph, one kernel after auto-fuse.
  r = cli("explain " + sample("gpt2_block.json") + " scores scaled --unfused --json");
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["fuse"], true) << r.out;
  r = cli("explain " + sample("gpt2_block.json") + " scores scaled --json");
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["same_kernel"], true) << r.out;
  EXPECT_EQ(std::string(j["message"]).find("no `mul` epilogue"), std::string::npos) << r.out;
}

// Two inputs of 2^62 bytes each are valid, but their sum is not an int64: info used to overflow a signed sum
// (undefined behaviour, reported by UBSan under the asan preset). It sums in double now.
TEST(FusionCli, InfoTotalsBytesBeyondInt64) {
  const auto path = std::filesystem::temp_directory_path() / "fx_fusion_cli_huge_inputs.json";
  std::ofstream(path) << R"({"format": "fusion-explorer/graph", "version": 1,
    "inputs": [{"name": "a", "shape": [1152921504606846976], "dtype": "f32"},
               {"name": "b", "shape": [1152921504606846976], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": "add", "inputs": ["a", "b"]}], "outputs": ["y"]})";
  const CliResult r = cli("info " + path.string() + " --json");
  std::filesystem::remove(path);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["input_bytes"].get<double>(), 0x1p63);
  EXPECT_DOUBLE_EQ(j["output_bytes"].get<double>(), 0x1p62);
}

// codegen --json: the kernels of a plan as JSON (bench/python/test_race.py reads them); a path it cannot write is
// an error naming it, and the printed source still comes out.
TEST(FusionCli, CodegenWritesItsKernelsAsJsonOrSaysWhyNot) {
  const auto dir = std::filesystem::temp_directory_path() / "fx_codegen_json_test";
  std::filesystem::create_directories(dir);
  const std::string out = (dir / "kernels.json").string();
  CliResult r = cli("codegen " + sample("relu_mul_add.json") + " --json " + out);
  if (r.out.find("built without CUDA support") != std::string::npos) GTEST_SKIP() << r.out;
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["format"], "fusion-explorer/kernels");
  EXPECT_EQ(j["graph"], "relu_mul_add");
  ASSERT_EQ(j["groups"].size(), 1u);
  const auto& k = j["groups"][0]["kernels"][0];
  EXPECT_EQ(k["inputs"], nlohmann::json::array({"x", "w", "b"}));
  EXPECT_EQ(k["outputs"], nlohmann::json::array({"y"}));
  ASSERT_EQ(k["layouts"].size(), 3u);  // 16-byte, 8-byte, 8-byte with 512 threads: 64M elements
  for (const auto& layout : k["layouts"]) {
    EXPECT_NE(layout["source"].get<std::string>().find(k["name"].get<std::string>()), std::string::npos);
    EXPECT_GT(layout["grid"].get<long long>(), 0);
  }
  EXPECT_EQ(k["layouts"][2]["block"], 512);
  // The kernel goes by its group's name, as `fuse` lists the group.
  EXPECT_EQ(j["groups"][0]["id"], "g:mul");
  EXPECT_EQ(k["name"], "fx_g_mul");
  r = cli("fuse " + sample("relu_mul_add.json") + " --auto -o " + (dir / "fused.json").string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("g:mul"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fx_g_mul"), std::string::npos) << r.out;
  r = cli("codegen " + sample("qkv_bf16.json") + " --json " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in2(out);
  const auto q = nlohmann::json::parse(in2);
  EXPECT_TRUE(q["groups"][0]["kernels"].empty());
  EXPECT_NE(q["groups"][0]["none"].get<std::string>().find("cuBLASLt"), std::string::npos) << q.dump();
  r = cli("codegen " + sample("relu_mul_add.json") + " --json " + (dir / "missing" / "k.json").string());
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("cannot write the kernels: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("extern \"C\""), std::string::npos) << "the source is printed all the same";
  std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

// fusion-cli run refuses bad timing options before it looks for a GPU (this machine and CI have none); a bad
// protocol file is named with the JSON pointer of its bad value.
TEST(FusionCli, RunRefusesBadTimingOptionsBeforeLookingForAGpu) {
  const auto dir = std::filesystem::temp_directory_path() / ("fx_cli_protocol_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "protocol.json").string();
  std::ofstream(file) << R"({"format": "fusion-explorer/timing-protocol", "version": 1, "preset": "do_bench",
                             "repeat_ms": 1e9, "placement": -1})";
  const CliResult probe = cli("run " + sample("relu_mul_add.json") + " --protocol " + file);
  if (probe.out.find("built without CUDA support") != std::string::npos) GTEST_SKIP() << probe.out;
  EXPECT_EQ(probe.status, 2) << probe.out;
  EXPECT_NE(probe.out.find("/repeat_ms: repeat_ms takes milliseconds from 0 to 60000 (not 1e+09)"), std::string::npos)
      << probe.out;
  EXPECT_NE(probe.out.find("/placement: placement takes a seed, a whole number from 0 (not -1)"), std::string::npos)
      << probe.out;
  CliResult r = cli("run " + sample("relu_mul_add.json") + " --protocol soon");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--protocol takes interactive, do_bench or a timing protocol file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cannot read soon"), std::string::npos) << r.out;
  r = cli("run " + sample("relu_mul_add.json") + " --repeat 0");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--repeat takes a count from 1"), std::string::npos) << r.out;
  r = cli("run " + sample("relu_mul_add.json") + " --rest-ms 1000");
  EXPECT_EQ(r.status, 2) << "the rare knobs live in the protocol file: " << r.out;
  std::filesystem::remove_all(dir);
}

// The help fits on one screen: the rare knobs went to the protocol file.
TEST(FusionCli, RunHelpFitsOnOneScreen) {
  const CliResult r = cli("run --help");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_LE(std::count(r.out.begin(), r.out.end(), '\n'), 40) << r.out;
  EXPECT_NE(r.out.find("--protocol"), std::string::npos) << r.out;
}

}  // namespace
