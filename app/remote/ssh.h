// The system's OpenSSH client, driven with the user's own ~/.ssh/config, keys and agent. Host key checking
// is never turned off; BatchMode means ssh fails with a message instead of asking for anything, and that
// message becomes one line a person can act on. Connections are shared (ControlMaster) so that the steps
// of a run, and the next run, do not pay the handshake again.
#pragma once

#include <string>
#include <vector>

#include "app/remote/process.h"
#include "app/remote/target.h"

namespace fx::remote {

// The word as one POSIX shell word: single-quoted, with ' written as '\''. Safe for every byte sequence.
std::string shell_quote(const std::string& word);

// Exit code 255 is ssh's own failure (the remote command's codes are passed through as they are).
inline constexpr int kSshFailed = 255;

class Ssh {
 public:
  explicit Ssh(RunTarget target);
  // The ssh argv that runs `script` with /bin/sh on the target. The script is one quoted word: the remote
  // login shell only unquotes it.
  std::vector<std::string> command(const std::string& script) const;
  ChildExit run(const std::string& script, double timeout_s, const std::string& stdin_path = "/dev/null") const;
  // Ends the shared connection (tests; a target removed from the list).
  void close_master() const;
  const RunTarget& target() const { return target_; }

 private:
  std::vector<std::string> base_args() const;
  RunTarget target_;
  std::string control_path_;  // empty: no connection sharing (no private folder for the socket)
};

// ssh's stderr of a failed connection as one line: unknown host key, refused key, timeout, refused
// connection, unknown host name; otherwise ssh's own last line.
std::string describe_ssh_failure(const std::string& ssh_stderr, const RunTarget& target);

}  // namespace fx::remote
