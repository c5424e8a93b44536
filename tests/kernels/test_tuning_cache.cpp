// The persistent tuning cache (kernels/tuning/tuning_cache.h): keys, damage, concurrent writers, unwritable
// folders. No GPU: the cache is plain files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/graph/graph_io.h"
#include "kernels/tuning/tuning_cache.h"
#include "tests/kernels/tuning_test_support.h"

namespace fx::gpu {
namespace {

namespace fs = std::filesystem;

const TuningKey kLayout{"layout", "fx_g0_y source 9c1e0f3a22d1b7e4, layouts 1 2 4"};
const nlohmann::json kChoice = {{"layout", 2}, {"times_ms", {0.031, 0.027, 0.029}}};

TEST(TuningCache, AStoredChoiceIsFoundWithItsDateAndSurvivesANewCache) {
  TempDir dir;
  {
    TuningCache cache(dir.path, h100());
    EXPECT_FALSE(cache.find(kLayout).has_value());
    ASSERT_TRUE(cache.store(kLayout, kChoice));
  }
  TuningCache again(dir.path, h100());  // another run
  auto hit = again.find(kLayout);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->choice, kChoice);
  EXPECT_NE(hit->tuned_at.find(" UTC"), std::string::npos);
  EXPECT_TRUE(again.warnings().empty());
}

TEST(TuningCache, AnotherDeviceDriverOrProblemMisses) {
  TempDir dir;
  TuningCache cache(dir.path, h100());
  ASSERT_TRUE(cache.store(kLayout, kChoice));

  TuningEnvironment other_board = h100();
  other_board.uuid = "GPU-5678";
  TuningEnvironment other_driver = h100();
  other_driver.software = "driver 590.10, CUDA 13.0, NVRTC 13.0";
  TuningEnvironment h200 = h100();
  h200.device = "NVIDIA H200";
  h200.memory_bytes = 150'000'000'000;
  for (const TuningEnvironment& env : {other_board, other_driver, h200}) {
    TuningCache elsewhere(dir.path, env);
    EXPECT_FALSE(elsewhere.find(kLayout).has_value()) << env.device << " " << env.uuid << " " << env.software;
  }
  EXPECT_FALSE(cache.find({"layout", "fx_g0_y source 0000000000000000, layouts 1 2 4"}).has_value());
  EXPECT_FALSE(cache.find({"gemm", kLayout.problem}).has_value());  // same problem text, another kind
}

TEST(TuningCache, ADamagedEntryIsAMissWithAWarningAndIsReplacedByTheNextStore) {
  TempDir dir;
  TuningCache cache(dir.path, h100());
  ASSERT_TRUE(cache.store(kLayout, kChoice));
  const fs::path entry = cache.entry_path(kLayout);
  for (const std::string& damage : {std::string("{\"format\": \"fusion-explorer/tun"), std::string("\x00\xff garbage", 10),
                                   std::string("[1, 2, 3]"), std::string("{\"format\": \"fusion-explorer/tuning\", "
                                                                         "\"version\": \"one\", \"choice\": 7}")}) {
    ASSERT_TRUE(write_text_file_atomic(entry, damage));
    TuningCache reader(dir.path, h100());
    EXPECT_FALSE(reader.find(kLayout).has_value());
    ASSERT_EQ(reader.warnings().size(), 1u);
    EXPECT_NE(reader.warnings()[0].find(entry.string()), std::string::npos) << reader.warnings()[0];
  }
  TuningCache writer(dir.path, h100());
  ASSERT_TRUE(writer.store(kLayout, kChoice));
  EXPECT_TRUE(TuningCache(dir.path, h100()).find(kLayout).has_value());
}

TEST(TuningCache, ConcurrentWritersInSeparateProcessesLoseAndCorruptNothing) {
  TempDir dir;
  constexpr int kProcesses = 6, kEntries = 40;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Every process writes its own entries and the same shared ones, interleaved.
      TuningCache cache(dir.path, h100());
      bool ok = true;
      for (int i = 0; i < kEntries; ++i) {
        ok &= cache.store({"layout", "own " + std::to_string(p) + " " + std::to_string(i)}, {{"layout", i}});
        ok &= cache.store({"gemm", "shared " + std::to_string(i)}, {{"algo", i}, {"writer", p}});
      }
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  TuningCache reader(dir.path, h100());
  for (int p = 0; p < kProcesses; ++p)
    for (int i = 0; i < kEntries; ++i) {
      auto own = reader.find({"layout", "own " + std::to_string(p) + " " + std::to_string(i)});
      ASSERT_TRUE(own.has_value()) << p << " " << i;
      EXPECT_EQ(own->choice["layout"], i);
    }
  for (int i = 0; i < kEntries; ++i) {
    auto shared = reader.find({"gemm", "shared " + std::to_string(i)});
    ASSERT_TRUE(shared.has_value()) << i;
    EXPECT_EQ(shared->choice["algo"], i);
  }
  EXPECT_TRUE(reader.warnings().empty());
  // No temporary is left behind by the atomic writes.
  for (const auto& e : fs::recursive_directory_iterator(dir.path))
    EXPECT_EQ(e.path().filename().string().rfind('.', 0), std::string::npos) << e.path();
}

TEST(TuningCache, AFolderThatCannotBeWrittenWarnsOnceAndTheRunGoesOnUncached) {
  TempDir dir;
  // A file where the cache folder should be: no one, root included, can create the folder.
  std::ofstream(dir.path / "blocked") << "x";
  TuningCache cache(dir.path / "blocked", h100());
  EXPECT_FALSE(cache.store(kLayout, kChoice));
  EXPECT_FALSE(cache.store({"gemm", "another"}, kChoice));
  ASSERT_EQ(cache.warnings().size(), 1u);
  EXPECT_NE(cache.warnings()[0].find("not cached"), std::string::npos) << cache.warnings()[0];
  EXPECT_FALSE(cache.find(kLayout).has_value());
}

TEST(TuningCache, AReadOnlyFolderStillServesItsEntries) {
  if (::geteuid() == 0) GTEST_SKIP() << "permissions do not stop root; the blocked-folder test covers the write path";
  TempDir dir;
  ASSERT_TRUE(TuningCache(dir.path, h100()).store(kLayout, kChoice));
  fs::permissions(dir.path, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  for (const auto& e : fs::recursive_directory_iterator(dir.path))
    if (e.is_directory()) fs::permissions(e.path(), fs::perms::owner_write, fs::perm_options::remove);
  TuningCache cache(dir.path, h100());
  EXPECT_TRUE(cache.find(kLayout).has_value());
  EXPECT_FALSE(cache.store({"gemm", "new"}, kChoice));
  EXPECT_EQ(cache.warnings().size(), 1u);
}

TEST(TuningCache, AnEmptyFolderDisablesIt) {
  TuningCache cache({}, h100());
  EXPECT_FALSE(cache.enabled());
  EXPECT_FALSE(cache.store(kLayout, kChoice));
  EXPECT_FALSE(cache.find(kLayout).has_value());
  EXPECT_TRUE(cache.warnings().empty());
}

}  // namespace
}  // namespace fx::gpu
