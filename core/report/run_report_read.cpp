// The run report's reader: one format and one version (schemas/run-report.schema.json), each value checked for
// its type and each required field for its presence, every error located by JSON pointer. No second spelling of
// any field is guessed at: a report of another version is refused, saying which.
#include <cmath>
#include <string>
#include <type_traits>

#include "core/report/run_report.h"

namespace fx {
namespace {

using json = nlohmann::json;

// Reading one value into its field. Each overload reports a value of the wrong type at `at`.
struct Reader {
  Diagnostics& errors;
  void fail(const std::string& at, const std::string& message) { errors.push_back({at, message}); }
};

// The objects' readers, declared before the templates that call them for their elements.
void read(Reader& r, const json& v, const std::string& at, TimedKernel& out);
void read(Reader& r, const json& v, const std::string& at, SharedCounterWindow& out);
void read(Reader& r, const json& v, const std::string& at, MeasuredTraffic& out);
void read(Reader& r, const json& v, const std::string& at, KernelReport& out);
void read(Reader& r, const json& v, const std::string& at, SplitGroup& out);
void read(Reader& r, const json& v, const std::string& at, PlanReport& out);
void read(Reader& r, const json& v, const std::string& at, OutputCheck& out);
void read(Reader& r, const json& v, const std::string& at, RunDevice& out);
void read(Reader& r, const json& v, const std::string& at, ClockReading& out);
void read(Reader& r, const json& v, const std::string& at, RunTiming& out);
void read(Reader& r, const json& v, const std::string& at, RunProfile& out);
void read(Reader& r, const json& v, const std::string& at, RunFault& out);

void read(Reader& r, const json& v, const std::string& at, std::string& out) {
  if (v.is_string()) out = v.get<std::string>();
  else r.fail(at, "must be a string");
}

void read(Reader& r, const json& v, const std::string& at, double& out) {
  if (v.is_number()) out = v.get<double>();
  else r.fail(at, "must be a number");
}

void read(Reader& r, const json& v, const std::string& at, bool& out) {
  if (v.is_boolean()) out = v.get<bool>();
  else r.fail(at, "must be true or false");
}

template <typename Int>
  requires std::is_integral_v<Int>
void read(Reader& r, const json& v, const std::string& at, Int& out) {
  if (v.is_number_integer()) out = v.get<Int>();
  else if (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<std::int64_t>(v.get<double>())))
    out = static_cast<Int>(v.get<double>());
  else r.fail(at, "must be a whole number");
}

template <typename T>
void read(Reader& r, const json& v, const std::string& at, std::optional<T>& out) {
  if (v.is_null()) return out.reset();
  out.emplace();
  read(r, v, at, *out);
}

template <typename T>
void read(Reader& r, const json& v, const std::string& at, std::vector<T>& out) {
  if (!v.is_array()) return r.fail(at, "must be an array");
  out.resize(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) read(r, v[i], at + "/" + std::to_string(i), out[i]);
}

void read(Reader& r, const json& v, const std::string& at, std::array<double, 4>& out) {
  if (!v.is_array() || v.size() != 4) return r.fail(at, "must be [ms, SM MHz, W, C]");
  for (std::size_t i = 0; i < 4; ++i) read(r, v[i], at + "/" + std::to_string(i), out[i]);
}

// The fields of one object: required ones must be present, optional ones keep their default when absent.
class Fields {
 public:
  Fields(Reader& r, const json& v, std::string at) : r_(r), v_(v), at_(std::move(at)) {
    if (!v_.is_object()) r_.fail(at_, "must be an object");
  }
  bool ok() const { return v_.is_object(); }
  template <typename T>
  Fields& req(const char* key, T& out) {
    if (const json* v = find(key)) read(r_, *v, at(key), out);
    else if (ok()) r_.fail(at(key), std::string("missing: \"") + key + "\" is required");
    return *this;
  }
  template <typename T>
  Fields& opt(const char* key, T& out) {
    if (const json* v = find(key)) read(r_, *v, at(key), out);
    return *this;
  }
  const json* find(const char* key) const {
    if (!ok()) return nullptr;
    auto it = v_.find(key);
    return it == v_.end() ? nullptr : &*it;
  }
  std::string at(const char* key) const { return at_ + "/" + pointer_token(key); }
  Reader& reader() { return r_; }

