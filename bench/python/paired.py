#!/usr/bin/env python3
"""Fusion Explorer's fused plan against torch.compile in alternating pairs, for the samples where the two are
close: one `fusion-cli run --timings-on-request` process stays up and times both plans each time it is asked,
while this process times torch.compile (do_bench) between its timings. Each side's timing is bench.py's: the GPU
rested --rest seconds before, 25 ms of warm-up and 100 ms of timed runs after a 256 MB flush each. Pair i times
torch.compile first when i is even and fusion-cli first when it is odd. The ratio fused / compile of each pair
is one observation; the report gives their median, its 95% distribution-free interval and a verdict (fused
faster, torch.compile faster, or no difference shown), with each side's spread and SM clock (bench/python/pairs.py).

With --placements every pair puts both sides' buffers somewhere else: a new fusion-cli process with
a timing protocol with "placement": P (gaps of 0-15 MiB before its buffers; its tuning and first timing come before the pair's timing,
and every process verifies), and PyTorch's inputs copied into one new allocation, each after a gap of 0-15 MiB
drawn from P (placed()). Where buffers
lie moves a memory-bound kernel by tenths of a percent and stays put for the life of a process
(bench/microbench/placement.cu), so pairs on one placement compare placements as much as kernels; drawn anew
per pair, placement becomes part of the spread and the verdict is about the kernels.

    python3 bench/python/paired.py --samples qkv_bf16 swiglu_bf16 [--pairs 15] [--cli build/app/cli/fusion-cli]
    python3 bench/python/paired.py --samples relu_mul_add --placements

Writes paired.json and paired.md to --out (default $OUT, else ./bench-out); several such reports merge with
`python3 bench/python/pairs.py merge --out DIR a/paired.json b/paired.json ...`."""
import argparse
import json
import os
import queue
import shlex
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (sets the Inductor and Triton cache directories before torch loads)
import gpu_clocks  # noqa: E402
import pairs  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import fx_torch  # noqa: E402

# Seconds fusion-cli may take to reach its first timing (compiling, tuning and verifying come first; resnet18's
# first run on a fresh machine took over 60 s) and to answer a request (a rest, a round estimate, 125 ms of runs
# and as many step by step).
FIRST_TIMING_S = 300
REQUEST_S = 60


