#include "kernels/tuning/tuning_keys.h"

#include "core/graph/content_hash.h"

namespace fx::gpu {
namespace {

std::string way_text(const GemmWay& w) {
  return matmul_problem_text(w.problem) + ", finalists " + w.finalists + (w.timed_here ? " timed" : " not timed");
}

}  // namespace

std::string conv_problem_text(const Conv2dProblem& p) {
  auto n = [](std::int64_t v) { return std::to_string(v); };
  return "conv x " + n(p.n) + "x" + n(p.c) + "x" + n(p.h) + "x" + n(p.w) + ", w " + n(p.k) + "x" + n(p.r) + "x" +
         n(p.s) + ", stride " + n(p.stride_h) + "x" + n(p.stride_w) + ", pad " + n(p.pad_h) + "x" + n(p.pad_w) +
         ", dilation " + n(p.dilation_h) + "x" + n(p.dilation_w) + ", groups " + n(p.groups) + ", " +
         std::string(dtype_name(p.type)) + (p.allow_tf32 ? " tf32" : "") + ", epilogue " +
         n(static_cast<int>(p.epilogue)) + (p.residual ? " + residual" : "") + (p.nhwc ? ", nhwc" : ", nchw");
}

TuningKey conv_layout_key(const Conv2dProblem& p, std::span<const std::string> conversion_sources,
                          bool nhwc_alone_timed, const std::string& context) {
  std::string sources;
  for (const std::string& s : conversion_sources) sources += (sources.empty() ? "" : " ") + hex64(fnv1a64(s));
  return {"conv_layout", conv_problem_text(p) + "; conversions " + sources +
                             (nhwc_alone_timed ? "; NHWC call alone timed" : "") + "; " + context};
}

TuningKey horizontal_key(const GemmWay& merged, const GemmWay& part, std::size_t parts, const std::string& context) {
  return {"horizontal", "merged " + way_text(merged) + "; " + std::to_string(parts) + " parts " + way_text(part) +
                            "; " + context};
}

}  // namespace fx::gpu
