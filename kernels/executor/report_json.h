// What the device and a run give, in core's run report (core/report/run_report.h), and the JSON lines that are
// not a report: the device (`fusion-cli device`) and one timing pass (`--timings-on-request`).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/report/run_report.h"
#include "kernels/executor/executor.h"

namespace fx::gpu {

RunDevice run_device(const DeviceInfo& d);
nlohmann::ordered_json device_to_json(const DeviceInfo& d);
// What the clocks did while a timing ran: absent numbers where nothing was read (a failed power or temperature
// read too), `summary` the line fusion-cli prints, `note` why the clocks were not read ("" when they were), and
// every sample, idle ones included, rounded to 0.01 ms and 0.1 W (the trace exports' counter tracks).
ClockReading clock_reading(const ClockSpan& s, const std::string& note);
// The report's timing: the protocol asked for (absent times where it asked for none), the rounds it came to
// and one round's estimated time (0: the rounds were counted, not estimated), and the protocol in words.
RunTiming run_timing(const TimingProtocol& protocol, const TimingRounds& rounds, double round_ms);
// One timing pass (RunOptions::timed), a line of `fusion-cli run --timings-on-request`: "timing" (its index),
// "unfused_ms" and "fused_ms" (medians), "fused_over_unfused", "warmup", "repeat", "round_ms" (null when the
// rounds were counted in runs) and "gpu_clocks" as in the report's timing. Pure: no device needed.
nlohmann::ordered_json timing_pass_to_json(const TimingPass& t);
// The report of a run that ended in a GPU fault (status "gpu_fault"): the error name, code and message, the
// call that saw it, phase, plan, step, kernel, group, attribution "exact" / "last_launched" / "none", and a
// one-line summary; no plans and no measurements. Pure: no device needed.
RunReport fault_report(const GpuFault& f, const std::optional<DeviceInfo>& device, const std::string& graph,
                       const std::string& plan_source);

}  // namespace fx::gpu
