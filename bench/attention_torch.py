#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention on the shapes of the attention samples (sample_graphs/attention_*.json),
one line per backend that takes the problem, and PyTorch's unfused chain (matmul, scale, add, softmax, matmul):
median of CUDA-event times over 20 runs after 5 warm-ups. Random inputs as the samples' runs use (values do not
change the time). Run on a GPU machine: python3 bench/attention_torch.py"""
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SAMPLES = [  # name, B, H, T, D, dtype, mask
    ("attention_bf16", 8, 12, 1024, 64, torch.bfloat16, True),
    ("attention_f16", 8, 12, 1024, 64, torch.float16, False),
    ("attention_long_bf16", 1, 12, 8192, 64, torch.bfloat16, True),
]


def median_ms(fn, runs=20, warmup=5):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    for name, b, h, t, d, dtype, with_mask in SAMPLES:
        q, k, v = (torch.randn(b, h, t, d, device="cuda", dtype=dtype) for _ in range(3))
        mask = torch.randn(t, t, device="cuda", dtype=dtype) if with_mask else None
        scale = 1 / d**0.5
        chain = lambda: torch.softmax(q @ k.transpose(-1, -2) * scale + (mask if with_mask else 0), -1) @ v
        print(f"{name}: unfused chain (eager) {median_ms(chain):.3f} ms")
        for backend in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
            try:
                with sdpa_kernel(backend):
                    ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale))
                print(f"{name}: sdpa {backend.name} {ms:.3f} ms")
            except RuntimeError as e:
                print(f"{name}: sdpa {backend.name} not available: {str(e).splitlines()[0][:120]}")
        del q, k, v, mask
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
