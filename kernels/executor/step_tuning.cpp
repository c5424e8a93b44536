// Applying a tuning decision to its plan (step_tuning.h): the only place that rewrites steps while tuning.
#include "kernels/executor/step_tuning.h"

#include <iterator>
#include <type_traits>
#include <utility>

#include "kernels/executor/contraction_step.h"

namespace fx::gpu {
namespace {

// Layout 0 is the step's installed one; layout i > 0 is alternatives[i - 1]. Installing i swaps the two, so
// every compiled layout stays owned by the step (and is unloaded with it).
std::size_t install(CompiledPlan& ps, std::size_t s, const InstallLayout& d) {
  Step& st = ps.steps[s];
  GeneratedLaunch& g = *st.generated();
  if (d.layout == 0) return s;
  GeneratedLaunch::Layout& alt = g.alternatives[d.layout - 1];
  swap_layout(st.kernel, alt.layout);
  std::swap(g.loaded, alt.loaded);
  return s;
}

std::size_t keep_nchw(CompiledPlan& ps, std::size_t s, const KeepNchw& d) {
  LibraryLaunch& lib = *ps.steps[s].library();
  lib.nchw_choice = d.nchw_choice;
  if (!d.nchw_choice) lib.call->drop_nhwc();  // its scratch and permuted weights are not needed any more
  return s;
}

// The one step becomes three: x to NHWC, the call, y back. The conversions are generated kernels owned by the
// call; they report the group and the convolution's nodes.
std::size_t run_nhwc(const Graph& g, CompiledPlan& ps, std::size_t s, const RunNhwc& d) {
  const std::shared_ptr<LibraryStep> call = ps.steps[s].library()->call;
  call->install_conversion_layout(d.conversion_layout);
  const LibraryCall& lc = call->call();
  Step to_nhwc{ps.steps[s], LibraryLaunch{call, CallPart::to_nhwc}};
  Step to_nchw{ps.steps[s], LibraryLaunch{call, CallPart::to_nchw}};
  for (Step* conversion : {&to_nhwc, &to_nchw}) call->describe_conversion(conversion->library()->part, *conversion);
  to_nhwc.kernel.inputs = {lc.x};
  to_nhwc.kernel.outputs = {};
  to_nhwc.kernel.bytes_moved = call->conversion(CallPart::to_nhwc).bytes_moved;  // a rearrangement writes more
  to_nchw.kernel.inputs = {};
  to_nchw.kernel.outputs = {lc.outputs[0]};
  to_nchw.kernel.bytes_moved = 2 * g.value_type(lc.outputs[0]).bytes();
  const std::string note = ps.steps[s].group + ": " + lc.name + " runs channels-last, as 3 launches: " +
                           to_nhwc.kernel.name + (call->space_to_depth() ? " (x's blocks as channels, NHWC) + " : " (x to NHWC) + ") + lc.name + " + " + to_nchw.kernel.name +
                           " (y back to NCHW)";
  ps.notes.reserve(ps.notes.size() + 1);
  ps.steps.reserve(ps.steps.size() + 2);  // no reallocation, so no exception, from here on
  ps.steps[s].library()->part = CallPart::conv_nhwc;
  ps.steps.insert(ps.steps.begin() + static_cast<std::ptrdiff_t>(s) + 1, std::move(to_nchw));
  ps.steps.insert(ps.steps.begin() + static_cast<std::ptrdiff_t>(s), std::move(to_nhwc));
  ps.notes.push_back(note);
  return s + 2;
}

// The group's note on its launches (contraction_step.cpp, where it has more than one) named the merged call:
// it is replaced by one that says what runs now.
std::string split_note(const CompiledPlan& ps, std::size_t s, const SplitParts& d) {
  const LibraryCall& lc = ps.steps[s].call()->call();
  const std::string& group = ps.steps[s].group;
  std::size_t group_steps = d.parts.size() - 1;
  for (const Step& other : ps.steps) group_steps += other.group == group ? 1 : 0;
  std::string names;
  for (const auto& part : d.parts) names += (names.empty() ? "" : " + ") + part->call().name;
  return group + ": " + std::to_string(group_steps) + " launches: " + lc.name + " runs as its " +
         std::to_string(d.parts.size()) + " GEMMs (" + names + "), " +
         (d.forced ? "set by hand" : "faster than the one strided-batched call here");
}

// The one step becomes one per part, each an ordinary GEMM on the graph's own weight, writing its output where
// the merged call would have (the stacked weights are freed with the merged call).
std::size_t split(const Graph& g, CompiledPlan& ps, std::size_t s, const SplitParts& d) {
  std::vector<Step> steps;
  for (const auto& part : d.parts) {
    Step st{ps.steps[s], LibraryLaunch{part}};
    name_step_after(g, part->call(), st);
    steps.push_back(std::move(st));
  }
  const std::string note = split_note(ps, s, d);
  const LibraryCall& lc = ps.steps[s].call()->call();
  const std::string stale = ps.steps[s].group + ": ", merged_call = lc.name + " (";
  ps.notes.reserve(ps.notes.size() + 1);
  ps.steps.reserve(ps.steps.size() + steps.size());  // no reallocation, so no exception, from here on
  std::erase_if(ps.notes, [&](const std::string& n) {
    return n.rfind(stale, 0) == 0 && n.find(" launches: ") != std::string::npos && n.find(merged_call) != std::string::npos;
  });
  ps.notes.push_back(note);
  ps.steps[s] = std::move(steps[0]);
  ps.steps.insert(ps.steps.begin() + static_cast<std::ptrdiff_t>(s) + 1, std::make_move_iterator(steps.begin() + 1),
                  std::make_move_iterator(steps.end()));
  return s + d.parts.size() - 1;
}

}  // namespace

std::size_t apply_step_tuning(CompiledProgram& im, PlanId p, std::size_t s, StepTuning t) {
  CompiledPlan& ps = im.plan(p);
  const std::size_t last = std::visit(
      [&](const auto& d) -> std::size_t {
        using D = std::decay_t<decltype(d)>;
        if constexpr (std::is_same_v<D, InstallLayout>) {
          return install(ps, s, d);
        } else if constexpr (std::is_same_v<D, KeepNchw>) {
          return keep_nchw(ps, s, d);
        } else if constexpr (std::is_same_v<D, RunNhwc>) {
          return run_nhwc(im.graph, ps, s, d);
        } else if constexpr (std::is_same_v<D, SplitParts>) {
          return split(im.graph, ps, s, d);
        } else {
          static_assert(std::is_same_v<D, KeepStep>);
          return s;
        }
      },
      t.rewrite);
  for (std::size_t i = s; i <= last && !t.layout_choice.empty(); ++i) {
    // A channels-last convolution's conversions keep their own line (describe_conversion), the call gets this.
    if (std::holds_alternative<RunNhwc>(t.rewrite) && i != s + 1) continue;
    ps.steps[i].layout_choice = t.layout_choice;
    ps.steps[i].tuned_at = t.tuned_at;
  }
  return last;
}

}  // namespace fx::gpu
