// A convolution's NCHW call against its channels-last way (step_tuning.h): timed, or the kept choice reused.
#include <optional>
#include <string>
#include <vector>

#include "kernels/common/sticky_error.h"
#include "kernels/common/cuda_call.h"
#include "kernels/common/ms_text.h"
#include "kernels/executor/contraction_step.h"
#include "kernels/executor/step_tuning.h"
#include "kernels/tuning/tuning_keys.h"

namespace fx::gpu {
namespace {

// The conversions' sources in each of their layouts, x's then y's: the channels-last way's other half.
std::vector<std::string> conversion_sources(const LibraryStep& call) {
  std::vector<std::string> sources;
  for (CallPart part : {CallPart::to_nhwc, CallPart::to_nchw}) {
    const GeneratedKernel& k = call.conversion(part);
    sources.push_back(k.source);
    for (const KernelLayout& alt : k.alternatives) sources.push_back(alt.source);
  }
  return sources;
}

// The first line of a library error, for a one-line report.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// cuDNN may refuse the NHWC problem (a type or epilogue its legacy NHWC kernels lack) where it ran NCHW: the
// run then keeps the NCHW call and says why, instead of failing. CUDA errors and faults propagate. Runs the
// NHWC way once (its search, which synchronises, outside any timed round).
std::optional<std::string> nhwc_refusal(TuningPass& pass, const WayLaunch& launch) {
  try {
    search(pass, [&] { launch(1); });
  } catch (const GpuError& e) {
    if (is_sticky(e) || e.library() != "cuDNN") throw;
    return first_line(e.what());
  }
  return std::nullopt;
}

struct ConvWays {
  TuningPass& pass;
  PlanId p;
  std::size_t s;
  LibraryStep& call;
  std::size_t count;  // the NCHW call, then the channels-last way in each conversion layout
  WayLaunch launch;
};

// Whether a plan that keeps values NHWC may run this convolution's NHWC call without the conversions tuning
// timed with it: not a space-to-depth form, whose x is rearranged before it in any plan.
bool reweighable(const ConvWays& w) { return w.pass.im.options.keep_nhwc && !w.call.space_to_depth(); }

// Times the ways (with the NHWC call alone too where the NCHW call wins and values may stay NHWC around it:
// the kept plan may not launch the conversions timed here, keep_channels_last weighs it again).
TimedChoice time_ways(ConvWays& w) {
  CompiledProgram& im = w.pass.im;
  if (auto refused = nhwc_refusal(w.pass, w.launch)) return {0, {}, {{"refused", *refused}}, ""};
  // The NCHW call's first launch runs cuDNN's algorithm search, which synchronises: not inside the timed runs
  // (it would wait there for a gate the host cannot open until the search returns).
  search(w.pass, [&] { w.launch(0); });
  TimedChoice t;
  t.ms = time_rounds(w.pass, w.p, w.s, w.count, kConvRounds, w.launch);
  t.index = fastest(t.ms);
  if (t.index == 0 && reweighable(w)) {
    const PlanBuffers b = im.buffers(w.p);
    const std::vector<double> alone = time_rounds(w.pass, w.p, w.s, 1, kConvRounds, [&](std::size_t) {
      w.call.launch(b, im.stream, CallPart::conv_nhwc);  // its x the scratch the last NHWC round converted
      im.launched(w.p, w.s);
    });
    t.detail["nhwc_alone_ms"] = alone[0];
  }
  return t;
}

// Whether a kept choice is one this step can take: a refusal, or every way's time (and the NHWC call's alone
// where the NCHW call won and values may stay NHWC).
bool usable(const TimedChoice& kept, std::size_t ways, bool reweighable) {
  if (kept.detail.contains("refused")) return kept.detail["refused"].is_string() && kept.index == 0;
  if (kept.ms.size() != ways) return false;
  return kept.index != 0 || !reweighable || (kept.detail.contains("nhwc_alone_ms") && kept.detail["nhwc_alone_ms"].is_number());
}

StepTuning decision(const ConvWays& w, const TimedChoice& c) {
  const std::string origin = c.reused() ? "; " + reused_from(c) : "";
  if (c.detail.contains("refused")) {
    return {KeepNchw{}, "NCHW: cuDNN refused the NHWC call (" + c.detail["refused"].get<std::string>() + ")" + origin,
            c.tuned_at};
  }
  const std::string nhwc = w.call.space_to_depth() ? "NHWC in space-to-depth form" : "NHWC";
  std::string times = "NCHW call " + ms_text(c.ms[0]);
  for (std::size_t i = 1; i < w.count; ++i) {
    times += "; " + nhwc + " with " + w.call.conversion_layout_name(i - 1) + ": " + ms_text(c.ms[i]);
  }
  const std::string how = c.reused() ? " layouts, " + reused_from(c) + " (" : " layouts timed here (";
  const std::string choice = (c.index > 0 ? nhwc : std::string("NCHW")) + ": the " +
                             (w.count == 2 ? "faster" : "fastest") + " of " + std::to_string(w.count) + how + times + ")";
  if (c.index > 0) return {RunNhwc{c.index - 1}, choice, c.tuned_at};
  KeepNchw keep;
  if (reweighable(w)) {
    const std::size_t best = 1 + fastest(std::span<const double>(c.ms).subspan(1));
    keep.nchw_choice = LibraryLaunch::NchwChoice{c.ms[0], c.detail["nhwc_alone_ms"].get<double>(), c.ms[best], best - 1};
  }
  return {std::move(keep), choice, c.tuned_at};
}

// Layout k >= 1 set by hand (with layout 1 forced the channels-last way is never loaded): untimed.
StepTuning forced(ConvWays& w) {
  if (auto refused = nhwc_refusal(w.pass, w.launch)) return {KeepNchw{}, "NCHW: cuDNN refused the NHWC call (" + *refused + ")", ""};
  const std::size_t way = std::min<std::size_t>(static_cast<std::size_t>(w.pass.forced), w.count - 1);
  return {RunNhwc{way - 1},
          "NHWC: layout " + std::to_string(way + 1) + " of " + std::to_string(w.count) + ", set by hand (not timed; " +
              w.call.conversion_layout_name(way - 1) + ")",
          ""};
}

}  // namespace

// A convolution's NCHW call (layout 1) against its channels-last way with the conversions in each of their
// layouts (layouts 2, 3, ...). The kept choice holds for the problem in full, the conversions' sources, whether
// the NHWC call alone was timed, and the tuning context; cuDNN's own algorithm search is not part of the key: it
// runs again on each launch's first call and, for one problem on one environment, chooses among the same plans.
StepTuning tune_conv_layout(TuningPass& pass, PlanId p, std::size_t s) {
  CompiledProgram& im = pass.im;
  const std::shared_ptr<LibraryStep> call = im.plan(p).steps[s].library()->call;
  const PlanBuffers b = im.buffers(p);
  ConvWays w{pass, p, s, *call, 1 + call->conversion_layouts(), {}};
  w.launch = [&im, call, b, p, s](std::size_t i) {
    if (i == 0) {
      call->launch(b, im.stream, CallPart::whole);
    } else {
      for (CallPart part : {CallPart::to_nhwc, CallPart::conv_nhwc, CallPart::to_nchw}) call->launch(b, im.stream, part, i - 1);
    }
    im.launched(p, s);
  };
  if (pass.forced >= 1) return forced(w);
  const bool alone = reweighable(w);
  const TuningKey key = conv_layout_key(call->call().conv, conversion_sources(*call), alone, tuning_context(im, p, s));
  const TimedChoice c = pass.choose(key, w.count, [&] { return time_ways(w); },
                                    [&](const TimedChoice& kept) { return usable(kept, w.count, alone); });
  return decision(w, c);
}

}  // namespace fx::gpu
