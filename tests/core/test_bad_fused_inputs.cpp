// Fused graph files whose "fusion" section contradicts the graph or is malformed (tests/data/bad-fused/,
// manifest expected.json): the graph part is valid, FusionEngine::load_fused_graph rejects the section with
// its pointer and message, and `fusion-cli analyze` exits 2 with it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/cost/device_description.h"
#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"

namespace fx {
namespace {

namespace fs = std::filesystem;

fs::path bad_fused_dir() { return fs::path(FX_SOURCE_DIR) / "tests" / "data" / "bad-fused"; }

struct BadFusedFile {
  std::string file, pointer, message, known_bug;
};

std::vector<BadFusedFile> read_manifest() {
  std::ifstream in(bad_fused_dir() / "expected.json");
  const nlohmann::json manifest = nlohmann::json::parse(in);
  std::vector<BadFusedFile> out;
  for (const auto& e : manifest.at("files")) {
    out.push_back({e.at("file").get<std::string>(), e.at("pointer").get<std::string>(),
                   e.at("message").get<std::string>(), e.value("known_bug", "")});
  }
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// gtest prints a parameter as raw bytes otherwise.
void PrintTo(const BadFusedFile& b, std::ostream* os) { *os << b.file; }

std::string test_name(const testing::TestParamInfo<BadFusedFile>& info) {
  std::string name = fs::path(info.param.file).stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class BadFusedInput : public testing::TestWithParam<BadFusedFile> {};

// The corpus isolates the fusion section: the graph itself is fine.
TEST_P(BadFusedInput, GraphPartIsValid) {
  auto g = load_graph_file(bad_fused_dir() / GetParam().file);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : format_diagnostics(g.errors()));
}

TEST_P(BadFusedInput, EngineRejectsTheSectionWithPointerAndMessage) {
  const BadFusedFile& b = GetParam();
  if (!b.known_bug.empty()) GTEST_SKIP() << "KNOWN BUG (engine): " << b.known_bug;
  auto engine = FusionEngine::load_fused_graph(read_all(bad_fused_dir() / b.file), DeviceDescription::h200());
  ASSERT_FALSE(engine.ok()) << b.file << " loaded, but its fusion section is invalid at " << b.pointer;
  bool found = false;
  for (const Diagnostic& d : engine.errors()) {
    found = found || (d.pointer == b.pointer && d.message.find(b.message) != std::string::npos);
  }
  EXPECT_TRUE(found) << "expected '" << b.pointer << ": ..." << b.message << "...', got:\n"
                     << format_diagnostics(engine.errors());
}

TEST_P(BadFusedInput, CliAnalyzeExitsWithTwoAndTheMessage) {
  const BadFusedFile& b = GetParam();
  if (!b.known_bug.empty()) GTEST_SKIP() << "KNOWN BUG (engine): " << b.known_bug;
  const fs::path err_file = fs::temp_directory_path() / ("fx_bad_fused_" + std::to_string(::getpid()) + ".err");
  const std::string cmd = std::string("'") + FX_CLI_PATH + "' analyze '" + (bad_fused_dir() / b.file).string() +
                          "' 2>'" + err_file.string() + "' >/dev/null";
  const int status = std::system(cmd.c_str());
  const std::string err = read_all(err_file);
  fs::remove(err_file);
  ASSERT_TRUE(WIFEXITED(status)) << "fusion-cli died on " << b.file << ":\n" << err;
  EXPECT_EQ(WEXITSTATUS(status), 2) << err;
  EXPECT_NE(err.find(b.pointer + ": "), std::string::npos) << err;
  EXPECT_NE(err.find(b.message), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadFusedInput, testing::ValuesIn(read_manifest()), test_name);

}  // namespace
}  // namespace fx
