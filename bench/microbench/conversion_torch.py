#!/usr/bin/env python3
"""torch.compile's side of layout_conversion.cu: the conv_bn_relu sample's activation (f32 [32, 64, 56, 56])
converted to channels-last and back by Inductor's Triton kernels, and a copy of the same bytes, each timed in the
same three places as layout_conversion.cu (medians of 50 CUDA-event timings): after a 256 MB flush; after the
flush and a copy that writes the source just before (as the convolution writes y); back to back. Also the kernel
durations torch.profiler sees after the flush, and Inductor's kernel source with its launch configuration.

    python3 bench/microbench/conversion_torch.py
"""
import torch


def median_ms(f, flush=None, before=None, runs=50):
    for _ in range(5):
        f()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
    for s, e in zip(starts, ends):
        if flush is not None:
            flush.zero_()
        if before is not None:
            before()
        s.record()
        f()
        e.record()
    torch.cuda.synchronize()
    return sorted(s.elapsed_time(e) for s, e in zip(starts, ends))[runs // 2]


def profiled_us(f, flush, before=None, calls=20):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush.zero_()
            if before is not None:
                before()
            f()
        torch.cuda.synchronize()
    times = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and "triton" in e.name:
            times.setdefault(e.name, []).append(e.device_time)
    return {k: sorted(v)[len(v) // 2] for k, v in times.items()}


def main():
    print(torch.cuda.get_device_name(), torch.__version__)
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    x = torch.randn(32, 64, 56, 56, device="cuda")
    keep_x = x.clone()
    y = x.to(memory_format=torch.channels_last)
    keep_y = y.clone(memory_format=torch.channels_last)
    out = torch.empty_like(x)
    to_nhwc = torch.compile(lambda t: t.contiguous(memory_format=torch.channels_last), dynamic=False)
    to_nchw = torch.compile(lambda t: t.contiguous(), dynamic=False)
    assert torch.equal(to_nhwc(x), y) and torch.equal(to_nchw(y), x)
    cases = {
        "copy of the same bytes": (lambda: out.copy_(x), lambda: x.copy_(keep_x)),
        "to NHWC (torch.compile)": (lambda: to_nhwc(x), lambda: x.copy_(keep_x)),
        "to NCHW (torch.compile)": (lambda: to_nchw(y), lambda: y.copy_(keep_y)),
    }
    for name, (f, produce) in cases.items():
        print(f"  {name:<28} flushed {median_ms(f, flush):.4f}  after producer {median_ms(f, flush, produce):.4f}  "
              f"back to back {median_ms(f):.4f} ms")
        for k, us in profiled_us(f, flush).items():
            print(f"      profiler, flushed: {us:.1f} us {k}")
        for k, us in profiled_us(f, flush, produce).items():
            print(f"      profiler, after producer: {us:.1f} us {k}")


if __name__ == "__main__":
    with torch.no_grad():
        main()
