#!/usr/bin/env python3
"""Per-kernel times of a sample under torch.compile next to fusion-cli's, to see where a plan's time goes:
torch.profiler over 20 calls, each after a 256 MB flush (the bench protocol), averaged per kernel launch slot;
and `fusion-cli run --auto --cold-l2` per-step medians from its JSON (event-timed, launch gaps included) with the
CUPTI kernel durations of each step (its profile pass), which compare with the profiler's.

    python3 bench/microbench/kernel_breakdown.py --cli build/app/cli/fusion-cli gpt2_block
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "bench"))
import fx_torch  # noqa: E402


def torch_kernels(path, calls=20):
    graph = fx_torch.load_graph(path)
    fn = fx_torch.build_function(graph)
    inputs = fx_torch.make_inputs(graph, "cuda")
    compiled = torch.compile(fn, mode="default", dynamic=False)
    for _ in range(3):
        compiled(inputs)
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush.zero_()
            compiled(inputs)
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    per_call = [e for e in events if "fill" not in e.name.lower() and "memset" not in e.name.lower()]
    n = len(per_call) // calls
    slots = [[] for _ in range(n)]
    for i, e in enumerate(per_call[: n * calls]):
        slots[i % n].append((e.name, e.device_time))
    return [(s[0][0], sum(t for _, t in s) / len(s) / 1000.0) for s in slots]


def fx_kernels(cli, path):
    """Per step: its event-timed median under the flush (launch gaps included) and the CUPTI durations of the CUDA
    kernels it ran (the run's profile pass: one launch after a warm-up, no flush), comparable with the profiler's."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        subprocess.run([cli, "run", path, "--auto", "--cold-l2", "--repeat", "50", "--json", out],
                       check=True, capture_output=True)
        doc = json.load(open(out))
    plan = [p for p in doc["plans"] if p["name"] == "fused"][0]
    rows = []
    for k in plan["kernels"]:
        timeline = (k.get("measured") or {}).get("timeline") or []
        cupti = ", ".join(f"{t['duration_us'] / 1000.0:.4f} {t['kernel'][:60]}" for t in timeline)
        rows.append((k["name"] + " " + k.get("path", "")[-90:] + (f"\n      CUPTI: {cupti}" if cupti else ""),
                     k["measured_ms"]))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("samples", nargs="+")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True  # as bench.py: f32 matmul on TF32 tensor cores, as our plans do
    torch.backends.cudnn.allow_tf32 = True
    with torch.no_grad():
        for s in a.samples:
            path = os.path.join(REPO, "sample_graphs", s + ".json")
            tk = torch_kernels(path)
            print(f"{s}: torch.compile, {len(tk)} kernels, sum {sum(t for _, t in tk):.4f} ms")
            for name, ms in tk:
                print(f"  {ms:.4f}  {name[:110]}")
            fk = fx_kernels(a.cli, path)
            print(f"{s}: Fusion Explorer fused, {len(fk)} kernels, sum {sum(t for _, t in fk):.4f} ms")
            for name, ms in fk:
                print(f"  {ms:.4f}  {name}")


if __name__ == "__main__":
    main()
