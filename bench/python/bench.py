#!/usr/bin/env python3
"""Side-by-side benchmark: PyTorch eager, torch.compile (default mode) and Fusion Explorer's unfused and fused
plans on the sample graphs, on one GPU, in one run.

Per sample: median time (triton.testing.do_bench) twice, to show run-to-run spread, and for PyTorch also the
median with its launches queued behind a spin kernel (queued_ms: the GPU's time without the host's); CUDA
kernels per call (torch.profiler); Fusion Explorer's numbers from `fusion-cli run FILE --auto --cold-l2 --no-profile --json OUT`
(also run twice). The two runs are rounds: each times eager, torch.compile and fusion-cli once, in that order.
Both sides are timed the same way: CUDA events around each run, a 256 MB buffer overwritten before each
(do_bench's cache flush; fusion-cli's --cold-l2), the median of the runs; minimum-traffic bandwidth as a
fraction of measured device-to-device copy bandwidth; fused / torch.compile.
Writes bench.json and bench.md to --out (default $OUT, else ./bench-out) and prints the table.

    python3 bench/python/bench.py [--samples relu_mul_add softmax ...] [--cli build/app/fusion-cli]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

# Compiled kernels are cached across runs (a second bench run skips most of the compile time).
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/fx-bench/inductor")
os.environ.setdefault("TRITON_CACHE_DIR", "/tmp/fx-bench/triton")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.testing  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_report  # noqa: E402
import fx_graph  # noqa: E402
import gpu_clocks  # noqa: E402
import fx_torch  # noqa: E402
import queue_plan  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


# How long every timing keeps the GPU busy: do_bench's defaults (warm-up 25 ms, then 100 ms of timed runs), passed
# to do_bench, to queued_ms (runs for 100 ms) and to fusion-cli (--warmup-ms, --repeat-ms: its rounds of both
# plans for 100 ms). Before each, the GPU rests (--rest, default REST_S). The bf16 and TF32 GEMMs run at the
# power limit, where the SM clock depends on how long and how hard the GPU has been busy: counted in runs
# rather than milliseconds, and right after other timings (torch.compile's after eager's), the two sides would
# run at different clocks and the ratio would be partly the clocks'.
DO_BENCH_WARMUP_MS = 25
DO_BENCH_REP_MS = 100
REST_S = 1.0
_REST = {"s": REST_S}


def rest():
    """The GPU idle for --rest seconds: each timing starts from the same rested GPU."""
    torch.cuda.synchronize()
    if _REST["s"] > 0:
        time.sleep(_REST["s"])


def measure_ms(fn, runs):
    out = []
    for _ in range(runs):
        rest()
        out.append(float(triton.testing.do_bench(fn, warmup=DO_BENCH_WARMUP_MS, rep=DO_BENCH_REP_MS,
                                                 return_mode="median")))
    return out


# NVML for the benchmark's device (main() opens it): the clocks of each PyTorch timing, next to fusion-cli's own.
# Sampled every 20 ms, not fusion-cli's 10: the sampling thread takes Python's GIL each time it wakes, and the
# host-bound samples' eager timings are Python's time.
_CLOCKS = {"monitor": None}
CLOCK_PERIOD_S = 0.02


def watched(row_entry, key, measure):
    """measure() under a clock watch; its summary appended to row_entry[key] (None where NVML is not read)."""
    with gpu_clocks.Watch(_CLOCKS["monitor"], CLOCK_PERIOD_S) as w:
        value = measure()
    row_entry.setdefault(key, []).append(w.summary)
    return value


# GPU cycles per second of torch.cuda._sleep, measured once (spin_cycles_per_s).
_SPIN = {}


def spin_cycles_per_s():
    if "rate" not in _SPIN:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1_000_000)  # first launch outside the timing
        start.record()
        torch.cuda._sleep(20_000_000)
        end.record()
        torch.cuda.synchronize()
        _SPIN["rate"] = 20_000_000 / (start.elapsed_time(end) * 1e-3)
    return _SPIN["rate"]


def spin(seconds):
    torch.cuda._sleep(int(spin_cycles_per_s() * seconds))


def queued_ms(fn, kernels=None, rep_ms=DO_BENCH_REP_MS):
    """Median GPU time of fn with its launches queued ahead. A spin kernel (torch.cuda._sleep) holds the stream
    while the host enqueues a stretch of runs, each as do_bench's: the 256 MB flush, the start event, fn, the
    end event; the GPU then runs the stretch back to back and finds fn's kernels queued behind each flush.
    do_bench's events also hold the host's time where it is longer than the flush's: for torch.compile's
    do_bench's one call per measurement varies several-fold between rounds for a host-bound plan such as
    conv_bn_relu (bench/microbench/conv_torch.py). fusion-cli launches from C++ behind its own flush; this is the
    PyTorch side timed the same way.
    One spin per stretch, not per run: spinning before every run rested the GPU for twice the host's time per
    run, and the bf16 GEMMs, which run at the power limit, came out faster than back to back, while fusion-cli
    and do_bench run back to back. Nor are the runs synchronised one by one: with the GPU idle before each
    flush a kernel measures faster than back to back (bench/microbench/protocol_check.py --queue).
    The runs are as many as take rep_ms on the GPU (queue_plan.runs_for), after a rest and a do_bench-long
    warm-up, as do_bench's and fusion-cli's timings."""
    cache = torch.empty(256 * 2**20 // 4, dtype=torch.int, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def one_run():
        cache.zero_()
        start.record()
        fn()
        end.record()

    rest()
    one_run()
    torch.cuda.synchronize()
    host_s = 0.0  # the host's time to enqueue one run, the slowest of three
    for _ in range(3):
        t0 = time.perf_counter()
        one_run()
        host_s = max(host_s, time.perf_counter() - t0)
        torch.cuda.synchronize()
    # The GPU's time per run, flush and events included: five runs queued behind a spin long enough for any host.
    pilot = 5
    spin(2 * pilot * host_s + 50e-6)
    start.record()
    for _ in range(pilot):
        cache.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    gpu_s = start.elapsed_time(end) * 1e-3 / pilot
    reps = queue_plan.runs_for(rep_ms, gpu_s)
    for _ in range(max(1, int(DO_BENCH_WARMUP_MS * 1e-3 / gpu_s))):  # do_bench's warm-up: fn back to back
        fn()
    stretch = queue_plan.stretch(kernels, reps)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if i % stretch == 0:
            torch.cuda.synchronize()  # the stretch before has run: the queue is empty again
            spin(queue_plan.spin_seconds(host_s, gpu_s, min(stretch, reps - i)))
        cache.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return statistics.median(times)


def count_kernels(fn):
    """CUDA kernels launched by one call (memcpy/memset activity is not a kernel and is not counted)."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    count = sum(1 for n in names if not n.startswith(("Memcpy", "Memset", "[memcpy]", "[memset]")))
    return count or None  # every graph launches a kernel: zero means the profiler saw nothing (report n/a)


