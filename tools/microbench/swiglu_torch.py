#!/usr/bin/env python3
"""PyTorch's side of horizontal_gemms.cu at SwiGLU's shape (docs/benchmarks.md, swiglu_bf16), timed in interleaved
rounds after a 256 MB flush, the protocol of horizontal_gemms.cu:
1. x @ W1 and x @ W3 (bf16, 8192x4096x4096) as two torch.mm, as one mm on [W1|W3], and as one bmm on the
   stacked weights, with the cuBLAS kernel names torch.profiler sees;
2. does the data change the time of these power-limited GEMMs? The same two mm on fusion-cli's own inputs
   (uniform [-2, 2)), the bench harness's (standard normal x, W scaled by 1/sqrt(K)), randn W, and zeros.

    python3 tools/microbench/swiglu_torch.py
"""
import statistics

import torch

M, N, K = 8192, 4096, 4096
FLOPS = 4.0 * M * N * K  # both GEMMs


def race(variants, rounds=40, runs=2):
    """Prints the median ms of each variant, `runs` times; each round launches every variant once."""
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for f in variants.values():
        f()
    for run in range(runs):
        times = {k: [] for k in variants}
        for _ in range(rounds):
            for k, f in variants.items():
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                f()
                e.record()
                e.synchronize()
                times[k].append(s.elapsed_time(e))
        for k, t in times.items():
            ms = statistics.median(t)
            print(f"  run {run + 1} {k:<36} {ms:.4f} ms  {FLOPS / ms / 1e9:.0f} TFLOP/s")


def shapes_and_kernels():
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16) * 0.5
    w1 = torch.randn(K, N, device="cuda", dtype=torch.bfloat16) * 0.5
    w3 = torch.randn(K, N, device="cuda", dtype=torch.bfloat16) * 0.5
    packed = torch.cat([w1, w3], dim=1).contiguous()
    stacked = torch.stack([w1, w3]).contiguous()
    variants = {
        "separate torch.mm x2": lambda: (torch.mm(x, w1), torch.mm(x, w3)),
        "packed torch.mm [W1|W3]": lambda: torch.mm(x, packed),
        "batched torch.bmm (x expanded)": lambda: torch.bmm(x.expand(2, M, K), stacked),
    }
    race(variants)
    for k, f in variants.items():
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            f()
            torch.cuda.synchronize()
        names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        print(f"{k}: {names}")


def data():
    g = torch.Generator(device="cuda").manual_seed(0)
    dev = dict(device="cuda")
    shapes = ((M, K), (K, N), (K, N))
    datasets = {
        "fx fill: uniform [-2,2)": [(torch.rand(s, generator=g, **dev) * 4 - 2).bfloat16() for s in shapes],
        "torch bench: randn, W/sqrt(K)": [torch.randn(M, K, generator=g, **dev).bfloat16()]
        + [(torch.randn(K, N, generator=g, **dev) * K**-0.5).bfloat16() for _ in range(2)],
        "randn, W randn": [torch.randn(s, generator=g, **dev).bfloat16() for s in shapes],
        "zeros": [torch.zeros(s, dtype=torch.bfloat16, **dev) for s in shapes],
    }
    race({k: (lambda x, a, b: lambda: (torch.mm(x, a), torch.mm(x, b)))(*v) for k, v in datasets.items()})


def main():
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    shapes_and_kernels()
    data()


if __name__ == "__main__":
    with torch.no_grad():
        main()
