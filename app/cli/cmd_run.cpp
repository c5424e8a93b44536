// fusion-cli run: runs the unfused and the fused plan of a graph on the GPU, verifies, times, reports.
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <istream>

#include <nlohmann/json.hpp>

#include "app/cli/cli_io.h"
#include "app/cli/command.h"
#include "app/cli/plan_source.h"
#include "app/cli/remote_dispatch.h"
#include "app/cli/run_fault.h"
#include "app/cli/run_profile.h"
#include "app/cli/stage_clock.h"
#include "core/report/timing_protocol.h"

#ifdef FX_HAVE_CUDA
#include "core/graph/content_hash.h"
#include "kernels/common/gpu_error.h"
#include "kernels/common/sticky_error.h"
#include "kernels/executor/executor.h"
#include "kernels/executor/profile_pass.h"
#include "kernels/executor/report_json.h"
#include "kernels/nvrtc/nvrtc_compiler.h"
#include "kernels/tuning/tuning_cache.h"
#endif

namespace fx::cli {
namespace {

// run's flags and options, named once: a local run reads them, a run on a target (--target) forwards them.
const std::set<std::string> kRunFlags{"--auto", "--cuda-graph", "--cold-l2", "--progress", "--reference",
                                      "--no-reference", "--no-profile", "--no-autotune", "--no-keep-nhwc",
                                      "--timings-on-request", "--retune"};
const std::set<std::string> kRunOptions{"--plan", "--protocol", "--repeat", "--warmup", "--json", "--dump",
                                        "--seed", "--device", "--csv", "--trace", "--layout"};

const char* kHelp =
    "usage: fusion-cli run FILE [--plan PLAN | --auto] [--protocol NAME|FILE] [--repeat N] [--warmup N]\n"
    "                          [--cold-l2] [--cuda-graph] [--json OUT] [--csv OUT] [--trace OUT] [--dump DIR]\n"
    "                          [--progress] [--seed S] [--device NAME|FILE] [--reference | --no-reference]\n"
    "                          [--no-profile] [--no-autotune | --layout K | --retune] [--no-keep-nhwc]\n"
    "                          [--timings-on-request] [--target NAME|URL]\n\n"
    "Runs the unfused plan (one kernel per node) and the fused plan (one kernel per group) on the same seeded\n"
    "inputs, checks that every graph output agrees (relative error; f32 1e-5, f16/bf16 1e-2, looser downstream\n"
    "of TF32 contractions; NaN never passes) and times both with CUDA events in interleaved rounds: a plan's\n"
    "time from runs of the whole plan, each step's from as many runs with an event after every step. Matmul and\n"
    "conv2d run on cuBLASLt/cuDNN. A CUPTI pass then measures each kernel's DRAM bytes (docs/measurement.md).\n"
    "  --plan PLAN     a fused graph file; --auto runs auto-fuse (the default for a plain graph file)\n"
    "  --protocol P    how the plans are timed: interactive (the default: 3 warm-up and 20 timed rounds, the L2\n"
    "                  warm), do_bench (as triton.testing.do_bench: a 256 MB flush before each run, 25 ms of\n"
    "                  warm-up, 100 ms timed, after 1 s of rest), or a JSON file for the rarer knobs: rests,\n"
    "                  buffer placement, clock sampling (schemas/timing-protocol.schema.json, docs/measurement.md)\n"
    "  --repeat N, --warmup N  timed and warm-up rounds; --cold-l2 the 256 MB flush (over the protocol's)\n"
    "  --cuda-graph    also time each plan replayed as a CUDA graph (over 1.15x its graph's time: host-bound)\n"
    "  --no-autotune   each generated kernel in its default layout; by default a kernel's other layouts, a\n"
    "                  convolution's NHWC way, a horizontal GEMM's GEMMs run alone and cuBLASLt's best\n"
    "                  configurations are timed in the plan and the fastest kept; --layout K runs layout K untimed.\n"
    "                  Choices are kept in $XDG_CACHE_HOME/fusion-explorer/tuning and reused on the same GPU and\n"
    "                  software; --retune times them again\n"
    "  --no-keep-nhwc  convert x and y around each NHWC convolution instead of keeping values NHWC between them\n"
    "  --reference     also check both plans against the float64 CPU reference (default: when every tensor is\n"
    "                  under 16M elements); --no-reference never does\n"
    "  --no-profile    skip the CUPTI counter pass (bytes \"not measured\")\n"
    "  --json OUT      the run report (schemas/run-report.schema.json); --csv OUT kernel timings as CSV;\n"
    "                  --trace OUT a Chrome trace (Perfetto); --dump DIR inputs and outputs as .npy files\n"
    "  --progress      one JSON line per step on stdout (the text report goes to stderr)\n"
    "  --seed S        the inputs' seed; --device the cost model's device (default: the preset for this GPU)\n"
    "  --timings-on-request  time both plans again each time stdin says `time` (docs/measurement.md)\n"
    "  --target NAME|URL  run on another machine (a target saved in the GUI, ssh://..., slurm://...;\n"
    "                  docs/remote.md); exit code 5: the target could not be used\n"
    "Exit codes: 0 verified, 1 verification failed or a GPU error, 2 bad input, 3 no CUDA device, 4 a GPU fault\n"
    "(a sticky CUDA error: one line on stderr names the error and the plan step, --json writes \"status\":\n"
    "\"gpu_fault\" with no measurements; docs/reliability.md).\n";

#ifdef FX_HAVE_CUDA
void print_plan(std::ostream& os, const PlanReport& p) {
  os << p.name << " plan: " << p.kernels.size() << " kernels, " << std::fixed << std::setprecision(4) << p.total_ms
     << " ms (median; min " << p.min_ms << ", max " << p.max_ms << ")";
  if (p.kernels.size() > 1) os << ", " << p.stepped_ms << " ms with an event after each step";
  if (p.graph_ms) os << ", CUDA graph " << *p.graph_ms << " ms";
  os << ", predicted " << p.predicted_ms << " ms\n";
  for (const auto& k : p.kernels) {
    const double gbps = k.measured_ms > 0 ? static_cast<double>(k.bytes) / (k.measured_ms * 1e6) : 0;
    os << "  " << std::left << std::setw(36) << k.name << std::right << std::setw(10) << std::setprecision(4)
       << k.measured_ms << " ms " << std::setw(9) << std::setprecision(1) << gbps << " GB/s  "
       << format_bytes(static_cast<double>(k.bytes)) << "  [" << k.kind << "]";
    if (!k.path.empty()) os << "  " << k.path;  // the library path, or a generated kernel's layout
    os << "\n";
  }
  for (const auto& g : p.split_groups) {
    os << "  group " << g.group << " runs as " << g.kernels << " kernels" << (g.why.empty() ? "" : ": " + g.why.front())
       << "\n";
  }
  for (const auto& n : p.notes) os << "  note: " << n << "\n";
}

// --timings-on-request: the next request on `in`, true for `time`; false for `end` or the end of input, and
// after a message on err for anything else (the harness is out of step: no more timings).
bool next_timing_requested(std::istream& in, std::ostream& err) {
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line == "time") return true;
    if (line == "end") return false;
    err << "fusion-cli run: --timings-on-request reads `time` or `end`, not '" << line.substr(0, 80)
        << "'; no more timings\n";
    return false;
  }
  return false;
}

