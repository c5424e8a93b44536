// fusion-cli report: the session report (core/report/session_report.h) as one self-contained HTML file.
#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "app/cli/plan_source.h"
#include "core/graph/graph_io.h"
#include "core/report/session_report.h"
#ifdef FX_HAVE_GRAPHVIZ
#include "app/graphviz/plan_pictures.h"
#endif

namespace fx::cli {
namespace {

// A completed run: a report of a GPU fault holds no measurements.
std::optional<RunReport> read_run(const std::string& path, std::ostream& err) {
  auto text = read_input(path, LoadLimits{}.max_file_bytes);
  if (!text) {
    err << format_diagnostics(text.errors(), display_name(path));
    return std::nullopt;
  }
  auto run = read_run_report(*text);
  if (run && !run->completed()) run = Diagnostic{"/status", "the run stopped at a GPU fault: the report holds no measurements"};
  if (!run) {
    err << format_diagnostics(run.errors(), display_name(path));
    return std::nullopt;
  }
  return std::move(*run);
}

// --device, else the preset of the GPU the run report measured on (so predictions and measurements agree on
// the device), else the default.
std::optional<DeviceDescription> report_device(const Args& args, const std::optional<RunReport>& run,
                                               std::ostream& err) {
  std::string name = DeviceDescription::default_device().name;
  if (auto d = args.value("--device")) name = *d;
  else if (run && run->device) name = default_device_for(run->device->name);
  auto device = resolve_device_input(name);
  if (!device) {
    err << format_diagnostics(device.errors(), name);
    return std::nullopt;
  }
  return std::move(*device);
}

int report(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {"--auto"}, {"--plan", "--run", "--device", "-o"}, {{"--output", "-o"}});
  if (!args.ok() || args.positionals().size() != 1 || !args.value("-o")) {
    err << "fusion-cli report: " << (args.ok() ? "usage: report GRAPH [--plan P] [--run R] -o OUT.html" : args.error())
        << "\n";
    return kBadInput;
  }
  std::optional<RunReport> run;
  if (auto path = args.value("--run")) {
    run = read_run(*path, err);
    if (!run) return kBadInput;
  }
  auto device = report_device(args, run, err);
  if (!device) return kBadInput;
  auto plans = load_plans({args.positionals()[0], args.value("--plan"), args.has("--auto")}, *device, err);
  if (!plans) return kBadInput;
  if (run) {
    if (std::string why = run_mismatch(*run, plans->engine->graph()); !why.empty()) {
      err << *args.value("--run") << ": error: " << why << "; its numbers are not put in this report\n";
      return kBadInput;
    }
  }
  SessionReportInput input{plans->engine.get(), &plans->unfused, plans->how, {}, {}, {}, run ? &*run : nullptr};
#ifdef FX_HAVE_GRAPHVIZ
  render_plan_pictures(input);
#else
  input.pictures_note = "No pictures: this fusion-cli was built without Graphviz.";
#endif
  auto written = write_output(*args.value("-o"), session_report_html(input), out);
  if (!written) return report_errors(err, *args.value("-o"), format_diagnostics(written.errors(), *args.value("-o")));
  return kOk;
}

Register report_cmd({"report", "one self-contained HTML file: the graph before and after, plan, decisions, measurements",
                     "usage: fusion-cli report GRAPH [--plan P] [--run R] [--auto] [--device NAME] -o OUT.html\n\n"
                     "Writes the session report: the graph before and after fusion as SVG pictures, the plan's groups,\n"
                     "every decision the engine made with its reason, the pairs left apart and why, predicted vs\n"
                     "measured tables when a run report is given, and the plan-time and roofline charts. The file\n"
                     "has no scripts and loads nothing: it can be mailed, printed or attached to a bug report.\n\n"
                     "  --plan P       a fused graph file of GRAPH: report its plan (default: auto-fuse GRAPH,\n"
                     "                 or the fusion section GRAPH carries)\n"
                     "  --auto         auto-fuse on top of the loaded plan\n"
                     "  --run R        a run report of GRAPH (fusion-cli run --json R): measured times and bytes;\n"
                     "                 a report of another graph is refused\n"
                     "  --device NAME  cost-model device (default: the run report's GPU, else H200)\n"
                     "  -o OUT.html    where to write it (- for stdout)\n",
                     report});

}  // namespace
}  // namespace fx::cli
