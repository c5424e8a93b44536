#include "core/export/model_explorer.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/graph/shape.h"

namespace fx {
namespace {

using ojson = nlohmann::ordered_json;

// Whole numbers (bytes) in full, others to six significant digits: "1085601792", "346.912".
std::string number_text(double value) {
  char buffer[64];
  const bool whole = value == static_cast<double>(static_cast<long long>(value)) && value < 1e15 && value > -1e15;
  std::snprintf(buffer, sizeof buffer, whole ? "%.0f" : "%.6g", value);
  return buffer;
}

std::string layer_of(const Group& group) {
  if (group.nodes.size() < 2) return "";
  std::string id = group.id;
  std::replace(id.begin(), id.end(), '/', '|');
  return id;
}

std::string kinds_of(const Group& group) {
  std::string kinds;
  for (FusionKind k : group.kinds) kinds += (kinds.empty() ? "" : "+") + std::string(to_string(k));
  return kinds.empty() ? "single" : kinds;
}

ojson key_value(const std::string& key, const std::string& value) { return {{"key", key}, {"value", value}}; }

ojson tensor_metadata(const TensorType& type, const std::string& name) {
  return ojson::array({{{"id", "0"},
                        {"attrs", ojson::array({key_value("tensor_name", name), key_value("shape", shape_to_string(type.shape)),
                                                key_value("dtype", std::string(dtype_name(type.dtype)))})}}});
}

// The numbers a group's last node carries.
void add_group_numbers(ojson& attrs, const Group& group, const GroupMeasurements& measured) {
  attrs.push_back(key_value("predicted_time_us", number_text(group.cost.time_s * 1e6)));
  attrs.push_back(key_value("predicted_bytes", number_text(static_cast<double>(group.cost.bytes_read + group.cost.bytes_written))));
  const auto it = measured.find(group.id);
  if (it == measured.end()) return;
  attrs.push_back(key_value("measured_time_us", number_text(it->second.time_us)));
  attrs.push_back(key_value("measured_dram_bytes", it->second.dram_bytes ? number_text(*it->second.dram_bytes) : "not measured"));
}

ojson node_json(const Graph& g, const Plan& plan, NodeId n, const GroupMeasurements& measured) {
  const Node& node = g.node(n);
  const Group& group = plan.group_of_node(n);
  ojson attrs = ojson::array({key_value("op", node.op), key_value("group", group.id), key_value("fusion", kinds_of(group))});
  if (!node.source.empty()) attrs.push_back(key_value("source", node.source));
  if (group.nodes.back() == n) add_group_numbers(attrs, group, measured);
  ojson edges = ojson::array();
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i].is_scalar()) continue;
    edges.push_back({{"sourceNodeId", g.value_name(node.inputs[i].value)},
                     {"sourceNodeOutputId", "0"},
                     {"targetNodeInputId", std::to_string(i)}});
  }
  return {{"id", node.name}, {"label", node.op}, {"namespace", layer_of(group)}, {"attrs", std::move(attrs)},
          {"incomingEdges", std::move(edges)}, {"outputsMetadata", tensor_metadata(node.type, node.name)}};
}

double quantity_of(const Group& group, const GroupMeasurements& measured, NodeDataQuantity q) {
  const auto it = measured.find(group.id);
  if (q == NodeDataQuantity::time_us) return it != measured.end() ? it->second.time_us : group.cost.time_s * 1e6;
  if (it != measured.end() && it->second.dram_bytes) return *it->second.dram_bytes;
  return static_cast<double>(group.cost.bytes_read + group.cost.bytes_written);
}

}  // namespace

Expected<GroupMeasurements> measurements_from_run_report(const RunReport& report) {
  if (!report.completed()) return Diagnostic{"/status", "the run stopped at a GPU fault: it measured nothing"};
  GroupMeasurements out;
  std::map<std::string, bool> all_bytes;
  for (const KernelReport& k : report.fused.kernels) {
    GroupMeasurement& m = out[k.group];
    m.time_us += k.measured_ms * 1000.0;
    const std::optional<double> bytes = k.measured ? k.measured->bytes() : std::nullopt;
    bool& every_kernel_has_bytes = all_bytes.try_emplace(k.group, true).first->second;
    every_kernel_has_bytes = every_kernel_has_bytes && bytes.has_value();
    if (bytes) m.dram_bytes = m.dram_bytes.value_or(0) + *bytes;
  }
  for (auto& [group, m] : out) {
    if (!all_bytes[group]) m.dram_bytes.reset();  // a sum over part of the group's kernels would understate it
  }
  return out;
}

std::string plan_to_model_explorer(const Graph& g, const Plan& plan, const GroupMeasurements& measured) {
  ojson nodes = ojson::array();
  for (const GraphInput& in : g.inputs()) {
    ojson attrs = ojson::array({key_value("role", std::string(in.role == Role::activation ? "input" : "weight"))});
    nodes.push_back({{"id", in.name}, {"label", in.role == Role::activation ? "input" : "weight"}, {"namespace", ""},
                     {"attrs", std::move(attrs)}, {"incomingEdges", ojson::array()},
                     {"outputsMetadata", tensor_metadata(in.type, in.name)}});
  }
  for (NodeId n = 0; n < g.num_nodes(); ++n) nodes.push_back(node_json(g, plan, n, measured));
  // The side panel of a group's layer: its kernel's numbers and what it fuses.
  ojson layers = ojson::object();
  for (const Group& group : plan.groups()) {
    if (layer_of(group).empty()) continue;
    ojson a = {{"fusion", kinds_of(group)}, {"predicted_time_us", number_text(group.cost.time_s * 1e6)}};
    if (auto it = measured.find(group.id); it != measured.end()) a["measured_time_us"] = number_text(it->second.time_us);
    layers[layer_of(group)] = std::move(a);
  }
  ojson graph = {{"id", g.name() + " (fused, " + std::to_string(plan.kernel_count()) + " kernels)"},
                 {"nodes", std::move(nodes)},
                 {"groupNodeAttributes", std::move(layers)}};
  return ojson{{"graphs", ojson::array({std::move(graph)})}}.dump(2) + "\n";
}

std::string model_explorer_node_data(const Graph& g, const Plan& plan, const GroupMeasurements& measured,
                                     NodeDataQuantity quantity) {
  ojson results = ojson::object();
  for (const Group& group : plan.groups()) {
    if (!group.launched() || group.nodes.empty()) continue;
    results[g.node(group.nodes.back()).name] = {{"value", quantity_of(group, measured, quantity)}};
  }
  // White for the smallest value, orange for the largest: where the time (or the traffic) goes.
  const ojson gradient = ojson::array({{{"stop", 0}, {"bgColor", "#ffffff"}}, {{"stop", 1}, {"bgColor", "#f28b24"}}});
  return ojson{{"results", std::move(results)}, {"gradient", gradient}}.dump(2) + "\n";
}

}  // namespace fx
