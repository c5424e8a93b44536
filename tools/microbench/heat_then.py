"""Runs bf16 GEMMs on the GPU for SECONDS (default 2), then returns: puts the H100 at its power-limited clocks
before the next command, to see whether a timing or an algorithm search depends on the GPU's thermal/power state.
    python3 tools/microbench/heat_then.py 2 && fusion-cli run ..."""
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
a = torch.randn(8192, 4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
end = time.time() + seconds
while time.time() < end:
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
