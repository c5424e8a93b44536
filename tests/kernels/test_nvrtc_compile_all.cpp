// NvrtcCompiler::compile_all: a batch compiled on several threads gives what compiling one by one gives (the
// same CUBIN bytes, the same caches, the same counts), and an error names its kernel. No GPU needed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <thread>

#include "kernels/nvrtc/nvrtc_compiler.h"

namespace fx::gpu {
namespace {

namespace fs = std::filesystem;

// Each test gets its own XDG_CACHE_HOME, so the default cache directory is a fresh temporary one.
class CompileAll : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("XDG_CACHE_HOME");
    if (old) saved_ = old;
    had_ = old != nullptr;
    dir_ = fs::temp_directory_path() /
           ("fx-compile-all-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    ::setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    if (had_) {
      ::setenv("XDG_CACHE_HOME", saved_.c_str(), 1);
    } else {
      ::unsetenv("XDG_CACHE_HOME");
    }
    fs::remove_all(dir_);
  }
  fs::path cache() const { return NvrtcCompiler::default_cache_dir(); }

  fs::path dir_;
  std::string saved_;
  bool had_ = false;
};

// A small kernel of its own per index, so every request compiles.
CompileRequest kernel(int i) {
  const std::string name = "k" + std::to_string(i);
  return {"extern \"C\" __global__ void " + name + "(float* p) { p[threadIdx.x] = " + std::to_string(i) +
              ".0f * p[threadIdx.x + " + std::to_string(i + 1) + "]; }",
          name};
}

CompileRequest broken(const std::string& name) {
  return {"extern \"C\" __global__ void " + name + "() { undefined_" + name + "(); }", name};
}

std::vector<CompileRequest> kernels(int n) {
  std::vector<CompileRequest> out;
  for (int i = 0; i < n; ++i) out.push_back(kernel(i));
  return out;
}

