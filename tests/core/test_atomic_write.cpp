// write_text_file_atomic: a save that fails for any reason leaves the old file exactly as it was and
// leaves no temporary file behind. The failures are real ones (a full "disk", a folder that cannot be
// written, a folder that vanished, a target that cannot be replaced), not simulated.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/graph/graph_io.h"

namespace fx {
namespace {

namespace fs = std::filesystem;

class AtomicWrite : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fx_atomic_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    target_ = dir_ / "session.json";
    std::ofstream(target_) << kOld;
  }
  void TearDown() override {
    fs::permissions(dir_, fs::perms::owner_all);
    fs::remove_all(dir_);
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // The folder holds the old file and nothing else: no temporary left behind.
  void expect_old_file_intact() const {
    EXPECT_EQ(read(target_), kOld);
    int entries = 0;
    for (const auto& e : fs::directory_iterator(dir_)) {
      ++entries;
      EXPECT_EQ(e.path().filename(), "session.json") << "left behind: " << e.path();
    }
    EXPECT_EQ(entries, 1);
  }

  static constexpr const char* kOld = "{\"old\": true}\n";
  fs::path dir_, target_;
};

TEST_F(AtomicWrite, ReplacesTheFileAndLeavesNoTemporary) {
  auto r = write_text_file_atomic(target_, "new\n");
  ASSERT_TRUE(r.ok()) << format_diagnostics(r.errors());
  EXPECT_EQ(read(target_), "new\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

// A disk that fills up mid-save: the file-size resource limit makes write() fail with EFBIG partway
// through, as ENOSPC would, and works for root too.
TEST_F(AtomicWrite, DiskFullLeavesTheOldFileIntact) {
  rlimit old_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  rlimit small = old_limit;
  small.rlim_cur = 4096;
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // otherwise the kernel kills the process
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  auto r = write_text_file_atomic(target_, std::string(1 << 20, 'x'));
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find(target_.string()), std::string::npos) << r.errors()[0].message;
  expect_old_file_intact();
}

TEST_F(AtomicWrite, ReadOnlyFolderLeavesTheOldFileIntact) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permissions do not stop root (DiskFull covers the failure)";
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  auto r = write_text_file_atomic(target_, "new\n");
  fs::permissions(dir_, fs::perms::owner_all);
  ASSERT_FALSE(r.ok());
  expect_old_file_intact();
}

TEST_F(AtomicWrite, FolderThatVanishedIsAnErrorNotACrash) {
  const fs::path gone = dir_ / "gone";
  fs::create_directory(gone);
  fs::remove(gone);
  auto r = write_text_file_atomic(gone / "session.json", "new\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("gone"), std::string::npos) << r.errors()[0].message;
  expect_old_file_intact();
}

// The temporary is written but the rename fails (the target is a non-empty folder): the temporary is removed.
TEST_F(AtomicWrite, FailedRenameRemovesTheTemporary) {
  const fs::path folder = dir_ / "session.json.d";
  fs::create_directories(folder / "child");
  auto r = write_text_file_atomic(folder, "new\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("cannot replace"), std::string::npos) << r.errors()[0].message;
  EXPECT_TRUE(fs::is_directory(folder / "child"));
  fs::remove_all(folder);
  expect_old_file_intact();
}

TEST_F(AtomicWrite, SavedGraphRoundTripsThroughTheFile) {
  const std::string text = R"({"format": "fusion-explorer/graph", "version": 1,
    "inputs": [{"name": "x", "shape": [4], "dtype": "f32"}],
    "nodes": [{"name": "y", "op": "relu", "inputs": ["x"]}], "outputs": ["y"]})";
  auto g = load_graph(text);
  ASSERT_TRUE(g.ok());
  ASSERT_TRUE(write_text_file_atomic(target_, save_graph(*g)).ok());
  auto again = load_graph_file(target_);
  ASSERT_TRUE(again.ok()) << format_diagnostics(again.errors());
  EXPECT_EQ(*again, *g);
}

TEST_F(AtomicWrite, FailedRenameSaysWhyNotSuccess) {
  const fs::path folder = dir_ / "session.json.d";
  fs::create_directories(folder / "child");
  auto r = write_text_file_atomic(folder, "new\n");
  ASSERT_FALSE(r.ok());
  // The cleanup after the failed rename used to overwrite the error: "cannot replace ...: Success".
  EXPECT_EQ(r.errors()[0].message.find(": Success"), std::string::npos) << r.errors()[0].message;
  EXPECT_NE(r.errors()[0].message.find("irectory"), std::string::npos) << r.errors()[0].message;
  fs::remove_all(folder);
}

TEST_F(AtomicWrite, AFileNameTooLongIsCalledThat) {
  auto r = write_text_file_atomic(dir_ / (std::string(300, 'n') + ".json"), "new\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("the file name is too long"), std::string::npos) << r.errors()[0].message;
  EXPECT_EQ(r.errors()[0].message.find("not writable"), std::string::npos) << r.errors()[0].message;
  expect_old_file_intact();
}

TEST_F(AtomicWrite, KeepsTheFileModeSymlinkAndHardLinks) {
  ASSERT_EQ(::chmod(target_.c_str(), 0600), 0);
  const fs::path link = dir_ / "link.json", hard = dir_ / "hard.json";
  fs::create_symlink(target_.filename(), link);
  fs::create_hard_link(target_, hard);
  ASSERT_TRUE(write_text_file_atomic(link, "through the link\n").ok());
  EXPECT_TRUE(fs::is_symlink(link)) << "the save replaced the symlink with a file";
  EXPECT_EQ(read(target_), "through the link\n");
  EXPECT_EQ(read(hard), "through the link\n") << "the save broke the hard link";
  struct stat st {};
  ASSERT_EQ(::stat(target_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the save widened the mode";
  fs::remove(hard);
  ASSERT_TRUE(write_text_file_atomic(target_, "renamed into place\n").ok());  // one link: the atomic path
  ASSERT_EQ(::stat(target_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read(link), "renamed into place\n");
}

// A save killed (SIGKILL) after creating its temporary leaves ".NAME.tmpPID"; the next save removes it.
TEST_F(AtomicWrite, TheNextSaveRemovesATemporaryLeftByAKilledSave) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::ofstream(dir_ / (".session.json.tmp" + std::to_string(::getpid()))) << "half a save";
    ::raise(SIGKILL);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const fs::path left = dir_ / (".session.json.tmp" + std::to_string(child));
  ASSERT_TRUE(fs::exists(left));
  ASSERT_TRUE(write_text_file_atomic(target_, "new\n").ok());
  EXPECT_FALSE(fs::exists(left));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

// 64 MiB and one byte printed as "64 MiB, over the limit of 64 MiB": the exact sizes say what is wrong.
TEST_F(AtomicWrite, ASizeJustOverTheLimitIsGivenInBytes) {
  std::ofstream(target_, std::ios::trunc) << std::string(2049, 'x');
  auto r = read_text_file(target_, 2048);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("2049 bytes, over the limit of 2048 bytes (2 KiB)"), std::string::npos)
      << r.errors()[0].message;
  r = read_text_file(target_, 1024);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("2 KiB, over the limit of 1 KiB"), std::string::npos) << r.errors()[0].message;
}

}  // namespace
}  // namespace fx
