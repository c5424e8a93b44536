// The device's and the GPU clocks' parts of the run report, and the fault report. Times are milliseconds.
#include "kernels/executor/report_json.h"

#include <cmath>

namespace fx::gpu {

RunDevice run_device(const DeviceInfo& d) {
  return {d.name,          d.arch(),         d.sm_count,          d.total_memory,   d.free_memory,
          d.clock_khz / 1000.0, d.memory_clock_khz / 1000.0, d.memory_bus_bits, d.l2_bytes};
}

nlohmann::ordered_json device_to_json(const DeviceInfo& d) { return to_json(run_device(d)); }

ClockReading clock_reading(const ClockSpan& s, const std::string& note) {
  auto when = [](bool known, double v) { return known ? std::optional<double>(v) : std::nullopt; };
  const bool busy = s.busy_samples > 0;
  ClockReading c;
  c.samples = s.samples;
  c.busy_samples = s.busy_samples;
  c.sm_mhz_median = when(busy, s.sm_mhz_median());
  c.sm_mhz_min = when(busy, s.sm_mhz_min);
  c.sm_mhz_max = when(busy, s.sm_mhz_max);
  c.max_sm_mhz = when(s.max_sm_mhz > 0, s.max_sm_mhz);
  c.power_w_max = when(busy && s.power_w_max > 0, s.power_w_max);
  c.power_limit_w = when(s.power_limit_w > 0, s.power_limit_w);
  c.temperature_c_max = when(busy && s.temperature_c_max > 0, s.temperature_c_max);
  if (busy) c.held_back_by = clock_reason_names(s.reasons);
  c.summary = describe_clock_span(s);
  c.note = s.samples ? std::string() : note;
  for (const auto& [ms, sample] : s.timeline) {
    c.timeline.push_back({std::round(ms * 100.0) / 100.0, static_cast<double>(sample.sm_mhz),
                          std::round(sample.power_w * 10.0) / 10.0, static_cast<double>(sample.temperature_c)});
  }
  return c;
}

namespace {

std::string timing_protocol_words(bool cold_l2) {
  return cold_l2 ? "CUDA events around each run, a 256 MB buffer overwritten before each "
                   "(triton.testing.do_bench's protocol); the two plans in interleaved rounds"
                 : "CUDA events around each run, each after an untimed run of the same plan (warm L2, as back to "
                   "back); the two plans in interleaved rounds";
}

}  // namespace

RunTiming run_timing(const TimingProtocol& p, const TimingRounds& rounds, double round_ms) {
  auto asked = [](double ms) { return ms > 0 ? std::optional<double>(ms) : std::nullopt; };
  RunTiming t;
  t.preset = p.preset;
  t.repeat = rounds.repeat;
  t.warmup = rounds.warmup;
  t.warmup_ms = asked(p.warmup_ms);
  t.repeat_ms = asked(p.repeat_ms);
  t.round_ms = asked(round_ms);
  t.rest_ms = asked(p.rest_ms);
  t.tuning_rest_ms = p.tuning_rest_ms;
  t.cold_l2 = p.cold_l2;
  t.placement = static_cast<std::int64_t>(p.placement);
  t.protocol = timing_protocol_words(p.cold_l2);
  return t;
}

nlohmann::ordered_json timing_pass_to_json(const TimingPass& t) {
  using J = nlohmann::ordered_json;
  return {{"timing", t.index},
          {"unfused_ms", t.unfused_ms},
          {"fused_ms", t.fused_ms},
          {"fused_over_unfused", t.unfused_ms > 0 ? J(t.fused_ms / t.unfused_ms) : J(nullptr)},
          {"warmup", t.warmup},
          {"repeat", t.repeat},
          {"round_ms", t.round_ms > 0 ? J(t.round_ms) : J(nullptr)},
          {"gpu_clocks", to_json(clock_reading(t.clocks, t.clocks_note))}};
}

RunReport fault_report(const GpuFault& f, const std::optional<DeviceInfo>& device, const std::string& graph,
                       const std::string& plan_source) {
  const FaultSite& site = f.site();
  RunFault fault{f.code_name(), f.code(), f.message(), f.call(), site.phase, std::nullopt, std::nullopt,
                 std::nullopt,  std::nullopt, site.attribution(), f.summary()};
  if (site.has_step()) {
    fault.plan = site.plan;
    fault.step = site.step;
    fault.kernel = site.kernel;
    fault.group = site.group;
  }
  RunReport r;
  r.fault = std::move(fault);
  r.graph = graph;
  r.plan_source = plan_source;
  if (device) r.device = run_device(*device);
  return r;
}

}  // namespace fx::gpu
