"""Does a power-limited bf16 GEMM's time depend on how long the GPU has been busy? qkv_bf16's three projections
(x 8192x4096 @ W 4096x1024, three times) and the same as one broadcast batched GEMM, each run after a 256 MB
flush, timed with CUDA events, in three regimes:
  burst      after 3 s idle, 40 rounds (about 30 ms of work): as `fusion-cli run --repeat 50` times its plans
  sustained  1.5 s of back-to-back rounds (as triton's do_bench, 100 ms and more); first and last 40 rounds
  stepped    after 3 s idle, the three GEMMs with an event between each (as the step-by-step rounds) against none
Rounds alternate the ways, so a drift moves both alike. Clocks and power: run `nvidia-smi -lms` beside it
(bench/microbench/gemm_regime.sh does).
    python3 bench/microbench/gemm_regime.py"""
import statistics
import time

import torch

M, K, N = 8192, 4096, 1024
x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
w = [torch.randn(K, N, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
w_stacked = torch.stack(w)  # [3, K, N]: x broadcast over the batch, one strided-batched call
outs = [torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
out_stacked = torch.empty(3, M, N, device="cuda", dtype=torch.bfloat16)
flush = torch.empty(256 * 2**20, device="cuda", dtype=torch.int8)


def separate():
    for i in range(3):
        torch.matmul(x, w[i], out=outs[i])


def merged():
    torch.matmul(x.unsqueeze(0), w_stacked, out=out_stacked)


def rounds(ways, n):
    """n rounds; each round runs every way once after the flush; returns per-way lists of ms."""
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in ways]
          for _ in range(n)]
    for r in range(n):
        for i, way in enumerate(ways):
            flush.zero_()
            ev[r][i][0].record()
            way()
            ev[r][i][1].record()
    torch.cuda.synchronize()
    return [[ev[r][i][0].elapsed_time(ev[r][i][1]) for r in range(n)] for i in range(len(ways))]


def stepped():
    # an event recorded between the GEMMs, as the plan's step-by-step rounds do
    for i in range(3):
        torch.matmul(x, w[i], out=outs[i])
        torch.cuda.Event(enable_timing=True).record()


def med(v):
    return f"{statistics.median(v):.4f}"


for _ in range(5):  # cuBLAS picks its kernels, untimed
    separate(), merged(), stepped()
torch.cuda.synchronize()
t0 = time.time()
print(f"[{time.time() - t0:5.2f}s] idle 3 s", flush=True)
time.sleep(3)
a, b = rounds([separate, merged], 40)
print(f"[{time.time() - t0:5.2f}s] burst:     separate {med(a)} ms, merged {med(b)} ms", flush=True)
end = time.time() + 1.5
seen_a, seen_b = [], []
while time.time() < end:
    a, b = rounds([separate, merged], 40)
    seen_a.append(a)
    seen_b.append(b)
print(f"[{time.time() - t0:5.2f}s] sustained: first 40 rounds separate {med(seen_a[0])}, merged {med(seen_b[0])}; "
      f"last 40 separate {med(seen_a[-1])}, merged {med(seen_b[-1])} ({len(seen_a) * 40} rounds)", flush=True)
time.sleep(3)
a, b = rounds([separate, stepped], 40)
print(f"[{time.time() - t0:5.2f}s] stepped (after 3 s idle): no events between {med(a)}, an event between {med(b)}",
      flush=True)
a, b = rounds([separate, merged], 40)
print(f"[{time.time() - t0:5.2f}s] burst right after: separate {med(a)} ms, merged {med(b)} ms", flush=True)