 private:
  Reader& r_;
  const json& v_;
  std::string at_;
};

// A number, or a string saying why there is none ("not measured").
void read_or_reason(Fields& f, const char* key, std::optional<double>& out) {
  const json* v = f.find(key);
  if (!v || v->is_string()) return out.reset();
  read(f.reader(), *v, f.at(key), out);
}

void read(Reader& r, const json& v, const std::string& at, TimedKernel& out) {
  Fields(r, v, at).req("kernel", out.name).req("start_us", out.start_us).req("duration_us", out.duration_us);
}

void read(Reader& r, const json& v, const std::string& at, SharedCounterWindow& out) {
  Fields(r, v, at).req("plan", out.plan).req("step", out.step).req("kernel", out.kernel).req("steps", out.steps);
}

void read(Reader& r, const json& v, const std::string& at, MeasuredTraffic& out) {
  Fields f(r, v, at);
  read_or_reason(f, "bytes_read", out.bytes_read);
  read_or_reason(f, "bytes_written", out.bytes_written);
  f.opt("reason", out.reason).opt("predicted_bytes", out.predicted_bytes);
  f.opt("measured_over_predicted", out.measured_over_predicted).opt("mismatch", out.mismatch);
  f.opt("mismatch_reason", out.mismatch_reason).opt("achieved_bytes_per_s", out.achieved_bytes_per_s);
  f.opt("fraction_of_peak_bandwidth", out.fraction_of_peak_bandwidth);
  f.opt("fraction_of_copy_bandwidth", out.fraction_of_copy_bandwidth);
  f.opt("flops", out.flops).opt("flops_per_s", out.flops_per_s).opt("l2_bytes_written", out.l2_bytes_written);
  f.opt("cuda_kernels", out.cuda_kernels).opt("notes", out.notes).opt("timeline", out.timeline);
  f.opt("shared_window", out.shared_window);
}

void read(Reader& r, const json& v, const std::string& at, KernelReport& out) {
  Fields f(r, v, at);
  f.req("name", out.name).req("group", out.group).opt("kind", out.kind).opt("library", out.library);
  f.opt("path", out.path).opt("tuned_at", out.tuned_at).req("nodes", out.nodes).req("bytes", out.bytes);
  f.opt("group_predicted_ms", out.group_predicted_ms).opt("group_predicted_bytes", out.group_predicted_bytes);
  f.req("measured_ms", out.measured_ms).opt("measured", out.measured);
}

void read(Reader& r, const json& v, const std::string& at, SplitGroup& out) {
  Fields(r, v, at).req("group", out.group).req("kernels", out.kernels).req("why", out.why);
}

void read(Reader& r, const json& v, const std::string& at, PlanReport& out) {
  Fields f(r, v, at);
  f.req("name", out.name).req("kernels", out.kernels).opt("notes", out.notes).opt("split_groups", out.split_groups);
  f.req("total_ms", out.total_ms).opt("min_ms", out.min_ms).opt("max_ms", out.max_ms);
  f.opt("stepped_ms", out.stepped_ms).opt("graph_ms", out.graph_ms).req("predicted_ms", out.predicted_ms);
  f.opt("predicted_bytes", out.bytes).opt("measured", out.measured);
  int count = static_cast<int>(out.kernels.size());
  f.opt("kernel_count", count);
  if (count != static_cast<int>(out.kernels.size()))
    r.fail(f.at("kernel_count"), "says " + std::to_string(count) + " kernels; the plan lists " +
                                     std::to_string(out.kernels.size()));
}

void read(Reader& r, const json& v, const std::string& at, OutputCheck& out) {
  Fields f(r, v, at);
  std::optional<double> error;
  f.req("output", out.name).req("dtype", out.dtype).req("rel_error", error).req("threshold", out.threshold);
  f.req("nan_count", out.nan_count).req("passed", out.passed);
  out.rel_error = error.value_or(std::nan(""));
}

void read(Reader& r, const json& v, const std::string& at, RunDevice& out) {
  Fields f(r, v, at);
  f.req("name", out.name).req("arch", out.arch).req("sm_count", out.sm_count);
  f.opt("total_memory_bytes", out.total_memory_bytes).opt("free_memory_bytes", out.free_memory_bytes);
  f.opt("clock_mhz", out.clock_mhz).opt("memory_clock_mhz", out.memory_clock_mhz);
  f.opt("memory_bus_bits", out.memory_bus_bits).opt("l2_bytes", out.l2_bytes);
}

void read(Reader& r, const json& v, const std::string& at, ClockReading& out) {
  Fields f(r, v, at);
  f.req("samples", out.samples).opt("busy_samples", out.busy_samples).opt("sm_mhz_median", out.sm_mhz_median);
  f.opt("sm_mhz_min", out.sm_mhz_min).opt("sm_mhz_max", out.sm_mhz_max).opt("max_sm_mhz", out.max_sm_mhz);
  f.opt("power_w_max", out.power_w_max).opt("power_limit_w", out.power_limit_w);
  f.opt("temperature_c_max", out.temperature_c_max).opt("held_back_by", out.held_back_by);
  f.req("summary", out.summary).req("note", out.note).opt("timeline", out.timeline);
}

void read(Reader& r, const json& v, const std::string& at, RunTiming& out) {
  Fields f(r, v, at);
  f.opt("preset", out.preset).req("repeat", out.repeat).req("warmup", out.warmup);
  f.opt("warmup_ms", out.warmup_ms).opt("repeat_ms", out.repeat_ms).opt("round_ms", out.round_ms);
  f.opt("rest_ms", out.rest_ms).opt("tuning_rest_ms", out.tuning_rest_ms).req("cold_l2", out.cold_l2);
  f.opt("layouts", out.layouts).opt("placement", out.placement).opt("placement_gap_bytes", out.placement_gap_bytes);
  f.opt("protocol", out.protocol).opt("gpu_clocks", out.gpu_clocks).opt("graph_gpu_clocks", out.graph_gpu_clocks);
}

void read(Reader& r, const json& v, const std::string& at, RunProfile& out) {
  Fields f(r, v, at);
  f.req("timing_source", out.timing_source).opt("timing_reason", out.timing_reason).req("counters", out.counters);
  f.req("peak_device", out.peak_device).opt("peak_bandwidth_bytes_per_s", out.peak_bandwidth_bytes_per_s);
  f.opt("copy_bandwidth_bytes_per_s", out.copy_bandwidth_bytes_per_s);
  f.opt("copy_bandwidth_reason", out.copy_bandwidth_reason).opt("notes", out.notes);
}

void read(Reader& r, const json& v, const std::string& at, RunFault& out) {
  Fields f(r, v, at);
  f.req("error", out.error).req("code", out.code).req("message", out.message).opt("detected_by", out.detected_by);
  f.req("phase", out.phase).opt("plan", out.plan).opt("step", out.step).opt("kernel", out.kernel);
  f.opt("group", out.group).req("attribution", out.attribution).req("summary", out.summary);
}

// "plans": the unfused and the fused plan, each once.
void read_plans(Reader& r, Fields& root, RunReport& out) {
  std::vector<PlanReport> plans;
  root.req("plans", plans);
  if (!r.errors.empty()) return;
  bool seen[2] = {false, false};
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const int which = plans[i].name == "unfused" ? 0 : plans[i].name == "fused" ? 1 : -1;
    const std::string at = "/plans/" + std::to_string(i) + "/name";
    if (which < 0) r.fail(at, "must be \"unfused\" or \"fused\", not \"" + plans[i].name + "\"");
    else if (seen[which]) r.fail(at, "a second \"" + plans[i].name + "\" plan");
    else (which == 0 ? out.unfused : out.fused) = std::move(plans[i]);
    if (which >= 0) seen[which] = true;
  }
  if (r.errors.empty() && !(seen[0] && seen[1])) r.fail("/plans", "must hold the \"unfused\" and the \"fused\" plan");
}

