// fusion-cli run --target slurm://... against a one-node Slurm started by the test: munged, slurmctld and
// slurmd (Debian's slurm-wlm) on 127.0.0.1 at free ports with their own slurm.conf and state in a temporary
// folder, reached through a real sshd as a cluster's login node would be. slurmd launches jobs as any user
// only when it runs as root: elsewhere (and where the daemons are missing) the tests skip and say why;
// scripts/slurm-check.sh runs them on a machine that has them.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "app/remote/process.h"
#include "tests/remote/sshd_fixture.h"

namespace fx::remote::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// munged, slurmctld and slurmd in the foreground as our children.
class OneNodeSlurm {
 public:
  explicit OneNodeSlurm(const fs::path& dir) : dir_(dir) {
    for (const char* tool : {"/usr/sbin/munged", "/usr/sbin/mungekey", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/srun"})
      if (::access(tool, X_OK) != 0) {
        why_ = std::string(tool) + " is missing (Debian's munge, slurmctld, slurmd and slurm-client)";
        return;
      }
    if (::getuid() != 0) {
      why_ = "slurmd must run as root to launch jobs (this test runs as uid " + std::to_string(::getuid()) + ")";
      return;
    }
    for (const char* sub : {"state", "spool", "log"}) fs::create_directories(dir_ / sub);
    const std::string d = dir_.string();
    if (run_captured({"/usr/sbin/mungekey", "-c", "-f", "-k", d + "/munge.key"}, "", 30).code != 0) {
      why_ = "mungekey failed";
      return;
    }
    start({"/usr/sbin/munged", "-F", "-f", "-S", d + "/munge.sock", "--key-file=" + d + "/munge.key",
           "--log-file=" + d + "/log/munged.log", "--pid-file=" + d + "/munged.pid", "--seed-file=" + d + "/munged.seed"});
    std::ostringstream conf;
    conf << "ClusterName=fxtest\nSlurmctldHost=localhost\nSlurmctldPort=" << free_port() << "\nSlurmdPort=" << free_port()
         << "\nAuthType=auth/munge\nAuthInfo=socket=" << d << "/munge.sock\nCredType=cred/munge\n"
         << "SlurmUser=root\nSlurmdUser=root\nStateSaveLocation=" << d << "/state\nSlurmdSpoolDir=" << d << "/spool\n"
         << "SlurmctldPidFile=" << d << "/slurmctld.pid\nSlurmdPidFile=" << d << "/slurmd.pid\n"
         << "SlurmctldLogFile=" << d << "/log/slurmctld.log\nSlurmdLogFile=" << d << "/log/slurmd.log\n"
         << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\n"
         << "SelectTypeParameters=CR_CPU\nSchedulerType=sched/builtin\nMpiDefault=none\nReturnToService=2\n"
         << "JobCompType=jobcomp/none\nAccountingStorageType=accounting_storage/none\n"
         << "JobAcctGatherType=jobacct_gather/none\nNodeName=localhost NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\n"
         << "PartitionName=fxq Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n";
    std::ofstream(conf_file()) << conf.str();
    ::setenv("SLURM_CONF", conf_file().c_str(), 1);
    start({"/usr/sbin/slurmctld", "-D", "-i", "-f", conf_file()});
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    start({"/usr/sbin/slurmd", "-D", "-N", "localhost", "-f", conf_file()});
    const auto end = Clock::now() + std::chrono::seconds(30);
    while (Clock::now() < end) {
      const ChildExit r = run_captured({"sinfo", "-h", "-o", "%t"}, "", 10);
      if (r.code == 0 && r.out.rfind("idle", 0) == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    why_ = "the one-node Slurm did not come up: " + test::read_file(d + "/log/slurmctld.log").substr(0, 2000) +
           test::read_file(d + "/log/slurmd.log").substr(0, 2000);
  }
  ~OneNodeSlurm() {
    for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it) {
      it->kill(SIGTERM);
      if (it->wait(10) < 0) it->kill(SIGKILL);
    }
    ::unsetenv("SLURM_CONF");
  }
  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  std::string conf_file() const { return (dir_ / "slurm.conf").string(); }
  std::string log() const { return test::read_file((dir_ / "log/slurmctld.log").string()); }

 private:
  void start(const std::vector<std::string>& argv) {
    std::string error;
    auto p = Process::start(argv, "/dev/null", &error);
    if (!p) why_ = error;
    else daemons_.push_back(std::move(*p));
  }
  fs::path dir_;
  std::string why_;
  std::vector<Process> daemons_;
};

class RemoteSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fx-slurm-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    for (const char* sub : {"slurm", "server", "runtime", "runs", "rec"}) fs::create_directories(dir_ / sub);
    ::chmod((dir_ / "runtime").c_str(), 0700);
    slurm_ = std::make_unique<OneNodeSlurm>(dir_ / "slurm");
    if (!slurm_->ok()) GTEST_SKIP() << "no one-node Slurm: " << slurm_->why();
    server_ = std::make_unique<SshServer>((dir_ / "server").string(), std::vector<std::string>{"SLURM_CONF=" + slurm_->conf_file()});
    if (!server_->ok()) GTEST_SKIP() << "no OpenSSH server to test against: " << server_->why();
    ::setenv("FX_SSH_CONFIG", server_->config().c_str(), 1);
    ::setenv("XDG_RUNTIME_DIR", (dir_ / "runtime").c_str(), 1);
    ::setenv("XDG_CONFIG_HOME", (dir_ / "runtime").c_str(), 1);
  }
  void TearDown() override {
    if (server_ && server_->ok())
      run_captured({"ssh", "-F", server_->config(), "-o", "ControlPath=" + (dir_ / "runtime/fusion-explorer-ssh/%C").string(),
                    "-O", "exit", "fxtest"}, "", 10);
    server_.reset();
    slurm_.reset();
    fs::remove_all(dir_);
  }
  // No GPUs in this cluster: gpus=0 leaves --gres out; the runs' folders go to a folder the "compute node" sees.
  std::string url(const std::string& cli) const {
    return "slurm://fxtest?partition=fxq&gpus=0&time=2&workdir=" + (dir_ / "runs").string() + "&cli=" + cli;
  }
  bool runs_empty() const { return fs::is_empty(dir_ / "runs"); }

  fs::path dir_;
  std::unique_ptr<OneNodeSlurm> slurm_;
  std::unique_ptr<SshServer> server_;
};

TEST_F(RemoteSlurm, JobWithoutAGpuEndsWithCodeThreeAndTheTargetsName) {
  const ChildExit r = run_captured({FX_CLI_PATH, "run", FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json", "--progress",
                                    "--target", url(FX_CLI_PATH)}, "", 120);
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("no CUDA device on target fxtest (slurm://fxtest"), std::string::npos) << r.err;
  EXPECT_NE(slurm_->log().find("_job_complete: JobId=1 WEXITSTATUS 3"), std::string::npos) << slurm_->log();
  EXPECT_TRUE(runs_empty());
}

