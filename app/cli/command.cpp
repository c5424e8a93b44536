#include "app/cli/command.h"

#include <cctype>
#include <cstddef>

namespace fx::cli {

std::map<std::string, Command>& commands() {
  static std::map<std::string, Command> table;
  return table;
}

Args::Args(std::vector<std::string> argv, std::set<std::string> flags, std::set<std::string> options,
           std::map<std::string, std::string> aliases) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string a = argv[i];
    if (a == "--") {  // end of options: what follows are files, even "-x" or "--json"
      positionals_.insert(positionals_.end(), argv.begin() + static_cast<std::ptrdiff_t>(i) + 1, argv.end());
      return;
    }
    std::optional<std::string> inline_value;
    if (a.rfind("--", 0) == 0) {
      if (auto eq = a.find('='); eq != std::string::npos) {
        inline_value = a.substr(eq + 1);
        a = a.substr(0, eq);
      }
    }
    if (auto al = aliases.find(a); al != aliases.end()) a = al->second;
    if (flags.count(a)) {
      flags_.insert(a);
    } else if (options.count(a + "...")) {
      // A list option ("--accept ID..."): takes every following word up to the next option.
      if (inline_value) values_.emplace(a, *inline_value);
      while (i + 1 < argv.size() && argv[i + 1].rfind("-", 0) != 0) values_.emplace(a, argv[++i]);
      if (!values_.count(a)) {
        error_ = "option " + a + " needs at least one value";
        return;
      }
    } else if (options.count(a)) {
      if (inline_value) {
        values_.emplace(a, *inline_value);
      } else if (i + 1 < argv.size()) {
        values_.emplace(a, argv[++i]);
      } else {
        error_ = "option " + a + " needs a value";
        return;
      }
    } else if (a.size() > 1 && a[0] == '-' && !(a.size() > 1 && (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.'))) {
      error_ = "unknown option " + a;
      return;
    } else {
      positionals_.push_back(argv[i]);
      positional_indices_.push_back(i);
    }
  }
}

std::optional<std::string> Args::value(const std::string& option) const {
  auto range = values_.equal_range(option);
  if (range.first == range.second) return std::nullopt;
  return std::prev(range.second)->second;
}

std::vector<std::string> Args::values(const std::string& option) const {
  std::vector<std::string> out;
  auto range = values_.equal_range(option);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

int report_errors(std::ostream& err, const std::string&, const std::string& diagnostics_text) {
  err << diagnostics_text;
  return kBadInput;
}

}  // namespace fx::cli
