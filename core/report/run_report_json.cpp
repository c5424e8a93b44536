// The run report's writer: the JSON of schemas/run-report.schema.json, keys in the order fusion-cli has always
// written them. Absent values are null (or "not measured" with a reason, where the schema says so).
#include <cmath>

#include "core/report/run_report.h"

namespace fx {
namespace {

using J = nlohmann::ordered_json;

template <typename T>
J or_null(const std::optional<T>& v) {
  return v ? J(*v) : J(nullptr);
}

J strings(const std::vector<std::string>& v) { return v; }

// Clocks and temperatures are whole numbers, as NVML gives them.
J whole_or_null(const std::optional<double>& v) { return v ? J(std::lround(*v)) : J(nullptr); }

J split_groups_json(const std::vector<SplitGroup>& groups) {
  J out = J::array();
  for (const SplitGroup& s : groups) out.push_back({{"group", s.group}, {"kernels", s.kernels}, {"why", s.why}});
  return out;
}

J timeline_json(const std::vector<TimedKernel>& timeline) {
  J out = J::array();
  for (const TimedKernel& t : timeline) {
    out.push_back({{"kernel", t.name}, {"start_us", t.start_us}, {"duration_us", t.duration_us}});
  }
  return out;
}

// The bytes read and written, or "not measured" and why: the start of every "measured" object.
J traffic_bytes(const MeasuredTraffic& m) {
  J j;
  if (m.bytes()) {
    j["bytes_read"] = *m.bytes_read;
    j["bytes_written"] = *m.bytes_written;
    j["bytes"] = *m.bytes();
  } else {
    j["bytes_read"] = "not measured";
    j["bytes_written"] = "not measured";
    j["reason"] = m.reason;
  }
  return j;
}

void bandwidth_json(J& j, const MeasuredTraffic& m) {
  j["achieved_bytes_per_s"] = or_null(m.achieved_bytes_per_s);
  j["fraction_of_peak_bandwidth"] = or_null(m.fraction_of_peak_bandwidth);
  j["fraction_of_copy_bandwidth"] = or_null(m.fraction_of_copy_bandwidth);
}

J kernel_measured_json(const MeasuredTraffic& m) {
  J j = traffic_bytes(m);
  if (m.bytes()) {
    j["l2_bytes_written"] = or_null(m.l2_bytes_written);
    j["cuda_kernels"] = m.cuda_kernels.value_or(0);
  }
  j["predicted_bytes"] = m.predicted_bytes;
  j["measured_over_predicted"] = or_null(m.measured_over_predicted);
  j["mismatch"] = m.mismatch;
  if (!m.mismatch_reason.empty()) j["mismatch_reason"] = m.mismatch_reason;
  bandwidth_json(j, m);
  j["flops_per_s"] = or_null(m.flops_per_s);
  j["notes"] = m.notes;
  j["timeline"] = timeline_json(m.timeline);
  if (const auto& w = m.shared_window) {
    j["shared_window"] = {{"plan", w->plan}, {"step", w->step}, {"kernel", w->kernel}, {"steps", w->steps}};
  }
  return j;
}

J plan_measured_json(const MeasuredTraffic& m) {
  J j = traffic_bytes(m);
  j["predicted_bytes"] = m.predicted_bytes;
  j["measured_over_predicted"] = or_null(m.measured_over_predicted);
  j["mismatch"] = m.mismatch;
  bandwidth_json(j, m);
  j["flops"] = m.flops.value_or(0.0);
  j["flops_per_s"] = or_null(m.flops_per_s);
  return j;
}

J kernel_json(const KernelReport& k) {
  J j = {{"name", k.name},
         {"group", k.group},
         {"kind", k.kind},
         {"library", k.library},
         {"path", k.path},
         {"nodes", k.nodes},
         {"bytes", k.bytes},
         {"group_predicted_ms", or_null(k.group_predicted_ms)},
         {"group_predicted_bytes", k.group_predicted_bytes},
         {"measured_ms", k.measured_ms},
         {"measured_gbps", k.measured_gbps()}};
  if (!k.tuned_at.empty()) j["tuned_at"] = k.tuned_at;  // its choice came from the tuning cache
  if (k.measured) j["measured"] = kernel_measured_json(*k.measured);
  return j;
}

J plan_json(const PlanReport& p) {
  J kernels = J::array();
  for (const KernelReport& k : p.kernels) kernels.push_back(kernel_json(k));
  J j = {{"name", p.name},
         {"kernel_count", p.kernels.size()},
         {"kernels", kernels},
         {"notes", p.notes},
         {"split_groups", split_groups_json(p.split_groups)},
         {"total_ms", p.total_ms},
         {"min_ms", p.min_ms},
         {"max_ms", p.max_ms},
         {"stepped_ms", p.stepped_ms},
         {"graph_ms", or_null(p.graph_ms)},
         {"predicted_ms", p.predicted_ms},
         {"predicted_bytes", p.bytes}};
  if (p.measured) j["measured"] = plan_measured_json(*p.measured);
  return j;
}

J checks_json(const std::vector<OutputCheck>& checks) {
  J out = J::array();
  for (const OutputCheck& c : checks) {
    // A NaN error (an output full of NaN) is written as null, as JSON has no NaN.
    out.push_back({{"output", c.name}, {"dtype", c.dtype},
                   {"rel_error", std::isnan(c.rel_error) ? J(nullptr) : J(c.rel_error)}, {"threshold", c.threshold},
                   {"nan_count", c.nan_count}, {"passed", c.passed}});
  }
  return out;
}

J verification_json(const RunReport& r) {
  return {{"passed", r.verified},
          {"outputs", checks_json(r.checks)},
          {"reference",
           {{"ran", !r.reference_checks.empty()}, {"note", r.reference_note}, {"outputs", checks_json(r.reference_checks)}}}};
}

J timing_json(const RunTiming& t) {
  return {{"preset", t.preset},
          {"repeat", t.repeat},
          {"warmup", t.warmup},
          {"warmup_ms", or_null(t.warmup_ms)},
          {"repeat_ms", or_null(t.repeat_ms)},
          {"round_ms", or_null(t.round_ms)},
          {"rest_ms", or_null(t.rest_ms)},
          {"tuning_rest_ms", t.tuning_rest_ms},
          {"cold_l2", t.cold_l2},
          {"layouts", t.layouts},
          {"placement", t.placement},
          {"placement_gap_bytes", t.placement_gap_bytes},
          {"protocol", t.protocol},
          {"gpu_clocks", t.gpu_clocks ? to_json(*t.gpu_clocks) : J(nullptr)},
          {"graph_gpu_clocks", t.graph_gpu_clocks ? to_json(*t.graph_gpu_clocks) : J(nullptr)}};
}

J profile_json(const RunProfile& p) {
  J j = {{"timing_source", p.timing_source},
         {"counters", p.counters},
         {"peak_device", p.peak_device},
         {"peak_bandwidth_bytes_per_s", p.peak_bandwidth_bytes_per_s},
         {"copy_bandwidth_bytes_per_s", or_null(p.copy_bandwidth_bytes_per_s)},
         {"notes", p.notes}};
  if (!p.timing_reason.empty()) j["timing_reason"] = p.timing_reason;
  if (!p.copy_bandwidth_reason.empty()) j["copy_bandwidth_reason"] = p.copy_bandwidth_reason;
  return j;
}

// The profile and what it found of the whole run: the measured HBM traffic reduction, or why there is none.
void add_profile(J& j, const RunReport& r) {
  if (r.profile) j["profile"] = profile_json(*r.profile);
  if (!r.profile && !r.hbm_traffic_reduction && !r.hbm_traffic_reduction_predicted) return;
  if (r.hbm_traffic_reduction) {
    j["hbm_traffic_reduction"] = *r.hbm_traffic_reduction;
  } else {
    j["hbm_traffic_reduction"] = "not measured";
    j["hbm_traffic_reduction_reason"] = r.hbm_traffic_reduction_reason;
  }
  j["hbm_traffic_reduction_predicted"] = or_null(r.hbm_traffic_reduction_predicted);
}

// What ties the report to a graph and a plan (the GUI checks a report against these before painting it).
void add_provenance(J& j, const RunReport& r) {
  if (!r.graph.empty()) j["graph"] = r.graph;
  if (!r.graph_hash.empty()) j["graph_hash"] = r.graph_hash;
  if (!r.plan_hash.empty()) j["plan_hash"] = r.plan_hash;
  if (!r.fusion.is_null()) j["fusion"] = r.fusion;
  if (!r.plan_source.empty()) j["plan_source"] = r.plan_source;
}

J fault_json(const RunFault& f) {
  return {{"error", f.error},         {"code", f.code},           {"message", f.message},
          {"detected_by", f.detected_by}, {"phase", f.phase},     {"plan", or_null(f.plan)},
          {"step", or_null(f.step)},  {"kernel", or_null(f.kernel)}, {"group", or_null(f.group)},
          {"attribution", f.attribution}, {"summary", f.summary}};
}

// No "plans", "verification" or measurements: everything after the fault is untrustworthy, and what came
// before it is incomplete.
J fault_report_json(const RunReport& r) {
  return {{"format", kRunReportFormat},
          {"version", kRunReportVersion},
          {"status", r.status()},
          {"graph", r.graph},
          {"plan_source", r.plan_source},
          {"device", r.device ? to_json(*r.device) : J(nullptr)},
          {"fault", fault_json(*r.fault)}};
}

}  // namespace

J to_json(const RunDevice& d) {
  return {{"name", d.name},
          {"arch", d.arch},
          {"sm_count", d.sm_count},
          {"total_memory_bytes", d.total_memory_bytes},
          {"free_memory_bytes", d.free_memory_bytes},
          {"clock_mhz", d.clock_mhz},
          {"memory_clock_mhz", d.memory_clock_mhz},
          {"memory_bus_bits", d.memory_bus_bits},
          {"l2_bytes", d.l2_bytes}};
}

J to_json(const ClockReading& c) {
  J rows = J::array();
  for (const auto& [ms, mhz, watts, celsius] : c.timeline) rows.push_back({ms, std::lround(mhz), watts, std::lround(celsius)});
  return {{"samples", c.samples},
          {"busy_samples", c.busy_samples},
          {"sm_mhz_median", whole_or_null(c.sm_mhz_median)},
          {"sm_mhz_min", whole_or_null(c.sm_mhz_min)},
          {"sm_mhz_max", whole_or_null(c.sm_mhz_max)},
          {"max_sm_mhz", whole_or_null(c.max_sm_mhz)},
          {"power_w_max", or_null(c.power_w_max)},
          {"power_limit_w", or_null(c.power_limit_w)},
          {"temperature_c_max", whole_or_null(c.temperature_c_max)},
          {"held_back_by", c.held_back_by ? strings(*c.held_back_by) : J(nullptr)},
          {"summary", c.summary},
          {"note", c.note},
          {"timeline", rows}};
}

J to_json(const RunReport& r) {
  if (r.fault) return fault_report_json(r);
  J j = {{"format", kRunReportFormat},
         {"version", kRunReportVersion},
         {"status", r.status()},
         {"device", r.device ? to_json(*r.device) : J(nullptr)},
         {"plans", {plan_json(r.unfused), plan_json(r.fused)}},
         {"speedup", r.speedup},
         {"verification", verification_json(r)},
         {"timing", timing_json(r.timing)},
         {"compile", {{"kernels_compiled", r.kernels_compiled}, {"cache_hits", r.cache_hits}, {"seconds", r.compile_seconds},
                      {"wall_seconds", r.compile_wall_seconds}}},
         {"tuning", {{"cache", r.tuning_cache}, {"tuned", r.tuned_steps}, {"reused", r.reused_steps},
                     {"warnings", r.tuning_warnings}}},
         {"device_bytes", r.device_bytes}};
  if (!r.stages_s.empty()) {
    J stages = J::object();
    for (const auto& [stage, seconds] : r.stages_s) stages[stage] = seconds;
    j["stages_s"] = stages;
  }
  add_profile(j, r);
  add_provenance(j, r);
  return j;
}

std::string shared_window_text(const SharedCounterWindow& window, const std::string& plan, int step) {
  const std::string steps = std::to_string(window.steps) + " identical steps";
  if (window.plan == plan && window.step == step) {
    return "bytes measured once for " + steps + ": this step's window, shared by the others (same kernel, same problem)";
  }
  return "bytes measured once for " + steps + ": same as step " + std::to_string(window.step) + " of the " +
         window.plan + " plan (" + window.kernel + ")";
}

const PlanReport* RunReport::plan(std::string_view name) const {
  if (name == "unfused") return &unfused;
  if (name == "fused") return &fused;
  return nullptr;
}

}  // namespace fx
