// The shared GPU server's queue: one run at a time per GPU, first come first served, each waiting run told
// its place; a run over the time limit stopped; a ticket left by a dead process does not block the queue.
// Each client is a forked process running run_in_queue, as separate fusion-cli processes would.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "app/remote/shared_queue.h"
#include "tests/remote/sshd_fixture.h"

namespace fx::remote {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class SharedQueue : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fx-queue-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "queue");
    fs::permissions(dir_ / "queue", fs::perms::all | fs::perms::sticky_bit);
    config_.queue_dir = (dir_ / "queue").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A client in its own process; its stdout and stderr go to DIR/NAME.out and .err.
  pid_t client(const std::string& name, const std::string& script) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      std::ofstream out(dir_ / (name + ".out")), err(dir_ / (name + ".err"));
      const int rc = run_in_queue(config_, {"/bin/sh", "-c", script}, out, err);
      out.flush();
      err.flush();
      ::_exit(rc);
    }
    return pid;
  }
  static int exit_code(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string text(const std::string& name) const { return test::read_file((dir_ / name).string()); }
  bool wait_for(const std::function<bool()>& done, double seconds = 20) const {
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (!done() && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return done();
  }
  int tickets() const {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_ / "queue")) n += e.path().filename().string().rfind("t-", 0) == 0;
    return n;
  }

  fs::path dir_;
  SharedGpuConfig config_;
};

TEST_F(SharedQueue, OneRunAtATimeFirstComeFirstServedWithPlaces) {
  const std::string log = (dir_ / "log").string();
  auto job = [&](const std::string& name, const std::string& hold) {
    return "echo start " + name + " $CUDA_VISIBLE_DEVICES >> " + log + "; " + hold + "; echo end " + name + " >> " + log;
  };
  const pid_t a = client("a", job("a", "while [ ! -e " + (dir_ / "go").string() + " ]; do sleep 0.05; done"));
  ASSERT_TRUE(wait_for([&] { return text("log").find("start a") != std::string::npos; }));
  const pid_t b = client("b", job("b", "sleep 0.2"));
  ASSERT_TRUE(wait_for([&] { return tickets() == 1; }));
  const pid_t c = client("c", job("c", "sleep 0.2"));
  ASSERT_TRUE(wait_for([&] { return tickets() == 2 && text("c.out").find("queue_position") != std::string::npos; }));
  std::ofstream(dir_ / "go").put('\n');
  EXPECT_EQ(exit_code(a), 0);
  EXPECT_EQ(exit_code(b), 0);
  EXPECT_EQ(exit_code(c), 0);
  EXPECT_EQ(text("log"), "start a 0\nend a\nstart b 0\nend b\nstart c 0\nend c\n");
  EXPECT_NE(text("b.out").find("\"queue_position\":1"), std::string::npos) << text("b.out");
  EXPECT_NE(text("c.out").find("\"queue_position\":2"), std::string::npos) << text("c.out");
  EXPECT_NE(text("c.err").find("1 run ahead of yours"), std::string::npos) << text("c.err");
  EXPECT_NE(text("c.out").find("your run starts"), std::string::npos);
  EXPECT_EQ(text("a.out"), "");  // the first run never waited
  EXPECT_EQ(tickets(), 0);
}

TEST_F(SharedQueue, TwoGpusRunTwoAtOnceEachOnItsOwn) {
  config_.gpus = 2;
  const std::string log = (dir_ / "log").string();
  const std::string go = (dir_ / "go").string();
  const std::string hold = "echo $CUDA_VISIBLE_DEVICES >> " + log + "; while [ ! -e " + go + " ]; do sleep 0.05; done";
  const pid_t a = client("a", hold), b = client("b", hold);
  ASSERT_TRUE(wait_for([&] { return text("log").size() == 4; }));
  std::ofstream(go).put('\n');
  EXPECT_EQ(exit_code(a), 0);
  EXPECT_EQ(exit_code(b), 0);
  const std::string both = text("log");
  EXPECT_TRUE(both == "0\n1\n" || both == "1\n0\n") << both;
}

