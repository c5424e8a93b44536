#!/usr/bin/env bash
# Which layout the tuner picks for a sample's kernels, run to run, and what each layout takes in the plan.
# For each sample: RUNS tuned runs (`fusion-cli run --auto --cold-l2`), then one run per forced layout
# (--layout K). Prints, per run, each plan's time and each kernel's layout line (the tuning's own times).
#   CLI=build/app/cli/fusion-cli RUNS=4 LAYOUTS="1 2 3" tools/microbench/layout_picks.sh softmax cast_chain
set -euo pipefail
cd "$(dirname "$0")/../.."
CLI=${CLI:-build/app/cli/fusion-cli}
RUNS=${RUNS:-4}
LAYOUTS=${LAYOUTS:-"1 2 3"}
TMP=$(mktemp -d)
show() {  # label json
  python3 - "$1" "$2" <<'PY'
import json, sys
label, path = sys.argv[1], sys.argv[2]
r = json.load(open(path))
times = "  ".join(f"{p['name']} {p['total_ms']:.4f}" for p in r["plans"])
print(f"{label:<10} {times}")
for p in r["plans"]:
    for k in p["kernels"]:
        print(f"    {p['name']:<8} {k['name']:<24} {k['measured_ms']:.4f}  {k['path']}")
PY
}
for s in "$@"; do
  g=sample_graphs/$s.json
  echo "=== $s"
  for i in $(seq "$RUNS"); do
    "$CLI" run "$g" --auto --cold-l2 --no-profile --repeat 50 --json "$TMP/t$i.json" > /dev/null
    show "tuned $i" "$TMP/t$i.json"
  done
  for k in $LAYOUTS; do
    "$CLI" run "$g" --auto --cold-l2 --no-profile --repeat 50 --layout "$k" --json "$TMP/l$k.json" > /dev/null
    show "layout $k" "$TMP/l$k.json"
  done
done