def copy_bandwidth(traffic=2**31):
    """Bytes per second of a device-to-device copy that moves `traffic` bytes, half read and half written
    (the default: 1 GiB copied), timed as the samples are (do_bench: the 256 MB flush before each run)."""
    src = torch.randn(max(1, traffic // 8), device="cuda")
    dst = torch.empty_like(src)
    ms = triton.testing.do_bench(lambda: dst.copy_(src), return_mode="median")
    return 2 * src.numel() * src.element_size() / (ms * 1e-3)


def torch_as_our_plans():
    """PyTorch set up as every harness times it: no autograd, and f32 matmul and convolution on TF32 tensor
    cores, as our cuBLASLt and cuDNN plans run them (without it an f32 GEMM of torch.compile's takes 5.4 ms where
    ours takes 0.69: mlp_relu_f32 on an H100)."""
    torch.set_grad_enabled(False)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True


def prepare_torch(graph, compile_too=True):
    """The PyTorch versions to time: {"eager"|"compile": {"fn", "kernels"[, "compile_s"]} or {"error"}}.
    torch.compile's first call (the compile) happens here, outside every timing."""
    fn = fx_torch.build_function(graph)
    inputs = fx_torch.make_inputs(graph, "cuda")
    eager = lambda: fn(inputs)  # noqa: E731
    out = {"eager": {"fn": eager, "kernels": count_kernels(eager)}}
    if not compile_too:
        out["compile"] = {"error": "skipped (--no-compile)"}
        return out
    torch._dynamo.reset()  # fresh caches and recompile limits per graph
    compiled_fn = torch.compile(fn, mode="default", dynamic=False)
    start = time.perf_counter()
    compiled_fn(inputs)
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - start
    compiled = lambda: compiled_fn(inputs)  # noqa: E731
    # "call" and "inputs": the compiled function on inputs of the caller's (paired.py --placements).
    out["compile"] = {"fn": compiled, "kernels": count_kernels(compiled), "compile_s": round(compile_s, 2),
                      "call": compiled_fn, "inputs": inputs}
    return out  # the inputs live as long as the lambdas; main() drops them after the sample


def bench_sample(cli, graph, path, runs, compile_too, timeout_s):
    """Eager, torch.compile and both fusion-cli plans, timed in interleaved rounds: round r times each version
    once (a do_bench median and a queued_ms median, or one fusion-cli run), each after a rest and for as long
    (DO_BENCH_WARMUP_MS, DO_BENCH_REP_MS), so that each starts in the same state and a drift of the clocks over the sample's
    seconds (the bf16 GEMM samples run at the power limit) moves every column alike instead of favouring
    whichever was timed first."""
    row = {}
    try:
        versions = prepare_torch(graph, compile_too)
    except Exception as e:  # a failing sample is reported, the others still run
        versions = {k: {"error": f"{type(e).__name__}: {e}"} for k in ("eager", "compile")}
    for key, v in versions.items():
        row[key] = {"error": v["error"]} if "error" in v else {"ms": [], "kernels": v["kernels"]}
        if "compile_s" in v:
            row[key]["compile_s"] = v["compile_s"]
    fx = {"fx_unfused": {"ms": []}, "fx_fused": {"ms": []}}
    for _ in range(runs):
        for key, v in versions.items():
            if "error" in row[key]:
                continue
            try:
                row[key]["ms"] += watched(row[key], "clocks", lambda: measure_ms(v["fn"], 1))
                row[key].setdefault("queued_ms", []).append(
                    watched(row[key], "queued_clocks", lambda: queued_ms(v["fn"], v["kernels"])))
            except Exception as e:
                row[key] = {"error": f"{type(e).__name__}: {e}"}
        bench_report.merge_fx_round(fx, bench_fx(cli, path, timeout_s))
    row.update(fx)
    return row


def fx_run_command(cli, path, json_path, *extra, placement=0):
    """`fusion-cli run` timed as this harness times PyTorch (also paired.py's): the do_bench protocol (the 256 MB
    flush before each run, 25 ms of warm-up, 100 ms timed) after the same rest as the harness's (before the
    timing, each plan's CUDA-graph replays and each GEMM tuning comparison), in a protocol file next to the
    report (with `placement`, the buffers' placement seed). --no-profile: the harness reads the plans' times and kernel counts, not the CUPTI counter pass that
    follows the timing (its DRAM bytes are gpu-check's and the GUI's business)."""
    protocol = os.path.join(os.path.dirname(os.path.abspath(json_path)), "timing-protocol.json")
    with open(protocol, "w") as f:
        json.dump({"format": "fusion-explorer/timing-protocol", "version": 1, "preset": "do_bench",
                   "warmup_ms": DO_BENCH_WARMUP_MS, "repeat_ms": DO_BENCH_REP_MS,
                   "rest_ms": round(_REST["s"] * 1e3), "placement": placement}, f)
    return [cli, "run", path, "--auto", "--protocol", protocol, "--no-profile", "--json", json_path, *extra]


def bench_fx(cli, path, timeout_s):
    """Runs fusion-cli once; per plan {"ms": [ms], "kernels": n, "stepped_ms": [..], "graph_ms": [..]} or
    {"error": why} (bench_report.read_fx_round, which refuses a report of another format or version; merge_fx_round
    adds it to the rounds so far)."""
    keys = ("fx_unfused", "fx_fused")
    if not cli:
        return {k: {"error": "fusion-cli not found (pass --cli)"} for k in keys}
    with tempfile.TemporaryDirectory() as tmp:
        json_path = os.path.join(tmp, "run.json")
        # --cuda-graph: each plan also replayed as a CUDA graph, the GPU's time without the host's, as
        # PyTorch's queued_ms (resnet18's 20 cuDNN calls could outrun the GPU on the host).
        cmd = fx_run_command(cli, path, json_path, "--cuda-graph")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {k: {"error": f"fusion-cli run timed out after {timeout_s} s"} for k in keys}
        if proc.returncode != 0 or not os.path.exists(json_path):
            why = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            return {k: {"error": f"fusion-cli exited {proc.returncode}: {why[0][:200]}"} for k in keys}
        return bench_report.read_fx_round(json_path)


def find_cli(explicit):
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    if os.environ.get("FX_CLI"):
        return os.environ["FX_CLI"]
    found = [p for p in glob.glob(os.path.join(REPO, "build*", "app", "**", "fusion-cli"), recursive=True)
             if os.access(p, os.X_OK)]
    return max(found, key=os.path.getmtime) if found else None


def sample_paths(names, group="all"):
    every = sorted(glob.glob(os.path.join(REPO, "sample_graphs", "*.json")))
    if not names:
        return fx_graph.samples_in_group(every, group)
    if group != "all":
        raise SystemExit("bench: --group chooses among all the samples; give it or --samples, not both")
    by_name = {os.path.splitext(os.path.basename(p))[0]: p for p in every}
    missing = [n for n in names if n not in by_name and not os.path.exists(n)]
    if missing:
        raise SystemExit(f"bench: unknown sample(s) {missing}; known: {sorted(by_name)}")
    return [by_name.get(n, n) for n in names]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", nargs="*", default=[], help="sample names or graph files (default: all)")
    ap.add_argument("--group", choices=fx_graph.GROUPS, default="all",
                    help="the samples without a matmul/conv2d (elementwise) or with one (contraction); the two "
                         "groups' reports merge with `bench_report.py merge` (default: all)")
    ap.add_argument("--cli", help="fusion-cli binary (default: $FX_CLI, else the newest build*/app/fusion-cli)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "bench-out")
    ap.add_argument("--runs", type=int, default=2, help="timed runs of each version (default 2)")
    # resnet18's first run on a fresh machine compiles its kernels (NVRTC, no disk cache yet), times their layouts
    # and cuDNN's engine configurations for 20 convolutions in both layouts: past 60 s on an H100 host (the device
    # run of 80b2aec), 25 s once the kernels are cached; 41 s since its 32 tuned kernels' layouts are compared as long as
    # the plans are timed (31230ad; H100, run AF).
    ap.add_argument("--fx-timeout", type=int, default=300, help="seconds per fusion-cli run (default 300)")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile (quick look)")
    ap.add_argument("--rest", type=float, default=REST_S,
                    help=f"seconds the GPU idles before each timing, PyTorch's and fusion-cli's (default {REST_S})")
    args = ap.parse_args()
    if not 0 <= args.rest <= 60:
        raise SystemExit(f"bench: --rest takes seconds from 0 to 60, not {args.rest}")
    _REST["s"] = args.rest
    torch_as_our_plans()
    cli = find_cli(args.cli)
    bus = getattr(torch.cuda.get_device_properties(0), "pci_bus_id", None)
    _CLOCKS["monitor"] = gpu_clocks.Monitor(pci_bus_id=bus if isinstance(bus, str) else None)
    if not _CLOCKS["monitor"].available:
        print(f"bench: GPU clocks not read: {_CLOCKS['monitor'].why_not}", flush=True)
    start = time.perf_counter()
    copy_bw = copy_bandwidth()
    torch.cuda.empty_cache()
    print(f"device {torch.cuda.get_device_name()}, copy {copy_bw / 1e12:.2f} TB/s, fusion-cli {cli or 'not found'}",
          flush=True)
    rows = []
    for path in sample_paths(args.samples, args.group):
        t0 = time.perf_counter()
        graph = fx_torch.load_graph(path)
        row = {"name": graph.name, "file": os.path.relpath(path, REPO), "min_bytes": graph.min_bytes(),
               "has_contraction": graph.has_contraction()}
        if not row["has_contraction"]:  # bw*: against a copy of the sample's own bytes
            rest()
            row["copy_same_bytes_tb_s"] = copy_bandwidth(row["min_bytes"]) / 1e12
            torch.cuda.empty_cache()
        row.update(bench_sample(cli, graph, path, args.runs, not args.no_compile, args.fx_timeout))
        torch._dynamo.reset()
        torch.cuda.empty_cache()
        bench_report.derive(row, copy_bw)
        rows.append(row)
        print(f"  {graph.name}: {time.perf_counter() - t0:.1f} s", flush=True)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "timing": "medians; CUDA events around each run with a 256 MB buffer overwritten before each, "
                        "for PyTorch (triton.testing.do_bench) and Fusion Explorer (fusion-cli run --cold-l2); "
                        f"each timing after {_REST['s']:g} s with the GPU idle, {DO_BENCH_WARMUP_MS} ms of warm-up "
                        f"and {DO_BENCH_REP_MS} ms of timed runs",
              "copy_tb_s": copy_bw / 1e12, "fusion_cli": cli, "seconds": round(time.perf_counter() - start, 1),
              "samples": rows}
    print(bench_report.text_table(rows))
    for note in bench_report.notes(rows, each_step=False):
        print("note:", note)
    for line in bench_report.targets(rows):
        print("target:", line)
    bench_report.write_reports(report, args.out)
    print(f"bench: {len(rows)} samples in {report['seconds']} s; wrote {args.out}/bench.json and bench.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
