#include "app/cli/cli_io.h"

#include <iostream>
#include <iterator>

#include "core/cost/device_description.h"
#include "core/graph/graph_io.h"

namespace fx::cli {

Expected<std::string> read_input(const std::string& path, std::size_t max_bytes) {
  if (!is_std_stream(path)) return read_text_file(path, max_bytes);
  // A second "-" in one command would silently read nothing.
  static bool stdin_taken = false;
  if (stdin_taken) return Diagnostic{"", "stdin (-) can be read only once per command"};
  stdin_taken = true;
  std::string text;
  char buffer[1 << 16];
  while (std::cin.read(buffer, sizeof buffer) || std::cin.gcount() > 0) {
    text.append(buffer, static_cast<std::size_t>(std::cin.gcount()));
    if (text.size() > max_bytes) {
      return Diagnostic{"", "stdin: more than " + std::to_string(max_bytes >> 20) + " MiB, larger than any graph"};
    }
  }
  if (std::cin.bad()) return Diagnostic{"", "stdin: read error"};
  return text;
}

Expected<Graph> load_graph_input(const std::string& path) {
  const LoadLimits limits;
  auto text = read_input(path, limits.max_file_bytes);
  if (!text) return text.errors();
  return load_graph(*text, limits);
}

Expected<DeviceDescription> resolve_device_input(const std::string& name_or_file) {
  if (!is_std_stream(name_or_file)) return resolve_device(name_or_file);
  auto text = read_input(name_or_file, 1 << 20);
  if (!text) return text.errors();
  return device_from_json(*text);
}

Expected<bool> write_output(const std::string& path, std::string_view text, std::ostream& out) {
  if (!is_std_stream(path)) return write_text_file_atomic(path, text);
  out << text;
  out.flush();
  if (!out) return Diagnostic{"", "stdout: write error"};
  return true;
}

std::string display_name(const std::string& path) { return is_std_stream(path) ? "<stdin>" : path; }

}  // namespace fx::cli