void read_verification(Reader& r, Fields& root, RunReport& out) {
  const json* v = root.find("verification");
  if (!v) return;
  Fields f(r, *v, "/verification");
  f.req("passed", out.verified).req("outputs", out.checks);
  if (const json* ref = f.find("reference")) {
    bool ran = false;
    Fields(r, *ref, "/verification/reference").req("ran", ran).req("note", out.reference_note).req("outputs", out.reference_checks);
  }
}

void read_compile_and_tuning(Reader& r, Fields& root, RunReport& out) {
  if (const json* c = root.find("compile")) {
    Fields(r, *c, "/compile").req("kernels_compiled", out.kernels_compiled).req("cache_hits", out.cache_hits).req("seconds", out.compile_seconds).opt("wall_seconds", out.compile_wall_seconds);
  }
  if (const json* t = root.find("tuning")) {
    Fields(r, *t, "/tuning").req("cache", out.tuning_cache).req("tuned", out.tuned_steps).req("reused", out.reused_steps).req("warnings", out.tuning_warnings);
  }
  if (const json* s = root.find("stages_s")) {
    if (!s->is_object()) return r.fail("/stages_s", "must be an object");
    for (const auto& [stage, seconds] : s->items()) {
      out.stages_s.emplace_back(stage, 0.0);
      read(r, seconds, "/stages_s/" + pointer_token(stage), out.stages_s.back().second);
    }
  }
}