TEST_F(SharedQueue, RunOverTheTimeLimitIsStopped) {
  config_.time_limit_s = 0.5;
  const auto start = Clock::now();
  const pid_t a = client("a", "sleep 30");
  EXPECT_EQ(exit_code(a), 1);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 10);
  EXPECT_NE(text("a.err").find("stopped at the shared server's time limit of 0.5 s"), std::string::npos) << text("a.err");
}

TEST_F(SharedQueue, TicketOfADeadClientDoesNotBlock) {
  // A ticket file nobody holds, numbered before any new one.
  std::ofstream(dir_ / "queue/t-000000000000").put('\n');
  const pid_t a = client("a", "exit 3");
  EXPECT_EQ(exit_code(a), 3);  // the run's own exit code
  EXPECT_EQ(text("a.out"), "");
  EXPECT_EQ(tickets(), 0);
}

TEST_F(SharedQueue, FusionCliQueuesOnAServerThatSaysSo) {
  // fusion-cli run on a server with /etc/fusion-explorer/shared-gpu.json (here FX_SHARED_GPU_CONFIG): with the
  // GPU taken, the run waits and says so; once free it runs (here: no CUDA device, exit code 3).
  std::ofstream(dir_ / "shared-gpu.json") << R"({"queue": ")" << config_.queue_dir << R"(", "gpus": 1, "time_limit_s": 60})";
  ::setenv("FX_SHARED_GPU_CONFIG", (dir_ / "shared-gpu.json").c_str(), 1);
  const int gpu = ::open((dir_ / "queue/gpu-0").c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_EQ(::flock(gpu, LOCK_EX), 0);  // someone else's run
  std::string error;
  auto cli = Process::start({FX_CLI_PATH, "run", FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json", "--progress"},
                            "/dev/null", &error);
  ASSERT_TRUE(cli) << error;
  std::string out;
  std::thread release([&] {
    wait_for([&] { return tickets() == 1; });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::close(gpu);
  });
  const ChildExit r = cli->pump([&](const std::string& line) { out += line + "\n"; }, {}, 60);
  release.join();
  ::unsetenv("FX_SHARED_GPU_CONFIG");
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(out.find("\"queue_position\":1"), std::string::npos) << out;
  EXPECT_NE(r.err.find("yours is next"), std::string::npos) << r.err;
}

TEST_F(SharedQueue, ConfigIsReadAndABadOneRefusesToRun) {
  const std::string file = (dir_ / "shared-gpu.json").string();
  ::setenv("FX_SHARED_GPU_CONFIG", file.c_str(), 1);
  std::string error;
  EXPECT_FALSE(shared_gpu_config(&error));  // no file: an ordinary machine
  EXPECT_EQ(error, "");
  std::ofstream(file) << R"({"queue": "/q", "gpus": 2, "time_limit_s": 90})";
  auto c = shared_gpu_config(&error);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->queue_dir, "/q");
  EXPECT_EQ(c->gpus, 2);
  EXPECT_EQ(c->time_limit_s, 90);
  ::setenv("FX_SHARED_GPU_SLOT", "0", 1);  // a run the queue started: it runs at once
  EXPECT_FALSE(shared_gpu_config(&error));
  ::unsetenv("FX_SHARED_GPU_SLOT");
  std::ofstream(file) << R"({"queue": "/q", "gpus": 0})";
  shared_gpu_config(&error);
  EXPECT_NE(error.find("expected {\"queue\""), std::string::npos) << error;
  const ChildExit r = run_captured({FX_CLI_PATH, "run", FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json"}, "", 30);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("shared-gpu.json: expected"), std::string::npos) << r.err;
  ::unsetenv("FX_SHARED_GPU_CONFIG");
}

}  // namespace
}  // namespace fx::remote