TEST_F(CompileAll, GivesTheBytesOfCompilingOneByOneAndFillsTheCaches) {
  ASSERT_TRUE(cache().string().starts_with(dir_.string())) << cache();
  const auto requests = kernels(6);
  NvrtcCompiler parallel;
  const auto caller = std::this_thread::get_id();
  std::vector<std::size_t> told;
  const std::vector<Cubin> batch = parallel.compile_all(requests, "sm_90", [&](std::size_t done, std::size_t total) {
    EXPECT_EQ(std::this_thread::get_id(), caller);  // progress is told on the calling thread
    EXPECT_EQ(total, requests.size());
    told.push_back(done);
  });
  ASSERT_EQ(batch.size(), requests.size());
  ASSERT_FALSE(told.empty());
  EXPECT_EQ(told.back(), requests.size());
  EXPECT_TRUE(std::is_sorted(told.begin(), told.end()));

  NvrtcCompiler serial{fs::path{}};
  for (std::size_t i = 0; i < requests.size(); ++i) {
    SCOPED_TRACE(requests[i].kernel_name);
    ASSERT_TRUE(batch[i]);
    EXPECT_EQ(*batch[i], *serial.compile(requests[i].source, requests[i].kernel_name, "sm_90"));
  }
  CompileStats s = parallel.stats();
  EXPECT_EQ(s.compiled, 6);
  EXPECT_EQ(s.memory_hits + s.disk_hits, 0);
  EXPECT_GT(s.compile_seconds, 0);
  EXPECT_GT(s.wall_seconds, 0);
  EXPECT_GE(serial.stats().wall_seconds, serial.stats().compile_seconds);  // one by one: no overlap

  // The memory cache: a later compile() is a hit, the same CUBIN object.
  EXPECT_EQ(parallel.compile(requests[3].source, requests[3].kernel_name, "sm_90"), batch[3]);
  s = parallel.stats();
  EXPECT_EQ(s.memory_hits, 1);
  EXPECT_EQ(s.compiled, 6);

  // The disk cache: another compiler reads all six from it, in one batch, and counts them as disk hits.
  NvrtcCompiler later;
  const std::vector<Cubin> again = later.compile_all(requests, "sm_90");
  for (std::size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(*again[i], *batch[i]);
  EXPECT_EQ(later.stats().disk_hits, 6);
  EXPECT_EQ(later.stats().compiled, 0);
}

TEST_F(CompileAll, CountsMemoryHitsAndRepeatsAsCompilingInOrderWould) {
  NvrtcCompiler c;
  const CompileRequest a = kernel(0), b = kernel(1), d = kernel(2);
  const Cubin first = c.compile(a.source, a.kernel_name, "sm_90");
  // a: in memory already; b twice: compiled once, then a memory hit; d: compiled.
  const std::vector<Cubin> got = c.compile_all({a, b, d, b}, "sm_90");
  EXPECT_EQ(got[0], first);
  EXPECT_EQ(got[1], got[3]);
  EXPECT_NE(*got[1], *got[2]);
  const CompileStats s = c.stats();
  EXPECT_EQ(s.compiled, 3);
  EXPECT_EQ(s.memory_hits, 2);
}

TEST_F(CompileAll, AnErrorNamesTheFirstBadKernelAndTheGoodOnesStillCompile) {
  NvrtcCompiler c;
  std::vector<CompileRequest> requests = kernels(4);
  requests.insert(requests.begin() + 1, broken("bad_one"));
  requests.push_back(broken("bad_two"));
  try {
    c.compile_all(requests, "sm_90");
    FAIL() << "expected a compile error";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel bad_one"), std::string::npos) << e.what();
    EXPECT_NE(e.log().find("undefined_bad_one"), std::string::npos) << e.log();
    EXPECT_NE(e.source().find("bad_one"), std::string::npos);
  }
  EXPECT_EQ(c.stats().compiled, 4);
  for (int i = 0; i < 4; ++i) {
    const CompileRequest k = kernel(i);
    c.compile(k.source, k.kernel_name, "sm_90");
  }
  EXPECT_EQ(c.stats().memory_hits, 4);
  EXPECT_EQ(c.stats().compiled, 4);
}

TEST_F(CompileAll, OneSourceAndNone) {
  NvrtcCompiler c;
  int calls = 0;
  EXPECT_TRUE(c.compile_all({}, "sm_90", [&](std::size_t, std::size_t) { ++calls; }).empty());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(c.stats().compiled, 0);
  EXPECT_EQ(c.stats().wall_seconds, 0);

  const CompileRequest k = kernel(7);
  const std::vector<Cubin> one = c.compile_all({k}, "sm_90", [&](std::size_t done, std::size_t total) {
    ++calls;
    EXPECT_EQ(done, 1u);
    EXPECT_EQ(total, 1u);
  });
  ASSERT_EQ(one.size(), 1u);
  EXPECT_FALSE(one[0]->empty());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(c.stats().compiled, 1);
  EXPECT_THROW(c.compile_all({broken("lonely")}, "sm_90"), CompileError);
}

TEST_F(CompileAll, ConcurrentWritersOfOneKeyLeaveOneWholeFile) {
  const CompileRequest k = kernel(3);
  constexpr int kWriters = 4;
  std::vector<Cubin> got(kWriters);
  {
    std::vector<std::jthread> writers;
    for (int w = 0; w < kWriters; ++w) {
      // Each its own compiler: nothing shared but the cache directory, as between processes.
      writers.emplace_back([&, w] { got[static_cast<std::size_t>(w)] = NvrtcCompiler().compile(k.source, k.kernel_name, "sm_90"); });
    }
  }
  for (const Cubin& c : got) {
    ASSERT_TRUE(c);
    EXPECT_EQ(*c, *got[0]);
  }
  int files = 0;
  for (const auto& e : fs::directory_iterator(cache())) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".cubin") << e.path();  // no temporary file left behind
  }
  EXPECT_EQ(files, 1);
  NvrtcCompiler reader;
  EXPECT_EQ(*reader.compile(k.source, k.kernel_name, "sm_90"), *got[0]);
  EXPECT_EQ(reader.stats().disk_hits, 1);
}

TEST(CompileAllThreads, AtLeastOneAndAtMostSixteen) {
  EXPECT_GE(NvrtcCompiler::max_threads(), 1u);
  EXPECT_LE(NvrtcCompiler::max_threads(), 16u);
}

}  // namespace
}  // namespace fx::gpu
