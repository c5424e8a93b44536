#!/usr/bin/env bash
# Before/after: two source trees of Fusion Explorer built side by side and every sample run by each, alternating
# sample by sample on one GPU, so that a change to the executor can be checked for regressions in one call.
# Each run is `fusion-cli run SAMPLE --auto` with the default (interactive) timing protocol and no counter pass;
# the table gives the fused and unfused plans' medians and the after/before ratio of the fused one.
#
#   OUT=/tmp/out bench/before_after.sh BEFORE_SRC AFTER_SRC [SAMPLE...]
set -u -o pipefail
if (($# < 2)); then echo "usage: $0 BEFORE_SRC AFTER_SRC [SAMPLE...]" >&2; exit 2; fi
BEFORE=$(cd "$1" && pwd); AFTER=$(cd "$2" && pwd); shift 2
OUT=${OUT:-$PWD/before-after-out}
JOBS=${JOBS:-16}
RUN_TIMEOUT=${RUN_TIMEOUT:-120}
SAMPLES=${*:-relu_mul_add sigmoid_chain gelu_tanh_decomposed softmax softmax_decomposed layernorm residual_layernorm
  sum_of_squares sin_cos exp_two_consumers dropout_chain transpose_chain cast_chain mlp_relu_f32 mlp_gelu_bf16
  mlp_relu_small_bf16 swiglu_bf16 qkv_bf16 conv_bn_relu gpt2_block gpt2_block_hf resnet18}
mkdir -p "$OUT/before" "$OUT/after"

build() {  # SRC NAME
  cmake -S "$1" -B "$1/build-before-after" -G Ninja -DFX_WITH_GUI=OFF -DFX_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=Release > "$OUT/$2-configure.log" 2>&1 &&
    cmake --build "$1/build-before-after" -j "$((JOBS / 2))" --target fusion-cli > "$OUT/$2-build.log" 2>&1
}
build "$BEFORE" before & b=$!
build "$AFTER" after & a=$!
wait $b || { echo "before: build failed"; tail -20 "$OUT/before-build.log"; exit 1; }
wait $a || { echo "after: build failed"; tail -20 "$OUT/after-build.log"; exit 1; }

for s in $SAMPLES; do
  for side in before after; do
    src=$BEFORE; [[ $side == after ]] && src=$AFTER
    timeout "$RUN_TIMEOUT" "$src/build-before-after/app/cli/fusion-cli" run "$AFTER/sample_graphs/$s.json" --auto \
      --no-profile --json "$OUT/$side/$s.json" > "$OUT/$side/$s.log" 2>&1 || echo "$s ($side): exit code $?"
  done
done

python3 - "$AFTER/python" "$OUT" $SAMPLES <<'PY' | tee "$OUT/before-after.md"
import os, sys
sys.path.insert(0, sys.argv[1])
from fusion_explorer import run_report  # reports read through the published schema
out, samples = sys.argv[2], sys.argv[3:]
def plans(side, s):
    path = os.path.join(out, side, s + ".json")
    try:
        r = run_report.load_run_report(path)
    except (OSError, ValueError) as e:
        print(f"{path}: {e}", file=sys.stderr)
        return None
    by_name = {p["name"]: p for p in r["plans"]}
    if "unfused" not in by_name or "fused" not in by_name:
        return None
    u, f = by_name["unfused"], by_name["fused"]
    return u["total_ms"], f["total_ms"], len(f["kernels"]), r["verification"]["passed"]
print("| sample | unfused ms before / after | fused ms before / after | fused kernels b/a | fused after/before | verified b/a |")
print("|---|---|---|---|---|---|")
for s in samples:
    b, a = plans("before", s), plans("after", s)
    if not b or not a:
        print(f"| {s} | missing: before {'ok' if b else 'no'}, after {'ok' if a else 'no'} | | | | |")
        continue
    print(f"| {s} | {b[0]:.4f} / {a[0]:.4f} | {b[1]:.4f} / {a[1]:.4f} | {b[2]} / {a[2]} | {a[1] / b[1]:.3f} | {b[3]} / {a[3]} |")
PY