class FxTimings:
    """fusion-cli run FILE --timings-on-request as a child: timing() returns its next JSON line."""

    def __init__(self, cli, path, extra=(), placement=0):
        self._tmp = tempfile.TemporaryDirectory()
        self.err_path = os.path.join(self._tmp.name, "stderr.txt")
        self.json_path = os.path.join(self._tmp.name, "run.json")
        cmd = bench.fx_run_command(cli, path, self.json_path, "--timings-on-request", *extra, placement=placement)
        self._err = open(self.err_path, "w", encoding="utf-8")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err, text=True,
                                     bufsize=1)
        self._lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self.first = self._next(FIRST_TIMING_S)
        except Exception:
            self.kill()
            raise

    def _read(self):
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _next(self, timeout_s):
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            raise RuntimeError(f"fusion-cli gave no timing within {timeout_s} s") from None
        if line is None:
            self.proc.wait()
            raise RuntimeError(f"fusion-cli exited {self.proc.returncode}: {self.stderr_tail()}")
        return json.loads(line)

    def stderr_tail(self):
        self._err.flush()
        with open(self.err_path, encoding="utf-8") as f:
            lines = f.read().strip().splitlines()
        return lines[-1][:200] if lines else "no output"

    def timing(self):
        self.proc.stdin.write("time\n")
        self.proc.stdin.flush()
        return self._next(REQUEST_S)

    def finish(self):
        """Ends the timings; the run's report (kernel counts, verification) or raises."""
        try:
            self.proc.stdin.write("end\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.proc.wait(timeout=FIRST_TIMING_S)
        self._err.close()
        try:
            if self.proc.returncode != 0:
                raise RuntimeError(f"fusion-cli exited {self.proc.returncode}: {self.stderr_tail()}")
            return bench.bench_report.load_fx_report(self.json_path)  # ReportError: another format or version
        finally:
            self._tmp.cleanup()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._err.close()
        self._tmp.cleanup()


def fx_mhz(line):
    c = line.get("gpu_clocks") or {}
    return c.get("sm_mhz_median")


def fused_paths(report):
    """What ran: each fused kernel's library path or generated layout (and the layouts' times where tuned)."""
    return [k.get("path", "") for k in bench.bench_report.plan_entry(report, "fused")["kernels"]]


def placed(inputs, seed):
    """The inputs copied into one new allocation, each after a gap drawn from seed (pairs.placement_offsets), as
    fusion-cli's --placement lays out its arena; the allocation (which must outlive the copies) and the copies.
    Copies allocated one by one would not move: the caching allocator hands a freed block of the same size
    back at the same address."""
    sizes = [x.numel() * x.element_size() for x in inputs.values()]
    offsets, total = pairs.placement_offsets(seed, sizes)
    arena = torch.empty(total, dtype=torch.uint8, device="cuda")
    moved = {}
    for (name, x), at, size in zip(inputs.items(), offsets, sizes):
        moved[name] = arena[at:at + size].view(x.dtype).view(x.shape)
        moved[name].copy_(x)
    return arena, moved


def pair_sample(cli, graph, path, n_pairs, monitor, fx_args=(), placements=False):
    """n_pairs alternating pairs of one sample: {"name", "kernels", "fused_paths", "pairs": [...], "summary"} or
    with "error". fx_args: more fusion-cli run options (e.g. --layout 2), named in the row's name. placements: a
    new placement on both sides for every pair (the module's docstring)."""
    name = graph.name + (f" ({' '.join(fx_args)})" if fx_args else "") + (" (placements)" if placements else "")
    row = {"name": name, "file": os.path.relpath(path, bench.REPO)}
    compiled = bench.prepare_torch(graph)["compile"]
    if "error" in compiled:
        row["error"] = compiled["error"]
        return row
    fx = None if placements else FxTimings(cli, path, fx_args)
    try:
        timed = []
        for i in range(n_pairs):
            entry = {"first": pairs.pair_order(i)[0]}
            fn = compiled["fn"]
            if placements:
                entry["placement"] = pairs.placement(graph.name, i)
                arena, moved = placed(compiled["inputs"], entry["placement"])
                entry["torch_arena_ptr"] = arena.data_ptr()  # where PyTorch's inputs went (after their gaps)
                fn = lambda moved=moved: compiled["call"](moved)  # noqa: E731
                fx = FxTimings(cli, path, fx_args, placement=entry["placement"])
            for side in pairs.pair_order(i):
                if side == "compile":
                    with gpu_clocks.Watch(monitor, bench.CLOCK_PERIOD_S) as w:
                        entry["compile_ms"] = bench.measure_ms(fn, 1)[0]
                    entry["compile_mhz"] = (w.summary or {}).get("sm_mhz_median")
                else:
                    line = fx.timing()
                    entry.update(fused_ms=line["fused_ms"], unfused_ms=line["unfused_ms"], fx_mhz=fx_mhz(line),
                                 fx_rounds=line["repeat"])
            if placements:  # each placement's process verifies (fusion-cli exits 1 and finish() raises if not)
                report = fx.finish()
                fx = None
                entry["fused_paths"] = fused_paths(report)  # each process tunes its own layouts
                del arena, moved
            timed.append(entry)
            print(f"    pair {i + 1}: compile {entry['compile_ms']:.4f} ms, fused {entry['fused_ms']:.4f} ms, "
                  f"ratio {entry['fused_ms'] / entry['compile_ms']:.3f}" +
                  (f", placement {entry['placement']}" if placements else ""), flush=True)
        if not placements:
            report = fx.finish()
            fx = None
    finally:  # an error or an interrupt: no fusion-cli left running
        if fx is not None:
            fx.kill()
    fused, unfused = (bench.bench_report.plan_entry(report, p) for p in ("fused", "unfused"))
    row["kernels"] = {"compile": compiled["kernels"], "fused": len(fused["kernels"]),
                      "unfused": len(unfused["kernels"])}
    row["verified"] = report["verification"]["passed"]
    row["fused_paths"] = fused_paths(report)  # with --placements: the last pair's (each pair keeps its own)
    row["pairs"] = timed
    row["summary"] = pairs.summarize(timed)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", nargs="+", required=True, help="sample names or graph files")
    ap.add_argument("--pairs", type=int, default=15, help="pairs per sample (default 15; at least 6 for an interval)")
    ap.add_argument("--cli", help="fusion-cli binary (default: $FX_CLI, else the newest build*/app/fusion-cli)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "bench-out")
    ap.add_argument("--fx-args", default="",
                    help="more `fusion-cli run` options, one string (e.g. \"--layout 2\"), named in the table")
    ap.add_argument("--placements", action="store_true",
                    help="a new placement of both sides' buffers for every pair (a fusion-cli process per pair)")
    ap.add_argument("--rest", type=float, default=bench.REST_S,
                    help=f"seconds the GPU idles before each timing, on both sides (default {bench.REST_S})")
    args = ap.parse_args()
    if not 1 <= args.pairs <= 1000:
        raise SystemExit(f"paired: --pairs takes a count from 1 to 1000, not {args.pairs}")
    if not 0 <= args.rest <= 60:
        raise SystemExit(f"paired: --rest takes seconds from 0 to 60, not {args.rest}")
    cli = bench.find_cli(args.cli)
    if not cli:
        raise SystemExit("paired: no fusion-cli (build it, or pass --cli)")
    bench._REST["s"] = args.rest
    bench.torch_as_our_plans()
    bus = getattr(torch.cuda.get_device_properties(0), "pci_bus_id", None)
    monitor = gpu_clocks.Monitor(pci_bus_id=bus if isinstance(bus, str) else None)
    start = time.perf_counter()
    print(f"device {torch.cuda.get_device_name()}, fusion-cli {cli}, {args.pairs} pairs per sample", flush=True)
    rows = []
    for path in bench.sample_paths(args.samples):
        t0 = time.perf_counter()
        graph = fx_torch.load_graph(path)
        print(f"  {graph.name}", flush=True)
        try:
            row = pair_sample(cli, graph, path, args.pairs, monitor, shlex.split(args.fx_args), args.placements)
        except Exception as e:  # a failing sample is reported, the others still run
            row = {"name": graph.name, "error": f"{type(e).__name__}: {e}"}
        torch._dynamo.reset()
        torch.cuda.empty_cache()
        rows.append(row)
        s = row.get("summary")
        print(f"  {graph.name}: {time.perf_counter() - t0:.1f} s" +
              (f", median ratio {s['ratio_median']:.3f}, {s['verdict']}" if s else f", {row.get('error')}"),
              flush=True)
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "timing": f"alternating pairs; each timing after {args.rest:g} s with the GPU idle, "
                        f"{bench.DO_BENCH_WARMUP_MS} ms of warm-up and {bench.DO_BENCH_REP_MS} ms of timed runs, "
                        "a 256 MB flush before each run (do_bench; fusion-cli run --cold-l2 --timings-on-request)" +
                        ("; both sides' buffers placed anew for every pair (--placements)" if args.placements else ""),
              "confidence": pairs.CONFIDENCE, "fusion_cli": cli, "seconds": round(time.perf_counter() - start, 1),
              "samples": rows}
    print(pairs.write(report, args.out))
    print(f"paired: {len(rows)} samples in {report['seconds']} s; wrote {args.out}/paired.json and paired.md")
    return 0 if all(not r.get("error") and r.get("verified") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
