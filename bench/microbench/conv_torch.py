#!/usr/bin/env python3
"""PyTorch's side of conv_algos.cu: the conv_bn_relu sample's 3x3 conv (x[32,64,56,56] f32, TF32 allowed as
PyTorch's default for cuDNN) eager, channels-last, and conv -> batchnorm -> relu under torch.compile, with
triton.testing.do_bench (256 MB flush before each run) and the kernel names torch.profiler sees. Then the
spread: --rounds do_bench medians of eager and torch.compile with torch.backends.cudnn.benchmark off (PyTorch's
default: cuDNN's heuristics pick the algorithm) and on (cuDNN times its algorithms on the first call of a
shape), each round with the kernels of 5 profiled calls and their mean device times.

    python3 bench/microbench/conv_torch.py [--rounds 6]
"""
import sys
from collections import defaultdict

import torch
import torch.nn.functional as F
import triton.testing


def main():
    print(torch.cuda.get_device_name(), torch.__version__, "cudnn", torch.backends.cudnn.version(),
          "allow_tf32", torch.backends.cudnn.allow_tf32)
    x = torch.randn(32, 64, 56, 56, device="cuda")
    w = torch.randn(64, 64, 3, 3, device="cuda") / 24
    b, mean, var, gamma, beta = (torch.randn(64, device="cuda").abs() + 0.5 for _ in range(5))
    xl, wl = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
    block = torch.compile(lambda t: F.relu(F.batch_norm(F.conv2d(t, w, b, padding=1), mean, var, gamma, beta, False, 0.0, 1e-5)))
    variants = {
        "conv2d NCHW": lambda: F.conv2d(x, w, b, padding=1),
        "conv2d channels_last": lambda: F.conv2d(xl, wl, b, padding=1),
        "compiled conv+bn+relu": lambda: block(x),
    }
    for k, f in variants.items():
        f()
        torch.cuda.synchronize()
        ms = [triton.testing.do_bench(f, return_mode="median") for _ in range(2)]
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            f()
            torch.cuda.synchronize()
        names = [(e.name[:90], round(e.device_time, 1)) for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        print(f"  {k:<26} {ms[0]:.4f} ({ms[1]:.4f}) ms  {names}")
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 6
    eager = lambda: F.relu(F.batch_norm(F.conv2d(x, w, b, padding=1), mean, var, gamma, beta, False, 0.0, 1e-5))  # noqa: E731
    for bench_mode in (False, True):
        torch.backends.cudnn.benchmark = bench_mode
        torch._dynamo.reset()
        compiled = torch.compile(lambda t: F.relu(F.batch_norm(F.conv2d(t, w, b, padding=1), mean, var, gamma, beta, False, 0.0, 1e-5)))
        for name, f in (("eager", eager), ("torch.compile", lambda: compiled(x))):
            f()
            torch.cuda.synchronize()
            for r in range(rounds):
                ms = triton.testing.do_bench(f, return_mode="median")
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                    for _ in range(5):
                        f()
                    torch.cuda.synchronize()
                per = defaultdict(list)
                for e in prof.events():
                    if e.device_type == torch.autograd.DeviceType.CUDA:
                        per[e.name[:70]].append(e.device_time)
                kernels = "; ".join(f"{k} {sum(v) / len(v):.1f} us x{len(v) // 5}" for k, v in per.items())
                print(f"  cudnn.benchmark={bench_mode!s:<5} {name:<13} round {r}: {ms:.4f} ms  [{kernels}]", flush=True)


if __name__ == "__main__":
    with torch.no_grad():
        main()
