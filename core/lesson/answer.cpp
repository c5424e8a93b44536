#include "core/lesson/answer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "core/fusion/engine.h"
#include "core/report/session_report.h"
#include "core/report/xml_text.h"

namespace fx {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kCloseRatio = 1.10;  // "spot on": within 10%, the run report's own tolerance for bytes

std::string number_text(double v, Quantity q) {
  char buffer[64];
  if (q == Quantity::kernel_count) std::snprintf(buffer, sizeof buffer, "%.0f kernels", v);
  else if (q == Quantity::speedup) std::snprintf(buffer, sizeof buffer, "%.2fx", v);
  else std::snprintf(buffer, sizeof buffer, "%.4g MiB", v);
  return buffer;
}

// The two plans every answer is computed from.
struct Plans {
  FusionEngine engine;
  Plan unfused, fused;
  Plans(const Graph& g, const DeviceDescription& d) : engine(g, d) {
    unfused = engine.plan();
    engine.auto_fuse();
    fused = engine.plan();
  }
};

using Grouping = std::set<std::set<std::string>>;

Grouping grouping_of(const Graph& g, const Plan& plan) {
  Grouping out;
  for (const Group& grp : plan.groups()) {
    if (!grp.launched()) continue;  // no kernel in a run report either
    std::set<std::string> names;
    for (NodeId n : grp.nodes) names.insert(g.node(n).name);
    out.insert(names);
  }
  return out;
}

Grouping grouping_of(const PlanReport& plan) {
  std::map<std::string, std::set<std::string>> by_group;
  for (const KernelReport& k : plan.kernels) by_group[k.group].insert(k.nodes.begin(), k.nodes.end());
  Grouping out;
  for (auto& [group, names] : by_group) out.insert(names);
  return out;
}

Expected<std::vector<NodeId>> node_ids(const Graph& g, const std::vector<std::string>& names) {
  std::vector<NodeId> out;
  for (const std::string& name : names) {
    auto n = g.find_node(name);
    if (!n) return Diagnostic{"/nodes", "the graph " + g.name() + " has no node named \"" + name + "\""};
    out.push_back(*n);
  }
  return out;
}

// Bytes moved by the plan's groups that hold any of `nodes` (all groups when none are named).
double plan_bytes(const Plan& plan, const std::vector<NodeId>& nodes) {
  if (nodes.empty()) return static_cast<double>(plan.bytes_moved());
  std::set<int> groups;
  for (NodeId n : nodes) groups.insert(plan.group_of(n));
  double sum = 0;
  for (int i : groups) sum += static_cast<double>(plan.groups()[static_cast<std::size_t>(i)].cost.bytes_moved());
  return sum;
}

// Measured bytes of the kernels that computed any of `names`; nullopt when one of them was not measured.
std::optional<double> measured_bytes(const PlanReport& plan, const std::vector<std::string>& names) {
  if (names.empty()) return plan.measured_bytes();
  double sum = 0;
  bool any = false;
  for (const KernelReport& k : plan.kernels) {
    const bool touches = std::any_of(k.nodes.begin(), k.nodes.end(), [&](const std::string& n) {
      return std::find(names.begin(), names.end(), n) != names.end();
    });
    if (!touches) continue;
    if (!k.measured_bytes()) return std::nullopt;
    sum += *k.measured_bytes();
    any = true;
  }
  return any ? std::optional<double>(sum) : std::nullopt;
}

void reveal_bytes(const LessonStep& s, const std::vector<NodeId>& nodes, const Plans& p, const LessonRun* run,
                  Reveal& out) {
  const bool fused = s.quantity == Quantity::bytes_fused;
  out.model_value = plan_bytes(fused ? p.fused : p.unfused, nodes) / kMiB;
  if (!run) return;
  if (const PlanReport* m = run->report.plan(fused ? "fused" : "unfused"))
    if (auto b = measured_bytes(*m, s.nodes)) out.measured_value = *b / kMiB;
}

void reveal_plans(Quantity q, const Plans& p, const LessonRun* run, Reveal& out) {
  const double before = p.unfused.predicted_time_s(), after = p.fused.predicted_time_s();
  const PlanReport* mu = run ? run->report.plan("unfused") : nullptr;
  const PlanReport* mf = run ? run->report.plan("fused") : nullptr;
  if (q == Quantity::kernel_count) {
    out.model_value = p.fused.kernel_count();
    if (mf) out.measured_value = static_cast<double>(mf->kernels.size());
  } else if (q == Quantity::speedup) {
    out.model_value = before / after;
    if (mu && mf && mf->total_ms > 0) out.measured_value = mu->total_ms / mf->total_ms;
  } else {
    out.model_choice = after < before ? "fused" : "unfused";
    if (mu && mf && mu->total_ms > 0 && mf->total_ms > 0)
      out.measured_choice = mf->total_ms < mu->total_ms ? "fused" : "unfused";
  }
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, "Predicted: unfused %.4g us in %d kernels, auto-fused %.4g us in %d kernels.",
                before * 1e6, p.unfused.kernel_count(), after * 1e6, p.fused.kernel_count());
  out.why = buffer;
}

