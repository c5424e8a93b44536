// fusion-cli codegen: prints the CUDA C++ the executor generates for each group of a plan, optionally
// compiling it with NVRTC. Works without a GPU (NVRTC compiles without a device).
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "app/cli/plan_source.h"
#include "core/fusion/kernel_names.h"

#ifdef FX_HAVE_CUDA
#include "core/graph/graph_io.h"
#include "kernels/codegen/codegen.h"
#include "kernels/common/gpu_error.h"
#include "kernels/executor/executor.h"
#include "kernels/nvrtc/nvrtc_compiler.h"
#endif

namespace fx::cli {
namespace {

const char* kHelp =
    "usage: fusion-cli codegen FILE [--plan PLAN | --auto | --unfused] [--group ID] [--compile] [--arch sm_90]\n"
    "                              [--device NAME|FILE] [--json OUT]\n\n"
    "Prints the generated CUDA C++ of every group of the plan (or of one group: --group g:NODE or its index).\n"
    "The plan: --plan names a fused graph file; --auto runs the fusion engine's auto-fuse (the default for a\n"
    "plain graph file); --unfused prints the one-kernel-per-node plan. --compile also compiles each kernel with\n"
    "NVRTC for --arch (default: the GPU at hand, else sm_90) and prints the CUBIN size or the compile log; no GPU\n"
    "is needed.\n"
    "Groups that run on cuBLASLt/cuDNN/CUB or a built-in kernel (f32 attention), or cannot run (custom), are\n"
    "listed with the reason.\n"
    "--json OUT also writes the kernels as JSON (format fusion-explorer/kernels): for each group its kernels,\n"
    "each with its entry point, the values it reads and writes (its parameters in that order: one device\n"
    "pointer each, inputs then outputs) and every layout the run would time (description, source, grid,\n"
    "block; the first is the default), or the reason the group has none; --json - writes it to stdout and the\n"
    "sources to stderr. bench/python/race.py launches them next to torch.compile's kernels in one process.\n";

#ifdef FX_HAVE_CUDA
// The GPU at hand, as the executor compiles for it; sm_90 on a machine without one.
std::string default_arch() {
  try {
    return gpu::query_device(0).arch();
  } catch (const std::exception&) {  // no driver, no device
    return "sm_90";
  }
}

nlohmann::ordered_json layout_json(const gpu::KernelLayout& l) {
  return {{"description", l.description}, {"grid", l.grid}, {"block", l.block}, {"source", l.source}};
}

int codegen(const std::vector<std::string>& argv, std::ostream& stdout_stream, std::ostream& err) {
  Args args(argv, {"--auto", "--unfused", "--compile"}, {"--plan", "--group", "--arch", "--device", "--json"});
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli codegen: " << (args.ok() ? "name one graph file" : args.error()) << "\n";
    return kBadInput;
  }
  auto device = resolve_device_input(args.value("--device").value_or(DeviceDescription::default_device().name));
  if (!device) {
    err << "fusion-cli codegen: " << format_diagnostics(device.errors());
    return kBadInput;
  }
  auto plans = load_plans({args.positionals()[0], args.value("--plan"), args.has("--auto"), args.has("--unfused")}, *device, err);
  if (!plans) return kBadInput;
  // With --json -, stdout carries the JSON alone; the sources go to stderr.
  std::ostream& out = args.value("--json") == "-" ? err : stdout_stream;
  const Graph& g = plans->engine->graph();
  const auto only = args.value("--group");
  const std::string arch = args.value("--arch").value_or(default_arch());
  gpu::NvrtcCompiler compiler;
  int status = kOk, index = 0, shown = 0;
  out << "// " << g.name() << ": " << plans->fused.groups().size() << " groups from " << plans->how << "\n";
  nlohmann::ordered_json doc = {{"format", "fusion-explorer/kernels"}, {"version", 1}, {"graph", g.name()},
                                {"plan", plans->how}, {"nvrtc_options", compiler.options(arch)},
                                {"groups", nlohmann::ordered_json::array()}};
  auto names = [&](const std::vector<ValueId>& values) {
    nlohmann::ordered_json a = nlohmann::ordered_json::array();
    for (ValueId v : values) a.push_back(g.value_name(v));
    return a;
  };
  for (const Group& group : plans->fused.groups()) {
    const int id = index++;
    if (only && *only != group.id && *only != std::to_string(id)) continue;
    ++shown;
    std::vector<NodeId> nodes = group.nodes;
    nodes.insert(nodes.end(), group.recomputed.begin(), group.recomputed.end());
    out << "\n// ======== group " << id << " " << group.id << " ========\n";
    nlohmann::ordered_json& gj = doc["groups"].emplace_back(
        nlohmann::ordered_json{{"index", id}, {"id", group.id}, {"kernels", nlohmann::ordered_json::array()}});
    if (group.eliminated()) {
      out << "// not launched: every consumer recomputes what it computes\n";
      gj["none"] = "not launched: every consumer recomputes what it computes";
      continue;
    }
    if (group.is_view()) {
      const std::string why = "no kernel: a view, " + g.node(group.nodes.front()).name + " reads the buffer of " +
                              g.value_name(group.view_of) + " as it is";
      out << "// " << why << "\n";
      gj["none"] = why;
      continue;
    }
    if (std::string why = gpu::unsupported_reason(g, nodes); !why.empty()) {
      out << "// no generated kernel: " << why << "\n";
      gj["none"] = "no generated kernel: " + why;
      continue;
    }
    const gpu::GroupCode code = gpu::generate_group(g, nodes, group.io.outputs, generated_kernel_name(plans->fused, id));
    if (!code.note.empty()) {
      out << "// note: " << code.note << "\n";
      gj["note"] = code.note;
    }
    for (const gpu::GeneratedKernel& k : code.kernels) {
      // The default layout first, then the alternatives the run times against it.
      nlohmann::ordered_json layouts = nlohmann::ordered_json::array();
      layouts.push_back(layout_json({k.layout, k.source, k.block, k.grid}));
      for (const gpu::KernelLayout& alt : k.alternatives) layouts.push_back(layout_json(alt));
      gj["kernels"].push_back({{"name", k.name}, {"kind", std::string(gpu::kernel_kind_name(k.kind))},
                               {"inputs", names(k.inputs)}, {"outputs", names(k.outputs)},
                               {"bytes_moved", k.bytes_moved}, {"layouts", std::move(layouts)}});
      out << "// ---- kernel " << k.name << " (" << gpu::kernel_kind_name(k.kind) << "), grid " << k.grid << " x block "
          << k.block << ", " << format_bytes(static_cast<double>(k.bytes_moved)) << " moved ----\n"
          << k.source;
      if (!args.has("--compile")) continue;
      try {
        const gpu::Cubin cubin = compiler.compile(k.source, k.name, arch);
        out << "// compiled for " << arch << ": " << cubin->size() << " bytes of CUBIN\n";
      } catch (const gpu::CompileError& e) {
        out << "// COMPILE ERROR for " << arch << ":\n" << e.log() << "\n";
        status = kFailed;
      }
    }
  }
  if (only && shown == 0) {
    err << "fusion-cli codegen: no group '" << *only << "' in the plan\n";
    return kBadInput;
  }
  if (const auto path = args.value("--json")) {
    if (auto w = write_output(*path, doc.dump(2) + "\n", stdout_stream); !w) {
      err << "fusion-cli codegen: cannot write the kernels: " << format_diagnostics(w.errors(), *path);
      return kFailed;
    }
  }
  return status;
}
#else
int codegen(const std::vector<std::string>&, std::ostream&, std::ostream& err) {
  err << "fusion-cli codegen: built without CUDA support (the generator lives in kernels/)\n";
  return kNoDevice;
}
#endif

const Register reg({"codegen", "print the generated CUDA C++ of a plan's groups (no GPU needed)", kHelp, codegen});

}  // namespace
}  // namespace fx::cli
