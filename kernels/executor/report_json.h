// The run report as JSON (for `fusion-cli run --json`, the GUI and the benchmark harness).
#pragma once

#include <nlohmann/json.hpp>

#include "kernels/executor/executor.h"

namespace fx::gpu {

nlohmann::ordered_json device_to_json(const DeviceInfo& d);
nlohmann::ordered_json report_to_json(const RunReport& r);

}  // namespace fx::gpu
