#include "core/report/timing_protocol.h"

#include <fstream>
#include <sstream>

namespace fx {
namespace {

constexpr const char* kFormat = "fusion-explorer/timing-protocol";
constexpr int kVersion = 1;
constexpr double kMaxMs = 60'000;  // a minute: anything longer is a typo, not a protocol

// triton.testing.do_bench(fn, warmup=25, rep=100) with its 256 MB cache flush (triton/testing.py), after the
// second of rest the PyTorch harness (bench/bench.py) leaves before each of its timings.
TimingProtocol do_bench_preset() {
  TimingProtocol p;
  p.preset = "do_bench";
  p.cold_l2 = true;
  p.warmup_ms = 25;
  p.repeat_ms = 100;
  p.rest_ms = 1000;
  return p;
}

}  // namespace

void name_custom_if_changed(TimingProtocol& p) {
  auto named = timing_preset(p.preset);
  if (!named) return;
  named->preset = p.preset;
  if (!(*named == p)) p.preset = "custom";
}

std::optional<TimingProtocol> timing_preset(const std::string& name) {
  if (name == "interactive") return TimingProtocol{};
  if (name == "do_bench" || name == "do-bench") return do_bench_preset();
  return std::nullopt;
}

std::vector<std::string> timing_preset_names() { return {"interactive", "do_bench"}; }

Diagnostics check_timing_protocol(const TimingProtocol& p) {
  Diagnostics d;
  if (p.warmup < 0) d.push_back({"/warmup", "warmup takes a count from 0"});
  if (p.repeat < 1) d.push_back({"/repeat", "repeat takes a count from 1"});
  const std::pair<const char*, double> times[] = {{"warmup_ms", p.warmup_ms},
                                                   {"repeat_ms", p.repeat_ms},
                                                   {"rest_ms", p.rest_ms},
                                                   {"tuning_rest_ms", p.tuning_rest_ms}};
  for (const auto& [name, ms] : times) {
    if (!(ms >= 0 && ms <= kMaxMs)) {  // NaN fails too
      std::ostringstream m;
      m << name << " takes milliseconds from 0 to 60000 (not " << ms << ")";
      d.push_back({std::string("/") + name, m.str()});
    }
  }
  return d;
}

Expected<TimingProtocol> timing_protocol_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return Diagnostic{"", "a timing protocol is a JSON object"};
  if (j.contains("format") && j["format"] != kFormat) {
    return Diagnostic{"/format", std::string("not a timing protocol (format must be \"") + kFormat + "\")"};
  }
  if (j.contains("version") && j["version"] != kVersion) {
    return Diagnostic{"/version", "timing protocol version " + j["version"].dump() + " is not supported (1 is)"};
  }
  TimingProtocol p;
  if (j.contains("preset")) {
    const std::string name = j["preset"].is_string() ? j["preset"].get<std::string>() : "";
    const auto named = name == "custom" ? std::optional<TimingProtocol>(TimingProtocol{}) : timing_preset(name);
    if (!named) return Diagnostic{"/preset", "preset must be \"interactive\", \"do_bench\" or \"custom\""};
    p = *named;
    if (name == "custom") p.preset = name;  // a report's protocol read back: every field is given
  }
  Diagnostics errors;
  for (const auto& item : j.items()) {
    // Named copies, not a structured binding: clang 14 cannot capture bindings in the lambda below.
    const std::string& key = item.key();
    const nlohmann::json& value = item.value();
    const std::string at = "/" + pointer_token(key);
    auto wrong = [&](const char* what) { errors.push_back({at, key + " takes " + what + " (not " + value.dump() + ")"}); };
    if (key == "format" || key == "version" || key == "preset") continue;
    if (key == "warmup" || key == "repeat") {
      if (!value.is_number_integer()) { wrong("a whole number"); continue; }
      (key == "warmup" ? p.warmup : p.repeat) = value.get<int>();
    } else if (key == "warmup_ms" || key == "repeat_ms" || key == "rest_ms" || key == "tuning_rest_ms") {
      if (!value.is_number()) { wrong("milliseconds"); continue; }
      const double ms = value.get<double>();
      if (key == "warmup_ms") p.warmup_ms = ms;
      if (key == "repeat_ms") p.repeat_ms = ms;
      if (key == "rest_ms") p.rest_ms = ms;
      if (key == "tuning_rest_ms") p.tuning_rest_ms = ms;
    } else if (key == "cold_l2" || key == "read_clocks") {
      if (!value.is_boolean()) { wrong("true or false"); continue; }
      (key == "cold_l2" ? p.cold_l2 : p.read_clocks) = value.get<bool>();
    } else if (key == "placement") {
      if (!value.is_number_unsigned()) { wrong("a seed, a whole number from 0"); continue; }
      p.placement = value.get<std::uint64_t>();
    } else {
      errors.push_back({at, "unknown field '" + key + "' of a timing protocol"});
    }
  }
  for (Diagnostic& d : check_timing_protocol(p)) errors.push_back(std::move(d));
  if (!errors.empty()) return errors;
  name_custom_if_changed(p);
  return p;
}

Expected<TimingProtocol> load_timing_protocol(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Diagnostic{"", "cannot read " + path};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    return Diagnostic{"", std::string("not JSON: ") + e.what()};
  }
  return timing_protocol_from_json(j);
}

nlohmann::ordered_json timing_protocol_to_json(const TimingProtocol& p) {
  return {{"format", kFormat},       {"version", kVersion},         {"preset", p.preset},
          {"warmup", p.warmup},      {"repeat", p.repeat},          {"warmup_ms", p.warmup_ms},
          {"repeat_ms", p.repeat_ms}, {"cold_l2", p.cold_l2},        {"rest_ms", p.rest_ms},
          {"tuning_rest_ms", p.tuning_rest_ms}, {"placement", p.placement}, {"read_clocks", p.read_clocks}};
}

}  // namespace fx
