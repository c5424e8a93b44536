// fusion-cli model-explorer: a plan's fusion groups as Google Model Explorer's graph JSON, with the measured
// time and bytes of a run report as per-node data (core/export/model_explorer.h).
#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "app/cli/plan_source.h"
#include "core/export/model_explorer.h"
#include "core/graph/graph_io.h"

namespace fx::cli {
namespace {

const char* kHelp =
    "usage: fusion-cli model-explorer FILE [--plan PLAN | --auto] [--report RUN.json] [--device NAME|FILE]\n"
    "                                [-o OUT.json] [--time-data TIME.json] [--bytes-data BYTES.json]\n\n"
    "Writes the plan as a graph for Google Model Explorer (File > open OUT.json there): every node and graph\n"
    "input, with each fused group (two or more nodes) as one collapsible layer named by its group id. A node's\n"
    "attributes give its op, group, fusion kinds and source; each group's last node also carries the cost\n"
    "model's predicted time and bytes and, with --report (a `fusion-cli run --json` report of the same plan),\n"
    "the measured time and DRAM bytes. --time-data and --bytes-data write those numbers as Model Explorer's\n"
    "per-node data (\"Add per-node data\"): measured where the report has them, else predicted.\n"
    "The plan: a fused graph file's own plan; --plan reads it from a fused graph file; --auto (the default for a\n"
    "plain graph) auto-fuses. Without -o the graph goes to stdout; any file may be - (stdin or stdout).\n";

int model_explorer(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {"--auto"}, {"-o", "--plan", "--report", "--device", "--time-data", "--bytes-data"},
            {{"--output", "-o"}});
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli model-explorer: " << (args.ok() ? "name one graph file" : args.error()) << "\n";
    return kBadInput;
  }
  auto device = resolve_device_input(args.value("--device").value_or("h100"));
  if (!device) return report_errors(err, "", format_diagnostics(device.errors(), args.value("--device").value_or("")));
  GroupMeasurements measured;
  if (const auto report = args.value("--report")) {
    auto text = read_input(*report, LoadLimits{}.max_file_bytes);
    if (!text) return report_errors(err, *report, format_diagnostics(text.errors(), display_name(*report)));
    auto run = read_run_report(*text);
    if (!run) return report_errors(err, *report, format_diagnostics(run.errors(), display_name(*report)));
    auto m = measurements_from_run_report(*run);
    if (!m) return report_errors(err, *report, format_diagnostics(m.errors(), display_name(*report)));
    measured = std::move(*m);
  }
  auto plans = load_plans({args.positionals()[0], args.value("--plan"), args.has("--auto"), false}, *device, err);
  if (!plans) return kBadInput;
  const Graph& g = plans->engine->graph();
  for (const auto& [group, m] : measured) {
    bool found = false;
    for (const Group& grp : plans->fused.groups()) found = found || grp.id == group;
    if (!found) {
      err << "fusion-cli model-explorer: the report's group " << group << " is not in the plan (" << plans->how
          << "): was the report written for another plan?\n";
      return kBadInput;
    }
  }
  int to_stdout = args.value("-o").value_or("-") == "-" ? 1 : 0;
  for (const char* option : {"--time-data", "--bytes-data"}) to_stdout += args.value(option) == "-" ? 1 : 0;
  if (to_stdout > 1) {
    err << "fusion-cli model-explorer: only one of -o, --time-data and --bytes-data can be stdout\n";
    return kBadInput;
  }
  const std::pair<const char*, std::string> outputs[] = {
      {"-o", plan_to_model_explorer(g, plans->fused, measured)},
      {"--time-data", model_explorer_node_data(g, plans->fused, measured, NodeDataQuantity::time_us)},
      {"--bytes-data", model_explorer_node_data(g, plans->fused, measured, NodeDataQuantity::bytes)}};
  for (const auto& [option, text] : outputs) {
    const auto path = args.value(option);
    if (!path && option != std::string("-o")) continue;
    const std::string target = path.value_or("-");
    auto w = write_output(target, text, out);
    if (!w) return report_errors(err, target, format_diagnostics(w.errors(), target));
  }
  return kOk;
}

const Register reg({"model-explorer", "write a plan's fusion groups as Google Model Explorer graph JSON", kHelp,
                    model_explorer});

}  // namespace
}  // namespace fx::cli
