// Fusion verbs: analyze (candidates and why not), fuse (auto or by id, writes a fused graph file), explain.
#include <algorithm>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "core/cost/device_description.h"
#include "core/fusion/engine.h"
#include "core/fusion/kernel_names.h"
#include "core/graph/graph_io.h"

namespace fx::cli {
namespace {

std::string us(double seconds) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << seconds * 1e6 << " us";
  return out.str();
}

// Loads FILE (a graph, or a fused graph whose plan is restored) for the device named by --device.
std::optional<FusionEngine> open_engine(const Args& args, const std::string& file, EngineOptions options,
                                        std::ostream& err) {
  auto device = resolve_device_input(args.value("--device").value_or(DeviceDescription::default_device().name));
  if (!device) {
    err << format_diagnostics(device.errors(), args.value("--device").value_or(""));
    return std::nullopt;
  }
  auto text = read_input(file, LoadLimits{}.max_file_bytes);
  if (!text) {
    err << format_diagnostics(text.errors(), display_name(file));
    return std::nullopt;
  }
  auto engine = FusionEngine::load_fused_graph(*text, *device, std::move(options));
  if (!engine) {
    err << format_diagnostics(engine.errors(), display_name(file));
    return std::nullopt;
  }
  return std::move(*engine);
}

nlohmann::ordered_json candidate_json(const Graph& g, const Candidate& c) {
  nlohmann::ordered_json j;
  j["id"] = c.id;
  j["kind"] = to_string(c.kind);
  j["strategy"] = to_string(c.strategy);
  j["fuse"] = c.decision.fuse;
  j["reason"] = to_string(c.decision.reason);
  j["message"] = c.decision.message;
  auto nodes = nlohmann::ordered_json::array();
  for (NodeId n : c.nodes) nodes.push_back(g.node(n).name);
  j["nodes"] = nodes;
  j["time_before_us"] = c.time_before_s * 1e6;
  j["time_after_us"] = c.time_after_s * 1e6;
  j["numbers"] = c.decision.numbers;
  return j;
}

// Columns as wide as their longest entry plus two spaces, so long group ids and names never run together.
std::size_t column_width(const std::vector<std::string>& cells, std::size_t minimum) {
  std::size_t w = minimum;
  for (const std::string& c : cells) w = std::max(w, c.size() + 2);
  return w;
}

void print_plan(std::ostream& out, const FusionEngine& e) {
  const Plan& plan = e.plan();
  out << e.graph().name() << " on " << e.cost_model().device().name << ": " << plan.kernel_count() << " kernels, ";
  // Views launch nothing (core/analysis/views.h): they are groups of the plan, not kernels.
  if (const int views = plan.view_count(); views > 0) out << views << (views == 1 ? " view" : " views") << " (no kernel), ";
  out << format_bytes(static_cast<double>(plan.bytes_moved())) << " moved, predicted " << us(plan.predicted_time_s())
      << "\n";
  std::vector<std::string> ids, kinds, kernels, times, names;
  for (std::size_t i = 0; i < plan.groups().size(); ++i) {
    const Group& grp = plan.groups()[i];
    std::string k, n;
    for (FusionKind kind : grp.kinds) k += (k.empty() ? "" : "+") + std::string(to_string(kind));
    for (NodeId node : grp.nodes) n += (n.empty() ? "" : " ") + e.graph().node(node).name;
    for (NodeId node : grp.recomputed) n += " (recomputes " + e.graph().node(node).name + ")";
    ids.push_back(grp.id);
    kinds.push_back(k);
    kernels.push_back(group_kernel_name(e.graph(), plan, static_cast<int>(i)));
    times.push_back(grp.eliminated() ? "eliminated" : grp.is_view() ? "view" : us(grp.cost.time_s));
    names.push_back(n);
  }
  const std::size_t wi = column_width(ids, 22), wk = column_width(kinds, 20), wt = column_width(times, 12);
  const std::size_t wn = column_width(kernels, 16);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    out << "  " << std::left << std::setw(static_cast<int>(wi)) << ids[i] << std::setw(static_cast<int>(wk)) << kinds[i]
        << std::setw(static_cast<int>(wn)) << kernels[i] << std::setw(static_cast<int>(wt)) << times[i] << names[i]
        << "\n";
  }
}

