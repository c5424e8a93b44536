#include "kernels/executor/channels_last_plan.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace fx::gpu {
bool has_one_layout(const Graph& g, ValueId v) { return g.value_type(v).numel() == 1; }

bool reads_nhwc(const Graph& g, const LayoutStep& s, bool channels_last, ValueId v) {
  return (s.role == LayoutStep::Role::nhwc_conv && v == s.conv_x) || (channels_last && !has_one_layout(g, v));
}

bool is_layout_free(const Graph& g, KernelKind kind, std::span<const NodeId> nodes, std::span<const ValueId> inputs,
                    std::span<const ValueId> outputs) {
  if (kind != KernelKind::elementwise || nodes.empty() || outputs.empty()) return false;
  for (NodeId n : nodes) {
    const Node& node = g.node(n);
    if (node.op_class() != OpClass::elementwise || node.def->random) return false;
  }
  const Shape& shape = g.value_type(outputs.front()).shape;
  auto same = [&](ValueId v) { return has_one_layout(g, v) || g.value_type(v).shape == shape; };
  return std::all_of(inputs.begin(), inputs.end(), same) && std::all_of(outputs.begin(), outputs.end(), same);
}

namespace {

// Where the values live as the steps run: those written NHWC, each value's writer, and its first NHWC reader.
struct ValuePlaces {
  std::set<ValueId> written_nhwc;
  std::map<ValueId, std::size_t> producer, first_nhwc_reader;
};

// Whether a layout_free or nhwc_variant step runs NHWC: one of its inputs is written NHWC and every other is
// either that or read NHWC by a convolution anyway (`conv_x`), so running it NHWC adds no conversion of its inputs.
bool runs_nhwc(const Graph& g, const LayoutStep& s, const std::set<ValueId>& written_nhwc,
               const std::set<ValueId>& conv_x) {
  bool any = false;
  for (ValueId v : s.inputs) {
    if (has_one_layout(g, v)) continue;
    if (written_nhwc.count(v)) {
      any = true;
    } else if (!conv_x.count(v)) {
      return false;
    }
  }
  return any;
}

// Walks the steps in order, marking those run NHWC (`channels_last`) and where each value is written and read.
ValuePlaces place_values(const Graph& g, std::span<const LayoutStep> steps, std::vector<bool>& channels_last) {
  using Role = LayoutStep::Role;
  std::set<ValueId> conv_x;  // read NHWC by a convolution: converted anyway if not written NHWC
  for (const LayoutStep& s : steps) {
    if (s.role == Role::nhwc_conv && s.conv_x >= 0) conv_x.insert(s.conv_x);
  }
  ValuePlaces at;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const LayoutStep& s = steps[i];
    for (ValueId v : s.outputs) at.producer.emplace(v, i);
    if (s.role == Role::nhwc_conv) {
      if (s.conv_x >= 0) at.first_nhwc_reader.emplace(s.conv_x, i);
      at.written_nhwc.insert(s.outputs.begin(), s.outputs.end());
      continue;
    }
    if ((s.role != Role::layout_free && s.role != Role::nhwc_variant) || !runs_nhwc(g, s, at.written_nhwc, conv_x)) {
      continue;
    }
    channels_last[i] = true;
    for (ValueId v : s.inputs) {
      if (!has_one_layout(g, v)) at.first_nhwc_reader.emplace(v, i);
    }
    for (ValueId v : s.outputs) {
      if (!has_one_layout(g, v)) at.written_nhwc.insert(v);
    }
  }
  return at;
}

// A value written NHWC and read NCHW (graph outputs, views' sources, what nchw steps read, a convolution's weights
// and biases, the scalars of a step run NHWC) converted right after its writer; one written NCHW and read NHWC,
// before its first such reader. In launch order: by position; at one position a conversion back (of the step just
// before) first.
std::vector<LayoutConversion> conversions(const Graph& g, std::span<const LayoutStep> steps,
                                          const std::vector<bool>& channels_last, const ValuePlaces& at,
                                          std::span<const ValueId> view_sources) {
  std::set<ValueId> read_nchw(g.outputs().begin(), g.outputs().end());
  read_nchw.insert(view_sources.begin(), view_sources.end());
  for (std::size_t i = 0; i < steps.size(); ++i) {
    for (ValueId v : steps[i].inputs) {
      if (!reads_nhwc(g, steps[i], channels_last[i], v)) read_nchw.insert(v);
    }
  }
  std::vector<LayoutConversion> out;
  for (ValueId v : at.written_nhwc) {
    if (read_nchw.count(v)) out.push_back({v, false, at.producer.at(v) + 1});
  }
  for (const auto& [v, reader] : at.first_nhwc_reader) {
    if (!at.written_nhwc.count(v)) out.push_back({v, true, reader});
  }
  std::stable_sort(out.begin(), out.end(), [](const LayoutConversion& a, const LayoutConversion& b) {
    return std::tie(a.position, a.to_nhwc) < std::tie(b.position, b.to_nhwc);
  });
  return out;
}

}  // namespace

ChannelsLastPlan plan_channels_last(const Graph& g, std::span<const LayoutStep> steps,
                                    std::span<const ValueId> view_sources) {
  ChannelsLastPlan plan;
  plan.channels_last.assign(steps.size(), false);
  const ValuePlaces at = place_values(g, steps, plan.channels_last);
  plan.conversions = conversions(g, steps, plan.channels_last, at, view_sources);
  for (const LayoutConversion& c : plan.conversions) plan.bytes += 2 * g.value_type(c.value).bytes();
  for (const LayoutStep& s : steps) {
    if (s.role != LayoutStep::Role::nhwc_conv) continue;
    if (s.conv_x >= 0) plan.bytes_around += 2 * g.value_type(s.conv_x).bytes();
    for (ValueId v : s.outputs) plan.bytes_around += 2 * g.value_type(v).bytes();
  }
  std::set<ValueId> nhwc(at.written_nhwc);
  for (const auto& [v, reader] : at.first_nhwc_reader) nhwc.insert(v);
  plan.nhwc_values.assign(nhwc.begin(), nhwc.end());
  return plan;
}

double nhwc_saving_ms(const NchwConvolution& c, std::int64_t plan_bytes_nchw, std::int64_t plan_bytes_nhwc) {
  const double conversion_ms = std::max(0.0, c.nhwc_converted_ms - c.nhwc_alone_ms);
  const double ms_per_byte = c.converted_bytes > 0 ? conversion_ms / static_cast<double>(c.converted_bytes) : 0.0;
  return (c.nchw_ms - c.nhwc_alone_ms) + ms_per_byte * static_cast<double>(plan_bytes_nchw - plan_bytes_nhwc);
}

Reweighed reweigh_nchw_convolutions(const Graph& g, std::vector<LayoutStep> steps,
                                    std::span<const NchwConvolution> convolutions,
                                    std::span<const ValueId> view_sources) {
  Reweighed r;
  r.plan = plan_channels_last(g, steps, view_sources);
  for (const NchwConvolution& c : convolutions) {
    std::vector<LayoutStep> with = steps;
    with.at(c.step).role = LayoutStep::Role::nhwc_conv;
    with[c.step].conv_x = c.x;
    ChannelsLastPlan plan = plan_channels_last(g, with, view_sources);
    const double saved = nhwc_saving_ms(c, r.plan.bytes, plan.bytes);
    if (saved <= 0) continue;
    steps = std::move(with);
    r.plan = std::move(plan);
    r.nhwc.emplace_back(c.step, saved);
  }
  r.steps = std::move(steps);
  return r;
}

}  // namespace fx::gpu
