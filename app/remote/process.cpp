#include "app/remote/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace fx::remote {
namespace {

using Clock = std::chrono::steady_clock;

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Splits what arrived into lines for `sink`, keeping a partial line in `partial`.
void feed(std::string& partial, const char* data, std::size_t n, const std::function<void(const std::string&)>& sink,
          std::string& captured) {
  if (!sink) {
    captured.append(data, n);
    return;
  }
  partial.append(data, n);
  std::size_t nl;
  while ((nl = partial.find('\n')) != std::string::npos) {
    sink(partial.substr(0, nl));
    partial.erase(0, nl + 1);
  }
}

}  // namespace

std::optional<Process> Process::start(const std::vector<std::string>& argv, const std::string& stdin_path,
                                      std::string* error) {
  int in[2] = {-1, -1}, out[2], err[2];
  int file = -1;
  if (!stdin_path.empty()) {
    file = ::open(stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (file < 0) {
      *error = "cannot read " + stdin_path + ": " + std::strerror(errno);
      return std::nullopt;
    }
  } else if (::pipe2(in, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return std::nullopt;
  }
  if (pid == 0) {
    ::dup2(file >= 0 ? file : in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    // Its own process group: a Ctrl-C meant for fusion-cli reaches ssh only through our cancel, which then
    // cleans up on the target in order.
    ::setpgid(0, 0);
    ::signal(SIGPIPE, SIG_DFL);
    ::execvp(args[0], args.data());
    const std::string msg = std::string("cannot start ") + args[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  Process p;
  p.pid_ = pid;
  if (file >= 0) ::close(file);
  if (in[0] >= 0) ::close(in[0]);
  p.in_ = in[1];
  ::close(out[1]);
  ::close(err[1]);
  p.out_ = out[0];
  p.err_ = err[0];
  return p;
}

Process::Process(Process&& o) noexcept : pid_(o.pid_), in_(o.in_), out_(o.out_), err_(o.err_), status_(o.status_) {
  o.pid_ = -1;
  o.in_ = o.out_ = o.err_ = -1;
}

Process::~Process() {
  close_fd(in_);
  if (pid_ > 0 && status_ < 0) {
    ::kill(pid_, SIGKILL);
    int st;
    ::waitpid(pid_, &st, 0);
  }
  close_fd(out_);
  close_fd(err_);
}

void Process::close_stdin() { close_fd(in_); }

void Process::kill(int sig) {
  if (pid_ > 0 && status_ < 0) ::kill(pid_, sig);
}

int Process::wait(double timeout_s) {
  const auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
  while (status_ < 0) {
    int st;
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = st;
      break;
    }
    if (r < 0 || Clock::now() > end) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return decode_status(status_);
}

ChildExit Process::pump(const std::function<void(const std::string&)>& on_out,
                        const std::function<void(const std::string&)>& on_err, double timeout_s, int cancel_fd) {
  ChildExit r;
  const auto end = Clock::now() + std::chrono::duration<double>(timeout_s);
  std::string partial_out, partial_err;
  // Until the child has exited and both pipes are drained. A grandchild that keeps a pipe open (an ssh
  // ControlPersist master) must not hold us: after the exit, only what is already there is read.
  bool exited = false;
  while (true) {
    pollfd fds[3] = {{out_, POLLIN, 0}, {err_, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    const int n = ::poll(fds, cancel_fd >= 0 ? 3 : 2, exited ? 0 : 50);
    if (n < 0 && errno != EINTR) break;
    if (cancel_fd >= 0 && (fds[2].revents & POLLIN)) {
      r.cancelled = true;
      return r;
    }
    bool got = false;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      const ssize_t k = ::read(fds[i].fd, buf, sizeof buf);
      if (k > 0) {
        got = true;
        if (i == 0) feed(partial_out, buf, static_cast<std::size_t>(k), on_out, r.out);
        else feed(partial_err, buf, static_cast<std::size_t>(k), on_err, r.err);
      } else if (k == 0) {
        close_fd(i == 0 ? out_ : err_);
      }
    }
    if (!exited && wait(0) >= 0) exited = true;
    if (exited && !got) break;
    if (Clock::now() > end) {
      ::kill(pid_, SIGKILL);
      r.timed_out = true;
      break;
    }
  }
  if (on_out && !partial_out.empty()) on_out(partial_out);
  if (on_err && !partial_err.empty()) on_err(partial_err);
  r.code = wait(r.timed_out ? 5 : 3600);
  return r;
}

ChildExit run_captured(const std::vector<std::string>& argv, const std::string& stdin_path, double timeout_s) {
  std::string error;
  auto p = Process::start(argv, stdin_path.empty() ? "/dev/null" : stdin_path, &error);
  if (!p) {
    ChildExit r;
    r.code = 127;
    r.err = error;
    return r;
  }
  return p->pump({}, {}, timeout_s);
}

}  // namespace fx::remote
