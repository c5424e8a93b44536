#!/usr/bin/env bash
# Records the run reports a class without GPUs sees in the lessons (lessons/runs/GRAPH.DEVICE.json): for each
# lesson named, `fusion-cli run` of its graph with the plan auto-fuse makes for the lesson's device, which is the
# plan the lesson's "Fuse it" step makes. Needs a GPU. Copy the reports into lessons/runs/ and name them in the
# lessons' "run_report" (with the date they were measured on); tests/core/test_lessons.cpp checks they match.
#
#   CLI=build/app/cli/fusion-cli OUT=/tmp/lesson-runs scripts/record-lesson-runs.sh lessons/03-*.json ...
set -euo pipefail
cd "$(dirname "$0")/.."
CLI=${CLI:-build/app/cli/fusion-cli}
OUT=${OUT:-lesson-runs-out}
mkdir -p "$OUT"
status=0
for lesson in "$@"; do
  read -r graph device < <(python3 -c 'import json, sys; l = json.load(open(sys.argv[1])); print(l["graph"], l["device"])' "$lesson")
  report="$OUT/$graph.$device.json"
  if "$CLI" run "sample_graphs/$graph.json" --auto --device "$device" --json "$report" > "$OUT/$graph.$device.log" 2>&1; then
    echo "$lesson: $report"
  else
    echo "$lesson: fusion-cli run failed (see $OUT/$graph.$device.log)"
    status=1
  fi
done
exit $status
