// Verbs on one graph file: validate, info, dot.
#include <iomanip>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "core/cost/device_description.h"
#include "core/export/dot.h"
#include "core/fusion/engine.h"
#include "core/fusion/plan_dot.h"
#include "core/graph/graph_io.h"

namespace fx::cli {
namespace {

nlohmann::ordered_json diagnostics_json(const Diagnostics& errors) {
  auto list = nlohmann::ordered_json::array();
  for (const Diagnostic& d : errors) {
    nlohmann::ordered_json e{{"pointer", d.pointer}, {"message", d.message}};
    if (d.line > 0) {
      e["line"] = d.line;
      e["column"] = d.column;
    }
    list.push_back(std::move(e));
  }
  return list;
}

int validate(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {"--quiet", "--json"}, {});
  if (!args.ok() || args.positionals().empty()) {
    err << "fusion-cli validate: " << (args.ok() ? "name at least one graph file" : args.error()) << "\n";
    return kBadInput;
  }
  int status = kOk;
  auto files = nlohmann::ordered_json::array();
  for (const std::string& file : args.positionals()) {
    auto g = load_graph_input(file);
    nlohmann::ordered_json j{{"file", display_name(file)}, {"valid", g.ok()}};
    if (!g) {
      err << format_diagnostics(g.errors(), display_name(file));
      j["errors"] = diagnostics_json(g.errors());
      status = kBadInput;
    } else {
      j["nodes"] = g->num_nodes();
      j["inputs"] = g->inputs().size();
      j["outputs"] = g->outputs().size();
      if (!args.has("--quiet") && !args.has("--json")) {
        out << display_name(file) << ": ok (" << g->num_nodes() << " nodes, " << g->inputs().size() << " inputs, "
            << g->outputs().size() << " outputs)\n";
      }
    }
    files.push_back(std::move(j));
  }
  if (args.has("--json")) out << nlohmann::ordered_json{{"valid", status == kOk}, {"files", files}}.dump(2) << "\n";
  return status;
}

struct Totals {
  // Sums in double: each tensor's bytes fit in int64, but a sum of several may not.
  double input_bytes = 0, weight_bytes = 0, output_bytes = 0, intermediate_bytes = 0;
  double flops = 0;
  std::map<std::string, int> by_class;
  std::map<std::string, int> by_op;
};

Totals totals_of(const Graph& g) {
  Totals t;
  for (const GraphInput& in : g.inputs()) (in.role == Role::activation ? t.input_bytes : t.weight_bytes) += static_cast<double>(in.type.bytes());
  for (ValueId v : g.outputs()) t.output_bytes += static_cast<double>(g.value_type(v).bytes());
  for (NodeId n = 0; n < g.num_nodes(); ++n) {
    const Node& node = g.node(n);
    ++t.by_class[std::string(op_class_name(node.op_class()))];
    ++t.by_op[node.op];
    t.flops += g.flops(n);
    if (!g.is_output(g.value_of(n))) t.intermediate_bytes += static_cast<double>(node.type.bytes());
  }
  return t;
}

// Byte totals as exact integers where a double holds them exactly (below 2^53), else as a double.
nlohmann::ordered_json json_bytes(double bytes) {
  if (bytes < 9007199254740992.0) return static_cast<std::int64_t>(bytes);
  return bytes;
}

int info(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {"--json"}, {});
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli info: " << (args.ok() ? "name one graph file" : args.error()) << "\n";
    return kBadInput;
  }
  const std::string& file = args.positionals()[0];
  auto g = load_graph_input(file);
  if (!g) return report_errors(err, file, format_diagnostics(g.errors(), display_name(file)));
  const Totals t = totals_of(*g);
  if (args.has("--json")) {
    nlohmann::ordered_json j;
    j["name"] = g->name();
    j["description"] = g->description();
    j["nodes"] = g->num_nodes();
    j["inputs"] = g->inputs().size();
    j["outputs"] = g->outputs().size();
    j["tensors"] = g->num_values();
    j["input_bytes"] = json_bytes(t.input_bytes);
    j["weight_bytes"] = json_bytes(t.weight_bytes);
    j["output_bytes"] = json_bytes(t.output_bytes);
    j["intermediate_bytes"] = json_bytes(t.intermediate_bytes);
    j["flops"] = t.flops;
    j["op_classes"] = t.by_class;
    j["ops"] = t.by_op;
    out << j.dump(2) << "\n";
    return kOk;
  }
  out << g->name() << ": " << g->description() << "\n";
  out << "  nodes          " << g->num_nodes() << "\n";
  out << "  tensors        " << g->num_values() << " (" << g->inputs().size() << " graph inputs, "
      << g->outputs().size() << " outputs)\n";
  out << "  inputs         " << format_bytes(t.input_bytes) << " activations, "
      << format_bytes(t.weight_bytes) << " weights and constants\n";
  out << "  outputs        " << format_bytes(t.output_bytes) << "\n";
  out << "  intermediates  " << format_bytes(t.intermediate_bytes)
      << " (what an unfused run writes to memory and reads back)\n";
  std::ostringstream flops;
  flops << std::setprecision(3) << t.flops / 1e9 << " GFLOP";
  out << "  work           " << flops.str() << "\n";
  out << "  op classes    ";
  for (const auto& [c, n] : t.by_class) out << " " << c << " " << n;
  out << "\n";
  return kOk;
}

