// fusion-cli run --target against a real OpenSSH server on 127.0.0.1 (sshd_fixture.h): a target without a GPU,
// a saved target's name, a version mismatch, quoting, cancel (and a client killed outright), the connection
// errors, and connection reuse. The remote side is this machine, reached through sshd as a user would be.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/file.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "app/remote/process.h"
#include "tests/remote/sshd_fixture.h"

namespace fx::remote::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class RemoteSsh : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fx-remote-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "server");
    fs::create_directories(dir_ / "config");
    fs::create_directories(dir_ / "runtime");
    ::chmod((dir_ / "runtime").c_str(), 0700);
    // A shared GPU server when the test writes shared-gpu.json (app/remote/shared_queue.h).
    server_ = std::make_unique<SshServer>((dir_ / "server").string(),
                                          std::vector<std::string>{"FX_SHARED_GPU_CONFIG=" + path("shared-gpu.json")});
    if (!server_->ok()) GTEST_SKIP() << "no OpenSSH server to test against: " << server_->why();
    // The client reads only the test's ssh_config; the GUI's settings and the ControlMaster sockets go to the
    // test's folder, never to the user's.
    ::setenv("FX_SSH_CONFIG", server_->config().c_str(), 1);
    ::setenv("XDG_CONFIG_HOME", (dir_ / "config").c_str(), 1);
    ::setenv("XDG_RUNTIME_DIR", (dir_ / "runtime").c_str(), 1);
  }
  void TearDown() override {
    if (server_ && server_->ok())  // end the shared connection before its server
      run_captured({"ssh", "-F", server_->config(), "-o", "ControlPath=" + (dir_ / "runtime/fusion-explorer-ssh/%C").string(),
                    "-O", "exit", "fxtest"}, "", 10);
    server_.reset();
    fs::remove_all(dir_);
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string url(const std::string& cli, const std::string& extra = "") const {
    return "ssh://fxtest?cli=" + cli + extra;
  }
  ChildExit cli(std::vector<std::string> args, double timeout_s = 120) {
    args.insert(args.begin(), FX_CLI_PATH);
    return run_captured(args, "", timeout_s);
  }
  // Run folders left on the target.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(server_->remote_tmp())) out.push_back(e.path().string());
    return out;
  }

  fs::path dir_;
  std::unique_ptr<SshServer> server_;
  const std::string sample_ = FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json";
};

