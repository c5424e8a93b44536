#!/usr/bin/env bash
# Fusion Explorer vs PyTorch eager and torch.compile on every sample graph, on the GPU machine (needs python3
# with torch, triton and numpy). Builds fusion-cli first when it is missing and cmake is available.
#   bench/bench.sh [--build DIR] [--check] [bench.py options, e.g. --samples relu_mul_add softmax]
# Every sample takes longer than one 10-minute call on the GPU machine: run `--group elementwise` and
# `--group contraction` (the two partition the samples), then merge the two reports on any machine:
#   python3 bench/python/bench_report.py merge --out DIR elementwise/bench.json contraction/bench.json
# With the default 1 s rest before every timing (bench.py --rest) and --runs 3 each group takes about 10 minutes
# on an H200: split it with --samples (docs/benchmarks.md, How to reproduce) and merge every report.
# --check also runs `fusion-cli run --dump` on the same samples and cross-checks every output against
# PyTorch (bench/python/crosscheck.py); the exit status is non-zero on any mismatch.
# --paired N times the fused plan against torch.compile in N alternating pairs instead (bench/python/paired.py,
# for samples where the two are close; give --samples): paired.json and paired.md.
# --race races the fused kernel of each one-kernel sample against torch.compile's in one process, run by run
# after the same flush, every layout verified first (bench/python/race.py; give --samples): race.json and race.md.
# Results: bench.json and bench.md in $OUT if set, else ./bench-out.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build="$repo/build-bench"
check=0
paired=""
race=0
bench_args=()
while (($#)); do
  case "$1" in
    --build) build=$(realpath -m "$2"); shift 2 ;;
    --check) check=1; shift ;;
    --paired) paired=$2; shift 2 ;;
    --race) race=1; shift ;;
    *) bench_args+=("$1"); shift ;;
  esac
done

cli="$build/app/cli/fusion-cli"
if [[ ! -x "$cli" ]] && command -v cmake >/dev/null; then
  echo "bench.sh: building fusion-cli in $build"
  generator=()
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  cmake -S "$repo" -B "$build" "${generator[@]}" -DFX_WITH_GUI=OFF -DFX_BUILD_TESTS=OFF -DFX_BUILD_BENCH=ON \
    -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" --target fusion-cli fusion_harness -j "$(nproc)"
fi
cli_args=()
if [[ -x "$cli" ]]; then cli_args=(--cli "$cli"); else echo "bench.sh: no fusion-cli; timing PyTorch only"; fi

export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/fx-bench/inductor}
export TRITON_CACHE_DIR=${TRITON_CACHE_DIR:-/tmp/fx-bench/triton}
status=0
if ((race)); then
  python3 "$repo/bench/python/race.py" "${cli_args[@]}" "${bench_args[@]}" || status=$?
elif [[ -n $paired ]]; then
  python3 "$repo/bench/python/paired.py" "${cli_args[@]}" --pairs "$paired" "${bench_args[@]}" || status=$?
else
  python3 "$repo/bench/python/bench.py" "${cli_args[@]}" "${bench_args[@]}" || status=$?
fi

if ((check)) && [[ -x "$cli" ]]; then
  samples=()
  for ((i = 0; i < ${#bench_args[@]}; i++)); do  # reuse --samples NAME... or --group G for the cross-check
    if [[ ${bench_args[i]} == --group ]]; then
      mapfile -t samples < <(cd "$repo/bench/python" && python3 -c 'import glob, sys, fx_graph
print("\n".join(fx_graph.samples_in_group(sorted(glob.glob(sys.argv[1] + "/sample_graphs/*.json")), sys.argv[2])))' \
        "$repo" "${bench_args[i + 1]}")
    fi
    if [[ ${bench_args[i]} == --samples ]]; then
      for ((j = i + 1; j < ${#bench_args[@]}; j++)); do
        name=${bench_args[j]}
        [[ $name == --* ]] && break
        if [[ -f $name ]]; then samples+=("$name"); else samples+=("$repo/sample_graphs/$name.json"); fi
      done
    fi
  done
  ((${#samples[@]})) || samples=("$repo"/sample_graphs/*.json)
  python3 "$repo/bench/python/crosscheck.py" --cli "$cli" --samples "${samples[@]}" || status=$?
fi
exit $status
