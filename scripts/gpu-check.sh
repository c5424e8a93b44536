#!/usr/bin/env bash
# One call on the GPU machine: configure without Qt/Graphviz, build, run the `gpu` tests and the NVRTC tests,
# calibrate the device, run every elementwise/reduction sample (unfused vs auto-fused) and print a summary.
# Logs and JSON go to $OUT (default ./gpu-check-out). Meant to finish within a 10-minute device call at -j16.
#
#   OUT=/tmp/out scripts/gpu-check.sh            # everything
#   SAMPLES="softmax layernorm" scripts/gpu-check.sh   # a subset of the benchmark samples
#   PART=tuning scripts/gpu-check.sh             # build and bench/tuning_wall_times.sh only
#   PART=tests scripts/gpu-check.sh              # build and the ctest steps only; PART=runs: build, calibrate and
#                                                # the sample runs only (a fresh machine builds in 130-190 s and
#                                                # ctest -L gpu about 160 s 4 at a time, 360 one at a time)
#   TEST_JOBS=1 PART=tests scripts/gpu-check.sh  # the gpu tests one at a time; by default 4 at a time on the one
#                                                # GPU, those that profile with CUPTI or time the device for its own
#                                                # sake (SERIAL below) alone after them: about a third of the time
#                                                # of one at a time
set -u -o pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$ROOT/gpu-check-out}
BUILD=${BUILD:-$ROOT/build-gpu-check}
JOBS=${JOBS:-16}
REPEAT=${REPEAT:-50}
PART=${PART:-all}
TEST_JOBS=${TEST_JOBS:-4}
# Run alone with TEST_JOBS: CUPTI (one profiling session per device at a time; GpuFault runs fusion-cli, whose
# timing pass uses it), the device's own rates (calibration, opt-in benchmarks) and the tuning cache (it asserts
# that no timed window's stream gate waited out its limit, which another process on the GPU can cause) and the
# cold-L2 test (it compares a tiny plan's times with and without the flush, which other processes blur).
SERIAL='^(Calibrate|DramProfilerTest|KernelTimerTest|JoinTimingRows|RunProfile|ProfileNoDevice|GpuFault|ContractionBench|Samples/TuningCacheGpu)\.|^ExecutorGpu\.ColdL2Timing'
case "$PART" in all|tests|runs|tuning) ;; *) echo "PART must be all, tests, runs or tuning (not $PART)"; exit 2 ;; esac
mkdir -p "$OUT/runs"
START=$(date +%s)
STATUS=0
step() { echo; echo "=== [$(( $(date +%s) - START ))s] $*" | tee -a "$OUT/steps.log"; }

step "machine"
{ nvidia-smi || echo "nvidia-smi failed"; nproc; free -g; } > "$OUT/machine.txt" 2>&1
head -20 "$OUT/machine.txt"

step "configure ($BUILD)"
GEN=""; command -v ninja > /dev/null && GEN="-G Ninja"
if ! cmake -S "$ROOT" -B "$BUILD" $GEN -DFX_WITH_GUI=OFF -DFX_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release > "$OUT/configure.log" 2>&1; then
  tail -40 "$OUT/configure.log"; echo "CONFIGURE FAILED (see $OUT/configure.log)"; exit 1
fi
grep "Fusion Explorer" "$OUT/configure.log"

step "build (-j$JOBS)"
if ! cmake --build "$BUILD" -j"$JOBS" --target fusion-cli fx_gpu_tests fx_kernels_tests fx_bench_gpu_tests > "$OUT/build.log" 2>&1; then
  grep -E "error|Error" "$OUT/build.log" | head -40; echo "BUILD FAILED (see $OUT/build.log)"; exit 1
fi
grep -c "warning" "$OUT/build.log" | sed 's/^/compiler warnings: /'
CLI=$BUILD/app/cli/fusion-cli
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$OUT/cache}

if [ "$PART" = all ] || [ "$PART" = tuning ]; then
  step "tuning cache: wall times of the what-if loop (bench/tuning_wall_times.sh)"
  CLI=$CLI OUT=$OUT/tuning bench/tuning_wall_times.sh || STATUS=1
  if [ "$PART" = tuning ]; then exit $STATUS; fi
