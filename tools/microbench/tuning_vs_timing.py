"""Does a plan's tuning measure what its timing then measures? Runs `fusion-cli run SAMPLE --auto --cold-l2
--no-profile` several times, each after an idle GPU or after SECONDS of bf16 GEMMs (heat_then.py), and prints
per run: each plan's time, each library step's time and configuration, what tuning measured for it (the
finalists' times, a horizontal GEMM's merged call against its parts) with the clocks tuning ran at, and the
clocks of the timing. qkv_bf16's merged GEMM is the case that asked for it (docs/benchmarks.md, run AA).
    python3 tools/microbench/tuning_vs_timing.py --cli build/app/cli/fusion-cli --sample qkv_bf16 --runs 2 --heat 2
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))


def tile(path):
    """The tile the step runs: a finalist tuning chose ("its #2 runs, algorithm 66, tile 256x128"), else the
    search's pick (the first tile named)."""
    m = re.search(r"its #\d runs, algorithm \d+, tile (\d+x\d+|id \d+)", path or "") or \
        re.search(r"tile (\d+x\d+|id \d+)", path or "")
    return m.group(1) if m else "-"


def tuning_notes(path):
    """The parts of a kernel's report line that tuning wrote: the finalists' times, a merge's choice, clocks."""
    keep = []
    for part in (path or "").split("; "):
        if any(k in part for k in ("timed again in the plan", "strided-batched call", "GPU while tuning",
                                   "GEMMs alone", "its #")):
            keep.append(part)
    return "; ".join(keep)


def one_run(cli, graph, label):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "run.json")
        proc = subprocess.run([cli, "run", graph, "--auto", "--cold-l2", "--no-profile", "--repeat", "50",
                               "--json", out], capture_output=True, text=True)
        if proc.returncode != 0 or not os.path.exists(out):
            print(f"== {label}: fusion-cli exited {proc.returncode}: {(proc.stderr or proc.stdout)[-300:]}")
            return
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
    clocks = (doc.get("timing") or {}).get("gpu_clocks") or {}
    print(f"== {label}: GPU while timing: {clocks.get('summary') or clocks.get('note') or 'not reported'}")
    for plan in doc["plans"]:
        print(f"   {plan['name']}: {plan['total_ms']:.4f} ms whole, {plan['kernel_count']} kernels")
        for k in plan["kernels"]:
            if k.get("library") in ("cuBLASLt", "cuDNN"):
                print(f"     {k['name']}: {k.get('measured_ms', 0):.4f} ms stepped, tile {tile(k.get('path'))}")
                notes = tuning_notes(k.get("path"))
                if notes:
                    print(f"       tuning: {notes}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--sample", default="qkv_bf16")
    ap.add_argument("--runs", type=int, default=2, help="runs after an idle GPU, and as many after the heat")
    ap.add_argument("--heat", type=float, default=2.0, help="seconds of bf16 GEMMs before each heated run (0: none)")
    args = ap.parse_args()
    graph = args.sample if os.path.exists(args.sample) else os.path.join(REPO, "sample_graphs", args.sample + ".json")
    for i in range(args.runs):
        time.sleep(3)
        one_run(args.cli, graph, f"run {i + 1}, after 3 s idle")
    if args.heat > 0:
        for i in range(args.runs):
            subprocess.run([sys.executable, os.path.join(HERE, "heat_then.py"), str(args.heat)], check=True)
            one_run(args.cli, graph, f"run {args.runs + i + 1}, right after {args.heat:g} s of GEMMs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