// --protocol (a preset's name or a file), then --repeat, --warmup and --cold-l2 over it; false after a message
// on err.
bool read_timing_protocol(const Args& args, TimingProtocol& protocol, std::ostream& err) {
  if (auto p = args.value("--protocol")) {
    if (auto preset = timing_preset(*p)) {
      protocol = *preset;
    } else {
      auto loaded = load_timing_protocol(*p);
      if (!loaded) {
        err << "fusion-cli run: --protocol takes interactive, do_bench or a timing protocol file; "
            << format_diagnostics(loaded.errors(), *p);
        return false;
      }
      protocol = *loaded;
    }
  }
  try {
    if (auto r = args.value("--repeat")) protocol.repeat = std::stoi(*r);
    if (auto w = args.value("--warmup")) protocol.warmup = std::stoi(*w);
  } catch (const std::exception&) {
    err << "fusion-cli run: --repeat and --warmup take numbers\n";
    return false;
  }
  if (protocol.repeat < 1 || protocol.warmup < 0) {
    err << "fusion-cli run: --repeat takes a count from 1, --warmup from 0\n";
    return false;
  }
  if (args.has("--cold-l2")) protocol.cold_l2 = true;
  name_custom_if_changed(protocol);
  return true;
}

// The run's options from the command line; false after a message on err.
bool read_run_options(const Args& args, gpu::RunOptions& opt, std::ostream& out, std::ostream& err) {
  if (!read_timing_protocol(args, opt.timing, err)) return false;
  try {
    if (auto s = args.value("--seed")) opt.seed = std::stoull(*s);
    if (auto k = args.value("--layout")) opt.force_layout = std::stoi(*k) - 1;
  } catch (const std::exception&) {
    err << "fusion-cli run: --seed and --layout take numbers\n";
    return false;
  }
  if (args.value("--layout") && (opt.force_layout < 0 || args.has("--no-autotune"))) {
    err << "fusion-cli run: --layout takes a layout number from 1, and not with --no-autotune\n";
    return false;
  }
  opt.autotune = !args.has("--no-autotune") && opt.force_layout < 0;
  opt.retune = args.has("--retune");
  opt.tuning_cache_dir = gpu::TuningCache::default_dir().string();
  opt.keep_nhwc = !args.has("--no-keep-nhwc");
  opt.cuda_graph = args.has("--cuda-graph");
  opt.dump_dir = args.value("--dump").value_or("");
  if (args.has("--reference")) opt.reference = gpu::RunOptions::Reference::on;
  if (args.has("--no-reference")) opt.reference = gpu::RunOptions::Reference::off;
  if (args.has("--timings-on-request")) {
    opt.timed = [&out, &err](const gpu::TimingPass& pass) {
      out << gpu::timing_pass_to_json(pass).dump() << std::endl;
      return next_timing_requested(std::cin, err);
    };
  }
  if (args.has("--progress")) {
    opt.progress = [&out](const std::string& step, double fraction, const std::string& message) {
      out << nlohmann::json{{"step", step}, {"progress", fraction}, {"message", message}}.dump() << std::endl;
    };
  }
  return true;
}

