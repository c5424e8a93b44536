// What must hold for the DOT we write for any graph that loads (plain, and with the clusters of auto-fuse's
// plan): Graphviz's own parser (libcgraph's agmemread) accepts it, with one node per graph node, input and
// output, and every quoted string valid UTF-8. Shared by tests/fuzz/fuzz_dot.cpp and the replay test in
// tests/core/test_fuzz_regressions.cpp (where libcgraph is found).
#pragma once

#include <graphviz/cgraph.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "core/cost/device_description.h"
#include "core/export/dot.h"
#include "core/fusion/engine.h"
#include "core/fusion/plan_dot.h"
#include "core/graph/utf8.h"
#include "tests/fuzz/graph_properties.h"

namespace fx::fuzz {

inline std::optional<std::string> check_dot_text(const std::string& dot, int expected_nodes) {
  if (auto at = invalid_utf8_offset(dot)) return "the DOT is not valid UTF-8 at byte " + std::to_string(*at);
  agseterr(AGMAX);  // parse errors come back as a null graph, not as text on stderr
  Agraph_t* parsed = agmemread(dot.c_str());
  if (!parsed) {
    char* why = aglasterr();  // a copy the caller frees
    std::string message = "Graphviz does not parse the DOT: " + std::string(why ? why : "(no message)") + "\n" +
                          dot.substr(0, 2000);
    std::free(why);
    return message;
  }
  const int nodes = agnnodes(parsed);
  agclose(parsed);
  if (nodes != expected_nodes) {
    return "Graphviz reads " + std::to_string(nodes) + " nodes, expected " + std::to_string(expected_nodes);
  }
  return std::nullopt;
}

inline std::optional<std::string> check_dot_document(std::string_view text) {
  auto engine = FusionEngine::load_fused_graph(text, DeviceDescription::h100_sxm());
  if (!engine) return std::nullopt;  // loading is the other targets' business
  const Graph& g = engine->graph();
  const int expected = g.num_nodes() + static_cast<int>(g.inputs().size()) + static_cast<int>(g.outputs().size());
  if (auto bad = check_dot_text(to_dot(g), expected)) return "plain: " + *bad;
  engine->auto_fuse();
  DotOptions options;
  options.clusters = plan_clusters(g, engine->plan());
  options.edge_labels = false;
  if (auto bad = check_dot_text(to_dot(g, options), expected)) return "with clusters: " + *bad;
  return std::nullopt;
}

}  // namespace fx::fuzz
