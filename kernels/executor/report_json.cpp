// JSON of the run report. Times are milliseconds; the "total_ms" of a plan is the median of whole-plan runs.
#include "kernels/executor/report_json.h"

#include <cmath>

namespace fx::gpu {

nlohmann::ordered_json device_to_json(const DeviceInfo& d) {
  return {{"name", d.name},
          {"arch", d.arch()},
          {"sm_count", d.sm_count},
          {"total_memory_bytes", d.total_memory},
          {"free_memory_bytes", d.free_memory},
          {"clock_mhz", d.clock_khz / 1000.0},
          {"memory_clock_mhz", d.memory_clock_khz / 1000.0},
          {"memory_bus_bits", d.memory_bus_bits},
          {"l2_bytes", d.l2_bytes}};
}

namespace {

// A time the options asked for; null where they did not (0).
nlohmann::ordered_json ms_or_null(double ms) { return ms > 0 ? nlohmann::ordered_json(ms) : nullptr; }

// Groups run as several kernels: the plan says so, never silently.
nlohmann::ordered_json split_groups_json(const std::vector<SplitGroup>& groups) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const SplitGroup& s : groups) out.push_back({{"group", s.group}, {"kernels", s.kernels}, {"why", s.why}});
  return out;
}

nlohmann::ordered_json plan_to_json(const PlanReport& p) {
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (const KernelReport& k : p.kernels) {
    kernels.push_back({{"name", k.name},
                       {"group", k.group},
                       {"kind", k.kind},
                       {"library", k.library},
                       {"path", k.path},
                       {"nodes", k.nodes},
                       {"bytes", k.bytes},
                       {"group_predicted_ms", k.group_predicted_ms ? nlohmann::ordered_json(*k.group_predicted_ms) : nullptr},
                       {"group_predicted_bytes", k.group_predicted_bytes},
                       {"measured_ms", k.measured_ms},
                       {"measured_gbps", k.measured_ms > 0 ? static_cast<double>(k.bytes) / (k.measured_ms * 1e6) : 0.0}});
    if (!k.tuned_at.empty()) kernels.back()["tuned_at"] = k.tuned_at;  // its choice came from the tuning cache
  }
  return {{"name", p.name},
          {"kernel_count", p.kernels.size()},
          {"kernels", kernels},
          {"notes", p.notes},
          {"split_groups", split_groups_json(p.split_groups)},
          {"total_ms", p.total_ms},
          {"min_ms", p.min_ms},
          {"max_ms", p.max_ms},
          {"stepped_ms", p.stepped_ms},
          {"graph_ms", p.graph_ms ? nlohmann::ordered_json(*p.graph_ms) : nullptr},
          {"predicted_ms", p.predicted_ms},
          {"predicted_bytes", p.bytes}};
}

// What the clocks did while a timing ran: null where nothing was read (a failed power or temperature read
// too), `summary` the line fusion-cli prints, `note` why the clocks were not read ("" when they were).
// Every sample, idle ones included, as [ms, SM MHz, W, C] rows: the trace exports' counter tracks.
nlohmann::ordered_json timeline_to_json(const ClockSpan& s) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& [ms, sample] : s.timeline) {
    rows.push_back({std::round(ms * 100.0) / 100.0, sample.sm_mhz, std::round(sample.power_w * 10.0) / 10.0,
                    sample.temperature_c});
  }
  return rows;
}

nlohmann::ordered_json clocks_to_json(const ClockSpan& s, const std::string& note) {
  using J = nlohmann::ordered_json;
  auto when = [](bool known, auto v) { return known ? J(v) : J(nullptr); };
  const bool busy = s.busy_samples > 0;
  return {{"samples", s.samples},
          {"busy_samples", s.busy_samples},
          {"sm_mhz_median", when(busy, s.sm_mhz_median())},
          {"sm_mhz_min", when(busy, s.sm_mhz_min)},
          {"sm_mhz_max", when(busy, s.sm_mhz_max)},
          {"max_sm_mhz", when(s.max_sm_mhz > 0, s.max_sm_mhz)},
          {"power_w_max", when(busy && s.power_w_max > 0, s.power_w_max)},
          {"power_limit_w", when(s.power_limit_w > 0, s.power_limit_w)},
          {"temperature_c_max", when(busy && s.temperature_c_max > 0, s.temperature_c_max)},
          {"held_back_by", busy ? J(clock_reason_names(s.reasons)) : J(nullptr)},
          {"summary", describe_clock_span(s)},
          {"note", s.samples ? std::string() : note},
          {"timeline", timeline_to_json(s)}};
}

}  // namespace

