// Where `fusion-cli run` runs: this computer, a host reached through the system's OpenSSH client, or a Slurm
// cluster whose login node is reached that way. A target is a name and a URL, kept in targets.json in the
// GUI's settings folder so that the GUI's "Run on" menu and `fusion-cli run --target NAME` share one list.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace fx::remote {

struct RunTarget {
  enum class Kind { local, ssh, slurm } kind = Kind::local;
  std::string name;       // what the menu and every message call it
  std::string url;        // as written: local, ssh://[user@]host[:port][?k=v&...], slurm://...
  std::string user;       // empty: ssh's own choice (~/.ssh/config, the login name)
  std::string host;       // a host name, an address or a Host alias from ~/.ssh/config
  int port = 0;           // 0: ssh's own choice
  std::string cli = "fusion-cli";  // the remote fusion-cli, a name on the remote PATH or a path
  int connect_timeout_s = 10;
  // Slurm: srun's partition (empty: the cluster's default), GPUs per run, time limit (srun --time's format).
  std::string partition;
  int gpus = 1;
  std::string time_limit = "10:00";
  // Slurm: a folder on the login node that the compute nodes see too (default ~/.cache/fusion-explorer/runs).
  std::string workdir;

  bool remote() const { return kind != Kind::local; }
  std::string destination() const { return user.empty() ? host : user + "@" + host; }  // ssh's argument
};

// Parses "local", "ssh://[user@]host[:port][?cli=PATH&timeout=S]" or
// "slurm://[user@]host[:port][?partition=P&gpus=N&time=T&workdir=DIR&cli=PATH&timeout=S]".
// On bad input: nullopt and a one-line reason in *error.
std::optional<RunTarget> parse_target_url(const std::string& url, std::string* error);

// $XDG_CONFIG_HOME/fusion-explorer/targets.json (default ~/.config/...).
std::string targets_file();

// The saved targets ({"targets": [{"name": ..., "url": ...}]}); a missing file is an empty list. A target
// that does not parse is left out with a line in *error (for a file someone edited by hand).
std::vector<RunTarget> load_targets(const std::string& file, std::string* error);
// Writes the list atomically (0600: it names the user's hosts). False with the reason in *error.
bool save_targets(const std::string& file, const std::vector<RunTarget>& targets, std::string* error);

// A saved target's name, or a URL (whose name is then the URL's host part).
std::optional<RunTarget> resolve_target(const std::string& name_or_url, const std::string& file, std::string* error);

}  // namespace fx::remote
