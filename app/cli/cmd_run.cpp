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

#ifdef FX_HAVE_CUDA
#include "kernels/common/gpu_error.h"
#include "kernels/common/sticky_error.h"
#include "kernels/executor/executor.h"
#include "kernels/executor/profile_pass.h"
#include "kernels/executor/report_json.h"
#include "kernels/nvrtc/nvrtc_compiler.h"
#endif

namespace fx::cli {
namespace {

// run's flags and options, named once: a local run reads them, a run on a target (--target) forwards them.
const std::set<std::string> kRunFlags{"--auto", "--cuda-graph", "--cold-l2", "--progress", "--reference",
                                      "--no-reference", "--no-profile", "--no-autotune", "--no-keep-nhwc",
                                      "--no-clocks", "--timings-on-request"};
const std::set<std::string> kRunOptions{"--plan", "--repeat", "--warmup", "--json", "--dump", "--seed",
                                        "--device", "--csv", "--trace", "--layout", "--warmup-ms", "--repeat-ms",
                                        "--rest-ms", "--tuning-rest-ms", "--placement"};

const char* kHelp =
    "usage: fusion-cli run FILE [--plan PLAN | --auto] [--repeat N] [--warmup N] [--cold-l2] [--cuda-graph]\n"
    "                          [--json OUT] [--progress] [--dump DIR] [--seed S] [--device NAME|FILE]\n"
    "                          [--reference | --no-reference] [--no-profile] [--csv OUT] [--trace OUT]\n"
    "                          [--no-autotune | --layout K] [--no-keep-nhwc] [--no-clocks]\n"
    "                          [--warmup-ms MS] [--repeat-ms MS] [--rest-ms MS] [--tuning-rest-ms MS]\n"
    "                          [--timings-on-request] [--placement S] [--target NAME|URL]\n\n"
    "Runs the unfused plan (one kernel per node) and the fused plan (one kernel per group) on the same seeded\n"
    "inputs, compares every graph output (relative error; f32 1e-5, f16/bf16 1e-2; NaN never passes) and times\n"
    "both with CUDA events (median of --repeat runs, default 20, after --warmup runs, default 3): a plan's time\n"
    "from runs of the whole plan with no event between its steps, each step's from as many runs after those\n"
    "with an event after every step (their total is printed too: the events cost time of their own). Matmul\n"
    "and conv2d run on cuBLASLt/cuDNN; in f32 both plans use TF32 tensor cores (PyTorch's cuDNN default), and\n"
    "f32 outputs downstream of them are checked at 2e-3 x sqrt(TF32 contractions on the longest chain above),\n"
    "at most 1e-2.\n"
    "  --plan PLAN   a fused graph file; --auto runs auto-fuse (the default for a plain graph file)\n"
    "  --cold-l2     overwrite a 256 MB buffer before each timed run, as triton.testing.do_bench does, so the\n"
    "                times compare with PyTorch benchmarks (default: each timed run after an untimed run of\n"
    "                the same plan, the L2 kept warm); the two plans are timed in interleaved rounds either way\n"
    "  --warmup-ms MS, --repeat-ms MS  warm up and time for about MS ms instead of --warmup and --repeat runs,\n"
    "                as triton.testing.do_bench(warmup=25, rep=100) does: five rounds of both plans timed\n"
    "                first give a round's time, then int(MS / round) rounds, at least 1 (a round runs each plan\n"
    "                once); GEMMs at the power limit run at clocks that depend on how long the GPU has been busy.\n"
    "                The tuning's comparisons (below) then run as long too (a kernel's layouts: with --cold-l2):\n"
    "                0.1% between a kernel's layouts is noise after 15 rounds, not after 100 ms\n"
    "  --rest-ms MS  leave the GPU idle MS ms before the timing, before each plan's CUDA-graph replays and\n"
    "                before each GEMM tuning comparison (the PyTorch harness, tests/bench/bench.py, rests as\n"
    "                long before each of its timings); with --repeat-ms a GEMM's finalists and a horizontal\n"
    "                GEMM's ways are compared as long as the plans are timed, in the regime the timing will see\n"
    "  --tuning-rest-ms MS  the least rest before each GEMM tuning comparison, whatever --rest-ms (default 250;\n"
    "                0: none): started hot from the GEMM search, at power-capped clocks, the configurations do\n"
    "                not rank as they run in the plan (qkv_bf16 on an H100 kept a tile 2% slower without it)\n"
    "  --timings-on-request  after the timing, print it as one JSON line on stdout (\"timing\": 0,\n"
    "                \"unfused_ms\", \"fused_ms\", the rounds and the GPU's clocks) and read a line on stdin:\n"
    "                `time` times both plans again the same way (rest, rounds, clocks) and prints the next line;\n"
    "                `end` or the end of input goes on with the run, whose report keeps timing 0. For a\n"
    "                harness that alternates these timings with another program's on the same GPU\n"
    "                (tests/bench/paired.py against torch.compile); the text report goes to stderr\n"
    "  --placement S put the buffers at other addresses: a gap of 0-15 MiB drawn from S before each input and\n"
    "                before each step's outputs (0, the default: back to back). Where buffers lie moves a\n"
    "                memory-bound kernel's time by tenths of a percent; tests/bench/paired.py --placements\n"
    "                draws one for every pair, on PyTorch's side too\n"
    "  --cuda-graph  also time each plan replayed as a CUDA graph (the host's launch time removed; with\n"
    "                --cold-l2 each replay after the flush); a plan over 1.15x its graph's time is noted\n"
    "                host-bound\n"
    "  --no-autotune run each generated kernel in its default layout; by default a kernel with other layouts\n"
    "                over threads (elementwise: 16- or 8-byte accesses, and for large kernels 8-byte with 512\n"
    "                threads per block; tiled transposes: 16-byte accesses with 4 warps, 1 element with 16,\n"
    "                16 bytes with 16; row kernels: the threads per row, half and twice as many) has them\n"
    "                timed first and the fastest kept, a convolution its NCHW call against NHWC (x and y\n"
    "                converted around cuDNN's NHWC call, the conversions in each of their layouts), a\n"
    "                horizontal GEMM its one strided-batched call against its GEMMs run alone, and a cuBLASLt\n"
    "                GEMM the 3 best configurations of its algorithm search again, in the plan; its line\n"
    "                then gives the times. --layout K runs layout K untimed (1: the default; for a\n"
    "                convolution 2: NHWC, 3 and 4: NHWC with the conversions' other layouts; for a\n"
    "                horizontal GEMM 2: its GEMMs alone)\n"
    "  --no-keep-nhwc convert x and y around each convolution run NHWC; by default values stay NHWC between\n"
    "                such convolutions and through elementwise kernels whose values share one shape, and a\n"
    "                value is converted once, for a reader that needs NCHW (pooling, a reduction, an output)\n"
    "  --json OUT    the full report as JSON; --progress prints one JSON line per step on stdout\n"
    "  --dump DIR    DIR/inputs/*.npy, DIR/unfused/*.npy, DIR/fused/*.npy and DIR/manifest.json\n"
    "  --reference   also check both plans against the float64 CPU reference (default: only for graphs with\n"
    "                every tensor under 16M elements); --no-reference never does\n"
    "  --device      the cost model's device (default: the preset matching the GPU, else h100)\n"
    "After the timing runs, a timing pass (CUPTI activity records: every CUDA kernel, library ones included, on\n"
    "its step and group) and a counter pass (CUPTI range profiler, each step alone with a cold L2) measure DRAM\n"
    "bytes read and written per kernel, next to the cost model's bytes (docs/measurement.md).\n"
    "  --no-profile  skip the counter pass (bytes \"not measured\")\n"
    "The GPU's SM clock, power and what held the clocks back (NVML, sampled every 10 ms) are reported for the\n"
    "timing rounds and for each GEMM's tuning: compute-bound GEMMs run at the power limit, slower the longer the\n"
    "GPU has been busy.\n"
    "  --no-clocks   do not sample them\n"
    "  --csv OUT     kernel timings as CSV; --trace OUT as a Chrome trace (Perfetto), kernels named by group\n"
    "  --target NAME|URL  run on another machine: a target saved in the GUI's Run on menu, ssh://[user@]host[:port]\n"
    "                or slurm://[user@]login-host[:port]?partition=P&gpus=N&time=T (docs/remote.md); the graph\n"
    "                and plan are copied there, the progress and the --json/--csv/--trace files come back.\n"
    "                Exit code 5: the target could not be used (ssh failed, no or another fusion-cli there)\n"
    "Exit codes: 0 verified, 1 verification failed or a GPU error, 2 bad input, 3 no CUDA device, 4 a GPU fault.\n"
    "A GPU fault (a kernel hit an illegal address, a trap, an assert...: a sticky CUDA error, after which the\n"
    "process cannot use the GPU) stops the run at once: one line on stderr names the error and the plan step,\n"
    "--json writes {\"status\": \"gpu_fault\", \"fault\": {...}} with no measurements, nothing else is written.\n"
    "The first run of each plan synchronises after every step, so a kernel that faults there is named exactly;\n"
    "later, the step named is the last one launched before the error was seen (\"attribution\").\n"
    "Test only: FX_TEST_FAULT_KERNEL=GROUP|first makes that fused-plan kernel fault (docs/reliability.md).\n";

#ifdef FX_HAVE_CUDA
void print_plan(std::ostream& os, const gpu::PlanReport& p) {
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

// --repeat, --warmup, --warmup-ms, --repeat-ms, --rest-ms, --tuning-rest-ms, --seed, --cold-l2, --cuda-graph, --dump, --reference,
// --progress, --timings-on-request, --no-autotune, --layout, --no-keep-nhwc, --no-clocks and --placement into the executor's options;
// false after a message on err.
bool read_run_options(const Args& args, gpu::RunOptions& opt, std::ostream& out, std::ostream& err) {
  try {
    if (auto r = args.value("--repeat")) opt.repeat = std::stoi(*r);
    if (auto w = args.value("--warmup")) opt.warmup = std::stoi(*w);
    if (auto s = args.value("--seed")) opt.seed = std::stoull(*s);
    if (auto k = args.value("--layout")) opt.force_layout = std::stoi(*k) - 1;
    if (auto w = args.value("--warmup-ms")) opt.warmup_ms = std::stod(*w);
    if (auto r = args.value("--repeat-ms")) opt.repeat_ms = std::stod(*r);
    if (auto r = args.value("--rest-ms")) opt.rest_ms = std::stod(*r);
    if (auto r = args.value("--tuning-rest-ms")) opt.tuning_rest_ms = std::stod(*r);
  } catch (const std::exception&) {
    err << "fusion-cli run: --repeat, --warmup, --seed, --layout, --warmup-ms, --repeat-ms, --rest-ms and "
           "--tuning-rest-ms take numbers\n";
    return false;
  }
  for (const auto& [name, ms] : {std::pair{"--warmup-ms", opt.warmup_ms}, std::pair{"--repeat-ms", opt.repeat_ms},
                                 std::pair{"--rest-ms", opt.rest_ms},
                                 std::pair{"--tuning-rest-ms", opt.tuning_rest_ms}}) {
    if (!(ms >= 0 && ms <= 60'000)) {  // NaN fails too
      err << "fusion-cli run: " << name << " takes milliseconds from 0 to 60000 (not " << ms << ")\n";
      return false;
    }
  }
  if (auto s = args.value("--placement")) {
    // Digits only: std::stoull would take "-1" as 2^64 - 1.
    if (s->empty() || s->size() > 18 || s->find_first_not_of("0123456789") != std::string::npos) {
      err << "fusion-cli run: --placement takes a seed, a whole number from 0 to 999999999999999999 (not '" << *s
          << "')\n";
      return false;
    }
    opt.placement = std::stoull(*s);
  }
  if (opt.repeat < 1 || opt.warmup < 0) {
    err << "fusion-cli run: --repeat takes a count from 1, --warmup from 0\n";
    return false;
  }
  if (args.value("--layout") && (opt.force_layout < 0 || args.has("--no-autotune"))) {
    err << "fusion-cli run: --layout takes a layout number from 1, and not with --no-autotune\n";
    return false;
  }
  opt.autotune = !args.has("--no-autotune") && opt.force_layout < 0;
  opt.keep_nhwc = !args.has("--no-keep-nhwc");
  opt.read_clocks = !args.has("--no-clocks");
  opt.cuda_graph = args.has("--cuda-graph");
  opt.cold_l2 = args.has("--cold-l2");
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

void print_checks(std::ostream& human, const gpu::RunReport& rep) {
  print_plan(human, rep.unfused);
  print_plan(human, rep.fused);
  // A timing asked for in milliseconds: the rounds it came to.
  if (rep.round_ms > 0 || rep.rest_ms > 0) {
    human << "timing: " << rep.repeat << " rounds of both plans after " << rep.warmup << " warm-up rounds";
    if (rep.round_ms > 0) human << " (a round " << std::setprecision(3) << rep.round_ms << " ms, flush included)";
    if (rep.rest_ms > 0) {
      char rested[32];
      std::snprintf(rested, sizeof rested, "%g", rep.rest_ms);  // "1000", not 1e+03
      human << "; the GPU rested " << rested << " ms before";
    }
    human << "\n";
  }
  if (rep.placement) {
    human << "buffers: placement " << rep.placement << ", gaps of " << (rep.placement_gaps >> 20)
          << " MiB in all before the inputs and the steps' outputs\n";
  }
  // The clocks the timing ran at (NVML): a compute-bound plan's time holds only at them.
  if (rep.clocks.samples) {
    human << "GPU while timing: " << gpu::describe_clock_span(rep.clocks) << "\n";
    if (rep.graph_clocks.samples) human << "GPU while timing the CUDA graphs: " << gpu::describe_clock_span(rep.graph_clocks) << "\n";
  } else if (!rep.clocks_note.empty()) {
    human << rep.clocks_note << "\n";
  }
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
  gpu::RunReport report;
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
               std::ostream& human, std::ostream& err) {
  const gpu::RunReport& rep = m.report;
  print_checks(human, rep);
  std::string peak_note;
  const DeviceDescription peak = peak_device_for(dev.name, peak_note);
  gpu::ProfileSummary summary = gpu::summarize_profile(rep, m.profile, plans.unfused, plans.fused, peak, dev.l2_bytes);
  if (!peak_note.empty()) summary.notes.push_back(peak_note);
  print_profile(human, summary);
  if (!write_timing_exports(m.profile, rep.clocks, args.value("--csv"), args.value("--trace"), err)) return kFailed;
  if (auto file = args.value("--json")) {
    auto j = gpu::report_to_json(rep);
    gpu::add_profile_to_json(j, summary);
    j["graph"] = plans.engine->graph().name();
    j["plan_source"] = plans.how;
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
  gpu::RunOptions opt;
  if (!read_run_options(args, opt, out, err)) return kBadInput;
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
  human << g.name() << ": " << plans->unfused.kernel_count() << " nodes -> " << plans->fused.kernel_count()
        << " groups (" << plans->how << ") on " << dev.name << "\n";
  try {
    return report_run(args, *plans, dev, execute(g, *plans, opt, !args.has("--no-profile")), human, err);
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