// The timing's rounds, tuning and buffers, where the options changed them, and the clocks the timing ran at.
void print_timing(std::ostream& human, const RunReport& rep) {
  const RunTiming& t = rep.timing;
  // A timing asked for in milliseconds: the rounds it came to.
  if (t.round_ms || t.rest_ms) {
    human << "timing: " << t.repeat << " rounds of both plans after " << t.warmup << " warm-up rounds";
    if (t.round_ms) human << " (a round " << std::setprecision(3) << *t.round_ms << " ms, flush included)";
    if (t.rest_ms) {
      char rested[32];
      std::snprintf(rested, sizeof rested, "%g", *t.rest_ms);  // "1000", not 1e+03
      human << "; the GPU rested " << rested << " ms before";
    }
    human << "\n";
  }
  if (rep.tuned_steps + rep.reused_steps > 0) {
    human << "tuning: " << rep.tuned_steps << " choices timed now, " << rep.reused_steps
          << " reused from the tuning cache (" << rep.tuning_cache << ")\n";
  }
  for (const std::string& w : rep.tuning_warnings) human << "warning: " << w << "\n";
  if (t.placement) {
    human << "buffers: placement " << t.placement << ", gaps of " << (t.placement_gap_bytes >> 20)
          << " MiB in all before the inputs and the steps' outputs\n";
  }
  // The clocks the timing ran at (NVML): a compute-bound plan's time holds only at them.
  if (t.gpu_clocks && t.gpu_clocks->samples) {
    human << "GPU while timing: " << t.gpu_clocks->summary << "\n";
    if (t.graph_gpu_clocks && t.graph_gpu_clocks->samples)
      human << "GPU while timing the CUDA graphs: " << t.graph_gpu_clocks->summary << "\n";
  } else if (t.gpu_clocks && !t.gpu_clocks->note.empty()) {
    human << t.gpu_clocks->note << "\n";
  }
}