// The plan to draw: "auto" runs auto-fuse on the graph; otherwise a fused graph file of the same graph.
Expected<Plan> load_plan_for(const Graph& g, const std::string& plan_file) {
  const DeviceDescription device = DeviceDescription::h200();
  if (plan_file == "auto") {
    FusionEngine engine(g, device);
    engine.auto_fuse();
    return engine.plan();
  }
  auto text = read_input(plan_file, LoadLimits{}.max_file_bytes);
  if (!text) return text.errors();
  auto engine = FusionEngine::load_fused_graph(*text, device);
  if (!engine) return engine.errors();
  if (std::string diff = first_difference(engine->graph(), g); !diff.empty()) {
    return Diagnostic{"", "the plan is for another graph (" + diff + ")"};
  }
  return engine->plan();
}

int dot(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {"--no-edge-labels"}, {"-o", "--plan"}, {{"--output", "-o"}});
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli dot: " << (args.ok() ? "name one graph file" : args.error()) << "\n";
    return kBadInput;
  }
  const std::string& file = args.positionals()[0];
  auto g = load_graph_input(file);
  if (!g) return report_errors(err, file, format_diagnostics(g.errors(), display_name(file)));
  DotOptions options;
  options.edge_labels = !args.has("--no-edge-labels");
  if (auto plan_file = args.value("--plan")) {
    auto plan = load_plan_for(*g, *plan_file);
    if (!plan) return report_errors(err, *plan_file, format_diagnostics(plan.errors(), display_name(*plan_file)));
    options.clusters = plan_clusters(*g, *plan);
  }
  const std::string text = to_dot(*g, options);
  auto w = write_output(args.value("-o").value_or("-"), text, out);
  if (!w) return report_errors(err, "", format_diagnostics(w.errors(), args.value("-o").value_or("")));
  return kOk;
}

Register validate_cmd({"validate", "check graph files and list every problem with its JSON pointer",
                       "usage: fusion-cli validate FILE... [--quiet] [--json]\n\n"
                       "Loads each graph file and reports every error as FILE: error: /json/pointer: message\n"
                       "(line and column for JSON syntax errors). Exit code 0 when all are valid, 2 otherwise.\n"
                       "--json prints {\"valid\", \"files\": [{\"file\", \"valid\", \"nodes\"... or \"errors\"}]} on stdout\n"
                       "(the errors still go to stderr as text). FILE - reads stdin.\n",
                       validate});
Register info_cmd({"info", "summarise a graph: nodes, tensors, bytes, op classes",
                   "usage: fusion-cli info FILE [--json]\n\n"
                   "Prints the node and tensor counts, the bytes of graph inputs, weights, outputs and\n"
                   "intermediates, total FLOPs and the op class counts. --json prints the same as JSON.\n",
                   info});
Register dot_cmd({"dot", "write the graph as Graphviz DOT",
                  "usage: fusion-cli dot FILE [-o OUT.dot] [--plan PLAN|auto] [--no-edge-labels]\n\n"
                  "Nodes are coloured by op class (elementwise green, layout violet, reduction orange,\n"
                  "contraction blue, opaque grey); edges carry the tensor size. With --plan, fusion groups\n"
                  "are drawn as clusters coloured by fusion kind (epilogue blue, horizontal orange, vertical\n"
                  "green); PLAN is a fused graph file written by `fuse -o`, or `auto` for the auto-fused plan.\n",
                  dot});

}  // namespace
}  // namespace fx::cli
