// Internal to kernels/executor: where a plan's values live channels-last (NHWC) and where they are converted,
// once layout tuning has chosen which convolutions run on cuDNN's NHWC kernels. No CUDA: the rules are tested
// on the CPU (tests/kernels/test_channels_last_plan.cpp); channels_last.h applies them to a plan's steps.
//
// Converted around each convolution (x to NHWC before it, y back after it), a ResNet's fused plan spends much
// of its time in conversions, most of them undoing the one before: a block's conv2 reads back in NHWC what conv1 had just converted to NCHW. Inductor converts such graphs to channels-last
// once and keeps them so (its layout optimisation). Here a value a channels-last convolution writes stays NHWC
// for every reader that can take it: another channels-last convolution, or an elementwise kernel whose values
// all have one shape (a residual add and ReLU), which then computes on NHWC data and writes NHWC itself, or a
// kernel the generator also writes channels-last (max_pool2d), which then runs that variant. A value is converted
// once, only for a reader that needs the other layout (a reduction, a graph output, a convolution run NCHW).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "core/graph/graph.h"
#include "kernels/codegen/codegen.h"

namespace fx::gpu {

// A plan step as the layout rules see it.
struct LayoutStep {
  enum class Role : std::uint8_t {
    nchw,         // reads and writes row-major (NCHW) values: any kernel or library call not below
    nhwc_conv,    // a convolution run on cuDNN's NHWC kernels: reads `conv_x` and writes its output in NHWC
    layout_free,  // an elementwise kernel that computes the same on NHWC data (is_layout_free)
    nhwc_variant, // a generated kernel with a channels-last variant (max_pool2d; has_channels_last_variant)
  };
  Role role = Role::nchw;
  std::vector<ValueId> inputs, outputs;
  // nhwc_conv: its activation (its other inputs, weights and biases, are read as they are); -1 for one that
  // reads x in a form of its own, made from x's NCHW buffer by a step before it (space to depth).
  ValueId conv_x = -1;
};

// Whether a generated kernel computes the same whatever the layout of its values, so it can run on NHWC data:
// an elementwise kernel of elementwise ops (no layout op, no random op: dropout keys its mask by the element's
// index), whose inputs and outputs all have one shape or are scalars (a broadcast, a per-channel bias, indexes
// by position).
bool is_layout_free(const Graph& g, KernelKind kind, std::span<const NodeId> nodes, std::span<const ValueId> inputs,
                    std::span<const ValueId> outputs);

// A value of one element (a scalar) has one layout: it has no NHWC buffer, and steps run NHWC read it as it is.
bool has_one_layout(const Graph& g, ValueId v);
// Whether step `s`, run channels-last or not (ChannelsLastPlan::channels_last), reads `v` from its NHWC buffer.
bool reads_nhwc(const Graph& g, const LayoutStep& s, bool channels_last, ValueId v);

// One conversion the plan launches: `value` copied from its NCHW buffer to its NHWC one (to_nhwc) or back,
// launched before step `position` (steps.size(): after the last step).
struct LayoutConversion {
  ValueId value = -1;
  bool to_nhwc = true;
  std::size_t position = 0;
};

struct ChannelsLastPlan {
  std::vector<bool> channels_last;             // per step: a layout_free or nhwc_variant step run on NHWC data
  std::vector<LayoutConversion> conversions;   // in launch order
  std::vector<ValueId> nhwc_values;            // the values with an NHWC buffer, ascending
  // Bytes its conversions move (each reads and writes its value), and what converting x and y around each
  // nhwc_conv step moves (as layout tuning timed them). Worth applying only when it moves fewer.
  std::int64_t bytes = 0, bytes_around = 0;
  bool gains() const { return bytes < bytes_around; }
};

// The layouts of a plan's values. A value is NHWC where a channels-last convolution writes it, or a layout_free
// or nhwc_variant step that runs NHWC; such a step runs NHWC when one of its inputs is written NHWC and every
// other is either that or read NHWC by a convolution anyway (so running it NHWC adds no conversion of its
// inputs). Then:
// a value written NHWC that is read NCHW (by an nchw step, a convolution's weights or bias, or as a graph output)
// is converted right after the step that writes it, while it is in the L2; a value written NCHW that is read NHWC
// is converted once, before its first such reader. `view_sources` are read NCHW outside the steps: a view
// (core/analysis/views.h) is no step, and reads its source's bytes in row-major order from its NCHW buffer, so
// such a value is never left only in NHWC.
ChannelsLastPlan plan_channels_last(const Graph& g, std::span<const LayoutStep> steps,
                                    std::span<const ValueId> view_sources = {});

// A convolution layout tuning kept NCHW: tuning timed its NHWC way with x and y converted around it, but with
// values kept NHWC the plan may launch fewer conversions for it (its x already NHWC, its y read NHWC). Its times
// from tuning, and the bytes its own two conversions move (2 * (x + y)).
struct NchwConvolution {
  std::size_t step = 0;  // in the steps given to reweigh_nchw_convolutions, a Role::nchw step
  ValueId x = -1;
  double nchw_ms = 0, nhwc_alone_ms = 0, nhwc_converted_ms = 0;
  std::int64_t converted_bytes = 0;
};

// What running such a convolution NHWC saves, in ms (> 0: worth it): the NCHW call's time less the NHWC call's
// alone, plus the conversions the plan launches with it NCHW less those with it NHWC, the conversions' time
// estimated from their bytes at the rate this convolution's own conversions took in tuning
// ((nhwc_converted_ms - nhwc_alone_ms) for converted_bytes).
double nhwc_saving_ms(const NchwConvolution& c, std::int64_t plan_bytes_nchw, std::int64_t plan_bytes_nhwc);

struct Reweighed {
  std::vector<LayoutStep> steps;  // the steps with each convolution worth running NHWC made Role::nhwc_conv
  ChannelsLastPlan plan;          // plan_channels_last of those steps
  std::vector<std::pair<std::size_t, double>> nhwc;  // (step, ms saved) of each convolution made NHWC
};

// Weighs each of `convolutions` in plan order against the plan as it stands (the ones before it decided) and
// makes it NHWC where nhwc_saving_ms is positive: tuning may keep a small convolution NCHW (timed with x and y
// converted around it) where the block around it is NHWC, and run NCHW there it costs conversions of its
// neighbours' values.
Reweighed reweigh_nchw_convolutions(const Graph& g, std::vector<LayoutStep> steps,
                                    std::span<const NchwConvolution> convolutions,
                                    std::span<const ValueId> view_sources = {});

}  // namespace fx::gpu
