#!/usr/bin/env bash
# Checks on a GPU machine that Nsight tools see fusion-cli's NVTX ranges (kernels/profile/nvtx_range.h): one per
# plan ("unfused", "fused"), and per launch one named by the group id with one inside it named by the kernel, all
# in the domain "fusion-explorer". Writes the tools' reports under $OUT and exits 1 when a range is missing.
#
#   OUT=/tmp/out scripts/nvtx-check.sh                # builds build-nvtx/ (no GUI), then nsys and ncu
#   CLI=build/app/cli/fusion-cli scripts/nvtx-check.sh   # an existing fusion-cli
#
# What it runs (docs/measurement.md, "Profiler ranges"):
#   nsys profile --trace=cuda,nvtx -o $OUT/nvtx/relu_mul_add fusion-cli run relu_mul_add.json --auto ...
#   nsys stats --report nvtx_sum --format csv $OUT/nvtx/relu_mul_add.nsys-rep
#   ncu --nvtx --nvtx-include "fusion-explorer@fused/g:mul/" --metrics gpu__time_duration.sum fusion-cli run ...
set -u -o pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/nvtx-check-out}
BUILD=${BUILD:-$ROOT/build-nvtx}
mkdir -p "$OUT/nvtx"
if [[ -z "${CLI:-}" ]]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DFX_WITH_GUI=OFF -DFX_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release \
    > "$OUT/nvtx/configure.log" 2>&1 || { tail -30 "$OUT/nvtx/configure.log"; exit 1; }
  cmake --build "$BUILD" -j"${JOBS:-16}" --target fusion-cli > "$OUT/nvtx/build.log" 2>&1 \
    || { grep -E "error" "$OUT/nvtx/build.log" | head -30; exit 1; }
  CLI=$BUILD/app/cli/fusion-cli
fi
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$OUT/cache}
SAMPLE=$ROOT/sample_graphs/relu_mul_add.json
# relu_mul_add auto-fuses into one group, g:mul, run by kernel fx_g_mul; unfused it is three groups, g:mul, g:add
# and g:y, run by fx_g_mul (the mul alone), fx_g_add and fx_g_y: a kernel is named after its group.
# No NVML sampling thread beside the profiler: a timing protocol with read_clocks off (docs/measurement.md).
echo '{"format": "fusion-explorer/timing-protocol", "version": 1, "repeat": 3, "warmup": 1, "read_clocks": false}' \
  > "$OUT/nvtx/protocol.json"
RUN=("$CLI" run "$SAMPLE" --auto --protocol "$OUT/nvtx/protocol.json" --no-profile)
STATUS=0

NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [[ -n "$NSYS" ]]; then
  echo "=== nsys ($NSYS)"
  "$NSYS" profile --force-overwrite true --trace=cuda,nvtx -o "$OUT/nvtx/relu_mul_add" "${RUN[@]}" \
    > "$OUT/nvtx/nsys-profile.log" 2>&1 || { tail -20 "$OUT/nvtx/nsys-profile.log"; STATUS=1; }
  "$NSYS" stats --force-export true --report nvtx_sum --format csv -o "$OUT/nvtx/relu_mul_add" \
    "$OUT/nvtx/relu_mul_add.nsys-rep" > "$OUT/nvtx/nsys-stats.log" 2>&1 || STATUS=1
  cat "$OUT"/nvtx/relu_mul_add_nvtx_sum*.csv 2>/dev/null | tee "$OUT/nvtx/nvtx_sum.csv" | cut -c1-160
  for range in fused unfused g:mul g:add g:y fx_g_mul fx_g_add; do
    grep -q -- "$range" "$OUT/nvtx/nvtx_sum.csv" || { echo "MISSING nsys range: $range"; STATUS=1; }
  done
else
  echo "nsys not found: skipped"
fi

NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if [[ -n "$NCU" ]]; then
  echo "=== ncu ($NCU): kernels inside fusion-explorer@fused/g:mul/"
  "$NCU" --nvtx --nvtx-include "fusion-explorer@fused/g:mul/" --metrics gpu__time_duration.sum --csv \
    "${RUN[@]}" > "$OUT/nvtx/ncu.csv" 2> "$OUT/nvtx/ncu.log" || { tail -20 "$OUT/nvtx/ncu.log"; STATUS=1; }
  grep -E '^"[0-9]' "$OUT/nvtx/ncu.csv" | cut -d, -f5 | sort | uniq -c | tee "$OUT/nvtx/ncu-kernels.txt"
  [[ -s "$OUT/nvtx/ncu-kernels.txt" ]] || { echo "MISSING: ncu profiled no kernel inside the range"; STATUS=1; }
  # The range filters: nothing from the unfused plan may be inside it.
  grep -q "fx_g_mul" "$OUT/nvtx/ncu-kernels.txt" || { echo "MISSING: the fused kernel fx_g_mul"; STATUS=1; }
  if grep -q "fx_g_add\|fx_g_y" "$OUT/nvtx/ncu-kernels.txt"; then echo "UNFUSED kernel inside the fused range"; STATUS=1; fi
else
  echo "ncu not found: skipped"
fi
echo "nvtx-check: $([[ $STATUS == 0 ]] && echo ok || echo FAILED) (reports in $OUT/nvtx)"
exit $STATUS
