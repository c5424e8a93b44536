#include "core/report/session_report.h"

#include <cstdio>
#include <set>
#include <sstream>

#include "core/graph/content_hash.h"
#include "core/report/svg_chart.h"
#include "core/report/xml_text.h"

namespace fx {
namespace {

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 2em auto; max-width: 72em; color: #1a1a1a; line-height: 1.4; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.no td { color: #8a1c1c; } .pictures { display: flex; flex-wrap: wrap; gap: 1.5em; }
figure { margin: 0; overflow: auto; max-width: 100%; } figure svg { max-width: 100%; height: auto; }
.note { color: #555; font-style: italic; }
)";

std::string us_text(double seconds) { return format_time_us(seconds * 1e6); }
std::string bytes_text(double bytes) { return format_bytes(bytes); }

std::string ratio_text(double measured, double predicted) {
  if (predicted <= 0) return "";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2fx", measured / predicted);
  return buffer;
}

std::string node_names(const Graph& g, const Group& group) {
  std::string out;
  for (NodeId n : group.nodes) out += (out.empty() ? "" : ", ") + g.node(n).name;
  for (NodeId n : group.recomputed) out += " (recomputes " + g.node(n).name + ")";
  return out;
}

std::string kinds_text(const Group& group) {
  std::string out;
  for (FusionKind k : group.kinds) out += (out.empty() ? "" : "+") + std::string(to_string(k));
  return out;
}

void header(std::ostringstream& out, const SessionReportInput& in) {
  const FusionEngine& e = *in.engine;
  out << "<h1>Fusion report: " << xml_escape(e.graph().name()) << "</h1>\n";
  if (!e.graph().description().empty()) out << "<p>" << xml_escape(e.graph().description()) << "</p>\n";
  out << "<p>Planned for <b>" << xml_escape(e.cost_model().device().name) << "</b> by the cost model ("
      << xml_escape(e.cost_model().device().source) << "); the plan comes from " << xml_escape(in.plan_how)
      << ". " << e.graph().num_nodes() << " nodes.</p>\n";
}

void summary_row(std::ostringstream& out, const char* name, const Plan& plan) {
  out << "<tr data-plan=\"" << name << "\" data-kernels=\"" << plan.kernel_count() << "\" data-bytes=\""
      << plan.bytes_moved() << "\" data-predicted-us=\"" << exact_number(plan.predicted_time_s() * 1e6) << "\"><td>"
      << name << "</td><td class=\"n\">" << plan.kernel_count() << "</td><td class=\"n\">"
      << bytes_text(static_cast<double>(plan.bytes_moved())) << "</td><td class=\"n\">"
      << us_text(plan.predicted_time_s()) << "</td></tr>\n";
}

void summary(std::ostringstream& out, const SessionReportInput& in) {
  out << "<h2 id=\"summary-title\">Summary (cost model)</h2>\n<table id=\"summary\"><tr><th>plan</th><th>kernels</th>"
      << "<th>bytes moved</th><th>predicted time</th></tr>\n";
  summary_row(out, "unfused", *in.unfused);
  summary_row(out, "fused", in.engine->plan());
  out << "</table>\n";
}

void pictures(std::ostringstream& out, const SessionReportInput& in) {
  out << "<h2>The graph before and after fusion</h2>\n";
  if (in.before_svg.empty() || in.after_svg.empty()) {
    out << "<p class=\"note\">" << xml_escape(in.pictures_note.empty() ? "No pictures." : in.pictures_note)
        << "</p>\n";
    return;
  }
  out << "<p>Boxes are fusion groups (one kernel each): green vertical, orange horizontal, blue epilogue.</p>\n"
      << "<div class=\"pictures\"><figure id=\"before\"><figcaption>Before: every op its own kernel</figcaption>\n"
      << inline_svg(in.before_svg) << "\n</figure>\n<figure id=\"after\"><figcaption>After: the plan</figcaption>\n"
      << inline_svg(in.after_svg) << "\n</figure></div>\n";
}

void plan_table(std::ostringstream& out, const FusionEngine& e) {
  out << "<h2>The plan</h2>\n<table id=\"plan\"><tr><th>group</th><th>kinds</th><th>nodes</th><th>reads</th>"
      << "<th>writes</th><th>FLOPs</th><th>bound by</th><th>predicted</th></tr>\n";
  for (const Group& g : e.plan().groups()) {
    out << "<tr data-group=\"" << xml_escape(g.id) << "\" data-bytes=\"" << g.cost.bytes_moved()
        << "\" data-predicted-us=\"" << exact_number(g.cost.time_s * 1e6) << "\"><td>" << xml_escape(g.id)
        << "</td><td>" << xml_escape(kinds_text(g)) << "</td><td>" << xml_escape(node_names(e.graph(), g))
        << "</td><td class=\"n\">" << bytes_text(static_cast<double>(g.cost.bytes_read)) << "</td><td class=\"n\">"
        << bytes_text(static_cast<double>(g.cost.bytes_written)) << "</td><td class=\"n\">"
        << exact_number(g.cost.flops) << "</td><td>"
        << (!g.launched() ? "not launched" : g.cost.compute_bound() ? "compute" : "memory") << "</td><td class=\"n\">"
        << (g.eliminated() ? std::string("eliminated") : g.is_view() ? std::string("view: no kernel") : us_text(g.cost.time_s))
        << "</td></tr>\n";
  }
  out << "</table>\n";
}

void decision_log(std::ostringstream& out, const FusionEngine& e) {
  out << "<h2>Every decision, with its reason</h2>\n";
  if (e.log().empty()) {
    out << "<p class=\"note\">The decision log is empty: this plan was loaded, not made in this session.</p>\n";
  } else {
    out << "<table id=\"decisions\"><tr><th>step</th><th>action</th><th>by</th><th>candidate</th><th>kind</th>"
        << "<th>reason</th><th>why</th><th>before</th><th>after</th></tr>\n";
    for (const LogEntry& l : e.log()) {
      out << "<tr data-candidate=\"" << xml_escape(l.candidate_id) << "\" data-reason=\"" << to_string(l.reason)
          << "\"" << (l.action == "accepted" ? "" : " class=\"no\"") << "><td class=\"n\">" << l.step << "</td><td>"
          << xml_escape(l.action) << "</td><td>" << xml_escape(l.by) << "</td><td>" << xml_escape(l.candidate_id)
          << "</td><td>" << to_string(l.kind) << " (" << to_string(l.strategy) << ")</td><td>" << to_string(l.reason)
          << "</td><td>" << xml_escape(l.message) << "</td><td class=\"n\">" << format_time_us(l.time_before_us)
          << "</td><td class=\"n\">" << format_time_us(l.time_after_us) << "</td></tr>\n";
    }
    out << "</table>\n";
  }
}

void not_fused(std::ostringstream& out, const FusionEngine& e) {
  out << "<h3>What is left apart, and why</h3>\n";
  const std::vector<Candidate> left = e.candidates();
  if (left.empty()) {
    out << "<p>No pair of kernels in this plan shares an edge or an input: nothing is left to fuse.</p>\n";
    return;
  }
  out << "<table id=\"not-fused\"><tr><th>candidate</th><th>kind</th><th>verdict</th><th>reason</th><th>why</th>"
      << "</tr>\n";
  for (const Candidate& c : left) {
    out << "<tr data-candidate=\"" << xml_escape(c.id) << "\" data-reason=\"" << to_string(c.decision.reason) << "\""
        << (c.decision.fuse ? "" : " class=\"no\"") << "><td>" << xml_escape(c.id) << "</td><td>" << to_string(c.kind)
        << "</td><td>" << (c.decision.fuse ? "could fuse" : "does not fuse") << "</td><td>"
        << to_string(c.decision.reason) << "</td><td>" << xml_escape(c.decision.message) << "</td></tr>\n";
  }
  out << "</table>\n";
}

void optional_cell(std::ostringstream& out, const std::optional<double>& v, std::string (*text)(double)) {
  out << "<td class=\"n\">" << (v ? text(*v) : std::string("not measured")) << "</td>";
}

std::string ms_text(double ms) { return format_time_us(ms * 1000); }

std::string gpu_name(const RunReport& run) {
  return run.device && !run.device->name.empty() ? run.device->name : "an unnamed GPU";
}

void measured_plans(std::ostringstream& out, const RunReport& run) {
  out << "<table id=\"measured\"><tr><th>plan</th><th>kernels</th><th>predicted time</th><th>measured time</th>"
      << "<th>measured / predicted</th><th>predicted bytes</th><th>measured bytes</th></tr>\n";
  for (const PlanReport* p : run.plans()) {
    const std::optional<double> measured_bytes = p->measured_bytes();
    out << "<tr data-plan=\"" << xml_escape(p->name) << "\" data-kernels=\"" << p->kernels.size() << "\"";
    out << " data-measured-ms=\"" << exact_number(p->total_ms) << "\"";
    out << " data-predicted-ms=\"" << exact_number(p->predicted_ms) << "\"";
    if (measured_bytes) out << " data-measured-bytes=\"" << exact_number(*measured_bytes) << "\"";
    out << "><td>" << xml_escape(p->name) << "</td><td class=\"n\">" << p->kernels.size() << "</td>";
    optional_cell(out, p->predicted_ms, ms_text);
    optional_cell(out, p->total_ms, ms_text);
    out << "<td class=\"n\">" << ratio_text(p->total_ms, p->predicted_ms) << "</td>";
    optional_cell(out, static_cast<double>(p->bytes), bytes_text);
    optional_cell(out, measured_bytes, bytes_text);
    out << "</tr>\n";
  }
  out << "</table>\n";
}

// A kernel's measured bytes; where the counter pass measured them in an identical step's window, the cell names
// that step and says why in its title, so it claims no measurement of its own.
void measured_bytes_cell(std::ostringstream& out, const KernelReport& k, const std::string& plan, int step) {
  if (!k.measured_bytes() || !k.measured->shared_window) return optional_cell(out, k.measured_bytes(), bytes_text);
  const SharedCounterWindow& w = *k.measured->shared_window;
  out << "<td class=\"n\" title=\"" << xml_escape(shared_window_text(w, plan, step)) << "\">"
      << bytes_text(*k.measured_bytes())
      << (k.measured->reused_measurement(plan, step) ? " (as " + w.plan + " #" + std::to_string(w.step) + ")" : "")
      << "</td>";
}

void measured_kernels(std::ostringstream& out, const RunReport& run) {
  out << "<table id=\"measured-kernels\"><tr><th>plan</th><th>kernel</th><th>group</th><th>how</th><th>nodes</th>"
      << "<th>predicted</th><th>measured</th><th>predicted bytes</th><th>measured bytes</th></tr>\n";
  for (const PlanReport* p : run.plans()) {
    for (const KernelReport& k : p->kernels) {
      std::string nodes;
      for (const std::string& n : k.nodes) nodes += (nodes.empty() ? "" : ", ") + n;
      out << "<tr data-kernel=\"" << xml_escape(k.name) << "\"";
      out << " data-measured-ms=\"" << exact_number(k.measured_ms) << "\"";
      out << "><td>" << xml_escape(p->name) << "</td><td>" << xml_escape(k.name) << "</td><td>" << xml_escape(k.group)
          << "</td><td>" << xml_escape(k.library) << "</td><td>" << xml_escape(nodes) << "</td>";
      optional_cell(out, k.group_predicted_ms, ms_text);
      optional_cell(out, k.measured_ms, ms_text);
      optional_cell(out, static_cast<double>(k.group_predicted_bytes), bytes_text);
      measured_bytes_cell(out, k, p->name, static_cast<int>(&k - p->kernels.data()));
      out << "</tr>\n";
    }
  }
  out << "</table>\n";
}

void measured(std::ostringstream& out, const SessionReportInput& in) {
  out << "<h2>Predicted vs measured</h2>\n";
  if (!in.run) {
    out << "<p class=\"note\">No run report was given: every number here is the cost model's prediction. "
        << "<code>fusion-cli run GRAPH --json run.json</code> on a GPU measures both plans.</p>\n";
    return;
  }
  const RunReport& run = *in.run;
  out << "<p>Measured on <b>" << xml_escape(gpu_name(run)) << "</b>"
      << (run.plan_source.empty() ? "" : "; its fused plan came from " + xml_escape(run.plan_source)) << ". ";
  if (run.speedup > 0) out << "Speedup of the fused plan: <b>" << ratio_text(run.speedup, 1) << "</b>. ";
  out << (run.verified ? "Its outputs matched the unfused plan's." : "Its outputs did NOT match.");
  out << " The predictions in these tables are the ones the run made for its own GPU.</p>\n";
  measured_plans(out, run);
  measured_kernels(out, run);
}

Roof roof_of(const FusionEngine& e) {
  const DeviceDescription& d = e.cost_model().device();
  bool contraction = false;
  for (const Group& g : e.plan().groups()) contraction = contraction || g.op_class == OpClass::contraction;
  DType dtype = DType::f32;
  if (!e.graph().outputs().empty()) dtype = e.graph().value_type(e.graph().outputs().front()).dtype;
  const double peak = d.peak_flops(dtype, contraction);
  char label[160];
  std::snprintf(label, sizeof label, "%s: %.3g TB/s, %.3g TFLOP/s (%s%s)", d.name.c_str(), d.hbm_bandwidth / 1e12,
                peak / 1e12, std::string(dtype_name(dtype)).c_str(), contraction ? ", tensor cores" : "");
  return {d.hbm_bandwidth, peak, label};
}

// A group's FLOPs (the model counts them; they do not depend on the GPU) over its kernels' measured DRAM bytes and
// time, where the run ran exactly this group (same nodes) and measured both for every kernel of it.
void add_measured_points(const Graph& graph, const Plan& plan, const PlanReport* run, bool fused,
                         std::vector<RooflinePoint>& points) {
  if (!run) return;
  for (const Group& g : plan.groups()) {
    if (!g.launched() || g.cost.flops <= 0) continue;
    std::set<std::string> nodes, ran;
    for (NodeId n : g.nodes) nodes.insert(graph.node(n).name);
    double bytes = 0, ms = 0;
    int kernels = 0;
    bool complete = true;
    for (const KernelReport& k : run->kernels) {
      if (k.group != g.id) continue;
      ++kernels;
      complete = complete && k.measured_bytes() && k.measured_ms > 0;
      if (!complete) break;
      bytes += *k.measured_bytes();
      ms += k.measured_ms;
      ran.insert(k.nodes.begin(), k.nodes.end());
    }
    if (kernels > 0 && complete && ran == nodes && bytes > 0 && ms > 0)
      points.push_back({g.id, g.cost.flops / bytes, g.cost.flops / (ms / 1000), fused, true});
  }
}

void charts(std::ostringstream& out, const SessionReportInput& in) {
  out << "<h2>Charts</h2>\n<h3>Plan times</h3>\n";
  std::vector<TimeBar> bars;
  for (const auto& [name, plan] : {std::pair{"unfused", in.unfused}, std::pair{"fused", &in.engine->plan()}}) {
    TimeBar bar{name, plan->predicted_time_s() * 1e6, std::nullopt};
    // Measured times stand beside the run's own predictions, which may be for another GPU than this plan's.
    if (const PlanReport* m = in.run ? in.run->plan(name) : nullptr)
      bar = {name, m->predicted_ms * 1000, m->total_ms * 1000};
    bars.push_back(bar);
  }
  out << "<figure id=\"times\">" << time_bars_svg(bars) << "</figure>\n<h3>Roofline</h3>\n"
      << "<p>Each group at its predicted speed (circles): hollow the unfused plan's kernels, filled the fused "
         "plan's.";
  if (in.run) out << " Squares: the same groups as measured on " << xml_escape(gpu_name(*in.run)) << ".";
  out << "</p>\n";
  std::vector<RooflinePoint> points;
  for (const auto& [plan, fused] : {std::pair{in.unfused, false}, std::pair{&in.engine->plan(), true}}) {
    for (const Group& g : plan->groups())
      if (g.launched() && g.cost.bytes_moved() > 0 && g.cost.time_s > 0)
        points.push_back({g.id, g.cost.flops / static_cast<double>(g.cost.bytes_moved()), g.cost.flops / g.cost.time_s,
                          fused});
    if (in.run) add_measured_points(in.engine->graph(), *plan, in.run->plan(fused ? "fused" : "unfused"), fused, points);
  }
  out << "<figure id=\"roofline\">" << roofline_svg(roof_of(*in.engine), points) << "</figure>\n";
}

}  // namespace

std::string run_mismatch(const RunReport& run, const Graph& graph) {
  if (run.graph != graph.name())
    return "the run report measured the graph \"" + run.graph + "\", not \"" + graph.name() + "\"";
  if (!run.graph_hash.empty() && run.graph_hash != graph_content_hash(graph))
    return "the run report measured another graph named \"" + run.graph + "\" (content " + run.graph_hash + ")";
  return {};
}

std::string inline_svg(std::string_view svg) {
  const std::size_t start = svg.find("<svg");
  if (start == std::string_view::npos) return {};
  std::string out;
  std::size_t at = start;
  while (at < svg.size()) {
    const std::size_t comment = svg.find("<!--", at);
    if (comment == std::string_view::npos) break;
    out.append(svg.substr(at, comment - at));
    const std::size_t end = svg.find("-->", comment);
    if (end == std::string_view::npos) return out;
    at = end + 3;
  }
  if (at < svg.size()) out.append(svg.substr(at));
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string session_report_html(const SessionReportInput& in) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      << "<title>Fusion report: " << xml_escape(in.engine->graph().name()) << "</title>\n<style>" << kStyle
      << "</style>\n</head>\n<body>\n";
  header(out, in);
  summary(out, in);
  pictures(out, in);
  plan_table(out, *in.engine);
  decision_log(out, *in.engine);
  not_fused(out, *in.engine);
  measured(out, in);
  charts(out, in);
  out << "<p class=\"note\">Written by Fusion Explorer. Predicted times come from its roofline cost model: "
      << "max(bytes / bandwidth, FLOPs / peak) plus a launch overhead per kernel.</p>\n</body>\n</html>\n";
  return out.str();
}

}  // namespace fx
