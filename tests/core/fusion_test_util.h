// Helpers shared by the fusion and cost tests: inline graphs and sample files, a fixed device.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "core/cost/device_description.h"
#include "core/fusion/engine.h"
#include "core/graph/graph_io.h"

namespace fx::testing {

inline Graph graph_from(const std::string& json) {
  auto g = load_graph(json);
  if (!g) ADD_FAILURE() << format_diagnostics(g.errors());
  return std::move(g).value();
}

inline Graph sample(const std::string& name) {
  auto g = load_graph_file(std::string(FX_SOURCE_DIR) + "/sample_graphs/" + name);
  if (!g) ADD_FAILURE() << format_diagnostics(g.errors());
  return std::move(g).value();
}

// Decisions are tested against a fixed device so that they do not depend on the machine.
inline DeviceDescription test_device() { return DeviceDescription::h200(); }

// A graph from its inputs and nodes JSON arrays.
inline std::string graph_json(const std::string& inputs, const std::string& nodes, const std::string& outputs) {
  return R"({"format": "fusion-explorer/graph", "version": 1, "name": "t", "inputs": )" + inputs +
         R"(, "nodes": )" + nodes + R"(, "outputs": )" + outputs + "}";
}

inline NodeId node(const Graph& g, const std::string& name) {
  auto n = g.find_node(name);
  EXPECT_TRUE(n.has_value()) << name;
  return n.value_or(0);
}

}  // namespace fx::testing