int analyze(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {"--json"}, {"--device"});
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli analyze: " << (args.ok() ? "name one graph file" : args.error()) << "\n";
    return kBadInput;
  }
  auto engine = open_engine(args, args.positionals()[0], {}, err);
  if (!engine) return kBadInput;
  const std::vector<Candidate> candidates = engine->candidates();
  if (args.has("--json")) {
    nlohmann::ordered_json j;
    j["graph"] = engine->graph().name();
    j["device"] = engine->cost_model().device().name;
    j["kernels"] = engine->plan().kernel_count();
    j["predicted_time_us"] = engine->plan().predicted_time_s() * 1e6;
    auto list = nlohmann::ordered_json::array();
    for (const Candidate& c : candidates) list.push_back(candidate_json(engine->graph(), c));
    j["candidates"] = list;
    out << j.dump(2) << "\n";
    return kOk;
  }
  print_plan(out, *engine);
  out << "candidates (" << candidates.size() << "):\n";
  std::vector<std::string> ids, reasons;
  for (const Candidate& c : candidates) {
    ids.push_back(c.id);
    reasons.emplace_back(to_string(c.decision.reason));
  }
  const int wi = static_cast<int>(column_width(ids, 28)), wr = static_cast<int>(column_width(reasons, 26));
  for (const Candidate& c : candidates) {
    out << "  " << (c.decision.fuse ? "fuse  " : "no    ") << std::left << std::setw(wi) << c.id << std::setw(wr)
        << to_string(c.decision.reason) << c.decision.message << "\n";
  }
  return kOk;
}

int fuse(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {"--auto", "--json"},
            {"--device", "--max-size", "--register-budget", "--disable...", "--accept...", "--reject...", "-o"},
            {{"--output", "-o"}});
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli fuse: " << (args.ok() ? "name one graph file" : args.error()) << "\n";
    return kBadInput;
  }
  EngineOptions options;
  try {
    if (auto n = args.value("--max-size")) options.max_fusion_size = std::stoi(*n);
    if (auto n = args.value("--register-budget")) options.register_budget = std::stoi(*n);
  } catch (const std::exception&) {
    err << "fusion-cli fuse: --max-size and --register-budget take a whole number\n";
    return kBadInput;
  }
  for (const std::string& k : args.values("--disable")) {
    auto kind = parse_fusion_kind(k);
    if (!kind || *kind == FusionKind::single) {
      err << "fusion-cli fuse: --disable takes vertical, horizontal, epilogue or attention, not '" << k << "'\n";
      return kBadInput;
    }
    options.disabled_kinds.insert(*kind);
  }
  auto engine = open_engine(args, args.positionals()[0], options, err);
  if (!engine) return kBadInput;
  int status = kOk;
  for (const std::string& id : args.values("--reject")) {
    const FusionDecision d = engine->reject(id);
    if (d.reason != Reason::user_rejected) {
      err << "fusion-cli fuse: cannot reject " << id << ": " << d.message << "\n";
      status = kBadInput;
    }
  }
  for (const std::string& id : args.values("--accept")) {
    const FusionDecision d = engine->accept(id);
    if (!d.fuse) {
      err << "fusion-cli fuse: cannot accept " << id << ": " << to_string(d.reason) << ": " << d.message << "\n";
      status = kBadInput;
    }
  }
  if (args.has("--auto")) engine->auto_fuse();
  const auto path = args.value("-o");
  if (path && is_std_stream(*path) && args.has("--json")) {
    err << "fusion-cli fuse: -o - and --json both write stdout; name a file for one of them\n";
    return kBadInput;
  }
  // With the fused graph on stdout, the plan's summary goes to stderr so that stdout stays one JSON document.
  std::ostream& human = path && is_std_stream(*path) ? err : out;
  if (args.has("--json")) human << engine->decision_log_json();
  else print_plan(human, *engine);
  if (path) {
    auto w = write_output(*path, engine->save_fused_graph(), out);
    if (!w) return report_errors(err, *path, format_diagnostics(w.errors(), *path));
  }
  return status;
}

