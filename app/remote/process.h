// A child process with pipes, without a shell: its arguments go to execvp as they are, so nothing in them is
// ever parsed by a shell on this side. Used for the ssh client; plain POSIX, no Qt.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fx::remote {

struct ChildExit {
  int code = -1;        // the exit code, or 128 + signal for a child killed by a signal
  bool timed_out = false;
  bool cancelled = false;  // the cancel descriptor became readable
  std::string out, err;    // what was captured (not what went to the line callbacks)
};

class Process {
 public:
  // stdin_path: the child's standard input read from that file; otherwise a pipe held by this object until
  // close_stdin() (a remote watchdog ends the run when it closes). Nullopt with the reason on failure.
  static std::optional<Process> start(const std::vector<std::string>& argv, const std::string& stdin_path,
                                      std::string* error);
  Process(Process&& other) noexcept;
  Process& operator=(Process&&) = delete;
  Process(const Process&) = delete;
  ~Process();  // a child still running is killed and reaped

  pid_t pid() const { return pid_; }
  void close_stdin();
  void kill(int sig);

  // Reads stdout and stderr line by line until the child exits. on_out / on_err get each complete line
  // (without '\n') as it arrives; empty callbacks capture into ChildExit::out/err instead. Stops early when
  // timeout_s passes (the child is killed) or cancel_fd (>= 0) becomes readable (the child is left running
  // for the caller to end).
  ChildExit pump(const std::function<void(const std::string&)>& on_out,
                 const std::function<void(const std::string&)>& on_err, double timeout_s, int cancel_fd = -1);
  // Waits for the exit after a kill; the code, or -1 if it did not end within timeout_s.
  int wait(double timeout_s);

 private:
  Process() = default;
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;
  int status_ = -1;
};

// Runs argv to its end (stdin from stdin_path, or /dev/null when empty) and captures both streams.
ChildExit run_captured(const std::vector<std::string>& argv, const std::string& stdin_path, double timeout_s);

}  // namespace fx::remote
