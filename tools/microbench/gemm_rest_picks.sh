#!/usr/bin/env bash
# Which cuBLASLt configuration `fusion-cli run` keeps for a sample's GEMMs, process to process, by the rest
# before the GEMM comparisons, in two protocols. A rest R of RESTS runs with `--rest-ms R --tuning-rest-ms R`
# (R ms before each GEMM comparison and before the timing: what --rest-ms R alone did before --tuning-rest-ms
# existed); `default` runs with neither (no rest before the timing, the default tuning rest).
#   plain:   fusion-cli run G --auto (what a user types; counted rounds, no flush);
#   harness: the PyTorch harness's options (--cold-l2 --warmup-ms 25 --repeat-ms 100).
# For each sample, protocol and rest: RUNS processes. Prints one line per process (the wall time, the fused
# plan's time and, for each GEMM, the search's pick and the configuration the plan timing kept) and appends
# them as JSON lines to $OUT/gemm_rest_picks.jsonl.
#   CLI=build/app/cli/fusion-cli RUNS=4 RESTS="0 250 1000 default" MODES="plain harness" \
#     tools/microbench/gemm_rest_picks.sh qkv_bf16 swiglu_bf16
set -euo pipefail
cd "$(dirname "$0")/../.."
CLI=${CLI:-build/app/cli/fusion-cli}
RUNS=${RUNS:-4}
RESTS=${RESTS:-"0 250 1000"}
MODES=${MODES:-"plain harness"}
OUT=${OUT:-.}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for s in "$@"; do
  g=sample_graphs/$s.json
  for mode in $MODES; do
    case $mode in
      plain) opts=() ;;
      harness) opts=(--cold-l2 --warmup-ms 25 --repeat-ms 100) ;;
      *) echo "unknown mode $mode (plain, harness)"; exit 2 ;;
    esac
    for rest in $RESTS; do
      for i in $(seq "$RUNS"); do
        t0=$(date +%s%N)
        rests=(--rest-ms "$rest" --tuning-rest-ms "$rest")
        [ "$rest" = default ] && rests=()
        "$CLI" run "$g" --auto --no-profile ${opts[@]+"${opts[@]}"} ${rests[@]+"${rests[@]}"} --json "$TMP/r.json" \
          > "$TMP/r.log" 2>&1 ||
          { echo "$s $mode rest $rest: fusion-cli failed"; tail -5 "$TMP/r.log"; continue; }
        t1=$(date +%s%N)
        python3 - "$s" "$mode" "$rest" "$i" "$(( (t1 - t0) / 1000000 ))" "$TMP/r.json" "$OUT/gemm_rest_picks.jsonl" <<'PY'
import json, re, sys
sample, mode, rest, i, wall, path, jsonl = sys.argv[1:]
r = json.load(open(path))
fused = next(p for p in r["plans"] if p["name"] == "fused")
def config(text):  # "tile 256x128, stages 64xAUTO, cluster 1x2x1" -> "256x128 c1x2x1"
    t = re.search(r"tile (\S+?),.*?cluster ([0-9x]+|auto)", text)
    return f"{t.group(1)} c{t.group(2)}" if t else "?"
gemms = []
for k in fused["kernels"]:
    path_text = k.get("path", "")
    if "cuBLASLt" not in path_text or "tile" not in path_text:
        continue
    search = config(path_text)
    m = re.search(r"timed again in the plan: (.*)", path_text)
    kept = search
    if m and "its pick stays" not in m.group(1):
        kept = config(m.group(1))
    gemms.append({"kernel": k["name"], "search": search, "kept": kept, "ms": k["measured_ms"]})
line = {"sample": sample, "mode": mode, "rest_ms": rest if rest == "default" else int(rest), "process": int(i), "wall_s": int(wall) / 1e3,
        "fused_ms": fused["total_ms"], "unfused_ms": next(p for p in r["plans"] if p["name"] == "unfused")["total_ms"],
        "gemms": gemms}
with open(jsonl, "a") as f:
    f.write(json.dumps(line) + "\n")
kept = "; ".join(f"{g['kernel']}: search {g['search']} kept {g['kept']} ({g['ms']:.4f})" for g in gemms)
print(f"{sample:<14} {mode:<8} rest {rest:>5}  #{i}  {int(wall) / 1e3:6.1f} s  "
      f"fused {fused['total_ms']:.4f} ms  {kept}")
PY
      done
    done
  done
done