void print_checks(std::ostream& human, const RunReport& rep) {
  print_plan(human, rep.unfused);
  print_plan(human, rep.fused);
  print_timing(human, rep);
  human << "speedup " << std::setprecision(2) << rep.speedup << "x; verification "
        << (rep.verified ? "passed" : "FAILED") << "\n";
  for (const auto& c : rep.checks) {
    human << "  " << c.name << " (" << c.dtype << "): rel. error " << std::scientific << std::setprecision(2)
          << c.rel_error << " (limit " << c.threshold << ")" << std::defaultfloat
          << (c.nan_count ? ", " + std::to_string(c.nan_count) + " NaN" : "") << (c.passed ? "" : "  FAILED") << "\n";
  }
  if (!rep.reference_note.empty()) human << "reference: " << rep.reference_note << "\n";
  for (const auto& c : rep.reference_checks) {
    human << "  reference, " << c.name << " (" << c.dtype << "): rel. error " << std::scientific << std::setprecision(2)
          << c.rel_error << " (limit " << c.threshold << ")" << std::defaultfloat
          << (c.nan_count ? ", " + std::to_string(c.nan_count) + " NaN" : "") << (c.passed ? "" : "  FAILED") << "\n";
  }
}

struct Measured {
  RunReport report;
  gpu::ProfileMeasurements profile;
};

// Runs and profiles both plans. A sticky CUDA error ends it as GpuFault, wherever it surfaced: inside the
// executor (attributed there) or in the profiler's own synchronisation (attributed to the executor's last
// step). The final device synchronisation makes sure no fault hides behind the report about to be written.
Measured execute(const Graph& g, const LoadedPlans& plans, gpu::RunOptions opt, bool counters) {
  Measured m;
  gpu::ProfilePass profile(opt);  // before the executor, which copies the launch hooks
  std::optional<gpu::Executor> ex;
  try {
    ex.emplace(g, plans.unfused, plans.fused, opt);
    m.report = ex->run();
    m.profile = profile.measure(*ex, m.report, {.counters = counters});
    gpu::synchronize_device_checked();
  } catch (const gpu::GpuFault&) {
    throw;
  } catch (const gpu::GpuError& e) {
    if (!gpu::is_sticky(e)) throw;
    throw gpu::GpuFault(e, ex ? ex->fault_site() : gpu::FaultSite{});
  }
  return m;
}

// The text report, the exports and the JSON of a run that completed.
int report_run(const Args& args, const LoadedPlans& plans, const gpu::DeviceInfo& dev, const Measured& m,
               StageClock& clock, std::ostream& human, std::ostream& err) {
  RunReport rep = m.report;
  clock.enter("report");
  print_checks(human, rep);
  std::string peak_note;
  const DeviceDescription peak = peak_device_for(dev.name, peak_note);
  gpu::ProfileSummary summary = gpu::summarize_profile(rep, m.profile, plans.unfused, plans.fused, peak, dev.l2_bytes);
  if (!peak_note.empty()) summary.notes.push_back(peak_note);
  print_profile(human, summary);
  if (!write_timing_exports(m.profile, clock_points(rep), args.value("--csv"), args.value("--trace"), err)) return kFailed;
  human << "wall time: " << clock.summary() << "\n";
  if (auto file = args.value("--json")) {
    rep.stages_s = clock.seconds();
    gpu::add_profile(rep, summary);
    rep.graph = plans.engine->graph().name();
    // What the GUI checks a report against before painting its numbers on the open graph and plan.
    rep.graph_hash = graph_content_hash(plans.engine->graph());
    rep.plan_hash = plan_content_hash(plans.engine->graph(), plans.fused);
    rep.fusion = nlohmann::json::parse(plans.engine->save_fused_graph())["fusion"];
    rep.plan_source = plans.how;
    const auto j = to_json(rep);
    if (auto w = write_output(*file, j.dump(2) + "\n", std::cout); !w) {
      err << "fusion-cli run: cannot write the report: " << format_diagnostics(w.errors(), *file);
      return kFailed;
    }
  }
  return rep.verified ? kOk : kFailed;
}