int explain(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {"--json", "--unfused"}, {"--device"});
  if (!args.ok() || args.positionals().size() != 3) {
    err << "fusion-cli explain: " << (args.ok() ? "usage: explain FILE NODE_A NODE_B" : args.error()) << "\n";
    return kBadInput;
  }
  const std::string& file = args.positionals()[0];
  auto engine = open_engine(args, file, {}, err);
  if (!engine) return kBadInput;
  NodeId nodes[2];
  for (int i = 0; i < 2; ++i) {
    const std::string& name = args.positionals()[static_cast<std::size_t>(i + 1)];
    auto n = engine->graph().find_node(name);
    if (!n) {
      err << file << ": error: no node named '" << name << "'\n";
      return kBadInput;
    }
    nodes[i] = *n;
  }
  // A plain graph is explained against its auto-fused plan: "why are these two still apart?"
  const bool plain = static_cast<int>(engine->plan().groups().size()) == engine->graph().num_nodes();
  if (plain && !args.has("--unfused")) engine->auto_fuse();
  const PairExplanation why = engine->explain_pair(nodes[0], nodes[1]);
  const FusionDecision& d = why.decision;
  if (args.has("--json")) {
    nlohmann::ordered_json j;
    j["a"] = args.positionals()[1];
    j["b"] = args.positionals()[2];
    j["same_kernel"] = engine->plan().group_of(nodes[0]) == engine->plan().group_of(nodes[1]);
    j["fuse"] = d.fuse;
    j["reason"] = to_string(d.reason);
    j["message"] = d.message;
    j["numbers"] = d.numbers;
    std::vector<std::string> path;
    for (NodeId n : why.path) path.push_back(engine->graph().node(n).name);
    j["path"] = path;
    if (why.blocking) {
      j["blocking"] = {engine->graph().node(why.blocking->first).name, engine->graph().node(why.blocking->second).name};
    } else {
      j["blocking"] = nullptr;
    }
    out << j.dump(2) << "\n";
    return kOk;
  }
  out << (d.fuse ? "yes" : "no") << ": " << to_string(d.reason) << "\n  " << d.message << "\n";
  return kOk;
}

const char* kAnalyzeHelp =
    "usage: fusion-cli analyze FILE [--device NAME|FILE] [--json]\n\n"
    "Lists every fusion candidate of the file's plan (unfused for a plain graph): pairs of groups along an\n"
    "edge or sharing an input, each with its verdict, reason code and predicted times. --device takes a\n"
    "preset (H100 SXM, H200, A100 80GB, RTX 4090, L4; default H200) or a device JSON file.\n";
const char* kFuseHelp =
    "usage: fusion-cli fuse FILE --auto [--max-size N] [--register-budget N] [--disable KIND...] [-o OUT]\n"
    "       fusion-cli fuse FILE --accept ID... --reject ID... [-o OUT]\n\n"
    "Auto-fuse greedily merges the candidate that saves the most predicted time (ties by node order)\n"
    "until none is left. --accept/--reject act on candidate ids from `analyze`, in order (an accept\n"
    "renames the ids that involve the merged groups: re-run analyze). -o writes a fused graph file (the\n"
    "graph plus a \"fusion\" section) that `dot --plan`, `explain` and the GUI read. --json prints the\n"
    "decision log instead of the plan.\n";
const char* kExplainHelp =
    "usage: fusion-cli explain FILE NODE_A NODE_B [--device NAME|FILE] [--json] [--unfused]\n\n"
    "Can these two nodes be in one kernel? For a plain graph the question is asked of its auto-fused\n"
    "plan (--unfused: of the unfused plan); for a fused graph file, of its plan. Prints the verdict,\n"
    "the reason code and the arithmetic behind it.\n";

Register analyze_cmd({"analyze", "list fusion candidates with verdicts and reasons", kAnalyzeHelp, analyze});
Register fuse_cmd({"fuse", "fuse a graph (auto or by candidate id) and write a fused graph file", kFuseHelp, fuse});
Register explain_cmd({"explain", "say whether two nodes can share a kernel, and why not", kExplainHelp, explain});

}  // namespace
}  // namespace fx::cli
