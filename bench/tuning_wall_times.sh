#!/usr/bin/env bash
# Wall time of `fusion-cli run` from process start to report written, as the what-if loop meets it: with
# every cache cold (no compiled kernels, no tuning), the same plan again, then the plan with one more candidate
# accepted, then that plan again. Needs a GPU. Writes $OUT/tuning_wall_times.csv and each run's report and log.
#
#   CLI=build/app/cli/fusion-cli OUT=/tmp/out bench/tuning_wall_times.sh [SAMPLE...]   (default: gpt2_block resnet18)
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=${CLI:-build/app/cli/fusion-cli}
OUT=${OUT:-tuning-wall-out}
mkdir -p "$OUT"
csv=$OUT/tuning_wall_times.csv
echo "sample,run,plan_groups_accepted,wall_s,tune_s,choices_timed,choices_reused,verified" > "$csv"

# The candidates auto-fuse accepts, in order, one per line.
accepted() {
  "$CLI" fuse "$1" --auto --json | python3 -c '
import json, sys
for e in json.load(sys.stdin)["entries"]:
    if e["action"] == "accepted":
        print(e["candidate"])'
}

# One run: its wall time and what its report says of the tuning.
timed_run() {
  local sample=$1 label=$2 plan=$3 accepted=$4 start end
  start=$(date +%s.%N)
  "$CLI" run "sample_graphs/$sample.json" --plan "$plan" --json "$OUT/$sample.$label.json" \
    > "$OUT/$sample.$label.log" 2>&1 || true
  end=$(date +%s.%N)
  python3 - "$OUT/$sample.$label.json" "$sample" "$label" "$accepted" "$start" "$end" "$OUT/$sample.$label.log" \
    >> "$csv" <<'EOF'
import re, sys
sys.path.insert(0, "python")
from fusion_explorer import run_report  # reports read through the published schema
path, sample, label, accepted, start, end, log = sys.argv[1:]
wall = float(end) - float(start)
# The tune stage of the run's own "wall time:" line (the text report).
try:
    tune = re.search(r"wall time:.*?\btune ([0-9.]+) s", open(log).read())
    tune = tune.group(1) if tune else ""
except OSError:
    tune = ""
try:
    r = run_report.load_run_report(path)
    t = r.get("tuning", {})  # optional in the schema: a run that failed before tuning has none
    print(f'{sample},{label},{accepted},{wall:.2f},{tune},{t.get("tuned", "")},{t.get("reused", "")},'
          f'{r["verification"]["passed"]}')
except (OSError, ValueError, KeyError) as e:
    print(f'{sample},{label},{accepted},{wall:.2f},{tune},,,no report ({e})')
EOF
  tail -1 "$csv"
}

for sample in ${*:-gpt2_block resnet18}; do
  graph=sample_graphs/$sample.json
  mapfile -t ids < <(accepted "$graph")
  n=${#ids[@]}
  "$CLI" fuse "$graph" --accept "${ids[@]:0:n-1}" -o "$OUT/$sample.before.json" > /dev/null
  "$CLI" fuse "$graph" --auto -o "$OUT/$sample.auto.json" > /dev/null
  # Cold: a fresh cache folder, so no compiled kernel and no tuning choice is on disk.
  XDG_CACHE_HOME=$(mktemp -d)
  export XDG_CACHE_HOME
  timed_run "$sample" cold "$OUT/$sample.before.json" $((n - 1))
  timed_run "$sample" second "$OUT/$sample.before.json" $((n - 1))
  timed_run "$sample" one_more_accepted "$OUT/$sample.auto.json" "$n"
  timed_run "$sample" one_more_again "$OUT/$sample.auto.json" "$n"
  rm -rf "$XDG_CACHE_HOME"
done
