#!/usr/bin/env python3
"""torch.compile (Inductor, default mode) on the pieces that row_kernels.cu and elementwise_outputs.cu time, with
triton.testing.do_bench (median, 256 MB cache flush before each run), so the micro-benchmarks' "flush ms" column
has a reference measured the same way on the same GPU.

    python3 bench/microbench/torch_reference.py
"""
import torch
import triton.testing


def bench(name, fn, *args):
    compiled = torch.compile(fn, dynamic=False)
    compiled(*args)
    torch.cuda.synchronize()
    ms = [triton.testing.do_bench(lambda: compiled(*args), return_mode="median") for _ in range(2)]
    print(f"  {name:<44} {ms[0]:.4f} ({ms[1]:.4f}) ms")


def main():
    torch.manual_seed(0)
    dev = "cuda"
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    x = torch.randn(16384, 4096, device=dev)
    g, b = torch.randn(4096, device=dev), torch.randn(4096, device=dev)
    bench("sum of squares 16384x4096", lambda t: (t * t).sum(-1), x)
    bench("softmax 16384x4096", lambda t: torch.softmax(t, -1), x)
    bench("layernorm 16384x4096", lambda t, w, c: torch.nn.functional.layer_norm(t, (4096,), w, c), x, g, b)
    s = torch.randn(8, 12, 1024, 1024, device=dev)
    m = torch.randn(1024, 1024, device=dev)
    bench("scale + mask + softmax 8x12x1024x1024", lambda t, mask: torch.softmax(t * 0.125 + mask, -1), s, m)
    del s
    h = torch.randn(8192, 768, device=dev)
    g7, b7 = torch.randn(768, device=dev), torch.randn(768, device=dev)
    bench("layernorm 8192x768", lambda t, w, c: torch.nn.functional.layer_norm(t, (768,), w, c), h, g7, b7)
    e = torch.randn(1 << 26, device=dev)
    w, c = torch.randn_like(e), torch.randn_like(e)
    bench("relu(x * w + b) (64M f32)", lambda t, u, v: torch.relu(t * u + v), e, w, c)
    del w, c
    bench("sin, cos (64M f32)", lambda t: (torch.sin(t), torch.cos(t)), e)
    bench("exp used by *2 and +1 (64M f32)", lambda t: (lambda a: (a * 2, a + 1))(torch.exp(t)), e)
    del e
    qkv = torch.randn(8192, 2304, device=dev)
    bias = torch.randn(2304, device=dev)

    def split_heads(t):
        q, k, v = t.view(8, 1024, 2304).split(768, dim=2)
        return tuple(u.view(8, 1024, 12, 64).transpose(1, 2).contiguous() for u in (q, k, v))

    bench("gpt2 QKV bias + split + head permute", lambda t, bb: split_heads(t + bb), qkv, bias)
    bench("gpt2 QKV split + head permute (no bias)", split_heads, qkv)


if __name__ == "__main__":
    with torch.no_grad():
        main()
