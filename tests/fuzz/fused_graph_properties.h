// What must hold for any byte string handed to the fused-graph loader (FusionEngine::load_fused_graph) and
// the engine's analysis. Shared by tests/fuzz/fuzz_fused_graph.cpp and tests/core/test_fuzz_regressions.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cost/device_description.h"
#include "core/fusion/engine.h"
#include "tests/fuzz/graph_properties.h"

namespace fx::fuzz {

// Every node in exactly one group.
inline std::optional<std::string> check_partition(const FusionEngine& e) {
  std::vector<int> seen(static_cast<std::size_t>(e.graph().num_nodes()), 0);
  for (const Group& g : e.plan().groups()) {
    for (NodeId n : g.nodes) ++seen[static_cast<std::size_t>(n)];
  }
  for (std::size_t n = 0; n < seen.size(); ++n) {
    if (seen[n] != 1)
      return "node " + e.graph().node(static_cast<NodeId>(n)).name + " is in " + std::to_string(seen[n]) + " groups";
  }
  return std::nullopt;
}

// A plan saved and loaded back is the same plan.
inline std::optional<std::string> check_plan_round_trip(const FusionEngine& e, const char* when) {
  if (auto bad = check_partition(e)) return std::string(when) + ": " + *bad;
  const std::string saved = e.save_fused_graph();
  auto again = FusionEngine::load_fused_graph(saved, e.cost_model().device(), e.options());
  if (!again)
    return std::string(when) + ": the saved fused graph does not load:\n" + format_diagnostics(again.errors());
  if (!(again->plan() == e.plan())) return std::string(when) + ": the saved plan loads back different";
  return std::nullopt;
}

inline std::optional<std::string> check_fused_document(std::string_view text) {
  auto engine = FusionEngine::load_fused_graph(text, DeviceDescription::h100_sxm());
  if (!engine) return check_failed_load(text, engine.errors());
  if (auto bad = check_plan_round_trip(*engine, "as loaded")) return bad;
  const FusionEngine::State loaded = engine->state();
  for (const Candidate& c : engine->candidates()) {
    if (c.id.empty()) return "a candidate without an id";
  }
  engine->auto_fuse();
  if (auto bad = check_plan_round_trip(*engine, "after auto-fuse")) return bad;
  engine->restore(loaded);
  if (!(engine->state() == loaded)) return "restoring the state before auto-fuse does not give the loaded plan back";
  return std::nullopt;
}

}  // namespace fx::fuzz
