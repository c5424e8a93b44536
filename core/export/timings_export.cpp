#include "core/export/timings_export.h"

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

namespace fx {
namespace {

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// Fixed decimals so the same run always writes the same text (the stream default would switch to exponents).
std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string optional_bytes(const std::optional<double>& value) { return value ? fixed(*value, 0) : std::string(); }

std::string event_name(const KernelTimingRow& row) {
  if (row.group.empty()) return row.kernel;
  std::string name = "group " + row.group;
  if (!row.nodes.empty()) name += ": " + join(row.nodes, "+");
  return name;
}

nlohmann::ordered_json event_args(const KernelTimingRow& row) {
  nlohmann::ordered_json args;
  args["kernel"] = row.kernel;
  args["group"] = row.group;
  args["nodes"] = row.nodes;
  if (row.bytes_read) args["bytes_read"] = *row.bytes_read;
  if (row.bytes_written) args["bytes_written"] = *row.bytes_written;
  if (row.predicted_bytes) args["predicted_bytes"] = *row.predicted_bytes;
  if (!row.bytes_read && !row.bytes_written) args["dram"] = "not measured";
  return args;
}

}  // namespace

std::string timings_to_csv(const std::vector<KernelTimingRow>& rows) {
  std::string out = "plan,kernel,group,nodes,start_us,duration_us,bytes_read,bytes_written,predicted_bytes\r\n";
  for (const KernelTimingRow& row : rows) {
    out += csv_field(row.plan) + ',' + csv_field(row.kernel) + ',' + csv_field(row.group) + ',' +
           csv_field(join(row.nodes, ";")) + ',' + fixed(row.start_us, 3) + ',' + fixed(row.duration_us, 3) + ',' +
           optional_bytes(row.bytes_read) + ',' + optional_bytes(row.bytes_written) + ',' +
           optional_bytes(row.predicted_bytes) + "\r\n";
  }
  return out;
}

std::string timings_to_chrome_trace(const std::vector<KernelTimingRow>& rows, const std::vector<CounterTrack>& counters,
                                    const std::string& counter_process) {
  std::map<std::string, int> pid_of_plan;
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  auto name_process = [&](int pid, const std::string& name, const char* thread) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 1}, {"args", {{"name", thread}}}});
  };
  for (const KernelTimingRow& row : rows) {
    auto [it, inserted] = pid_of_plan.emplace(row.plan, static_cast<int>(pid_of_plan.size()) + 1);
    if (inserted) name_process(it->second, row.plan, "GPU kernels");
    events.push_back({{"name", event_name(row)},
                      {"cat", "kernel"},
                      {"ph", "X"},
                      {"ts", row.start_us},
                      {"dur", row.duration_us},
                      {"pid", it->second},
                      {"tid", 1},
                      {"args", event_args(row)}});
  }
  const int counter_pid = static_cast<int>(pid_of_plan.size()) + 1;
  bool any_counter = false;
  for (const CounterTrack& track : counters) {
    if (track.points.empty()) continue;
    if (!any_counter) name_process(counter_pid, counter_process, "samples");
    any_counter = true;
    for (const auto& [t, value] : track.points) {
      events.push_back({{"name", track.name}, {"ph", "C"}, {"ts", t}, {"pid", counter_pid}, {"tid", 1},
                        {"args", {{track.unit, value}}}});
    }
  }
  // One event per line: small files that still diff and grep well; any JSON reader sees the same document.
  std::string out = "{\"traceEvents\":[\n";
  for (std::size_t i = 0; i < events.size(); ++i) {
    out += events[i].dump();
    out += i + 1 < events.size() ? ",\n" : "\n";
  }
  out += "],\"displayTimeUnit\":\"ns\"}\n";
  return out;
}

std::vector<CounterTrack> clock_tracks(const std::vector<ClockPoint>& samples) {
  std::vector<CounterTrack> tracks{{"SM clock", "MHz", {}}, {"power", "W", {}}, {"temperature", "C", {}}};
  for (const ClockPoint& s : samples) {
    tracks[0].points.emplace_back(s.ms * 1000.0, s.sm_mhz);
    tracks[1].points.emplace_back(s.ms * 1000.0, s.power_w);
    tracks[2].points.emplace_back(s.ms * 1000.0, s.temperature_c);
  }
  return tracks;
}

std::vector<ClockPoint> clock_points(const RunReport& report) {
  std::vector<ClockPoint> points;
  if (!report.timing.gpu_clocks) return points;
  for (const auto& [ms, mhz, watts, celsius] : report.timing.gpu_clocks->timeline) points.push_back({ms, mhz, watts, celsius});
  return points;
}

}  // namespace fx
