#include "kernels/executor/channels_last.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>
#include <utility>

#include "core/fusion/kernel_names.h"
#include "kernels/codegen/codegen.h"
#include "kernels/common/cuda_call.h"
#include "kernels/common/event_timing.h"
#include "kernels/executor/contraction_step.h"

namespace fx::gpu {
namespace {

// A conversion tuning put around a channels-last convolution, which the layout plan replaces. A space-to-depth
// form's rearrangement of x is no conversion between layouts: it stays, a step reading x as NCHW.
bool is_tuning_conversion(const Step& st) {
  const LibraryLaunch* lib = st.library();
  return lib && lib->is_conversion() && !(lib->part == CallPart::to_nhwc && lib->call->space_to_depth());
}

bool is_nhwc_conv(const Step& st) { return st.library() && st.library()->part == CallPart::conv_nhwc; }

LayoutStep view_of(const Graph& g, const Step& st) {
  LayoutStep v;
  v.inputs = st.kernel.inputs;
  v.outputs = st.kernel.outputs;
  if (is_nhwc_conv(st)) {
    v.role = LayoutStep::Role::nhwc_conv;
    if (st.call()->space_to_depth()) {
      std::erase(v.inputs, st.call()->call().x);  // it reads its own rearranged x, which the step before it makes
    } else {
      v.conv_x = st.call()->call().x;
    }
  } else if (st.generated() &&
             is_layout_free(g, st.kernel.kind, st.kernel.nodes, st.kernel.inputs, st.kernel.outputs)) {
    v.role = LayoutStep::Role::layout_free;
  } else if (st.generated() && has_channels_last_variant(g, st.kernel.kind, st.kernel.nodes)) {
    v.role = LayoutStep::Role::nhwc_variant;
  }
  return v;
}

// A step's channels-last variant, loaded with the rewrite's batch; installed in the step once nothing can throw.
struct Variant {
  GeneratedKernel kernel;
  LoadedKernel loaded;
};

// "a, b and 3 more": the steps a conversion is for.
std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  const std::size_t shown = std::min<std::size_t>(names.size(), 3);
  for (std::size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}

// What keeping values channels-last decided for a plan.
struct Planned {
  std::vector<std::size_t> kept;  // indices in the tuned plan of the steps the layout plan sees
  std::vector<LayoutStep> view;
  ChannelsLastPlan layout;
  std::vector<std::pair<std::size_t, double>> nhwc;  // (kept step, ms saved): convolutions made NHWC by reweighing
  std::size_t convs = 0;  // convolutions run NHWC, those made so included
};

const std::string kHead = "values kept channels-last across steps: ";

// The convolution whose own conversion `c` is, in the plan as planned (a convolution tuning kept NCHW may run
// NHWC in it; its step changes only when the plan is applied); null for a value an elementwise step wrote NHWC.
const Step* conversion_owner(const CompiledPlan& ps, const Planned& pl, const LayoutConversion& c) {
  for (std::size_t i = 0; i < pl.view.size(); ++i) {
    const LayoutStep& r = pl.view[i];
    if (r.role == LayoutStep::Role::nhwc_conv && (c.to_nhwc ? r.conv_x == c.value : r.outputs.front() == c.value)) {
      return &ps.steps[pl.kept[i]];
    }
  }
  return nullptr;
}

// A tiled transpose generated for a value an elementwise step wrote NHWC, in its default layout (loaded with the
// rewrite's batch: load_rewrite_kernels).
void generate_conversion(CompiledProgram& im, const LayoutConversion& c, const Step& neighbour, Step& s) {
  const Graph& g = im.graph;
  const ValueId v = c.value;
  if (c.to_nhwc) throw std::logic_error(g.value_name(v) + " is read NHWC by no convolution");
  const Shape& shape = g.value_type(v).shape;
  if (shape.size() != 4) throw std::logic_error(g.value_name(v) + " is kept NHWC but is not [N, C, H, W]");
  // Named after the group of the step it serves: "fx_g_relu_y_to_nchw".
  const std::string name = "fx_" + c_identifier(neighbour.group) + "_" + c_identifier(g.value_name(v)) + "_to_nchw";
  GeneratedKernel k = generate_layout_transpose(g.value_type(v).dtype, shape[0], shape[2] * shape[3], shape[1], name);
  k.alternatives.clear();
  s.layout_choice = k.layout + ": the default layout (not timed)";
  s.kernel = std::move(k);
}

// The value whose buffer v is in the plan: v, or what a view (or a chain of views) reads (MemoryPlan::storage).
ValueId view_storage(const CompiledPlan& ps, ValueId v) {
  for (auto it = ps.views.find(v); it != ps.views.end(); it = ps.views.find(v)) v = it->second;
  return v;
}

// Which steps a conversion is for: those reading the value in the layout it converts to, and views of it.
std::vector<std::string> conversion_readers(const Graph& g, const CompiledPlan& ps, const Planned& pl,
                                            const LayoutConversion& c) {
  std::vector<std::string> readers;
  for (std::size_t i = 0; i < pl.view.size(); ++i) {
    const LayoutStep& r = pl.view[i];
    if (std::find(r.inputs.begin(), r.inputs.end(), c.value) == r.inputs.end()) continue;
    if (reads_nhwc(g, r, pl.layout.channels_last[i], c.value) == c.to_nhwc) readers.push_back(ps.steps[pl.kept[i]].kernel.name);
  }
  if (!c.to_nhwc && g.is_output(c.value)) readers.push_back("the graph output");
  for (const auto& [view, source] : ps.views) {
    if (!c.to_nhwc && view_storage(ps, view) == c.value) readers.push_back("the view " + g.value_name(view));
  }
  return readers;
}

// The step that converts `c.value`, reported in the group of `neighbour` (the step that wrote the value, for a
// conversion back; the first reader, for one to NHWC). A channels-last convolution's own conversion (its x's to
// NHWC, its y's back) is launched in the layout tuning chose for it; a value an elementwise step wrote NHWC
// gets a tiled transpose generated for it, in its default layout.
Step conversion_step(CompiledProgram& im, PlanId p, const Planned& pl, const LayoutConversion& c, const Step& neighbour) {
  const Graph& g = im.graph;
  const CompiledPlan& ps = im.plan(p);
  const ValueId v = c.value;
  Step s;
  s.group = neighbour.group;
  s.group_predicted_ms = neighbour.group_predicted_ms;
  s.group_predicted_bytes = neighbour.group_predicted_bytes;
  ConversionLaunch conversion{c, {}, nullptr, nullptr};
  if (const Step* owner = conversion_owner(ps, pl, c)) {
    const CallPart part = c.to_nhwc ? CallPart::to_nhwc : CallPart::to_nchw;
    owner->call()->describe_conversion(part, s);
    conversion.owner = owner->library()->call;
    conversion.function = conversion.owner->conversion_function(part);
  } else {
    generate_conversion(im, c, neighbour, s);
  }
  s.kernel.nodes = neighbour.kernel.nodes;
  s.kernel.inputs = c.to_nhwc ? std::vector<ValueId>{v} : std::vector<ValueId>{};
  s.kernel.outputs = c.to_nhwc ? std::vector<ValueId>{} : std::vector<ValueId>{v};
  s.kernel.bytes_moved = 2 * g.value_type(v).bytes();
  s.layout_choice = g.value_name(v) + (c.to_nhwc ? " converted NCHW -> NHWC" : " converted NHWC -> NCHW") + " for " +
                    name_list(conversion_readers(g, ps, pl, c)) + "; " + s.layout_choice;
  s.action = std::move(conversion);
  return s;
}

// The conversion steps in launch order; the generated ones are loaded with the rewrite's batch.
std::vector<Step> make_conversions(CompiledProgram& im, PlanId p, const Planned& pl) {
  std::vector<Step> out;
  for (const LayoutConversion& c : pl.layout.conversions) {
    const std::size_t neighbour = c.to_nhwc ? c.position : c.position - 1;
    out.push_back(conversion_step(im, p, pl, c, im.plan(p).steps[pl.kept[neighbour]]));
  }
  return out;
}

std::string plural(std::size_t n, const std::string& word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

// Convolutions tuning kept NCHW (LibraryLaunch::nchw_choice) that are not made NHWC here drop their NHWC way when the
// pass ends, whichever way it ends.
struct DropNchwChoices {
  CompiledPlan& ps;
  ~DropNchwChoices() {
    for (Step& st : ps.steps) {
      LibraryLaunch* lib = st.library();
      if (!lib || !lib->nchw_choice) continue;
      lib->call->drop_nhwc();
      lib->nchw_choice.reset();
    }
  }
};

// What keeping values channels-last did to a plan, for its notes: the convolutions run NHWC, the kernels run
// on NHWC data, and the conversions left against those of converting around each convolution.
std::string kept_nhwc_note(std::size_t convs, const std::vector<std::string>& stepped,
                           const std::vector<std::string>& pooled, const std::vector<std::string>& reweighed,
                           const ChannelsLastPlan& layout, std::size_t around) {
  std::string note = plural(convs, "convolution") + " run NHWC and their values stay NHWC between them";
  if (!stepped.empty()) {
    note += std::string(pooled.empty() ? " and" : ",") + " through " + plural(stepped.size(), "elementwise kernel") +
            " run on NHWC data (" + name_list(stepped) + ")";
  }
  if (!pooled.empty()) {
    note += " and through " + plural(pooled.size(), "pooling kernel") + " run channels-last (" + name_list(pooled) + ")";
  }
  if (!reweighed.empty()) {
    note += " (" + std::to_string(reweighed.size()) + " of the convolutions, " + name_list(reweighed) +
            ", tuning kept NCHW with x and y converted around it; with its values kept NHWC it runs NHWC)";
  }
  note += ", so the plan converts " + plural(layout.conversions.size(), "value") + " (" +
          format_bytes(static_cast<double>(layout.bytes)) + " moved) where converting around each convolution took " +
          std::to_string(around) + " (" + format_bytes(static_cast<double>(layout.bytes_around)) + "); --no-keep-nhwc does that";
  return note;
}

// The plan's steps as the layout rules see them (tuning's own conversions left out), with the convolutions
// tuning kept NCHW weighed again against the plan with values kept NHWC (reweigh_nchw_convolutions).
Planned plan_values(const Graph& g, const CompiledPlan& ps) {
  Planned pl;
  std::vector<NchwConvolution> nchw;
  for (std::size_t s = 0; s < ps.steps.size(); ++s) {
    const Step& st = ps.steps[s];
    if (is_tuning_conversion(st)) continue;
    if (const LibraryLaunch* lib = st.library(); lib && lib->nchw_choice) {
      const LibraryCall& lc = lib->call->call();
      nchw.push_back({pl.view.size(), lc.x, lib->nchw_choice->nchw_ms, lib->nchw_choice->nhwc_alone_ms,
                      lib->nchw_choice->nhwc_converted_ms,
                      2 * (g.value_type(lc.x).bytes() + g.value_type(lc.outputs.front()).bytes())});
    }
    pl.kept.push_back(s);
    pl.view.push_back(view_of(g, st));
    pl.convs += is_nhwc_conv(st) ? 1 : 0;
  }
  if (pl.convs == 0) return pl;
  std::vector<ValueId> view_sources;  // read NCHW by views, which are no steps (channels_last_plan.h)
  for (const auto& [view, source] : ps.views) view_sources.push_back(view_storage(ps, view));
  Reweighed rw = reweigh_nchw_convolutions(g, pl.view, nchw, view_sources);
  pl.view = std::move(rw.steps);
  pl.layout = std::move(rw.plan);
  pl.nhwc = std::move(rw.nhwc);
  pl.convs += pl.nhwc.size();
  return pl;
}

// How many conversions converting around each convolution run NHWC launches: x's and y's, y's alone for a
// space-to-depth form (its x's rearrangement stays either way).
std::size_t conversions_around(const Planned& pl) {
  std::size_t n = 0;
  for (const LayoutStep& v : pl.view) {
    if (v.role == LayoutStep::Role::nhwc_conv) n += v.conv_x >= 0 ? 2 : 1;
  }
  return n;
}

// Why the plan stays as tuning made it: nullopt to go on, "" with nothing to say, else its note.
std::optional<std::string> why_not(const Graph& g, const Planned& pl) {
  const std::int64_t planned = pl.layout.bytes, around = pl.layout.bytes_around;
  // No convolution runs NHWC; or one between NCHW neighbours converts its own x and y either way.
  if (pl.convs == 0 || (planned == around && pl.layout.conversions.size() == conversions_around(pl))) return "";
  if (!pl.layout.gains()) {
    return kHead + "no: it would convert " + format_bytes(static_cast<double>(planned)) + ", no less than the " +
           format_bytes(static_cast<double>(around)) + " of converting around each convolution";
  }
  // The NHWC buffers are allocated after the run's memory check: they must fit beside everything else.
  std::int64_t needed = 0;
  for (ValueId v : pl.layout.nhwc_values) needed += g.value_type(v).bytes();
  std::size_t free_b = 0, total_b = 0;
  FX_CUDA_CALL(cudaMemGetInfo(&free_b, &total_b));
  if (static_cast<std::size_t>(needed) + kMemoryHeadroomBytes > free_b) {
    return kHead + "no: its NHWC copies of " + plural(pl.layout.nhwc_values.size(), "value") + " need " +
           format_bytes(static_cast<double>(needed)) + " and " + format_bytes(static_cast<double>(free_b)) + " is free";
  }
  return std::nullopt;
}

// What the rewrite of a plan needs, all of it built before the plan changes (generating, loading, allocating
// and the texts can throw; the rewrite itself only moves).
struct Rewrite {
  std::vector<Step> conversions;                                // in launch order (make_conversions)
  std::map<ValueId, contraction_detail::DeviceMemory> buffers;  // the NHWC buffers
  std::vector<std::string> choices;                             // per kept step: its new layout_choice, or ""
  std::vector<Variant> variants;  // for the nhwc_variant steps run channels-last, in step order
  std::string note;
};

// The kernels run on NHWC data: a layout-free one as it is, one with a channels-last variant as that variant.
void prepare_channels_last_steps(CompiledProgram& im, PlanId p, const Planned& pl, Rewrite& rw,
                                 std::vector<std::string>& stepped, std::vector<std::string>& pooled) {
  const CompiledPlan& ps = im.plan(p);
  for (std::size_t i = 0; i < pl.kept.size(); ++i) {
    if (!pl.layout.channels_last[i]) continue;
    const Step& st = ps.steps[pl.kept[i]];
    if (pl.view[i].role == LayoutStep::Role::nhwc_variant) {
      Variant& v = rw.variants.emplace_back();
      v.kernel = generate_channels_last_variant(im.graph, st.kernel);
      rw.choices[i] = v.kernel.layout + ": its channels-last variant, on the values kept NHWC";
      pooled.push_back(st.kernel.name);
    } else {
      rw.choices[i] = (st.layout_choice.empty() ? st.kernel.layout : st.layout_choice) +
                      "; on channels-last (NHWC) data: its values all have one shape, so the layout changes nothing";
      stepped.push_back(st.kernel.name);
    }
  }
}

// The convolutions tuning kept NCHW that run NHWC here, with their conversions (where the plan has any) in
// their fastest layout.
void prepare_reweighed(CompiledPlan& ps, const Planned& pl, Rewrite& rw, std::vector<std::string>& reweighed) {
  for (const auto& [i, saved] : pl.nhwc) {
    const Step& st = ps.steps[pl.kept[i]];
    const LibraryLaunch::NchwChoice& t = *st.library()->nchw_choice;
    st.library()->call->install_conversion_layout(t.conversion_layout);
    const double conversions_ms = saved - (t.nchw_ms - t.nhwc_alone_ms);  // > 0: the plan converts less
    rw.choices[i] = "NHWC, its values kept NHWC around it: the NHWC call alone " + ms_text(t.nhwc_alone_ms) +
                    " against NCHW " + ms_text(t.nchw_ms) + ", the plan's conversions with it NHWC about " +
                    ms_text(std::abs(conversions_ms)) + (conversions_ms >= 0 ? " less" : " more") + ", " +
                    ms_text(saved) + " saved in all (tuning, x and y converted around it: " + st.layout_choice + ")";
    reweighed.push_back(st.kernel.name);
  }
}

// The generated conversions and the channels-last variants, compiled at once; nothing stays loaded if one fails
// (the rewrite, dropped, unloads them).
void load_rewrite_kernels(CompiledProgram& im, Rewrite& rw) {
  std::vector<KernelLoad> batch;
  std::vector<ConversionLaunch*> generated;
  for (Step& s : rw.conversions) {
    auto* conversion = std::get_if<ConversionLaunch>(&s.action);
    if (!conversion || conversion->owner) continue;  // a convolution's own conversion is loaded with it
    batch.push_back({{s.kernel.source, s.kernel.name}, &conversion->loaded});
    generated.push_back(conversion);
  }
  for (Variant& v : rw.variants) batch.push_back({{v.kernel.source, v.kernel.name}, &v.loaded});
  im.load_all(batch);
  for (ConversionLaunch* c : generated) c->function = c->loaded.function();
}

Rewrite prepare_rewrite(CompiledProgram& im, PlanId p, const Planned& pl) {
  const Graph& g = im.graph;
  Rewrite rw;
  rw.choices.resize(pl.kept.size());
  std::vector<std::string> stepped, pooled, reweighed;
  prepare_reweighed(im.plan(p), pl, rw, reweighed);  // before the conversions: they take its installed layout
  rw.conversions = make_conversions(im, p, pl);
  for (ValueId v : pl.layout.nhwc_values) {
    rw.buffers.emplace(v, contraction_detail::DeviceMemory(static_cast<std::size_t>(g.value_type(v).bytes())));
  }
  prepare_channels_last_steps(im, p, pl, rw, stepped, pooled);
  load_rewrite_kernels(im, rw);
  rw.note = kHead + kept_nhwc_note(pl.convs, stepped, pooled, reweighed, pl.layout, conversions_around(pl));
  return rw;
}

// The rewrite: moves only, nothing throws. Steps in order with the conversions between them; the steps run on
// NHWC data marked (and a variant's kernel installed); the convolutions made NHWC by reweighing switched; the NHWC
// buffers given to the memory plan.
void apply_rewrite(CompiledProgram& im, PlanId p, const Planned& pl, Rewrite rw) {
  CompiledPlan& ps = im.plan(p);
  std::vector<Step> steps;
  steps.reserve(pl.kept.size() + rw.conversions.size());
  ps.notes.reserve(ps.notes.size() + 1);
  std::size_t next = 0, next_variant = 0;
  auto emit_conversions_before = [&](std::size_t position) {
    for (; next < rw.conversions.size() && pl.layout.conversions[next].position == position; ++next) {
      steps.push_back(std::move(rw.conversions[next]));
    }
  };
  for (std::size_t i = 0; i < pl.kept.size(); ++i) {
    emit_conversions_before(i);
    Step& st = ps.steps[pl.kept[i]];
    if (pl.view[i].role == LayoutStep::Role::nhwc_conv && !is_nhwc_conv(st)) {  // made NHWC by reweighing
      st.library()->part = CallPart::conv_nhwc;
      st.layout_choice = std::move(rw.choices[i]);
      st.library()->nchw_choice.reset();
    }
    if (pl.layout.channels_last[i]) {
      GeneratedLaunch& generated = *st.generated();  // layout_free and nhwc_variant steps are generated
      generated.channels_last = true;
      st.layout_choice = std::move(rw.choices[i]);
      if (pl.view[i].role == LayoutStep::Role::nhwc_variant) {
        Variant& v = rw.variants[next_variant++];
        st.kernel = std::move(v.kernel);
        generated.loaded = std::move(v.loaded);  // the NCHW kernel, not launched again, is unloaded
      }
    }
    steps.push_back(std::move(st));
  }
  emit_conversions_before(pl.kept.size());
  ps.steps = std::move(steps);
  im.memory.set_nhwc_buffers(p, std::move(rw.buffers));
  ps.channels_last_planned = true;
  for (Step& st : ps.steps) {
    if (is_nhwc_conv(st)) st.call()->use_plan_nhwc_buffers();
  }
  // The per-convolution notes of tuning ("runs channels-last, as 3 launches") no longer hold.
  std::erase_if(ps.notes, [](const std::string& n) { return n.find(" runs channels-last, as 3 launches: ") != std::string::npos; });
  ps.notes.push_back(std::move(rw.note));
}

// One plan: decided (plan_values, why_not), then prepared and applied. A plan already done is not done again.
void keep_plan_channels_last(CompiledProgram& im, PlanId p) {
  CompiledPlan& ps = im.plan(p);
  if (ps.channels_last_planned) return;
  const DropNchwChoices drop{ps};
  const Planned pl = plan_values(im.graph, ps);
  if (const auto note = why_not(im.graph, pl)) {
    if (!note->empty()) ps.notes.push_back(*note);
    return;
  }
  apply_rewrite(im, p, pl, prepare_rewrite(im, p, pl));
}

}  // namespace

void keep_channels_last(CompiledProgram& im) {
  for (PlanId p : kPlanIds) keep_plan_channels_last(im, p);
}

}  // namespace fx::gpu
