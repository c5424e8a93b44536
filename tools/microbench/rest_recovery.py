"""How long must the GPU idle before a timing for the timing not to depend on what ran before it? Heats the GPU
with bf16 GEMMs for HEAT seconds, idles for each REST in turn, then times qkv_bf16's three GEMMs (x[8192,4096] @
W[4096,1024] three times) with triton.testing.do_bench's defaults (25 ms warm-up, 100 ms timed, the flush), with
the SM clock sampled through NVML (tests/bench/gpu_clocks.py). bench.py's --rest and fusion-cli's --rest-ms are
chosen from it.
    python3 tools/microbench/rest_recovery.py [--heat 1.5] [--rests 0 0.1 0.25 0.5 1 2] [--trials 2]"""
import argparse
import os
import statistics
import sys
import time

import torch
import triton.testing

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "bench"))
import gpu_clocks  # noqa: E402


def heat(seconds, a, b):
    end = time.time() + seconds
    while time.time() < end:
        for _ in range(20):
            a @ b
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heat", type=float, default=1.5)
    ap.add_argument("--rests", type=float, nargs="+", default=[0, 0.1, 0.25, 0.5, 1, 2])
    ap.add_argument("--trials", type=int, default=2)
    args = ap.parse_args()
    torch.set_grad_enabled(False)
    x = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
    ws = [torch.randn(4096, 1024, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
    hb = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    qkv = lambda: [x @ w for w in ws]  # noqa: E731
    bus = getattr(torch.cuda.get_device_properties(0), "pci_bus_id", None)
    mon = gpu_clocks.Monitor(pci_bus_id=bus if isinstance(bus, str) else None)
    print(f"{torch.cuda.get_device_name()}; NVML {'read' if mon.available else mon.why_not}; heat {args.heat} s")
    rows = {}
    for trial in range(args.trials):
        for r in args.rests:
            heat(args.heat, x, hb)
            time.sleep(r)
            with gpu_clocks.Watch(mon, 0.005) as w:
                ms = triton.testing.do_bench(qkv, warmup=25, rep=100, return_mode="median")
            s = w.summary or {}
            rows.setdefault(r, []).append((ms, s.get("sm_mhz_median"), s.get("sm_mhz_min"), s.get("held_back_by")))
            print(f"trial {trial + 1} rest {r:5.2f} s: {ms:.4f} ms, SM median {s.get('sm_mhz_median')} MHz "
                  f"(min {s.get('sm_mhz_min')}), held back by {', '.join(s.get('held_back_by') or []) or 'nothing'}",
                  flush=True)
    # A burst after a long idle: the reference the rests should reach.
    time.sleep(3)
    with gpu_clocks.Watch(mon, 0.005) as w:
        cold = triton.testing.do_bench(qkv, warmup=25, rep=100, return_mode="median")
    print(f"after 3 s idle (no heat): {cold:.4f} ms, SM median {(w.summary or {}).get('sm_mhz_median')} MHz")
    for r, v in rows.items():
        print(f"rest {r:5.2f} s: median {statistics.median(t for t, *_ in v):.4f} ms "
              f"({statistics.median(t for t, *_ in v) / cold:.3f} of the cold burst)")


if __name__ == "__main__":
    main()