fi

if [ "$PART" != runs ]; then
  step "ctest -L gpu ($TEST_JOBS at a time)"
  if [ "$TEST_JOBS" -gt 1 ]; then
    ctest --test-dir "$BUILD" -L gpu -E "$SERIAL" -j"$TEST_JOBS" --output-on-failure --timeout 400 > "$OUT/ctest-gpu.log" 2>&1 || STATUS=1
    tail -8 "$OUT/ctest-gpu.log"
    ctest --test-dir "$BUILD" -L gpu -R "$SERIAL" --output-on-failure --timeout 400 > "$OUT/ctest-gpu-serial.log" 2>&1 || STATUS=1
    tail -8 "$OUT/ctest-gpu-serial.log"
  else
    ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 400 > "$OUT/ctest-gpu.log" 2>&1 || STATUS=1
    tail -25 "$OUT/ctest-gpu.log"
  fi

  step "ctest -L kernels (codegen goldens + NVRTC compile of every sample)"
  ctest --test-dir "$BUILD" -L kernels --output-on-failure --timeout 300 > "$OUT/ctest-kernels.log" 2>&1 || STATUS=1
  tail -5 "$OUT/ctest-kernels.log"
fi
if [ "$PART" = tests ]; then
  echo; echo "total $(( $(date +%s) - START ))s; status $STATUS (0 = all gpu and kernels tests passed)"
  exit $STATUS
fi

step "calibrate"
"$CLI" calibrate --json "$OUT/device.json" 2>&1 | tee "$OUT/calibrate.log" || STATUS=1

step "benchmark: fusion-cli run on each sample (elementwise/reduction, then contractions: cuBLASLt/cuDNN)"
CONTRACTION_SAMPLES="mlp_relu_f32 mlp_gelu_bf16 mlp_gelu_erf_bf16 mlp_gelu_decomposed_bf16 mlp_layerscale_bf16 mlp_relu_small_bf16 swiglu_bf16 qkv_bf16 conv_bn_relu residual_conv_block gpt2_block resnet18 attention_bf16 attention_f16 attention_long_bf16"
DEFAULT_SAMPLES="relu_mul_add sigmoid_chain gelu_tanh_decomposed softmax softmax_decomposed layernorm residual_layernorm sum_of_squares sin_cos exp_two_consumers dropout_chain transpose_chain cast_chain concat_branches mean_variance $CONTRACTION_SAMPLES"
for s in ${SAMPLES:-$DEFAULT_SAMPLES}; do
  f=$ROOT/sample_graphs/$s.json
  [ -f "$f" ] || { echo "missing $f"; continue; }
  echo "--- $s"
  "$CLI" run "$f" --auto --repeat "$REPEAT" --cuda-graph --json "$OUT/runs/$s.json" > "$OUT/runs/$s.log" 2>&1
  rc=$?
  cat "$OUT/runs/$s.log"
  [ $rc -eq 0 ] || { echo "run $s: exit code $rc"; STATUS=1; }
done
# SwiGLU as x@[W1|W3] in one strided-batched GEMM plus one silu(g)*u kernel: 2 launches, accepted by candidate id
# (the same plan auto-fuse now reaches, since the engine knows cuBLASLt has no silu epilogue): this checks that
# `fuse --accept` gives a runnable plan.
if [ -z "${SAMPLES:-}" ]; then
  echo "--- swiglu_bf16 (plan: h:g+u v:act+y)"
  "$CLI" fuse "$ROOT/sample_graphs/swiglu_bf16.json" --accept h:g+u v:act+y -o "$OUT/swiglu_bf16_hmerged.fused.json" > /dev/null \
    && "$CLI" run "$ROOT/sample_graphs/swiglu_bf16.json" --plan "$OUT/swiglu_bf16_hmerged.fused.json" --repeat "$REPEAT" \
         --cuda-graph --json "$OUT/runs/swiglu_bf16_hmerged.json" > "$OUT/runs/swiglu_bf16_hmerged.log" 2>&1
  rc=$?
  cat "$OUT/runs/swiglu_bf16_hmerged.log"
  [ $rc -eq 0 ] || { echo "run swiglu_bf16_hmerged: exit code $rc"; STATUS=1; }
