// The run report as JSON (for `fusion-cli run --json`, the GUI and the benchmark harness).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/executor/executor.h"

namespace fx::gpu {

nlohmann::ordered_json device_to_json(const DeviceInfo& d);
// "status": "ok" or "verification_failed".
nlohmann::ordered_json report_to_json(const RunReport& r);
// One timing pass (RunOptions::timed), a line of `fusion-cli run --timings-on-request`: "timing" (its index),
// "unfused_ms" and "fused_ms" (medians), "fused_over_unfused", "warmup", "repeat", "round_ms" (null when the
// rounds were counted in runs) and "gpu_clocks" as in the report's timing. Pure: no device needed.
nlohmann::ordered_json timing_pass_to_json(const TimingPass& t);
// The report of a run that ended in a GPU fault: "status": "gpu_fault" and a "fault" object (error name, code
// and message, the call that saw it, phase, plan, step, kernel, group, attribution "exact" / "last_launched" /
// "none", and a one-line summary); no plans and no measurements. Pure: no device needed.
nlohmann::ordered_json fault_report_to_json(const GpuFault& f, const std::optional<DeviceInfo>& device,
                                            const std::string& graph, const std::string& plan_source);

}  // namespace fx::gpu
