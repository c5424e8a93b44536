// fusion-cli diff: two plans of one graph (ours vs Inductor's, auto vs hand-edited, two devices' auto plans).
#include <memory>
#include <optional>

#include "app/cli/command.h"
#include "core/cost/device_description.h"
#include "core/fusion/engine.h"
#include "core/fusion/plan_diff.h"
#include "core/graph/graph_io.h"
#include "core/graph/graph_json.h"

namespace fx::cli {
namespace {

// One side as loaded: the plan as data, and our engine on it where every group is legal for us.
struct LoadedSide {
  std::shared_ptr<const Graph> graph;
  std::unique_ptr<FusionEngine> engine;
  PlanSideInput input;
};

std::optional<LoadedSide> load_side(const std::string& file, const DeviceDescription& device, std::ostream& err) {
  auto text = read_text_file(file, LoadLimits{}.max_file_bytes);
  if (!text) {
    err << format_diagnostics(text.errors(), file);
    return std::nullopt;
  }
  auto graph = load_graph(*text);  // reads the graph part of a fused graph file too
  if (!graph) {
    err << format_diagnostics(graph.errors(), file);
    return std::nullopt;
  }
  auto doc = parse_json_text(*text);
  LoadedSide side;
  side.graph = std::make_shared<const Graph>(std::move(*graph));
  side.input.label = file;
  const nlohmann::json fusion = doc->contains("fusion") ? (*doc)["fusion"] : nlohmann::json{{"groups", nlohmann::json::array()}};
  auto plan = read_plan_section(*side.graph, fusion);
  if (!plan) {
    err << format_diagnostics(plan.errors(), file);
    return std::nullopt;
  }
  side.input.file = std::move(*plan);
  auto engine = FusionEngine::load_fused_graph(*text, device);
  if (engine) {
    side.engine = std::make_unique<FusionEngine>(std::move(*engine));
    side.input.engine = side.engine.get();
  } else if (side.input.file.is_ours()) {
    err << format_diagnostics(engine.errors(), file);
    return std::nullopt;
  } else {
    side.input.file.notes.push_back("our engine would not run this plan as it is: " + engine.errors().front().pointer +
                                    ": " + engine.errors().front().message);
  }
  return side;
}

bool same_graph(const Graph& a, const Graph& b) {
  if (a.num_nodes() != b.num_nodes()) return false;
  for (NodeId n = 0; n < a.num_nodes(); ++n) {
    if (a.node(n).name != b.node(n).name || a.node(n).op != b.node(n).op) return false;
  }
  return true;
}

int diff(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, {"--json"}, {"--device"});
  if (!args.ok() || args.positionals().size() != 2) {
    err << "fusion-cli diff: " << (args.ok() ? "name two plan files: A B" : args.error()) << "\n";
    return kBadInput;
  }
  const std::string device_name = args.value("--device").value_or("H200");
  auto device = resolve_device(device_name);
  if (!device) {
    err << format_diagnostics(device.errors(), device_name);
    return kBadInput;
  }
  auto a = load_side(args.positionals()[0], *device, err);
  auto b = a ? load_side(args.positionals()[1], *device, err) : std::nullopt;
  if (!a || !b) return kBadInput;
  if (!same_graph(*a->graph, *b->graph)) {
    err << "fusion-cli diff: " << args.positionals()[0] << " and " << args.positionals()[1]
        << " are plans of different graphs (their nodes differ): compare two plans of one graph\n";
    return kBadInput;
  }
  const CostModel model(*device);
  const PlanDiff d = diff_plans(*a->graph, model, EngineOptions{}, a->input, b->input);
  out << (args.has("--json") ? plan_diff_json(*a->graph, d) : plan_diff_text(*a->graph, d));
  return kOk;
}

Register diff_cmd({"diff", "compare two plans of one graph: groups in both, only in A, only in B, with reasons",
                   "usage: fusion-cli diff A B [--json] [--device NAME]\n\n"
                   "A and B are fused graph files of the same graph (a plain graph file counts as the unfused\n"
                   "plan): our engine's plan, one edited by hand, another device's, or Inductor's plan written by\n"
                   "python -m fusion_explorer.inductor (\"source\": \"inductor\").\n\n"
                   "Lists the groups both plans formed, the groups only A formed and only B formed. For a group\n"
                   "only one side formed it names the other side's groups over the same nodes, and for each pair\n"
                   "of adjacent nodes the other side kept apart, every reason known: the reasons recorded in that\n"
                   "plan file (Inductor's \"cannot fuse\" messages) and our engine's decision for the pair under\n"
                   "that plan. For a group another compiler formed, our engine's legality verdict is shown too.\n"
                   "Predicted time and bytes are our cost model's, for the device --device names (default H200).\n\n"
                   "  --json          the comparison as JSON (a, b, both, only_a, only_b)\n"
                   "  --device NAME   cost-model device preset or device JSON file\n",
                   diff});

}  // namespace
}  // namespace fx::cli
