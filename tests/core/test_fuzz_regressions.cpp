// Replays every input the fuzzer ever broke the loader with (tests/data/fuzz-regressions/), and checks the
// fuzzer's properties (tests/fuzz/graph_properties.h) on the seed corpus: the samples and the bad files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/fuzz/fused_graph_properties.h"
#include "tests/fuzz/graph_properties.h"
#include "tests/fuzz/plan_properties.h"

namespace fx {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_in(const char* folder) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(FX_SOURCE_DIR) / folder)) {
    if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using Check = std::optional<std::string> (*)(std::string_view);

void expect_properties_hold(const char* folder, std::size_t at_least, Check check = fuzz::check_graph_document) {
  const auto files = files_in(folder);
  EXPECT_GE(files.size(), at_least) << folder;
  for (const fs::path& p : files) {
    auto bad = check(read_all(p));
    EXPECT_FALSE(bad.has_value()) << p.filename().string() << ": " << bad.value_or("");
  }
}

TEST(FuzzRegressions, EverySavedCrashNowLoadsOrFailsCleanly) {
  expect_properties_hold("tests/data/fuzz-regressions", 1);
}

TEST(FuzzRegressions, SampleGraphsSatisfyTheFuzzProperties) { expect_properties_hold("sample_graphs", 20); }

TEST(FuzzRegressions, BadFilesSatisfyTheFuzzProperties) { expect_properties_hold("tests/data/bad", 40); }

TEST(FuzzRegressions, EverySavedFusedCrashNowLoadsOrFailsCleanly) {
  expect_properties_hold("tests/data/fuzz-regressions-fused", 0, fuzz::check_fused_document);
}

TEST(FuzzRegressions, FusedSeedsSatisfyTheFusedProperties) {
  expect_properties_hold("tests/fuzz/seeds-fused", 5, fuzz::check_fused_document);
  expect_properties_hold("sample_graphs", 20, fuzz::check_fused_document);
}

// Plans checked against their graph (tests/fuzz/plan_properties.h): as loaded and after auto-fuse.
TEST(FuzzRegressions, PlansSatisfyThePlanProperties) {
  expect_properties_hold("tests/fuzz/seeds-fused", 5, fuzz::check_plan_document);
  expect_properties_hold("tests/data/bad-fused", 10, fuzz::check_plan_document);
  expect_properties_hold("tests/data/fuzz-regressions-plan", 1, fuzz::check_plan_document);
  expect_properties_hold("sample_graphs", 20, fuzz::check_plan_document);
}

// The properties themselves must be able to fail, or the fuzzer would find nothing.
TEST(FuzzRegressions, PointerCheckRejectsAPointerOutsideTheDocument) {
  const auto doc = nlohmann::json::parse(R"({"nodes": [{"name": "a"}]})");
  EXPECT_FALSE(fuzz::check_pointer(doc, {"/nodes/0/name", "x"}).has_value());
  EXPECT_FALSE(fuzz::check_pointer(doc, {"/nodes/0/attrs/axis", "defaulted attribute"}).has_value());
  EXPECT_TRUE(fuzz::check_pointer(doc, {"/nodes/7/name", "x"}).has_value());
  EXPECT_TRUE(fuzz::check_pointer(doc, {"/nodes/0/a~2b", "bad escape"}).has_value());
}

}  // namespace
}  // namespace fx
