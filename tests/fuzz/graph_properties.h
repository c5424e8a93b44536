// What must hold for any byte string handed to the graph loader. Shared by the libFuzzer target
// (tests/fuzz/fuzz_graph_loader.cpp), which aborts on a violation, and by the gtest that replays every
// saved crash (tests/core/test_fuzz_regressions.cpp), which reports it.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/export/dot.h"
#include "core/graph/graph_io.h"
#include "core/graph/graph_json.h"

namespace fx::fuzz {

// A diagnostic's pointer must be a well-formed JSON pointer that lands in the document: on the value itself,
// on its parent for a missing value ("missing field", a stated shape that is absent), or on the node for an
// attribute left at its default ("/nodes/3/attrs/axis" when the node has no attrs).
inline std::optional<std::string> check_pointer(const nlohmann::json& doc, const Diagnostic& d) {
  if (d.pointer.empty()) return std::nullopt;
  nlohmann::json::json_pointer p;
  try {
    p = nlohmann::json::json_pointer(d.pointer);
  } catch (const nlohmann::json::exception&) {
    return "malformed JSON pointer '" + d.pointer + "' (is a key with '/' or '~' unescaped?)";
  }
  if (doc.contains(p) || doc.contains(p.parent_pointer())) return std::nullopt;
  const auto grandparent = p.parent_pointer().parent_pointer();
  if (!p.parent_pointer().empty() && p.parent_pointer().back() == "attrs" && doc.contains(grandparent)) {
    return std::nullopt;
  }
  return "pointer '" + d.pointer + "' does not land in the document: " + d.message;
}

inline std::optional<std::string> check_failed_load(std::string_view text, const Diagnostics& errors) {
  if (errors.empty()) return "the load failed without a diagnostic";
  std::optional<nlohmann::json> doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
  }
  for (const Diagnostic& d : errors) {
    if (d.message.empty()) return "a diagnostic without a message at '" + d.pointer + "'";
    if (!d.pointer.empty() && d.pointer.front() != '/') return "pointer '" + d.pointer + "' does not start with '/'";
    if (doc) {
      if (auto bad = check_pointer(*doc, d)) return bad;
    }
  }
  return std::nullopt;
}

// A loaded graph is internally consistent, its canonical save loads back to an equal graph, and saving
// again gives the same bytes.
inline std::optional<std::string> check_loaded_graph(const Graph& g) {
  std::vector<NodeId> topo = g.topo_order();
  if (topo.size() != g.nodes().size()) return "the topological order misses nodes";
  std::vector<int> position(g.nodes().size(), -1);
  for (std::size_t i = 0; i < topo.size(); ++i) position[static_cast<std::size_t>(topo[i])] = static_cast<int>(i);
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    if (node.def == nullptr) return "node '" + node.name + "' has no op definition";
    if (!checked_numel(node.type.shape)) return "node '" + node.name + "' has an overflowing shape";
    for (NodeId p : g.producers(n)) {
      if (position[static_cast<std::size_t>(p)] >= position[static_cast<std::size_t>(n)]) {
        return "node '" + node.name + "' comes before its producer in the topological order";
      }
    }
  }
  const std::string saved = save_graph(g);
  auto again = load_graph(saved);
  if (!again) return "the canonical save does not load back:\n" + format_diagnostics(again.errors()) + saved;
  if (!(*again == g)) return "the canonical save loads back to a different graph:\n" + saved;
  if (save_graph(*again) != saved) return "saving twice gives different bytes";
  if (to_dot(g).empty()) return "the DOT export is empty";
  return std::nullopt;
}

// Loads with the default limits and with tight ones (so that every limit's error path runs too).
inline std::optional<std::string> check_graph_document(std::string_view text) {
  LoadLimits tight;
  tight.max_depth = 6;
  tight.max_nodes = 8;
  tight.max_rank = 3;
  tight.max_file_bytes = 2048;
  for (const LoadLimits& limits : {LoadLimits{}, tight}) {
    auto g = load_graph(text, limits);
    auto bad = g ? check_loaded_graph(*g) : check_failed_load(text, g.errors());
    if (bad) return bad;
  }
  return std::nullopt;
}

}  // namespace fx::fuzz
