#include "app/remote/target.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/graph/graph_io.h"

namespace fx::remote {
namespace {

std::string percent_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A whole number in [lo, hi] or nullopt.
std::optional<int> whole(const std::string& s, int lo, int hi) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int v = std::stoi(s);
  return v >= lo && v <= hi ? std::optional<int>(v) : std::nullopt;
}

// ssh would read a host or user that starts with '-' as an option; a control character breaks a message line.
bool safe_word(const std::string& s) {
  if (s.empty() || s[0] == '-') return false;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f || c == ' ' || c == '/' || c == '@' || c == '?') return false;
  return true;
}

// The query's key=value pairs into the target; false with the reason for an unknown key or a bad value.
bool apply_query(RunTarget& t, const std::string& query, std::string* error) {
  std::stringstream ss(query);
  std::string pair;
  while (std::getline(ss, pair, '&')) {
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    const std::string key = pair.substr(0, eq), value = eq == std::string::npos ? "" : percent_decode(pair.substr(eq + 1));
    auto bad = [&](const std::string& why) {
      *error = "target " + t.url + ": " + key + " " + why;
      return false;
    };
    if (value.empty() || value.find_first_of("\n\r") != std::string::npos) return bad("needs a value on one line");
    if (key == "cli") {
      t.cli = value;
    } else if (key == "timeout") {
      auto v = whole(value, 1, 600);
      if (!v) return bad("takes seconds from 1 to 600");
      t.connect_timeout_s = *v;
    } else if (key == "partition" && t.kind == RunTarget::Kind::slurm) {
      t.partition = value;
    } else if (key == "gpus" && t.kind == RunTarget::Kind::slurm) {
      auto v = whole(value, 0, 64);
      if (!v) return bad("takes a count from 0 to 64");
      t.gpus = *v;
    } else if (key == "time" && t.kind == RunTarget::Kind::slurm) {
      if (value.find_first_not_of("0123456789:-") != std::string::npos) return bad("takes srun's --time format (MM, MM:SS, H:MM:SS, D-H)");
      t.time_limit = value;
    } else if (key == "workdir" && t.kind == RunTarget::Kind::slurm) {
      t.workdir = value;
    } else {
      *error = "target " + t.url + ": unknown setting '" + key + "' (ssh:// takes cli and timeout; slurm:// also "
               "partition, gpus, time and workdir)";
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<RunTarget> parse_target_url(const std::string& url, std::string* error) {
  RunTarget t;
  t.url = url;
  if (url == "local" || url.empty()) {
    t.name = "local";
    return t;
  }
  std::string rest;
  if (url.rfind("ssh://", 0) == 0) {
    t.kind = RunTarget::Kind::ssh;
    rest = url.substr(6);
  } else if (url.rfind("slurm://", 0) == 0) {
    t.kind = RunTarget::Kind::slurm;
    rest = url.substr(8);
  } else {
    *error = "target '" + url + "' is neither a saved target's name nor local, ssh://[user@]host[:port] or "
             "slurm://[user@]login-host[:port]";
    return std::nullopt;
  }
  std::string query;
  if (auto q = rest.find('?'); q != std::string::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (auto at = rest.rfind('@'); at != std::string::npos) {
    t.user = percent_decode(rest.substr(0, at));
    rest = rest.substr(at + 1);
    if (!safe_word(t.user)) {
      *error = "target " + url + ": the user name is empty or has characters ssh would misread";
      return std::nullopt;
    }
  }
  // [v6::addr]:port or host:port
  std::string port;
  if (!rest.empty() && rest[0] == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos) {
      *error = "target " + url + ": an IPv6 address needs its closing ']'";
      return std::nullopt;
    }
    t.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':') port = rest.substr(close + 2);
  } else if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    t.host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  } else {
    t.host = rest;
  }
  if (!safe_word(t.host)) {
    *error = "target " + url + ": the host name is empty or has characters ssh would misread";
    return std::nullopt;
  }
  if (!port.empty()) {
    auto p = whole(port, 1, 65535);
    if (!p) {
      *error = "target " + url + ": the port must be a number from 1 to 65535";
      return std::nullopt;
    }
    t.port = *p;
  }
  t.name = t.host;
  if (!apply_query(t, query, error)) return std::nullopt;
  return t;
}

std::string targets_file() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  const std::string base = xdg && *xdg ? xdg : std::string(home ? home : "") + "/.config";
  return base + "/fusion-explorer/targets.json";
}

std::vector<RunTarget> load_targets(const std::string& file, std::string* error) {
  std::vector<RunTarget> out;
  std::ifstream in(file);
  if (!in) return out;
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    *error = file + ": not JSON (" + e.what() + ")";
    return out;
  }
  if (!j.is_object() || !j.contains("targets") || !j["targets"].is_array()) {
    *error = file + ": expected {\"targets\": [{\"name\": ..., \"url\": ...}]}";
    return out;
  }
  for (std::size_t i = 0; i < j["targets"].size(); ++i) {
    const auto& e = j["targets"][i];
    std::string why;
    if (!e.is_object() || !e.value("name", nlohmann::json()).is_string() || !e.value("url", nlohmann::json()).is_string()) {
      *error += file + ": /targets/" + std::to_string(i) + ": needs a name and a url (strings)\n";
      continue;
    }
    auto t = parse_target_url(e["url"].get<std::string>(), &why);
    if (!t) {
      *error += file + ": /targets/" + std::to_string(i) + ": " + why + "\n";
      continue;
    }
    t->name = e["name"].get<std::string>();
    out.push_back(std::move(*t));
  }
  return out;
}

bool save_targets(const std::string& file, const std::vector<RunTarget>& targets, std::string* error) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& t : targets) list.push_back({{"name", t.name}, {"url", t.url}});
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
  const auto written = write_text_file_atomic(file, nlohmann::json{{"targets", list}}.dump(2) + "\n");
  if (!written) {
    *error = format_diagnostics(written.errors());
    return false;
  }
  ::chmod(file.c_str(), 0600);
  return true;
}

std::optional<RunTarget> resolve_target(const std::string& name_or_url, const std::string& file, std::string* error) {
  if (name_or_url.find("://") != std::string::npos || name_or_url == "local") return parse_target_url(name_or_url, error);
  std::string load_error;
  for (auto& t : load_targets(file, &load_error))
    if (t.name == name_or_url) return t;
  *error = "no run target named '" + name_or_url + "' in " + file +
           (load_error.empty() ? "" : " (" + load_error.substr(0, load_error.find('\n')) + ")") +
           "; give a URL (ssh://[user@]host[:port], slurm://login-host?partition=P) or add it in the GUI's Run on menu";
  return std::nullopt;
}

}  // namespace fx::remote