TEST_F(RemoteSlurm, CancelEndsTheJobAndRemovesTheFolder) {
  const std::string rec = (dir_ / "rec").string();
  write_script((dir_ / "sleeper").string(),
               "case \"$1\" in --version) echo 'fusion-cli 0.1.0'; exit 0;; esac\n"
               "echo $SLURM_JOB_ID > " + rec + "/job.tmp; mv " + rec + "/job.tmp " + rec + "/job\nexec sleep 60\n");
  std::string error;
  auto client = Process::start({FX_CLI_PATH, "run", FX_SOURCE_DIR "/sample_graphs/relu_mul_add.json", "--target",
                                url((dir_ / "sleeper").string())}, "/dev/null", &error);
  ASSERT_TRUE(client) << error;
  const auto end = Clock::now() + std::chrono::seconds(60);
  while (!fs::exists(rec + "/job") && Clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(rec + "/job"));
  EXPECT_FALSE(runs_empty());
  const std::string job = read_file(rec + "/job").substr(0, read_file(rec + "/job").find('\n'));
  client->kill(SIGTERM);
  const ChildExit r = client->pump({}, {}, 60);
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_TRUE(runs_empty());
  // The job is gone from the queue (squeue lists nothing of ours).
  ChildExit q;
  const auto gone = Clock::now() + std::chrono::seconds(30);
  do {
    q = run_captured({"squeue", "-h", "-j", job}, "", 10);
  } while (!q.out.empty() && Clock::now() < gone);
  EXPECT_EQ(q.out, "") << q.err;
}

}  // namespace
}  // namespace fx::remote::test