void read_completed(Reader& r, Fields& root, RunReport& out) {
  read_plans(r, root, out);
  root.opt("speedup", out.speedup).opt("timing", out.timing).opt("device_bytes", out.device_bytes);
  std::string status;
  root.opt("status", status);
  out.verified = status == "ok";  // where the report has no "verification"
  read_verification(r, root, out);
  read_compile_and_tuning(r, root, out);
  root.opt("profile", out.profile).opt("hbm_traffic_reduction_reason", out.hbm_traffic_reduction_reason);
  read_or_reason(root, "hbm_traffic_reduction", out.hbm_traffic_reduction);
  root.opt("hbm_traffic_reduction_predicted", out.hbm_traffic_reduction_predicted);
  root.opt("graph_hash", out.graph_hash).opt("plan_hash", out.plan_hash);
  if (const json* fusion = root.find("fusion")) {
    if (fusion->is_object()) out.fusion = *fusion;
    else r.fail("/fusion", "must be an object (the plan's fusion section)");
  }
}

// The format and the version, before anything else is read: a report of another version may spell any field
// otherwise, so it is refused whole.
bool check_format(Reader& r, const json& root) {
  const auto format = root.find("format");
  if (format == root.end() || !format->is_string() || format->get<std::string>() != kRunReportFormat) {
    const std::string found = format == root.end() ? "no format" : "the format " + format->dump();
    r.fail("/format", "not a run report: it names " + found + ", not \"" + kRunReportFormat + "\"");
    return false;
  }
  const auto version = root.find("version");
  if (version == root.end() || !version->is_number_integer() || version->get<int>() != kRunReportVersion) {
    const std::string found = version == root.end() ? "names no version" : "is version " + version->dump();
    r.fail("/version", "this run report " + found + "; this program reads version " +
                           std::to_string(kRunReportVersion) +
                           " (schemas/run-report.schema.json): run the graph again with this fusion-cli");
    return false;
  }
  return true;
}

}  // namespace

Expected<RunReport> run_report_from_json(const json& document) {
  Diagnostics errors;
  Reader r{errors};
  if (!document.is_object()) return Diagnostic{"", "a run report is a JSON object"};
  if (!check_format(r, document)) return errors;
  RunReport out;
  Fields root(r, document, "");
  root.opt("graph", out.graph).opt("plan_source", out.plan_source).req("device", out.device);
  std::string status;
  root.opt("status", status);
  if (!status.empty() && status != "ok" && status != "verification_failed" && status != "gpu_fault")
    r.fail("/status", "must be \"ok\", \"verification_failed\" or \"gpu_fault\", not \"" + status + "\"");
  if (status == "gpu_fault") {
    root.req("fault", out.fault);
    if (errors.empty() && !out.fault) r.fail("/fault", "a report of a GPU fault must say what faulted");
  } else {
    read_completed(r, root, out);
  }
  if (!errors.empty()) return errors;
  return out;
}

Expected<RunReport> read_run_report(std::string_view json_text) {
  try {
    return run_report_from_json(json::parse(json_text));
  } catch (const json::parse_error& e) {
    return Diagnostic{"", std::string("not valid JSON: ") + e.what()};
  }
}

}  // namespace fx
