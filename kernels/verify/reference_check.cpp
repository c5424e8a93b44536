#include "kernels/verify/reference_check.h"

#include <algorithm>
#include <cmath>

#include "core/reference/reference.h"
#include "kernels/common/cuda_call.h"
#include "kernels/verify/output_check.h"

namespace fx::gpu {
namespace {

constexpr std::int64_t kMaxTensorElements = std::int64_t{16} << 20;  // 16M: the "small shapes"
constexpr double kMaxVisits = 256e6;  // element visits (and multiply-adds): seconds of the reference's loops

std::vector<double> download_values(const CompiledProgram& im, PlanId plan, ValueId v) {
  const TensorType& t = im.graph.value_type(v);
  std::vector<char> raw(static_cast<std::size_t>(t.bytes()));
  FX_CUDA_CALL(cudaMemcpy(raw.data(), im.pointer(plan, v), raw.size(), cudaMemcpyDeviceToHost));
  return to_doubles(t.dtype, raw);
}

// ||got - ref|| / ||ref||; any NaN in `got` where the reference has none fails.
OutputCheck compare(const std::string& name, DType t, double threshold, const std::vector<double>& got,
                    const std::vector<double>& ref) {
  OutputCheck c;
  c.name = name;
  c.dtype = std::string(dtype_name(t));
  c.threshold = threshold;
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < got.size() && i < ref.size(); ++i) {
    if (std::isnan(ref[i])) continue;  // the format's own NaN (log of a negative): not the plan's fault
    if (std::isnan(got[i])) {
      ++c.nan_count;
      continue;
    }
    diff += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  c.rel_error = norm > 0 ? std::sqrt(diff / norm) : (diff > 0 ? INFINITY : 0.0);
  c.passed = got.size() == ref.size() && c.nan_count == 0 && c.rel_error <= c.threshold;
  return c;
}

}  // namespace

bool reference_is_affordable(const Graph& g, std::string& why) {
  for (ValueId v = 0; v < g.num_values(); ++v) {
    if (g.value_type(v).numel() >= kMaxTensorElements) {
      why = "not checked against the float64 reference: " + g.value_name(v) + " " + type_to_string(g.value_type(v)) +
            " has 16M elements or more (--reference forces it)";
      return false;
    }
  }
  if (reference_cost(g) > kMaxVisits) {
    why = "not checked against the float64 reference: about " + std::to_string(static_cast<long long>(reference_cost(g) / 1e6)) +
          "M operations on the CPU (--reference forces it)";
    return false;
  }
  return true;
}

void check_against_reference(CompiledProgram& im, RunReport& rep) {
  using R = RunOptions::Reference;
  if (im.options.reference == R::off) {
    rep.reference_note = "not checked against the float64 reference (turned off)";
    return;
  }
  if (im.options.reference == R::automatic && !reference_is_affordable(im.graph, rep.reference_note)) return;
  const Graph& g = im.graph;
  std::vector<HostTensor> inputs;
  for (ValueId v = 0; v < static_cast<ValueId>(g.inputs().size()); ++v) {
    inputs.push_back({g.value_type(v), download_values(im, PlanId::unfused, v)});
  }
  auto ref = evaluate_reference(g, std::move(inputs));
  if (!ref.ok()) {
    rep.reference_note = "not checked against the float64 reference: " + ref.errors().front().message;
    return;
  }
  for (PlanId plan : kPlanIds) {
    for (ValueId v : g.outputs()) {
      const DType t = g.value_type(v).dtype;
      const auto loose = im.tolerances.find(v);  // TF32 contractions upstream
      const double threshold = loose != im.tolerances.end() ? loose->second : tolerance_for(t);
      rep.reference_checks.push_back(compare(im.plan(plan).name + ": " + g.value_name(v), t, threshold,
                                             download_values(im, plan, v), (*ref)[static_cast<std::size_t>(v)].values));
    }
  }
  const bool all = std::all_of(rep.reference_checks.begin(), rep.reference_checks.end(),
                               [](const OutputCheck& c) { return c.passed; });
  rep.verified = rep.verified && all;
}

}  // namespace fx::gpu
