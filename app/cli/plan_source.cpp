// Loading a graph and its plans for the executor verbs.
#include "app/cli/plan_source.h"

#include "app/cli/cli_io.h"

#include "core/graph/graph_io.h"
#include "core/graph/graph_json.h"

namespace fx::cli {

std::string default_device_for(const std::string& gpu_name) {
  if (gpu_name.find("H200") != std::string::npos) return "h200";
  if (gpu_name.find("A100") != std::string::npos) return "a100";
  return "h100";
}

std::optional<LoadedPlans> load_plans(const PlanSource& src, const DeviceDescription& device, std::ostream& err) {
  const std::string path = src.plan_file.value_or(src.file);
  auto text = read_input(path, LoadLimits{}.max_file_bytes);
  if (!text) {
    err << format_diagnostics(text.errors(), display_name(path));
    return std::nullopt;
  }
  auto engine = FusionEngine::load_fused_graph(*text, device);
  if (!engine) {
    err << format_diagnostics(engine.errors(), display_name(path));
    return std::nullopt;
  }
  // A plan names nodes of one graph: refuse a plan of another graph rather than run the plan's own graph.
  if (src.plan_file && *src.plan_file != src.file) {
    auto graph = load_graph_file(src.file);
    if (!graph) {
      err << format_diagnostics(graph.errors(), src.file);
      return std::nullopt;
    }
    if (std::string diff = first_difference(engine->graph(), *graph); !diff.empty()) {
      err << path << ": error: the plan is for another graph than " << src.file << " (" << diff << ")\n";
      return std::nullopt;
    }
  }
  LoadedPlans out;
  out.engine = std::make_unique<FusionEngine>(std::move(*engine));
  auto doc = parse_json_text(*text);
  const bool has_section = doc && doc->contains("fusion");
  out.how = has_section ? "the fusion section of " + display_name(path) : "the unfused plan";
  if (src.unfused_only) {
    out.how = "the unfused plan";
  } else if (src.auto_fuse || (!has_section && !src.plan_file)) {
    const int merges = out.engine->auto_fuse();
    out.how = "auto-fuse (" + std::to_string(merges) + " merges)";
  }
  out.unfused = Plan::unfused(out.engine->graph(), out.engine->cost_model());
  out.fused = src.unfused_only ? out.unfused : out.engine->plan();
  return out;
}

}  // namespace fx::cli
