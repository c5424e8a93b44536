// How the executor verbs (run, codegen) get a graph and its two plans: a graph file, a fused graph file
// (--plan), or the fusion engine's auto-fuse (--auto, the default for a plain graph file).
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "core/cost/device_description.h"
#include "core/fusion/engine.h"

namespace fx::cli {

struct PlanSource {
  std::string file;
  std::optional<std::string> plan_file;
  bool auto_fuse = false;
  bool unfused_only = false;  // codegen --unfused: the fused plan is the unfused one
};

struct LoadedPlans {
  std::unique_ptr<FusionEngine> engine;  // holds the graph and the fused plan
  Plan unfused;
  Plan fused;
  std::string how;  // "auto-fuse", "fusion section of FILE", ...
};

// The cost-model preset the executor verbs plan with on the GPU named `gpu_name` when no --device is given
// ("h200", "a100", else "h100"); libfusion_harness picks it the same way.
std::string default_device_for(const std::string& gpu_name);

// nullopt after printing the diagnostics to err.
std::optional<LoadedPlans> load_plans(const PlanSource& src, const DeviceDescription& device, std::ostream& err);

}  // namespace fx::cli