nlohmann::ordered_json report_to_json(const RunReport& r) {
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const OutputCheck& c : r.checks) {
    checks.push_back({{"output", c.name}, {"dtype", c.dtype}, {"rel_error", c.rel_error}, {"threshold", c.threshold},
                      {"nan_count", c.nan_count}, {"passed", c.passed}});
  }
  nlohmann::ordered_json reference = nlohmann::ordered_json::array();  // "unfused: y" / "fused: y"
  for (const OutputCheck& c : r.reference_checks) {
    reference.push_back({{"output", c.name}, {"dtype", c.dtype}, {"rel_error", c.rel_error}, {"threshold", c.threshold},
                         {"nan_count", c.nan_count}, {"passed", c.passed}});
  }
  return {{"format", "fusion-explorer/run"},
          {"version", 1},
          {"status", r.verified ? "ok" : "verification_failed"},
          {"device", device_to_json(r.device)},
          {"plans", {plan_to_json(r.unfused), plan_to_json(r.fused)}},
          {"speedup", r.speedup},
          {"verification", {{"passed", r.verified}, {"outputs", checks},
                            {"reference", {{"ran", !r.reference_checks.empty()}, {"note", r.reference_note},
                                           {"outputs", reference}}}}},
          {"timing", {{"preset", r.protocol.preset}, {"repeat", r.repeat}, {"warmup", r.warmup},
                      {"warmup_ms", ms_or_null(r.protocol.warmup_ms)},
                      {"repeat_ms", ms_or_null(r.protocol.repeat_ms)}, {"round_ms", ms_or_null(r.round_ms)},
                      {"rest_ms", ms_or_null(r.protocol.rest_ms)}, {"tuning_rest_ms", r.protocol.tuning_rest_ms},
                      {"cold_l2", r.protocol.cold_l2}, {"layouts", r.layouts},
                      {"placement", r.protocol.placement}, {"placement_gap_bytes", r.placement_gaps},
                      {"protocol", r.protocol.cold_l2 ? "CUDA events around each run, a 256 MB buffer overwritten before each "
                                               "(triton.testing.do_bench's protocol); the two plans in interleaved "
                                               "rounds"
                                             : "CUDA events around each run, each after an untimed run of the same "
                                               "plan (warm L2, as back to back); the two plans in interleaved "
                                               "rounds"},
                      {"gpu_clocks", clocks_to_json(r.clocks, r.clocks_note)},
                      {"graph_gpu_clocks", r.fused.graph_ms
                                               ? clocks_to_json(r.graph_clocks, r.clocks_note)
                                               : nlohmann::ordered_json(nullptr)}}},
          {"compile", {{"kernels_compiled", r.kernels_compiled}, {"cache_hits", r.cache_hits}, {"seconds", r.compile_seconds}}},
          {"tuning", {{"cache", r.tuning_cache}, {"tuned", r.tuned_steps}, {"reused", r.reused_steps},
                      {"warnings", r.tuning_warnings}}},
          {"device_bytes", r.device_bytes}};
}

nlohmann::ordered_json timing_pass_to_json(const TimingPass& t) {
  return {{"timing", t.index},
          {"unfused_ms", t.unfused_ms},
          {"fused_ms", t.fused_ms},
          {"fused_over_unfused", t.unfused_ms > 0 ? nlohmann::ordered_json(t.fused_ms / t.unfused_ms) : nullptr},
          {"warmup", t.warmup},
          {"repeat", t.repeat},
          {"round_ms", ms_or_null(t.round_ms)},
          {"gpu_clocks", clocks_to_json(t.clocks, t.clocks_note)}};
}

namespace {

nlohmann::ordered_json fault_to_json(const GpuFault& f) {
  const FaultSite& site = f.site();
  return {{"error", f.code_name()},
          {"code", f.code()},
          {"message", f.message()},
          {"detected_by", f.call()},
          {"phase", site.phase},
          {"plan", site.has_step() ? nlohmann::ordered_json(site.plan) : nullptr},
          {"step", site.has_step() ? nlohmann::ordered_json(site.step) : nullptr},
          {"kernel", site.has_step() ? nlohmann::ordered_json(site.kernel) : nullptr},
          {"group", site.has_step() ? nlohmann::ordered_json(site.group) : nullptr},
          {"attribution", site.attribution()},
          {"summary", f.summary()}};
}

}  // namespace

// No "plans", "verification" or measurements: everything after the fault is untrustworthy, and what came
// before it is incomplete.
nlohmann::ordered_json fault_report_to_json(const GpuFault& f, const std::optional<DeviceInfo>& device,
                                            const std::string& graph, const std::string& plan_source) {
  return {{"format", "fusion-explorer/run"},
          {"version", 1},
          {"status", "gpu_fault"},
          {"graph", graph},
          {"plan_source", plan_source},
          {"device", device ? device_to_json(*device) : nlohmann::ordered_json(nullptr)},
          {"fault", fault_to_json(f)}};
}

}  // namespace fx::gpu