void reveal_bound(NodeId n, const Graph& g, const Plans& p, Reveal& out) {
  const GroupCost c = p.engine.cost_model().single(g, n);
  out.model_choice = c.compute_bound() ? "compute" : "memory";
  char buffer[320];
  std::snprintf(buffer, sizeof buffer,
                "%s does %.4g FLOPs and moves %.4g MiB: %.3g FLOP per byte. Predicted %.4g us on memory and %.4g us "
                "on arithmetic; the larger one bounds it.",
                g.node(n).name.c_str(), c.flops, static_cast<double>(c.bytes_moved()) / kMiB,
                c.bytes_moved() > 0 ? c.flops / static_cast<double>(c.bytes_moved()) : 0.0, c.memory_time_s * 1e6,
                c.compute_time_s * 1e6);
  out.why = buffer;
}

void reveal_same_kernel(NodeId a, NodeId b, const Plans& p, Reveal& out) {
  out.model_choice = p.fused.group_of(a) == p.fused.group_of(b) ? "yes" : "no";
  const PairExplanation e = p.engine.explain_pair(a, b);
  out.why = std::string(to_string(e.decision.reason)) + ": " + e.decision.message;
}

void fill_texts(Quantity q, const Plans& p, const LessonRun* run, Reveal& out) {
  const std::string device = p.engine.cost_model().device().name;
  out.model_text = "The cost model (" + device + "): " +
                   (out.model_value ? number_text(*out.model_value, q) : out.model_choice) + ".";
  if (run && (out.measured_value || !out.measured_choice.empty()))
    out.measured_text = "Measured on " + run->label() + ": " +
                        (out.measured_value ? number_text(*out.measured_value, q) : out.measured_choice) + ".";
}

// The leading number of an answer, with an optional byte unit for the bytes questions ("1.5 GiB" = 1536 MiB).
std::optional<double> parse_number(const std::string& answer, Quantity q) {
  const char* begin = answer.c_str();
  char* end = nullptr;
  const double v = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(v)) return std::nullopt;
  std::string unit;
  for (const char* c = end; *c; ++c)
    if (!std::isspace(static_cast<unsigned char>(*c))) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  const bool bytes = q == Quantity::bytes_fused || q == Quantity::bytes_unfused;
  if (!bytes) {
    const bool plain = unit.empty() || unit == "x" || unit.rfind("kernel", 0) == 0;
    return plain ? std::optional<double>(v) : std::nullopt;
  }
  static const std::map<std::string, double> kUnits{{"", 1},          {"mib", 1},         {"mb", 1},  {"kib", 1.0 / 1024},
                                                    {"kb", 1.0 / 1024}, {"gib", 1024},      {"gb", 1024}};
  auto it = kUnits.find(unit);
  return it == kUnits.end() ? std::nullopt : std::optional<double>(v * it->second);
}

std::string how_close(double said, double truth, Quantity q, const std::string& who) {
  if (truth <= 0 || said <= 0) return who + " " + number_text(truth, q) + ".";
  const double factor = std::max(said / truth, truth / said);
  char buffer[200];
  if (factor <= kCloseRatio) std::snprintf(buffer, sizeof buffer, "%s %s: spot on (within 10%%).", who.c_str(),
                                           number_text(truth, q).c_str());
  else std::snprintf(buffer, sizeof buffer, "%s %s: you were %s by a factor of %.2g.", who.c_str(),
                     number_text(truth, q).c_str(), said > truth ? "high" : "low", factor);
  return buffer;
}

}  // namespace

std::string LessonRun::label() const {
  const std::string gpu = report.device ? report.device->name : std::string();
  return (gpu.empty() ? std::string("an unnamed GPU") : gpu) + ", measured " + measured_on;
}

