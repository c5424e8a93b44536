// A real OpenSSH server for the tests: Debian's sshd started on 127.0.0.1 at a free, non-standard port, as the
// user running the tests, with its own sshd_config, host key and a throwaway client key in a temporary folder.
// The client side gets an ssh_config (FX_SSH_CONFIG) whose known_hosts holds that host key, so host key
// checking stays on. Nothing in the user's own ~/.ssh is read or written.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "app/remote/process.h"

namespace fx::remote::test {

class SshServer {
 public:
  // Starts sshd; on failure ok() is false and why() says what is missing (the tests then skip).
  // set_env: NAME=VALUE words every session gets (sshd_config's SetEnv), e.g. SLURM_CONF.
  explicit SshServer(const std::string& dir, const std::vector<std::string>& set_env = {});
  ~SshServer();
  bool ok() const { return sshd_ != nullptr; }
  const std::string& why() const { return why_; }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }
  // ssh_config files for the client: a Host alias "fxtest" that logs in; one whose known_hosts lacks the
  // server's key; one offering a key the server does not know.
  std::string config() const { return dir_ + "/ssh_config"; }
  std::string config_unknown_host_key() const { return dir_ + "/ssh_config_unknown"; }
  std::string config_refused_key() const { return dir_ + "/ssh_config_refused"; }
  // The TMPDIR of the server's sessions: where the runs' private folders are made.
  std::string remote_tmp() const { return dir_ + "/remote-tmp"; }

 private:
  std::string dir_, why_;
  int port_ = 0;
  std::unique_ptr<Process> sshd_;
};

// A port on 127.0.0.1 nobody listens on (bound, read, closed).
int free_port();
// Writes an executable shell script.
void write_script(const std::string& path, const std::string& body);
std::string read_file(const std::string& path);

}  // namespace fx::remote::test