fi
# LARGE=1: the generated 48-layer GPT stack (1,440 nodes) end to end; most of its time is NVRTC compiles.
if [ "${LARGE:-0}" = 1 ]; then
  step "48-layer transformer, unfused vs auto-fused"
  "$CLI" generate transformer --layers 48 -o "$OUT/transformer48.json" \
    && timeout 420 "$CLI" run "$OUT/transformer48.json" --auto --repeat 3 --json "$OUT/runs/transformer48.json" \
         > "$OUT/runs/transformer48.log" 2>&1
  rc=$?
  grep -E "plan:|speedup|rel. error|note: g:(q_mm|scores|fc_mm)" "$OUT/runs/transformer48.log" | head -40
  [ $rc -eq 0 ] || { echo "run transformer48: exit code $rc"; tail -20 "$OUT/runs/transformer48.log"; STATUS=1; }
fi
# One --dump for the PyTorch harness (small: sum of squares).
"$CLI" run "$ROOT/sample_graphs/sum_of_squares.json" --auto --repeat 3 --dump "$OUT/dump-sum_of_squares" > "$OUT/dump.log" 2>&1 || STATUS=1
ls -R "$OUT/dump-sum_of_squares" | head -12

step "summary"
python3 - "$OUT" <<'PY' | tee "$OUT/summary.md"
import json, os, sys, glob
out = sys.argv[1]
copy = None
try:
    copy = json.load(open(os.path.join(out, "device.json")))["hbm_bandwidth_gbps"] * 1e9
except Exception as e:
    print("(no calibration:", e, ")")
print(f"copy bandwidth (read+write): {copy/1e12:.3f} TB/s" if copy else "copy bandwidth: unknown")
def measured(p):
    # fusion-cli run's counter pass (docs/measurement.md): DRAM bytes, or "not measured" with a reason.
    m = p.get("measured", {})
    b, q = m.get("bytes"), m.get("measured_over_predicted")
    return (f"{b / 2**30:.3f}" if isinstance(b, (int, float)) else "-"), (f"{q:.2f}" if isinstance(q, (int, float)) else "-")
print("| sample | unfused k / ms | fused k / ms | graph ms (u/f) | speedup | fused GB/s | frac. of copy | verified | max rel err "
      "| measured GiB (u/f) | measured/predicted (u/f) | HBM reduction |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(out, "runs", "*.json"))):
    r = json.load(open(f))
    u, fu = r["plans"]
    by = sum(k["bytes"] for k in fu["kernels"])
    gbps = by / (fu["total_ms"] * 1e6) if fu["total_ms"] else 0
    frac = f"{gbps * 1e9 / copy:.2f}" if copy else "-"
    err = max((c["rel_error"] for c in r["verification"]["outputs"]), default=0)
    g = f'{u["graph_ms"]:.3f}/{fu["graph_ms"]:.3f}' if u.get("graph_ms") is not None else "-"
    red = r.get("hbm_traffic_reduction")
    red = f"{red:.2f}x" if isinstance(red, (int, float)) else "- (" + r.get("hbm_traffic_reduction_reason", "no profile") + ")"
    print(f'| {os.path.basename(f)[:-5]} | {u["kernel_count"]} / {u["total_ms"]:.3f} | {fu["kernel_count"]} / {fu["total_ms"]:.3f} '
          f'| {g} | {r["speedup"]:.2f}x | {gbps:.0f} | {frac} | {r["verification"]["passed"]} | {err:.1e} '
          f'| {measured(u)[0]}/{measured(fu)[0]} | {measured(u)[1]}/{measured(fu)[1]} | {red} |')
PY
echo
echo "total $(( $(date +%s) - START ))s; status $STATUS (0 = all gpu tests passed and every run verified)"
exit $STATUS
