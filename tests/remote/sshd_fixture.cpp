#include "tests/remote/sshd_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace fx::remote::test {
namespace {

constexpr const char* kSshd = "/usr/sbin/sshd";

void write(const std::string& path, const std::string& text, mode_t mode = 0600) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

bool keygen(const std::string& file) {
  return run_captured({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fx-test", "-f", file}, "", 30).code == 0;
}

bool accepts(int port) {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

std::string client_config(const std::string& dir, int port, const std::string& user, const std::string& key,
                          const std::string& known_hosts) {
  std::ostringstream c;
  c << "Host fxtest\n  HostName 127.0.0.1\n  Port " << port << "\n  User " << user << "\n"
    << "Host *\n  IdentityFile " << dir << "/" << key << "\n  IdentitiesOnly yes\n  IdentityAgent none\n"
    << "  UserKnownHostsFile " << dir << "/" << known_hosts << "\n  GlobalKnownHostsFile /dev/null\n"
    << "  StrictHostKeyChecking yes\n  User " << user << "\n";
  return c.str();
}

}  // namespace

int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

void write_script(const std::string& path, const std::string& body) { write(path, "#!/bin/sh\n" + body, 0755); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

SshServer::SshServer(const std::string& dir, const std::vector<std::string>& set_env) : dir_(dir) {
  if (::access(kSshd, X_OK) != 0) {
    why_ = std::string(kSshd) + " is not installed (Debian's openssh-server; scripts/install-deps.sh installs it)";
    return;
  }
  const passwd* pw = ::getpwuid(::getuid());
  const std::string user = pw ? pw->pw_name : "root";
  std::filesystem::create_directories(remote_tmp());
  ::chmod(dir_.c_str(), 0700);
  if (!keygen(dir_ + "/host_key") || !keygen(dir_ + "/client_key") || !keygen(dir_ + "/stranger_key")) {
    why_ = "ssh-keygen failed";
    return;
  }
  write(dir_ + "/authorized_keys", read_file(dir_ + "/client_key.pub"));
  // As root, sshd separates privileges into this folder, which a fresh container has not made yet.
  if (::getuid() == 0) ::mkdir("/run/sshd", 0755);
  port_ = free_port();
  std::ostringstream cfg;
  cfg << "Port " << port_ << "\nListenAddress 127.0.0.1\nHostKey " << dir_ << "/host_key\n"
      << "AuthorizedKeysFile " << dir_ << "/authorized_keys\nPidFile " << dir_ << "/sshd.pid\n"
      << "UsePAM no\nStrictModes no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
      << "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nAllowUsers " << user << "\n"
      << "MaxStartups 50\nMaxSessions 50\nLogLevel ERROR\nSetEnv TMPDIR=" << remote_tmp();
  for (const auto& e : set_env) cfg << " " << e;
  cfg << "\n";
  write(dir_ + "/sshd_config", cfg.str());
  std::istringstream host_pub(read_file(dir_ + "/host_key.pub"));
  std::string type, key;
  host_pub >> type >> key;
  write(dir_ + "/known_hosts", "[127.0.0.1]:" + std::to_string(port_) + " " + type + " " + key + "\n");
  write(dir_ + "/known_hosts_empty", "");
  write(config(), client_config(dir_, port_, user, "client_key", "known_hosts"));
  write(config_unknown_host_key(), client_config(dir_, port_, user, "client_key", "known_hosts_empty"));
  write(config_refused_key(), client_config(dir_, port_, user, "stranger_key", "known_hosts"));
  // sshd must be started by its absolute path; -D keeps it in the foreground as our child, -e logs to stderr.
  std::string error;
  auto p = Process::start({kSshd, "-D", "-e", "-f", dir_ + "/sshd_config"}, "/dev/null", &error);
  if (!p) {
    why_ = error;
    return;
  }
  sshd_ = std::make_unique<Process>(std::move(*p));
  for (int i = 0; i < 100 && !accepts(port_); ++i) {
    if (sshd_->wait(0) >= 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!accepts(port_)) {
    const ChildExit r = sshd_->pump({}, {}, 2);
    why_ = "sshd did not start: " + r.err;
    sshd_.reset();
  }
}

SshServer::~SshServer() {
  if (sshd_) {
    sshd_->kill(SIGTERM);
    sshd_->wait(5);
  }
}

}  // namespace fx::remote::test
