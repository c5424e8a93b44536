#include "app/remote/shared_queue.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace fx::remote {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

// A file opened for flock (read-only is enough), created readable by all: the other users test its lock.
int open_lockable(const std::string& path) {
  const mode_t old = ::umask(0);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  ::umask(old);
  return fd;
}

// Tickets are numbered from a counter under a lock, so the order is the order of arrival.
long take_number(const std::string& dir) {
  const int lock = open_lockable(dir + "/lock");
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) return -1;
  long n = 0;
  std::ifstream(dir + "/counter") >> n;
  {
    const std::string tmp = dir + "/counter." + std::to_string(::getpid());
    std::ofstream(tmp) << n + 1 << "\n";
    ::chmod(tmp.c_str(), 0644);
    std::error_code ec;
    fs::rename(tmp, dir + "/counter", ec);
  }
  ::close(lock);
  return n + 1;
}

// A ticket is alive while its owner holds its lock; one left by a process that died is not counted.
bool held(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  const bool busy = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return busy;
}

std::string ticket_name(long n) {
  char name[32];
  std::snprintf(name, sizeof name, "t-%012ld", n);
  return name;
}

// Live tickets before ours; dead ones are removed where the folder lets us.
int waiting_before(const std::string& dir, const std::string& mine) {
  int ahead = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("t-", 0) != 0 || name >= mine) continue;
    if (held(e.path().string())) ++ahead;
    else fs::remove(e.path(), ec);
  }
  return ahead;
}

// The first free GPU's lock (held until the run ends), or -1.
int take_gpu(const std::string& dir, int gpus, int* slot) {
  for (int i = 0; i < gpus; ++i) {
    const int fd = open_lockable(dir + "/gpu-" + std::to_string(i));
    if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      *slot = i;
      return fd;
    }
    if (fd >= 0) ::close(fd);
  }
  return -1;
}

void say_place(std::ostream& out, std::ostream& err, int place, int gpus) {
  const std::string msg = place == 0 ? "waiting for a shared GPU: yours is next"
                                     : "waiting for a shared GPU: " + std::to_string(place) + " run" +
                                           (place == 1 ? "" : "s") + " ahead of yours in the queue";
  out << nlohmann::json{{"step", "queue"}, {"progress", 0.0}, {"message", msg}, {"queue_position", place + 1}}.dump()
      << std::endl;
  err << "fusion-cli run: " << msg << " (" << gpus << " GPU" << (gpus == 1 ? "" : "s") << ", one run at a time each)\n";
}

// Runs argv on GPU `slot` and waits, stopping it at the time limit or on a signal to us.
int run_child(const SharedGpuConfig& config, const std::vector<std::string>& argv, int slot, std::ostream& err) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  err.flush();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("FX_SHARED_GPU_SLOT", std::to_string(slot).c_str(), 1);
    ::setenv("CUDA_VISIBLE_DEVICES", std::to_string(slot).c_str(), 1);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::signal(sig, SIG_DFL);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (pid < 0) return 1;
  const auto start = Clock::now();
  std::optional<Clock::time_point> termed;
  bool over_time = false;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    const double ran = std::chrono::duration<double>(Clock::now() - start).count();
    if (!termed && (g_signal || (config.time_limit_s > 0 && ran > config.time_limit_s))) {
      over_time = !g_signal;
      ::kill(pid, SIGTERM);
      termed = Clock::now();
    }
    if (termed && Clock::now() - *termed > std::chrono::seconds(5)) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (over_time) {
    err << "fusion-cli run: stopped at the shared server's time limit of " << config.time_limit_s << " s\n";
    return 1;
  }
  if (g_signal) return 130;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::optional<SharedGpuConfig> shared_gpu_config(std::string* error) {
  if (std::getenv("FX_SHARED_GPU_SLOT")) return std::nullopt;
  const char* env = std::getenv("FX_SHARED_GPU_CONFIG");
  const std::string file = env && *env ? env : "/etc/fusion-explorer/shared-gpu.json";
  std::ifstream in(file);
  if (!in) return std::nullopt;
  try {
    const auto j = nlohmann::json::parse(in);
    SharedGpuConfig c;
    c.queue_dir = j.at("queue").get<std::string>();
    c.gpus = j.value("gpus", 1);
    c.time_limit_s = j.value("time_limit_s", 600.0);
    if (c.queue_dir.empty() || c.gpus < 1 || c.gpus > 64 || c.time_limit_s < 0) throw std::invalid_argument("range");
    return c;
  } catch (const std::exception&) {
    *error = file + ": expected {\"queue\": FOLDER, \"gpus\": 1-64, \"time_limit_s\": SECONDS (0: none)}";
    return SharedGpuConfig{};
  }
}

int run_in_queue(const SharedGpuConfig& config, const std::vector<std::string>& argv, std::ostream& out,
                 std::ostream& err) {
  const std::string& dir = config.queue_dir;
  const long number = take_number(dir);
  const std::string mine = ticket_name(number);
  const int ticket = number > 0 ? open_lockable(dir + "/" + mine) : -1;
  if (ticket < 0 || ::flock(ticket, LOCK_EX) != 0) {
    err << "fusion-cli run: cannot queue in " << dir << " (" << std::strerror(errno)
        << "): the shared server's queue folder must exist, writable by all (mode 1777)\n";
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  int slot = -1, gpu = -1, said = -2;
  while (gpu < 0 && !g_signal) {
    const int ahead = waiting_before(dir, mine);
    if (ahead < config.gpus) gpu = take_gpu(dir, config.gpus, &slot);
    if (gpu >= 0) break;
    if (ahead != said) say_place(out, err, ahead, config.gpus);
    said = ahead;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ::unlink((dir + "/" + mine).c_str());
  ::close(ticket);
  if (g_signal) return 130;
  if (said != -2) out << nlohmann::json{{"step", "queue"}, {"progress", 0.0}, {"message", "your run starts"}}.dump() << std::endl;
  const int rc = run_child(config, argv, slot, err);
  ::close(gpu);
  return rc;
}

}  // namespace fx::remote
