#include "core/report/run_summary.h"

#include <nlohmann/json.hpp>

namespace fx {
namespace {

using json = nlohmann::json;

std::optional<double> number_at(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string text_at(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A kernel's or a plan's measured DRAM bytes sit in its "measured" object.
std::optional<double> measured_bytes(const json& j) {
  auto it = j.find("measured");
  return it != j.end() && it->is_object() ? number_at(*it, "bytes") : std::nullopt;
}

MeasuredKernel read_kernel(const json& k) {
  MeasuredKernel out{text_at(k, "name"), text_at(k, "group"), text_at(k, "library"), {}, number_at(k, "measured_ms"),
                     number_at(k, "group_predicted_ms"), measured_bytes(k), number_at(k, "group_predicted_bytes")};
  if (auto it = k.find("nodes"); it != k.end() && it->is_array())
    for (const json& n : *it)
      if (n.is_string()) out.nodes.push_back(n.get<std::string>());
  return out;
}

Expected<MeasuredPlan> read_plan(const json& p, const std::string& pointer) {
  if (!p.is_object()) return Diagnostic{pointer, "a plan must be an object"};
  MeasuredPlan out;
  out.name = text_at(p, "name");
  if (out.name.empty()) return Diagnostic{pointer + "/name", "a plan needs a name"};
  out.kernel_count = static_cast<int>(number_at(p, "kernel_count").value_or(0));
  out.measured_ms = number_at(p, "total_ms");
  out.predicted_ms = number_at(p, "predicted_ms");
  out.measured_bytes = measured_bytes(p);
  out.predicted_bytes = number_at(p, "predicted_bytes");
  if (auto it = p.find("kernels"); it != p.end() && it->is_array())
    for (const json& k : *it)
      if (k.is_object()) out.kernels.push_back(read_kernel(k));
  return out;
}

}  // namespace

const MeasuredPlan* RunSummary::plan(std::string_view name) const {
  for (const MeasuredPlan& p : plans)
    if (p.name == name) return &p;
  return nullptr;
}

Expected<RunSummary> read_run_summary(std::string_view json_text) {
  const json root = json::parse(json_text, nullptr, false);
  if (root.is_discarded() || !root.is_object()) return Diagnostic{"", "not a JSON object"};
  if (text_at(root, "format") != "fusion-explorer/run")
    return Diagnostic{"/format", "not a run report: the format must be \"fusion-explorer/run\""};
  if (number_at(root, "version").value_or(0) != 1) return Diagnostic{"/version", "this reader knows version 1"};
  if (text_at(root, "status") == "gpu_fault")
    return Diagnostic{"/status", "the run stopped at a GPU fault: the report holds no measurements"};
  RunSummary out;
  out.graph = text_at(root, "graph");
  out.graph_hash = text_at(root, "graph_hash");
  out.plan_hash = text_at(root, "plan_hash");
  out.plan_source = text_at(root, "plan_source");
  if (auto it = root.find("device"); it != root.end() && it->is_object()) out.gpu = text_at(*it, "name");
  if (auto it = root.find("verification"); it != root.end() && it->is_object() && it->contains("passed") &&
                                           (*it)["passed"].is_boolean())
    out.verified = (*it)["passed"].get<bool>();
  out.speedup = number_at(root, "speedup");
  out.hbm_reduction = number_at(root, "hbm_traffic_reduction");
  out.hbm_reduction_predicted = number_at(root, "hbm_traffic_reduction_predicted");
  auto plans = root.find("plans");
  if (plans == root.end() || !plans->is_array() || plans->empty())
    return Diagnostic{"/plans", "the report has no measured plans"};
  for (std::size_t i = 0; i < plans->size(); ++i) {
    auto plan = read_plan((*plans)[i], "/plans/" + std::to_string(i));
    if (!plan) return plan.errors();
    out.plans.push_back(std::move(*plan));
  }
  return out;
}

}  // namespace fx
