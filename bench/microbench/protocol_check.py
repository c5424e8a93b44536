"""Does the timing protocol favour either side of bench.py? (GPU machine; torch, triton, fusion-cli.)

1. The same PyTorch kernel timed with do_bench (its flush: a torch fill kernel, cache.zero_()) and with the
   flush fusion-cli uses (cudaMemsetAsync of 256 MB), each with CUDA events around one call, medians.
2. Order: torch.compile and `fusion-cli run --cold-l2` timed in alternating rounds (A B B A ...), so a drift
   over the rounds (clocks, HBM temperature) shows up as a trend instead of a ratio.
3. --queue: what in a queued timing (a spin kernel, the flush, the events around fn, perhaps a synchronise
   per run) moves a kernel's time: the runs back to back or synchronised one by one, with a spin kernel before
   the flush, between the flush and the start event, or none. Where the synchronise moves a kernel's time and
   the spin's place does not, bench.py's queued_ms is right to run back to back with one spin per stretch of
   runs (a spin per run, as here, rests power-limited GEMMs; bench/python/queue_plan.py).

    python3 bench/microbench/protocol_check.py --cli build/app/cli/fusion-cli [--samples softmax sin_cos]
    python3 bench/microbench/protocol_check.py --queue [--samples relu_mul_add softmax]
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import triton
import triton.testing

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "bench"))
import bench  # noqa: E402
import bench_report  # noqa: E402
import fx_torch  # noqa: E402

FLUSH_BYTES = 256 << 20


def load_cudart():
    for name in ("/usr/local/cuda/lib64/libcudart.so", ctypes.util.find_library("cudart")):
        if name:
            try:
                lib = ctypes.CDLL(name)
                lib.cudaMemsetAsync.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
                return lib
            except OSError:
                continue
    raise SystemExit("no libcudart")


def timed(fn, flush, runs, warmup=50):
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for i in range(runs):
        flush()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def queue_variants(fn, flush, runs=300, warmup=50):
    """fn's median under each arrangement of spin (S, 200 us), flush (F), events around fn (E) and a
    synchronise after every run (sync)."""
    for _ in range(warmup):
        fn()
    host = time.perf_counter()
    fn()
    host = time.perf_counter() - host
    torch.cuda.synchronize()
    spin = lambda: bench.spin(max(200e-6, 2 * host))  # noqa: E731  200 us or twice the host
    variants = {  # what runs before the start event, and whether each run is synchronised
        "F E (do_bench)": ((flush,), False),
        "S F E": ((spin, flush), False),
        "F E sync": ((flush,), True),
        "S F E sync": ((spin, flush), True),
        "F S E sync": ((flush, spin), True),
    }
    out = {}
    for name, (before, sync) in variants.items():
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        for i in range(runs):
            for step in before:
                step()
            starts[i].record()
            fn()
            ends[i].record()
            if sync:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        out[name] = statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))
    return out


def fx_fused_ms(cli, path):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        subprocess.run([cli, "run", path, "--auto", "--cold-l2", "--repeat", "100", "--json", out],
                       check=True, capture_output=True)
        with open(out, encoding="utf-8") as f:
            return bench_report.read_fx_plan(json.load(f), "fused")["ms"]


def smi():
    q = "temperature.gpu,temperature.memory,clocks.sm,clocks.mem,power.draw"
    r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True)
    return r.stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli")
    ap.add_argument("--queue", action="store_true", help="only the arrangements of a queued timing (bench.py's queued_ms)")
    ap.add_argument("--samples", nargs="*", default=["softmax", "sin_cos", "relu_mul_add", "layernorm"])
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    torch.set_grad_enabled(False)
    cudart = load_cudart()
    cache = torch.empty(FLUSH_BYTES // 4, dtype=torch.int, device="cuda")
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    flushes = {
        "zero_": cache.zero_,
        "memset": lambda: cudart.cudaMemsetAsync(ctypes.c_void_p(cache.data_ptr()), 0, FLUSH_BYTES, stream),
        "none": lambda: None,
    }
    print("smi (temp gpu, temp mem, sm MHz, mem MHz, W):", smi(), flush=True)
    if args.queue:
        for sample in args.samples:
            graph = fx_torch.load_graph(os.path.join(REPO, "sample_graphs", sample + ".json"))
            fn = fx_torch.build_function(graph)
            inputs = fx_torch.make_inputs(graph, "cuda")
            torch._dynamo.reset()
            compiled = torch.compile(fn, mode="default", dynamic=False)
            for side, call in (("eager", lambda: fn(inputs)), ("compile", lambda: compiled(inputs))):
                call()
                for rep in range(2):
                    got = queue_variants(call, cache.zero_)
                    print(f"{sample} {side} #{rep}: " + ", ".join(f"{k} {v:.4f}" for k, v in got.items()), flush=True)
            del inputs, compiled
            torch._dynamo.reset()
            torch.cuda.empty_cache()
        return 0
    if not args.cli:
        raise SystemExit("--cli is needed without --queue")

    src = torch.randn(2**28, device="cuda")
    dst = torch.empty_like(src)
    copy = lambda: dst.copy_(src)  # noqa: E731
    for name, flush in flushes.items():
        print(f"copy 1 GiB, flush {name}: {timed(copy, flush, 200):.4f} ms", flush=True)
    print(f"copy 1 GiB, do_bench: {triton.testing.do_bench(copy, return_mode='median'):.4f} ms")
    del src, dst

    for sample in args.samples:
        path = os.path.join(REPO, "sample_graphs", sample + ".json")
        graph = fx_torch.load_graph(path)
        fn = fx_torch.build_function(graph)
        inputs = fx_torch.make_inputs(graph, "cuda")
        torch._dynamo.reset()
        compiled = torch.compile(fn, mode="default", dynamic=False)
        call = lambda: compiled(inputs)  # noqa: E731
        call()
        line = [f"{n} {timed(call, f, 300):.4f}" for n, f in flushes.items()]
        print(f"{sample}: compile, flush " + ", ".join(line) + " ms", flush=True)
        rows = []
        for r in range(args.rounds):
            order = ("compile", "fx") if r % 2 == 0 else ("fx", "compile")
            for side in order:
                ms = (triton.testing.do_bench(call, return_mode="median") if side == "compile"
                      else fx_fused_ms(args.cli, path))
                rows.append((r, side, ms))
                print(f"  round {r} {side:8s} {ms:.4f} ms   smi {smi()}", flush=True)
        c = statistics.median(ms for _, s, ms in rows if s == "compile")
        x = statistics.median(ms for _, s, ms in rows if s == "fx")
        print(f"{sample}: median compile {c:.4f}, fx fused {x:.4f}, fx/compile {x / c:.4f}", flush=True)
        del inputs, compiled
        torch._dynamo.reset()
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