TEST_F(RemoteSsh, TargetWithoutAGpuEndsWithCodeThreeAndItsName) {
  const ChildExit r = cli({"run", sample_, "--auto", "--progress", "--json", path("report.json"), "--target",
                           url(FX_CLI_PATH)});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("no CUDA device on target fxtest"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fusion-cli run: no CUDA device"), std::string::npos) << r.err;  // the remote's own line
  EXPECT_TRUE(leftovers().empty());
  EXPECT_FALSE(fs::exists(path("report.json")));
}

TEST_F(RemoteSsh, SavedTargetIsFoundByNameAndConnectionIsReused) {
  fs::create_directories(dir_ / "config/fusion-explorer");
  std::ofstream(dir_ / "config/fusion-explorer/targets.json")
      << R"({"targets": [{"name": "workshop GPU", "url": ")" << url(FX_CLI_PATH) << R"("}]})";
  const ChildExit r = cli({"run", sample_, "--target", "workshop GPU"});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("target workshop GPU (ssh://fxtest"), std::string::npos) << r.err;
  // ControlMaster: the connection stays up for the next run, in a folder only this user can enter.
  const fs::path sockets = dir_ / "runtime/fusion-explorer-ssh";
  ASSERT_TRUE(fs::exists(sockets));
  EXPECT_EQ(fs::status(sockets).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(std::distance(fs::directory_iterator(sockets), fs::directory_iterator{}), 1);
  const ChildExit check = run_captured({"ssh", "-F", server_->config(), "-o", "ControlPath=" + (sockets / "%C").string(),
                                        "-O", "check", "fxtest"}, "", 10);
  EXPECT_EQ(check.code, 0) << check.err;
}

TEST_F(RemoteSsh, VersionMismatchSaysWhatToInstall) {
  write_script(path("old-cli"), "echo 'fusion-cli 0.0.9'\n");
  const ChildExit r = cli({"run", sample_, "--target", url(path("old-cli"))});
  EXPECT_EQ(r.code, 5);
  EXPECT_NE(r.err.find("has fusion-cli 0.0.9, this one is"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("install fusion-cli 0."), std::string::npos) << r.err;
  const ChildExit missing = cli({"run", sample_, "--target", url(path("no-such-cli"))});
  EXPECT_EQ(missing.code, 5);
  EXPECT_NE(missing.err.find("has no fusion-cli at"), std::string::npos) << missing.err;
  EXPECT_TRUE(leftovers().empty());
}

// The remote fusion-cli here records what it was given: its arguments (NUL-separated), the graph and plan as
// they arrived, its folder's and files' modes; then it streams a progress line and writes its outputs.
constexpr const char* kRecorder = R"(case "$1" in --version) echo "fusion-cli 0.1.0"; exit 0;; esac
rec=RECORD
printf '%s\0' "$@" > "$rec/args"
cp graph.json "$rec/graph.json"; cp plan.json "$rec/plan.json"
stat -c '%a' . graph.json > "$rec/modes"; pwd > "$rec/cwd"
echo '{"step": "compile", "progress": 0.5, "message": "half way"}'
echo 'a report' > report.json; echo 'a,csv' > kernels.csv
echo 'remote says hello' >&2
exit 1
)";

TEST_F(RemoteSsh, NothingFromTheGraphOrArgumentsReachesAShell) {
  fs::create_directories(dir_ / "rec");
  std::string recorder = kRecorder;
  recorder.replace(recorder.find("RECORD"), 6, path("rec"));
  write_script(path("recorder"), recorder);
  // A graph file and node names full of quotes, $(), ; and newlines; an option value likewise.
  const std::string nasty = "it's \"$(touch " + path("pwned") + ")\"; `touch " + path("pwned2") + "`\nnext";
  const std::string graph = path("g 'x' $(id).json");
  const std::string plan_text = R"({"nodes": [{"name": ")" + nasty + R"("}]})";
  std::ofstream(graph) << plan_text;
  std::ofstream(path("plan.json")) << plan_text << "\n";
  const ChildExit r = cli({"run", graph, "--plan", path("plan.json"), "--progress", "--json", path("back.json"),
                           "--csv", path("back.csv"), "--device", nasty, "--seed", "7", "--target", url(path("recorder"))});
  EXPECT_EQ(r.code, 1) << r.err;  // the remote's own exit code, passed through
  EXPECT_FALSE(fs::exists(path("pwned")));
  EXPECT_FALSE(fs::exists(path("pwned2")));
  EXPECT_EQ(read_file(path("rec/graph.json")), plan_text);
  EXPECT_EQ(read_file(path("rec/plan.json")), plan_text + "\n");
  const std::string args = read_file(path("rec/args"));
  std::string expected;
  for (const std::string a : {"run", "graph.json", "--plan", "plan.json", "--json", "report.json", "--csv",
                               "kernels.csv", "--progress", "--device", nasty.c_str(), "--seed", "7"})
    expected += a + '\0';
  EXPECT_EQ(args, expected);
  EXPECT_EQ(read_file(path("rec/modes")), "700\n600\n");  // a private folder, private files
  EXPECT_EQ(r.out, "{\"step\": \"compile\", \"progress\": 0.5, \"message\": \"half way\"}\n");
  EXPECT_NE(r.err.find("remote says hello"), std::string::npos);
  EXPECT_EQ(read_file(path("back.json")), "a report\n");
  EXPECT_EQ(read_file(path("back.csv")), "a,csv\n");
  EXPECT_FALSE(fs::exists(read_file(path("rec/cwd")).substr(0, read_file(path("rec/cwd")).size() - 1)));
  EXPECT_TRUE(leftovers().empty());
}

// A long run on the target: records its pid and folder, then waits.
void write_sleeper(const std::string& file, const std::string& rec) {
  write_script(file, "case \"$1\" in --version) echo 'fusion-cli 0.1.0'; exit 0;; esac\n"
                     "echo $$ > " + rec + "/pid.tmp; pwd > " + rec + "/cwd; mv " + rec + "/pid.tmp " + rec + "/pid\n"
                     "echo '{\"step\": \"time\", \"progress\": 0.2, \"message\": \"timing\"}'\nexec sleep 60\n");
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

// Starts a run on the sleeper and waits until it runs on the target; returns the remote pid.
pid_t start_long_run(RemoteSsh* t, std::optional<Process>& client, const std::string& rec, const std::string& target) {
  std::string error;
  auto p = Process::start({FX_CLI_PATH, "run", FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json", "--progress",
                           "--target", target}, "/dev/null", &error);
  EXPECT_TRUE(p) << error;
  if (p) client.emplace(std::move(*p));
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (!fs::exists(rec + "/pid") && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  (void)t;
  return fs::exists(rec + "/pid") ? std::stoi(read_file(rec + "/pid")) : -1;
}

TEST_F(RemoteSsh, CancelLeavesNoRemoteProcessAndNoFolder) {
  fs::create_directories(dir_ / "rec");
  write_sleeper(path("sleeper"), path("rec"));
  std::optional<Process> client;
  const pid_t remote = start_long_run(this, client, path("rec"), url(path("sleeper")));
  ASSERT_GT(remote, 0);
  ASSERT_TRUE(alive(remote));
  const std::string folder = read_file(path("rec/cwd"));
  ASSERT_TRUE(fs::exists(folder.substr(0, folder.size() - 1)));
  client->kill(SIGTERM);  // what the GUI's Cancel sends
  const ChildExit r = client->pump({}, {}, 60);
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("cancelled; the run on target fxtest"), std::string::npos) << r.err;
  EXPECT_FALSE(alive(remote));
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(RemoteSsh, ClientKilledOutrightStillEndsTheRemoteRun) {
  fs::create_directories(dir_ / "rec");
  write_sleeper(path("sleeper"), path("rec"));
  std::optional<Process> client;
  const pid_t remote = start_long_run(this, client, path("rec"), url(path("sleeper")));
  ASSERT_GT(remote, 0);
  client->kill(SIGKILL);  // no cleanup of its own: the closed connection must do it
  client->wait(10);
  // Its ssh child sees its stdin close; the watchdog on the target stops the run within its 3 s grace.
  const auto end = Clock::now() + std::chrono::seconds(20);
  while ((alive(remote) || !leftovers().empty()) && Clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(alive(remote));
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(RemoteSsh, UnreachableHostEndsWithinTheTimeout) {
  // A port that accepts TCP connections (the kernel's backlog) but never speaks SSH: a host that hangs.
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(s, 8), 0);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  const auto start = Clock::now();
  const ChildExit r = cli({"run", sample_, "--target", "ssh://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "?timeout=2"}, 60);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ::close(s);
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_LT(seconds, 15);
  EXPECT_NE(r.err.find("no answer from 127.0.0.1 port"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("within 2 s"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
}

TEST_F(RemoteSsh, SshErrorsComeBackAsOneLineEach) {
  const ChildExit refused = cli({"run", sample_, "--target", "ssh://127.0.0.1:" + std::to_string(free_port())});
  EXPECT_EQ(refused.code, 5);
  EXPECT_NE(refused.err.find("refused the connection: no ssh server listening there"), std::string::npos) << refused.err;
  ::setenv("FX_SSH_CONFIG", server_->config_unknown_host_key().c_str(), 1);
  const ChildExit unknown = cli({"run", sample_, "--target", url(FX_CLI_PATH)});
  EXPECT_EQ(unknown.code, 5);
  EXPECT_NE(unknown.err.find("is not in known_hosts"), std::string::npos) << unknown.err;
  ::setenv("FX_SSH_CONFIG", server_->config_refused_key().c_str(), 1);
  const ChildExit key = cli({"run", sample_, "--target", url(FX_CLI_PATH)});
  EXPECT_EQ(key.code, 5);
  EXPECT_NE(key.err.find("refused the login"), std::string::npos) << key.err;
  for (const ChildExit* r : {&refused, &unknown, &key}) EXPECT_EQ(std::count(r->err.begin(), r->err.end(), '\n'), 1) << r->err;
}

TEST_F(RemoteSsh, SharedServerShowsTheClientItsPlaceInTheQueue) {
  fs::create_directories(dir_ / "queue");
  fs::permissions(dir_ / "queue", fs::perms::all | fs::perms::sticky_bit);
  std::ofstream(path("shared-gpu.json")) << R"({"queue": ")" << path("queue") << R"(", "gpus": 1, "time_limit_s": 60})";
  const int gpu = ::open(path("queue/gpu-0").c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_EQ(::flock(gpu, LOCK_EX), 0);  // another attendee's run holds the GPU
  std::string error;
  auto client = Process::start({FX_CLI_PATH, "run", sample_, "--progress", "--target", url(FX_CLI_PATH)}, "/dev/null", &error);
  ASSERT_TRUE(client) << error;
  std::string out;
  bool released = false;
  const ChildExit r = client->pump(
      [&](const std::string& line) {
        out += line + "\n";
        if (!released && line.find("\"queue_position\":1") != std::string::npos) {
          ::close(gpu);  // that run ends: ours is next
          released = true;
        }
      },
      {}, 120);
  if (!released) ::close(gpu);
  EXPECT_TRUE(released) << out;
  EXPECT_NE(out.find("your run starts"), std::string::npos) << out;
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("waiting for a shared GPU: yours is next"), std::string::npos) << r.err;
  EXPECT_TRUE(leftovers().empty());
}

TEST_F(RemoteSsh, OptionsThatCannotWorkRemotelyAreRefused) {
  const ChildExit r = cli({"run", sample_, "--dump", path("d"), "--target", url(FX_CLI_PATH)});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--dump works only on this computer"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace fx::remote::test
