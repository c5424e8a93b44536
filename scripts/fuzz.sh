#!/usr/bin/env bash
# Fuzzes the loaders with libFuzzer under ASan and UBSan.
#   scripts/fuzz.sh [--target TARGET] [SECONDS]     run for SECONDS (default 60)
#   scripts/fuzz.sh [--target TARGET] --runs N      run N inputs and stop (the bounded run CTest does)
# graph: the graph loader and validation, save/reload, DOT. fused: fused graph files, the engine's
# candidates, auto-fuse and the plan's save/reload. codegen: CUDA source generation for the unfused,
# loaded and auto-fused plans. plan: fused-plan files against their graph. dot: DOT parsed by libcgraph.
# Builds its own clang tree of just fx_core and the fuzz targets (FX_FUZZ_BUILD_DIR, default build-fuzz/).
# Seeds: sample_graphs/, the bad-input corpora, the saved regressions. New inputs go to $BUILD/corpus-TARGET;
# a crash goes to $BUILD/artifacts/ and the script fails: copy the file into tests/data/fuzz-regressions/
# (or fuzz-regressions-fused/, -codegen/, -plan/, -dot/; the gtests replay them) and fix the code.
# Exit status: 0 clean, 1 a finding or a build failure, 77 clang's libFuzzer runtime (or, for dot, libcgraph)
# is missing (CTest: skipped).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FX_FUZZ_BUILD_DIR:-$root/build-fuzz}"
which=graph
mode=(-max_total_time=60)
while (($#)); do
  case "$1" in
    --target) which="${2:?--target needs graph, fused, codegen, plan or dot}"; shift 2 ;;
    --runs) mode=(-runs="${2:?--runs needs a number}"); shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) mode=(-max_total_time="$1"); shift ;;
  esac
done
case "$which" in
  graph) target=fx_fuzz_graph_loader
         seeds=("$root/sample_graphs" "$root/tests/data/bad" "$root/tests/data/fuzz-regressions") ;;
  fused) target=fx_fuzz_fused_graph
         seeds=("$root/tests/fuzz/seeds-fused" "$root/tests/data/bad-fused" "$root/sample_graphs"
                "$root/tests/data/fuzz-regressions-fused") ;;
  codegen) target=fx_fuzz_codegen
         seeds=("$root/sample_graphs" "$root/tests/fuzz/seeds-fused" "$root/tests/data/fuzz-regressions"
                "$root/tests/data/fuzz-regressions-codegen") ;;
  plan)  target=fx_fuzz_plan
         seeds=("$root/tests/fuzz/seeds-fused" "$root/tests/data/bad-fused" "$root/tests/data/fuzz-regressions-fused"
                "$root/tests/data/fuzz-regressions-plan") ;;
  dot)   target=fx_fuzz_dot
         seeds=("$root/sample_graphs" "$root/tests/data/fuzz-regressions" "$root/tests/data/fuzz-regressions-dot") ;;
  *) echo "fuzz.sh: --target is graph, fused, codegen, plan or dot, not '$which'" >&2; exit 2 ;;
esac

cxx="${FX_FUZZ_CXX:-clang++}"
if ! command -v "$cxx" >/dev/null; then
  echo "fuzz.sh: $cxx not found; scripts/install-deps.sh installs clang and libclang-rt-14-dev" >&2
  exit 77
fi
runtime_dir="$("$cxx" --print-runtime-dir 2>/dev/null || true)"
if ! ls "$runtime_dir"/libclang_rt.fuzzer*.a >/dev/null 2>&1; then
  echo "fuzz.sh: clang's libFuzzer runtime is missing in '$runtime_dir'; install libclang-rt-14-dev" >&2
  exit 77
fi

if [[ "$which" == dot ]] && ! pkg-config --exists libcgraph 2>/dev/null; then
  echo "fuzz.sh: Graphviz's libcgraph is missing; scripts/install-deps.sh installs libgraphviz-dev" >&2
  exit 77
fi

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cc="${cxx/clang++/clang}"
  generator=()
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  CC="$cc" CXX="$cxx" cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFX_BUILD_FUZZERS=ON -DFX_BUILD_TESTS=OFF -DFX_BUILD_BENCHMARKS=OFF -DFX_WITH_CUDA=OFF -DFX_WITH_GUI=OFF >/dev/null
fi
cmake --build "$build" --target "$target" -j "$(nproc)"

mkdir -p "$build/corpus-$which" "$build/artifacts"
# ASan: deep recursion and leaks are findings too. UBSan already stops at the first report (-fno-sanitize-recover).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:detect_stack_use_after_return=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
status=0
"$build/tests/fuzz/$target" "${mode[@]}" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -dict="$root/tests/fuzz/graph.dict" -artifact_prefix="$build/artifacts/" "$build/corpus-$which" "${seeds[@]}" || status=$?
if ((status != 0)); then
  echo "fuzz.sh: the fuzzer found a problem; the input is in $build/artifacts/." >&2
  echo "fuzz.sh: copy it into tests/data/fuzz-regressions/ so that fx_core_tests replays it, then fix it." >&2
  exit 1
fi
