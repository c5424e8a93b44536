// fusion-cli's conventions, run as a program (FX_CLI_PATH): "-" for stdin and stdout wherever a file is read
// or written, "--" ending the options, --json on every verb, and columns that long names cannot run together.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct CliResult {
  int status;
  std::string out;  // stdout only: what a pipe reads
};

// Runs `fusion-cli ARGS` through the shell in `dir`; stderr is discarded unless `keep_stderr`.
CliResult sh(const std::string& command_line, const fs::path& dir, bool keep_stderr = false) {
  const std::string command = "cd '" + dir.string() + "' && " + command_line + (keep_stderr ? " 2>&1" : " 2>/dev/null");
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::size_t n = fread(buf.data(), 1, buf.size(), pipe.get())) out.append(buf.data(), n);
  const int status = pclose(pipe.release());
  return {WEXITSTATUS(status), out};
}

const std::string kCli = FX_CLI_PATH;
std::string sample(const std::string& name) { return std::string(FX_SOURCE_DIR) + "/sample_graphs/" + name; }

class CliConventions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fx_cli_conventions_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CliConventions, DashWritesStdoutAndNeverAFileNamedDash) {
  CliResult r = sh(kCli + " fuse " + sample("relu_mul_add.json") + " --auto -o -", dir_);
  ASSERT_EQ(r.status, 0);
  const auto fused = nlohmann::json::parse(r.out);  // stdout is the fused graph alone; the plan went to stderr
  EXPECT_TRUE(fused.contains("fusion"));
  r = sh(kCli + " generate transformer --layers 1 -o -", dir_);
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["format"], "fusion-explorer/graph");
  r = sh(kCli + " dot " + sample("relu_mul_add.json") + " -o -", dir_);
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(r.out.rfind("digraph", 0), 0u) << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "-"));
}

TEST_F(CliConventions, DashReadsStdinInEveryReadingVerb) {
  const std::string in = " < " + sample("relu_mul_add.json");
  CliResult r = sh(kCli + " info - --json" + in, dir_);
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["nodes"], 3);
  r = sh(kCli + " analyze - --json --device h100" + in, dir_);
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["kernels"], 3);
  r = sh(kCli + " dot -" + in, dir_);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("label=\"mul\\nmul"), std::string::npos) << r.out;
  // A pipe of two verbs: the fused graph from stdin keeps its plan.
  r = sh(kCli + " fuse " + sample("relu_mul_add.json") + " --auto -o - | " + kCli + " analyze - --json", dir_);
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["kernels"], 1);
  r = sh(kCli + " generate transformer --layers 1 | " + kCli + " validate - --json", dir_);
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["files"][0]["file"], "<stdin>");
}

TEST_F(CliConventions, StdinIsReadOnceAndBadStdinIsNamed) {
  CliResult r = sh(kCli + " dot - --plan - < " + sample("relu_mul_add.json"), dir_, true);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("stdin (-) can be read only once"), std::string::npos) << r.out;
  r = sh("echo '{' | " + kCli + " info -", dir_, true);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("<stdin>: error:"), std::string::npos) << r.out;
}

TEST_F(CliConventions, DoubleDashEndsTheOptions) {
  fs::copy_file(sample("relu_mul_add.json"), dir_ / "-odd.json");
  CliResult r = sh(kCli + " info -odd.json", dir_, true);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("unknown option -odd.json"), std::string::npos) << r.out;
  r = sh(kCli + " info --json -- -odd.json", dir_);
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(nlohmann::json::parse(r.out)["name"], "relu_mul_add");
  // After "--", even --help is a file name.
  r = sh(kCli + " info -- --help", dir_, true);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("cannot open --help"), std::string::npos) << r.out;
}

