#include "app/remote/remote_run.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <regex>

#include "app/remote/ssh.h"

namespace fx::remote {
namespace {

// Seconds for a step that only moves a few files: the handshake's limit and some.
double step_timeout(const RunTarget& t) { return t.connect_timeout_s + 60.0; }

// The cancel signals arrive on a pipe, so that the run's poll loop sees them like any other input.
int g_cancel_pipe[2] = {-1, -1};

void on_cancel_signal(int) {
  const int saved = errno;
  (void)!::write(g_cancel_pipe[1], "x", 1);
  errno = saved;
}

int cancel_fd() {
  if (g_cancel_pipe[0] < 0) {
    if (::pipe2(g_cancel_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    struct sigaction sa {};
    sa.sa_handler = on_cancel_signal;
    ::sigemptyset(&sa.sa_mask);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    ::signal(SIGPIPE, SIG_IGN);  // the GUI may close our stdout; the run on the target must still be cleaned up
  }
  return g_cancel_pipe[0];
}

bool cancel_requested() {
  char c;
  return g_cancel_pipe[0] >= 0 && ::read(g_cancel_pipe[0], &c, 1) == 1;
}

struct Session {
  const RemoteRun& run;
  Ssh ssh;
  std::ostream& err;
  std::string dir;  // the private folder on the target, once made
  std::string job;  // its base name: the Slurm job's name

  std::string label() const { return "target " + run.target.name + " (" + run.target.url + ")"; }
  bool slurm() const { return run.target.kind == RunTarget::Kind::slurm; }
  std::string remote(const std::string& file) const { return shell_quote(dir + "/" + file); }

  // A step's ssh failure as one line; true if it was one.
  bool ssh_failed(const ChildExit& r, const char* doing) const {
    if (r.timed_out) {
      err << "fusion-cli run: " << label() << ": no answer while " << doing << "\n";
      return true;
    }
    if (r.code != kSshFailed) return false;
    err << "fusion-cli run: cannot reach " << label() << ": " << describe_ssh_failure(r.err, run.target) << "\n";
    return true;
  }

  int check_version() {
    const ChildExit r = ssh.run("exec " + shell_quote(run.target.cli) + " --version", step_timeout(run.target));
    if (ssh_failed(r, "asking for fusion-cli's version")) return kTargetUnusable;
    const std::string local = cli_version();
    if (r.code == 126 || r.code == 127) {
      err << "fusion-cli run: " << label() << " has no fusion-cli at '" << run.target.cli
          << "': install fusion-cli " << local << " there, or give its path in the target's URL (?cli=/path/to/fusion-cli)\n";
      return kTargetUnusable;
    }
    std::smatch m;
    static const std::regex version(R"(fusion-cli (\d+\.\d+\.\d+))");
    const std::string said = r.out.substr(0, 200);
    if (r.code != 0 || !std::regex_search(said, m, version)) {
      err << "fusion-cli run: " << label() << ": '" << run.target.cli << " --version' did not answer as fusion-cli does"
          << " (exit code " << r.code << "): install fusion-cli " << local << " there\n";
      return kTargetUnusable;
    }
    if (!compatible_versions(local, m[1].str())) {
      err << "fusion-cli run: " << label() << " has fusion-cli " << m[1].str() << ", this one is " << local
          << ": install fusion-cli " << local.substr(0, local.rfind('.')) << ".x there (the same major and minor version)\n";
      return kTargetUnusable;
    }
    return 0;
  }

  int make_dir() {
    // mktemp -d makes the folder 0700; umask 077 keeps every file made in it private too.
    const std::string parent = slurm() ? (run.target.workdir.empty() ? std::string("\"$HOME\"/.cache/fusion-explorer/runs")
                                                                     : shell_quote(run.target.workdir))
                                       : std::string("\"${TMPDIR:-/tmp}\"");
    const ChildExit r = ssh.run("umask 077 && mkdir -p " + parent + " && mktemp -d " + parent + "/fusion-run.XXXXXXXXXX",
                                step_timeout(run.target));
    if (ssh_failed(r, "making the run's folder")) return kTargetUnusable;
    dir = r.out.substr(0, r.out.find('\n'));
    if (r.code != 0 || dir.empty() || dir[0] != '/') {
      err << "fusion-cli run: " << label() << ": cannot make a private folder there: " << r.err.substr(0, 300) << "\n";
      dir.clear();
      return kTargetUnusable;
    }
    job = dir.substr(dir.rfind('/') + 1);
    return 0;
  }

  int upload(const std::string& local, const std::string& name) {
    const ChildExit r = ssh.run("umask 077 && cat > " + remote(name), step_timeout(run.target), local);
    if (r.code == 127 && r.err.rfind("cannot read ", 0) == 0) {
      err << "fusion-cli run: " << r.err << "\n";
      return 2;
    }
    if (ssh_failed(r, "copying the graph there")) return kTargetUnusable;
    if (r.code != 0) {
      err << "fusion-cli run: " << label() << ": cannot copy " << local << " there: " << r.err.substr(0, 300) << "\n";
      return kTargetUnusable;
    }
    return 0;
  }

  std::string run_script() const;
  std::string stop_script() const;
  int execute(std::ostream& out, int cancel);
  void fetch(const std::optional<std::string>& local, const std::string& name);
  void remove_dir();
  void stop();
};

std::string Session::run_script() const {
  std::string cmd;
  if (slurm()) {
    cmd = "srun --ntasks=1 --job-name=" + shell_quote(job) + " --chdir=" + shell_quote(dir) +
          " --time=" + shell_quote(run.target.time_limit);
    if (!run.target.partition.empty()) cmd += " --partition=" + shell_quote(run.target.partition);
    if (run.target.gpus > 0) cmd += " --gres=gpu:" + std::to_string(run.target.gpus);
    cmd += " ";
  }
  cmd += shell_quote(run.target.cli) + " run graph.json";
  if (run.plan) cmd += " --plan plan.json";
  if (run.device_file) cmd += " --device device.json";
  if (run.json) cmd += " --json report.json";
  if (run.csv) cmd += " --csv kernels.csv";
  if (run.trace) cmd += " --trace trace.json";
  for (const auto& o : run.options) cmd += " " + shell_quote(o);
  // The run goes to the background so that this shell can watch its standard input: when the connection
  // closes before the run ends (the client was killed, the laptop went away), the run is stopped and its
  // folder removed. A run that ended by itself is left for the client to collect.
  return "cd " + shell_quote(dir) + " || exit 125\n"
         "exec 3<&0\n" +
         cmd + " </dev/null &\n"
         "p=$!\n"
         "echo $p > pid\n"
         "{ cat <&3 >/dev/null; if kill -0 $p 2>/dev/null; then " + stop_script() + "; fi; } >/dev/null 2>&1 &\n"
         "wait $p\n";
}

// Stops the run whose pid is in the folder (TERM, then KILL after 3 s), cancels its Slurm job, removes the folder.
std::string Session::stop_script() const {
  std::string s = "p=$(cat " + remote("pid") + " 2>/dev/null); if [ -n \"$p\" ]; then kill -TERM \"$p\" 2>/dev/null; "
                  "i=0; while kill -0 \"$p\" 2>/dev/null && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done; "
                  "kill -KILL \"$p\" 2>/dev/null; fi; ";
  if (slurm()) s += "scancel --name=" + shell_quote(job) + " 2>/dev/null; ";
  return s + "cd / && rm -rf " + shell_quote(dir);
}

void Session::stop() {
  if (dir.empty()) return;
  const ChildExit r = ssh.run(stop_script(), step_timeout(run.target));
  if (r.code != 0) err << "fusion-cli run: " << label() << ": could not clean up " << dir << ": " << describe_ssh_failure(r.err, run.target) << "\n";
  dir.clear();
}

void Session::remove_dir() {
  if (dir.empty()) return;
  ssh.run("rm -rf " + shell_quote(dir), step_timeout(run.target));
  dir.clear();
}

void Session::fetch(const std::optional<std::string>& local, const std::string& name) {
  if (!local) return;
  const ChildExit r = ssh.run("if [ -f " + remote(name) + " ]; then cat " + remote(name) + "; else exit 44; fi",
                              step_timeout(run.target));
  if (r.code == 44) return;  // the run wrote none (it failed before)
  if (ssh_failed(r, "copying the report back")) return;
  std::ofstream file(*local, std::ios::binary | std::ios::trunc);
  file.write(r.out.data(), static_cast<std::streamsize>(r.out.size()));
  if (!file) err << "fusion-cli run: cannot write " << *local << "\n";
}

int Session::execute(std::ostream& out, int cancel) {
  std::string error;
  auto child = Process::start(ssh.command(run_script()), "", &error);
  if (!child) {
    err << "fusion-cli run: " << error << "\n";
    return kTargetUnusable;
  }
  const ChildExit r = child->pump([&out](const std::string& line) { out << line << std::endl; },
                                  [this](const std::string& line) { err << line << std::endl; }, 7 * 24 * 3600.0, cancel);
  if (r.cancelled) {
    child->close_stdin();  // the watchdog on the target stops the run even if the next connection fails
    child->kill(SIGTERM);
    child->wait(3);
    stop();
    err << "fusion-cli run: cancelled; the run on " << label() << " was stopped and its folder removed\n";
    return kCancelled;
  }
  if (r.code == kSshFailed) {
    err << "fusion-cli run: lost " << label() << ": " << describe_ssh_failure(r.err, run.target) << "\n";
    stop();
    return kTargetUnusable;
  }
  return r.code;
}

}  // namespace

std::string cli_version() { return FX_VERSION; }

bool compatible_versions(const std::string& local, const std::string& remote) {
  auto major_minor = [](const std::string& v) { return v.substr(0, v.rfind('.')); };
  return major_minor(local) == major_minor(remote);
}

int run_remote(const RemoteRun& run, std::ostream& out, std::ostream& err) {
  const int cancel = cancel_fd();
  Session s{run, Ssh(run.target), err, {}, {}};
  if (int rc = s.check_version()) return rc;
  if (cancel_requested()) return kCancelled;
  if (int rc = s.make_dir()) return rc;
  int rc = s.upload(run.graph, "graph.json");
  if (!rc && run.plan) rc = s.upload(*run.plan, "plan.json");
  if (!rc && run.device_file) rc = s.upload(*run.device_file, "device.json");
  if (!rc && cancel_requested()) rc = kCancelled;
  if (rc) {
    s.remove_dir();
    return rc;
  }
  rc = s.execute(out, cancel);
  if (rc == kCancelled || rc == kTargetUnusable) return rc;
  if (rc == 125 || rc == 126 || rc == 127) {
    err << "fusion-cli run: " << s.label() << ": could not start '" << run.target.cli << " run' there (exit code " << rc
        << ")" << (s.slurm() ? ": is fusion-cli installed on the compute nodes too?" : "") << "\n";
    s.remove_dir();
    return kTargetUnusable;
  }
  s.fetch(run.json, "report.json");
  s.fetch(run.csv, "kernels.csv");
  s.fetch(run.trace, "trace.json");
  s.remove_dir();
  if (rc == 3) err << "fusion-cli run: no CUDA device on " << s.label() << " (its fusion-cli exited with code 3)\n";
  return rc;
}

}  // namespace fx::remote
