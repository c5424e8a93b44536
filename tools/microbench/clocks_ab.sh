#!/usr/bin/env bash
# Does sampling the GPU's clocks (NVML, a thread waking every 10 ms during the timing) move fusion-cli's times?
# Runs `fusion-cli run SAMPLE --auto --cold-l2 --no-profile` N times with the clocks read and N times with
# --no-clocks, alternating, and prints both plans' times of each run and the medians of each kind.
#   tools/microbench/clocks_ab.sh build/app/cli/fusion-cli qkv_bf16 4
set -euo pipefail
cli=${1:?usage: clocks_ab.sh FUSION_CLI [SAMPLE] [N]}
sample=${2:-softmax}
n=${3:-4}
root="$(cd "$(dirname "$0")/../.." && pwd)"
graph="$root/sample_graphs/$sample.json"
[ -f "$graph" ] || graph="$sample"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$n"); do
  for way in clocks no-clocks; do
    flag=(); [ "$way" = no-clocks ] && flag=(--no-clocks)
    "$cli" run "$graph" --auto --cold-l2 --no-profile --repeat 100 "${flag[@]}" --json "$tmp/$way-$i.json" > /dev/null
  done
done
python3 - "$tmp" "$n" <<'PY'
import json, statistics, sys
tmp, n = sys.argv[1], int(sys.argv[2])
for way in ("clocks", "no-clocks"):
    runs = [json.load(open(f"{tmp}/{way}-{i}.json")) for i in range(1, n + 1)]
    u = [r["plans"][0]["total_ms"] for r in runs]
    f = [r["plans"][1]["total_ms"] for r in runs]
    c = [(r.get("timing") or {}).get("gpu_clocks", {}).get("summary") or "-" for r in runs]
    print(f"{way:9}: unfused {' '.join(f'{x:.4f}' for x in u)} (median {statistics.median(u):.4f}); "
          f"fused {' '.join(f'{x:.4f}' for x in f)} (median {statistics.median(f):.4f})")
    print(f"           clocks of the last run: {c[-1]}")
PY
