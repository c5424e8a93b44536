#!/usr/bin/env python3
"""ResNet-18's stem convolution (x [32, 3, 224, 224] f32, w [64, 3, 7, 7], stride 2, padding 3, TF32 allowed as
PyTorch's default for cuDNN) in the forms cuDNN can be given, through PyTorch: NCHW and channels-last, with the
input channels padded with zeros to 4, 8 and 16, and in space-to-depth form (kernels/contraction/space_to_depth.h:
x's 2x2 blocks as 12 channels, padded to 16 and 32, and a 4x4 stride-1 filter rearranged alike). Each form's
median of 50 CUDA-event timings of one call (the launch included) with torch.backends.cudnn.benchmark off and
on, and its relative error against a float64 convolution of the same values.

    python3 bench/microbench/stem_conv_forms.py
"""
import torch
import torch.nn.functional as F


def median_us(fn, runs=50):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(runs):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    return sorted(times)[len(times) // 2]


def padded(t, channels):
    out = torch.zeros(t.shape[0], channels, *t.shape[2:], device=t.device, dtype=t.dtype)
    out[:, :t.shape[1]] = t
    return out


def main():
    torch.backends.cudnn.allow_tf32 = True
    print(torch.cuda.get_device_name(), torch.__version__, "cudnn", torch.backends.cudnn.version())
    x = torch.randn(32, 3, 224, 224, device="cuda")
    w = torch.randn(64, 3, 7, 7, device="cuda") * 0.1
    ref = F.conv2d(x.double(), w.double(), stride=2, padding=3)

    def report(name, xx, ww, **conv):
        y = F.conv2d(xx, ww, **conv)
        err = ((y.double() - ref).norm() / ref.norm()).item()
        print(f"{name:42s} {median_us(lambda: F.conv2d(xx, ww, **conv)):8.1f} us   rel. error {err:.1e}")

    cl = torch.channels_last
    # Space to depth: y[i] = sum_r w[r] x[2i + r - 3]; with x padded by 3 and r = 2a + b it is
    # sum_a sum_b w[2a + b] xs[b][i + a], a 4x4 stride-1 convolution (the filter padded to 8x8 with zeros).
    xs = F.pixel_unshuffle(F.pad(x, (3, 3, 3, 3)), 2)  # [32, 12, 115, 115]
    ws = F.pixel_unshuffle(F.pad(w, (0, 1, 0, 1)), 2)  # [64, 12, 4, 4]
    for benchmark in (False, True):
        torch.backends.cudnn.benchmark = benchmark
        print(f"torch.backends.cudnn.benchmark = {benchmark}")
        for channels in (3, 4, 8, 16):
            xp, wp = padded(x, channels), padded(w, channels)
            report(f"7x7 stride 2, {channels} channels, NCHW", xp, wp, stride=2, padding=3)
            report(f"7x7 stride 2, {channels} channels, channels-last", xp.contiguous(memory_format=cl),
                   wp.contiguous(memory_format=cl), stride=2, padding=3)
        for channels in (12, 16, 32):
            report(f"space to depth, 4x4 stride 1, {channels} channels",
                   padded(xs, channels).contiguous(memory_format=cl), padded(ws, channels).contiguous(memory_format=cl))


if __name__ == "__main__":
    main()
