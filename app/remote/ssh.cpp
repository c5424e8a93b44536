#include "app/remote/ssh.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace fx::remote {
namespace {

// A folder only this user can enter, for the ControlMaster sockets (anyone who can reach a socket can use
// the connection behind it); empty when none can be had. A socket's path must fit in 108 bytes, and ssh adds
// "/" + 40 hex digits (%C) + a 17-character temporary suffix to the folder's.
std::string private_control_dir() {
  constexpr std::size_t kMaxDir = 107 - 1 - 40 - 17;
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  std::vector<std::string> candidates;
  if (runtime && *runtime) candidates.push_back(std::string(runtime) + "/fusion-explorer-ssh");
  candidates.push_back("/tmp/fusion-explorer-ssh-" + std::to_string(::getuid()));
  for (const auto& dir : candidates) {
    if (dir.size() > kMaxDir) continue;
    ::mkdir(dir.c_str(), 0700);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid() && !(st.st_mode & 077))
      return dir;
  }
  return {};
}

bool has(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

std::string last_line(const std::string& text) {
  std::stringstream ss(text);
  std::string line, last;
  while (std::getline(ss, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  while (!last.empty() && (last.back() == '\r' || last.back() == ' ')) last.pop_back();
  return last;
}

}  // namespace

std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

Ssh::Ssh(RunTarget target) : target_(std::move(target)) {
  const std::string dir = private_control_dir();
  if (!dir.empty()) control_path_ = dir + "/%C";
}

std::vector<std::string> Ssh::base_args() const {
  std::vector<std::string> a{"ssh", "-T", "-o", "BatchMode=yes", "-o",
                             "ConnectTimeout=" + std::to_string(target_.connect_timeout_s), "-o", "LogLevel=ERROR",
                             "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4"};
  if (const char* config = std::getenv("FX_SSH_CONFIG"); config && *config) a.insert(a.end(), {"-F", config});
  if (!control_path_.empty())
    a.insert(a.end(), {"-o", "ControlMaster=auto", "-o", "ControlPath=" + control_path_, "-o", "ControlPersist=300"});
  if (target_.port) a.insert(a.end(), {"-p", std::to_string(target_.port)});
  return a;
}

std::vector<std::string> Ssh::command(const std::string& script) const {
  auto a = base_args();
  a.insert(a.end(), {"--", target_.destination(), "exec /bin/sh -c " + shell_quote(script)});
  return a;
}

ChildExit Ssh::run(const std::string& script, double timeout_s, const std::string& stdin_path) const {
  return run_captured(command(script), stdin_path, timeout_s);
}

void Ssh::close_master() const {
  if (control_path_.empty()) return;
  auto a = base_args();
  a.insert(a.end(), {"-O", "exit", "--", target_.destination()});
  run_captured(a, "", 10);
}

std::string describe_ssh_failure(const std::string& err, const RunTarget& t) {
  const std::string where = t.port ? t.host + " port " + std::to_string(t.port) : t.host;
  const std::string again = "ssh " + (t.port ? "-p " + std::to_string(t.port) + " " : std::string()) + t.destination();
  if (has(err, "REMOTE HOST IDENTIFICATION HAS CHANGED"))
    return "the host key of " + where + " has CHANGED since it was saved in known_hosts: find out why before "
           "removing the old key (ssh-keygen -R)";
  if (has(err, "Host key verification failed") || has(err, "No ED25519 host key is known") ||
      has(err, "host key is known for"))
    return "the host key of " + where + " is not in known_hosts: connect once with `" + again +
           "`, check the key's fingerprint and accept it (host key checking stays on)";
  if (has(err, "Permission denied"))
    return where + " refused the login" + (t.user.empty() ? "" : " of " + t.user) +
           ": no key it accepts (load one with ssh-add or install it with ssh-copy-id; passwords are not asked for)";
  if (has(err, "timed out") || has(err, "Connection timed out"))
    return "no answer from " + where + " within " + std::to_string(t.connect_timeout_s) + " s (connection timed out)";
  if (has(err, "Connection refused")) return where + " refused the connection: no ssh server listening there";
  if (has(err, "Could not resolve hostname") || has(err, "Name or service not known"))
    return "unknown host name '" + t.host + "' (not in DNS, /etc/hosts or ~/.ssh/config)";
  if (has(err, "No route to host") || has(err, "Network is unreachable")) return where + " cannot be reached: no route";
  if (has(err, "Connection closed") || has(err, "Connection reset"))
    return where + " closed the connection before logging in (sshd's limits, or a firewall)";
  const std::string line = last_line(err);
  return line.empty() ? "ssh failed with no message" : "ssh: " + line;
}

}  // namespace fx::remote