std::string lesson_run_mismatch(const RunReport& run, const Graph& graph, const DeviceDescription& device) {
  if (std::string why = run_mismatch(run, graph); !why.empty()) return why;
  const Plans p(graph, device);
  if (!run.completed()) return "the run stopped at a GPU fault: it measured nothing";
  const PlanReport* unfused = &run.unfused;
  const PlanReport* fused = &run.fused;
  // Without a content hash, the unfused plan's predicted bytes stand in for the shapes; with one (run_mismatch
  // checked it) the shapes are known to agree, and the bytes may differ only because the cost model changed
  // (views counted as no traffic since).
  if (run.graph_hash.empty() && unfused->bytes != p.unfused.bytes_moved())
    return "the run report's graph moves other bytes than this one: its shapes differ";
  if (grouping_of(*fused) != grouping_of(graph, p.fused))
    return "the run report measured another fused plan than auto-fuse makes on " + device.name;
  return {};
}

Expected<Reveal> reveal(const LessonStep& step, const Graph& graph, const DeviceDescription& device,
                        const LessonRun* run) {
  if (step.kind != StepKind::predict || !step.quantity) return Diagnostic{"", "only a predict step has an answer"};
  auto nodes = node_ids(graph, step.nodes);
  if (!nodes) return nodes.errors();
  const Plans p(graph, device);
  Reveal out;
  const Quantity q = *step.quantity;
  if (q == Quantity::bytes_unfused || q == Quantity::bytes_fused) reveal_bytes(step, *nodes, p, run, out);
  else if (q == Quantity::bound) reveal_bound(nodes->at(0), graph, p, out);
  else if (q == Quantity::same_kernel) reveal_same_kernel(nodes->at(0), nodes->at(1), p, out);
  else reveal_plans(q, p, run, out);
  fill_texts(q, p, run, out);
  return out;
}

std::vector<std::string> choices(Quantity q) {
  if (q == Quantity::faster_plan) return {"unfused", "fused"};
  if (q == Quantity::bound) return {"memory", "compute"};
  if (q == Quantity::same_kernel) return {"yes", "no"};
  return {};
}

std::string unit_of(Quantity q) {
  if (q == Quantity::kernel_count) return "kernels";
  if (q == Quantity::speedup) return "x";
  if (q == Quantity::bytes_fused || q == Quantity::bytes_unfused) return "MiB";
  return "";
}

Grade grade(const Reveal& r, Quantity q, const std::string& answer) {
  if (is_choice(q)) {
    const bool right = answer == r.model_choice;
    std::string text = (right ? "Right: the model says " : "Not this time: the model says ") + r.model_choice + ".";
    if (!r.measured_choice.empty())
      text += r.measured_choice == answer ? " The measurement agrees with you." : " The measurement says " +
                                                                                   r.measured_choice + ".";
    return {right, text};
  }
  const auto said = parse_number(answer, q);
  if (!said || *said <= 0) return {false, "\"" + answer + "\" is not a positive number in " + unit_of(q) + "."};
  if (!r.model_value) return {false, "This question has no numeric answer."};
  Grade g;
  g.close = std::max(*said / *r.model_value, *r.model_value / *said) <= kCloseRatio;
  g.text = "You said " + number_text(*said, q) + ". " + how_close(*said, *r.model_value, q, "The model says");
  if (r.measured_value) g.text += " " + how_close(*said, *r.measured_value, q, "Measured:");
  return g;
}

std::string describe_run(const LessonRun& run) {
  std::string out = "Measured on " + run.label() + ".";
  char buffer[200];
  for (const PlanReport* p : run.report.plans()) {
    out += "\n" + p->name + ": " + std::to_string(p->kernels.size()) + " kernel(s)";
    out += ", " + format_time_us(p->total_ms * 1000) + " measured";
    out += " (predicted " + format_time_us(p->predicted_ms * 1000) + ")";
    if (auto bytes = p->measured_bytes()) out += ", " + number_text(*bytes / kMiB, Quantity::bytes_fused) + " moved";
    out += ".";
  }
  if (run.report.speedup > 0) {
    std::snprintf(buffer, sizeof buffer, "\nSpeedup of the fused plan: %.2fx.", run.report.speedup);
    out += buffer;
  }
  return out;
}

}  // namespace fx
