// A plan as Google Model Explorer's graph JSON (github.com/google-ai-edge/model-explorer: the adapter format of
// its graph_builder.py, {"graphs": [{"id", "nodes": [{"id", "label", "namespace", "attrs", "incomingEdges",
// "outputsMetadata"}]}]}) and its per-node data (node_data_builder.py's GraphNodeData: {"results": {node id:
// {"value"}}, "gradient"}), so that users of that viewer see our fusion groups there.
//
// Every node of a group of two or more sits in the namespace named by the group id, which Model Explorer draws
// as one collapsible layer per fused kernel (a '/' in an id becomes '|': Model Explorer reads '/' as nesting).
// A group's time and bytes are carried by one node, its last, so that a layer's sum in Model Explorer's stats is
// the group's number and not a multiple of it. Pure functions, tested as text.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "core/fusion/plan.h"
#include "core/graph/diagnostic.h"
#include "core/graph/graph.h"
#include "core/report/run_report.h"

namespace fx {

// What was measured for a group: from a `fusion-cli run --json` report.
struct GroupMeasurement {
  double time_us = 0;                 // the sum of its kernels' measured times
  std::optional<double> dram_bytes;   // DRAM bytes read + written, where every kernel's were measured
};
using GroupMeasurements = std::map<std::string, GroupMeasurement>;  // by group id

// The fused plan's groups measured in a run report (its kernels by group); an error for the report of a run
// that stopped on a GPU fault, which measured nothing.
Expected<GroupMeasurements> measurements_from_run_report(const RunReport& report);

// The graph JSON: one graph with a node per graph input and per node, each node's attrs giving its op, group,
// fusion kinds, shape, dtype, source and, on the group's last node, the predicted and (where `measured` has the
// group) measured time and bytes.
std::string plan_to_model_explorer(const Graph& graph, const Plan& plan, const GroupMeasurements& measured);

// Per-node data for one quantity, on each group's last node: measured time in us, or measured DRAM bytes; the
// cost model's prediction for a group that `measured` lacks (or, for bytes, whose bytes were not measured).
enum class NodeDataQuantity { time_us, bytes };
std::string model_explorer_node_data(const Graph& graph, const Plan& plan, const GroupMeasurements& measured,
                                     NodeDataQuantity quantity);

}  // namespace fx
