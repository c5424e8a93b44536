// How a run times its plans: one value with named presets, read from `fusion-cli run --protocol NAME|FILE`,
// written into the run report, and handed to the executor. No CUDA: the GUI and tests read it too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/graph/diagnostic.h"

namespace fx {

struct TimingProtocol {
  // The preset the values started from ("interactive", "do_bench"); "custom" once a file or an option changed
  // one of them.
  std::string preset = "interactive";
  // Rounds of both plans: `warmup` untimed, then `repeat` timed; the median of the timed runs is reported.
  int warmup = 3;
  int repeat = 20;
  // Warm-up and timing measured in time instead of rounds, as triton.testing.do_bench(warmup=25, rep=100):
  // five rounds timed first give a round's time, then int(ms / round) rounds, at least 1. 0: use the counts.
  double warmup_ms = 0, repeat_ms = 0;
  // Overwrite a 256 MB buffer before each timed run (do_bench's cache flush); off: each timed run follows an
  // untimed run of the same plan, the L2 warm as when the plan runs back to back.
  bool cold_l2 = false;
  // The GPU left idle this long before the timing and before each plan's CUDA-graph replays.
  double rest_ms = 0;
  // The least rest before each GEMM tuning comparison: started hot from the GEMM search, at power-capped
  // clocks, the configurations do not rank as they run in the plan (docs/measurement.md).
  double tuning_rest_ms = 250;
  // Buffers at other addresses: a gap of 0-15 MiB drawn from this seed before each input and each step's
  // outputs (0: back to back). Where buffers lie moves a memory-bound kernel's time by tenths of a percent.
  std::uint64_t placement = 0;
  // Sample the GPU's clocks through NVML while timing.
  bool read_clocks = true;

  bool operator==(const TimingProtocol&) const = default;
};

// The presets by name: "interactive" (the default: 3 + 20 rounds, warm L2) and "do_bench" (as
// triton.testing.do_bench times a PyTorch function: the 256 MB flush, 25 ms of warm-up, 100 ms timed, after the
// GPU rested 1 s). "do-bench" is accepted for "do_bench". nullopt for another name.
std::optional<TimingProtocol> timing_preset(const std::string& name);
std::vector<std::string> timing_preset_names();

// The protocol file (schemas/timing-protocol.schema.json): {"format": "fusion-explorer/timing-protocol",
// "version": 1, "preset": NAME, ...fields}. Fields not given keep the preset's value (interactive when none is
// named). Errors name the JSON pointer of the offending value.
Expected<TimingProtocol> timing_protocol_from_json(const nlohmann::json& j);
Expected<TimingProtocol> load_timing_protocol(const std::string& path);
nlohmann::ordered_json timing_protocol_to_json(const TimingProtocol& p);
// Sets `preset` to "custom" where a value departs from the named preset (an option or file changed it).
void name_custom_if_changed(TimingProtocol& p);
// Checks the values' ranges (counts, 0-60000 ms); an empty list when they hold.
Diagnostics check_timing_protocol(const TimingProtocol& p);

}  // namespace fx
