#!/usr/bin/env bash
# gemm_regime.py with the GPU's clock, power and temperature sampled every 20 ms beside it; the log of both goes
# to ${OUT:-.}/gemm_regime.{log,smi.csv} and a summary of the clocks per phase is printed.
set -u
OUT=${OUT:-.}
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu --format=csv,noheader -lms 20 \
  > "$OUT/gemm_regime.smi.csv" 2>&1 &
SMI=$!
python3 "$(dirname "$0")/gemm_regime.py" 2>&1 | tee "$OUT/gemm_regime.log"
kill $SMI
python3 - "$OUT/gemm_regime.smi.csv" <<'PY'
import sys
rows = [l.split(", ") for l in open(sys.argv[1]) if l.count(",") == 3]
busy = [r for r in rows if float(r[2].split()[0]) > 200]
print(f"{len(rows)} samples, {len(busy)} above 200 W")
for r in busy[:: max(1, len(busy) // 25)]:
    print("  ", r[0], r[1], r[2], r[3])
PY