TEST_F(CliConventions, ValidateJsonListsEachFileWithItsErrors) {
  std::ofstream(dir_ / "bad.json") << R"({"format": "fusion-explorer/graph", "version": 1, "name": "b",
    "inputs": [{"name": "x", "shape": [4], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": "relu", "inputs": ["q"]}], "outputs": ["y"]})";
  const CliResult r = sh(kCli + " validate --json " + sample("relu_mul_add.json") + " bad.json", dir_);
  EXPECT_EQ(r.status, 2);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["valid"], false);
  ASSERT_EQ(j["files"].size(), 2u);
  EXPECT_EQ(j["files"][0]["valid"], true);
  EXPECT_EQ(j["files"][0]["nodes"], 3);
  EXPECT_EQ(j["files"][1]["valid"], false);
  EXPECT_EQ(j["files"][1]["errors"][0]["pointer"], "/nodes/0/inputs/0");
}

// --json on every verb that has it gives one JSON document on stdout and nothing else there.
TEST_F(CliConventions, JsonOnEveryVerbIsOneDocumentOnStdout) {
  const std::string g = sample("relu_mul_add.json");
  for (const std::string& args : {"validate --json " + g, "info --json " + g, "analyze --json " + g,
                                  "fuse --auto --json " + g, "explain --json " + g + " mul add"}) {
    const CliResult r = sh(kCli + " " + args, dir_);
    EXPECT_EQ(r.status, 0) << args;
    EXPECT_TRUE(nlohmann::json::accept(r.out)) << args << "\n" << r.out;
  }
}

// A graph whose node names are longer than the columns: every row keeps a space between its columns.
TEST_F(CliConventions, AnalyzeKeepsLongNamesApart) {
  const std::string a(40, 'a'), b(40, 'b');
  std::ofstream(dir_ / "long.json") << R"({"format": "fusion-explorer/graph", "version": 1, "name": "long",
    "inputs": [{"name": "x", "shape": [1024], "dtype": "f32"}],
    "nodes": [{"name": ")" << a << R"(", "op": "relu", "inputs": ["x"]},
              {"name": ")" << b << R"(", "op": "exp", "inputs": [")" << a << R"("]}],
    "outputs": [")" << b << R"("]})";
  const CliResult r = sh(kCli + " analyze long.json", dir_);
  ASSERT_EQ(r.status, 0) << r.out;
  std::istringstream lines(r.out);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    // Group rows start with the group id, candidate rows with the verdict; both begin with the long names.
    if (line.rfind("  g:" + a, 0) == 0) {
      EXPECT_EQ(line.find("g:" + a + " "), 2u) << line;
      ++rows;
    }
    const std::string candidate = "v:" + a + "+" + b;
    if (line.rfind("  fuse  " + candidate, 0) == 0 || line.rfind("  no    " + candidate, 0) == 0) {
      EXPECT_EQ(line.find(candidate + " "), 8u) << line;
      ++rows;
    }
  }
  EXPECT_EQ(rows, 2) << r.out;
}

}  // namespace

namespace {

// model-explorer as a user runs it: a graph, a run report of its auto-fused plan, three files out.
TEST_F(CliConventions, ModelExplorerWritesTheGraphAndItsNodeData) {
  const std::string report = std::string(FX_SOURCE_DIR) + "/tests/data/run-reports/relu_mul_add.h100.json";
  CliResult r = sh(kCli + " model-explorer " + sample("relu_mul_add.json") + " --auto --report " + report +
                       " -o me.json --time-data time.json --bytes-data bytes.json",
                   dir_, true);
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream graph(dir_ / "me.json"), time(dir_ / "time.json");
  EXPECT_EQ(nlohmann::json::parse(graph)["graphs"][0]["nodes"].size(), 6u);
  EXPECT_NEAR(nlohmann::json::parse(time)["results"]["y"]["value"].get<double>(), 346.912, 0.001);
  // A report of another plan is refused, not silently misattributed.
  r = sh(kCli + " model-explorer " + sample("softmax.json") + " --report " + report, dir_, true);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find("not in the plan"), std::string::npos) << r.out;
}

}  // namespace