int run(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  Args args(argv, kRunFlags, kRunOptions);
  if (!args.ok() || args.positionals().size() != 1) {
    err << "fusion-cli run: " << (args.ok() ? "name one graph file" : args.error()) << "\n";
    return kBadInput;
  }
  // stdout carries JSON lines with --progress and --timings-on-request, and a report written to "-"
  const bool to_stdout = args.value("--json") == "-" || args.value("--csv") == "-" || args.value("--trace") == "-";
  std::ostream& human = args.has("--progress") || args.has("--timings-on-request") || to_stdout ? err : out;
  StageClock clock;
  gpu::RunOptions opt;
  if (!read_run_options(args, opt, out, err)) return kBadInput;
  opt.progress = [&clock, shown = opt.progress](const std::string& step, double fraction, const std::string& message) {
    clock.enter(step);
    if (shown) shown(step, fraction, message);
  };
  gpu::DeviceInfo dev;
  try {
    dev = gpu::query_device(0);
  } catch (const gpu::NoDeviceError& e) {
    err << "fusion-cli run: " << e.what() << "\n";
    return kNoDevice;
  }
  auto device = resolve_device_input(args.value("--device").value_or(default_device_for(dev.name)));
  if (!device) {
    err << "fusion-cli run: " << format_diagnostics(device.errors());
    return kBadInput;
  }
  auto plans = load_plans({args.positionals()[0], args.value("--plan"), args.has("--auto"), false}, *device, err);
  if (!plans) return kBadInput;
  const Graph& g = plans->engine->graph();
  // Kernels, not groups: a view (a reshape alone) is a group that launches nothing (core/analysis/views.h).
  human << g.name() << ": " << g.num_nodes() << " nodes, " << plans->unfused.kernel_count() << " kernels -> "
        << plans->fused.kernel_count() << " kernels (" << plans->how << ") on " << dev.name << "\n";
  try {
    return report_run(args, *plans, dev, execute(g, *plans, opt, !args.has("--no-profile")), clock, human, err);
  } catch (const gpu::GpuFault& f) {
    return end_run_with_fault(f, dev, {args.value("--json"), g.name(), plans->how}, err);
  } catch (const gpu::CompileError& e) {
    err << "fusion-cli run: " << e.what() << "\n--- source ---\n" << e.source() << "\n";
    return kFailed;
  } catch (const std::invalid_argument& e) {
    err << "fusion-cli run: " << e.what() << "\n";
    return kBadInput;
  } catch (const gpu::GpuError& e) {
    err << "fusion-cli run: GPU error: " << e.what() << "\n";
    return kFailed;
  }
}
#else
int run(const std::vector<std::string>& argv, std::ostream&, std::ostream& err) {
  (void)argv;
  err << "fusion-cli run: no CUDA device (this fusion-cli was built without CUDA support)\n";
  return kNoDevice;
}
#endif

int run_here_or_on_target(const std::vector<std::string>& argv, std::ostream& out, std::ostream& err) {
  if (auto rc = run_elsewhere(argv, kRunFlags, kRunOptions, run, out, err)) return *rc;
  return run(argv, out, err);
}

const Register reg({"run", "run the unfused and fused plans on the GPU, verify and time them", kHelp,
                    run_here_or_on_target});

}  // namespace
}  // namespace fx::cli
