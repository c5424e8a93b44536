#!/usr/bin/env bash
# Records Inductor captures with a real torch and runs the live tests and the docs/pytorch.md tutorial, on the
# GPU machine (torch 2.5+, Triton, torchvision, transformers; no network needed). Everything goes under $OUT:
#   $OUT/env.txt                    python, torch, triton, GPU
#   $OUT/live_{cpu,cuda}.log        python/tests/live_torch.py on each device
#   $OUT/recorded/*.capture.json    captures to commit under python/tests/fixtures/recorded/
#   $OUT/tutorial/                  the tutorial's files and each command's output (commands.log)
#   $OUT/summary.txt                which steps passed
# Usage (from the repository root, fusion-cli built in build/ or named by FX_CLI):
#   OUT=/tmp/fx-record python/tools/record_fixtures.sh
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-/tmp/fx-record}"
mkdir -p "$OUT/recorded" "$OUT/tutorial"
cli="${FX_CLI:-$root/build/app/cli/fusion-cli}"
export FX_CLI="$cli" PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" PATH="$(dirname "$cli"):$PATH"
export XDG_CACHE_HOME="$OUT/cache" XDG_CONFIG_HOME="$OUT/config" TORCHINDUCTOR_CACHE_DIR="$OUT/cache/inductor"
summary="$OUT/summary.txt"
: > "$summary"

step() {  # step NAME LOG COMMAND...: runs it, logs it, notes the result
  local name="$1" log="$2"
  shift 2
  echo "== $name: $*" | tee -a "$log"
  if "$@" >> "$log" 2>&1; then echo "ok      $name" >> "$summary"; else echo "FAILED  $name (rc $?, see $log)" >> "$summary"; fi
}

{
  python3 --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "device",
              torch.cuda.get_device_name() if torch.cuda.is_available() else None)'
  python3 -c 'import triton; print("triton", triton.__version__)' 2>&1
  python3 -c 'import torchvision, transformers; print("torchvision", torchvision.__version__,
              "transformers", transformers.__version__)' 2>&1
  "$cli" --help | head -1
} > "$OUT/env.txt" 2>&1

# The package installs offline (no build requirements to download).
step "pip install ./python (offline)" "$OUT/install.log" \
  python3 -m pip install --no-index --target "$OUT/site" "$root/python"

for device in cpu cuda; do
  step "live tests on $device" "$OUT/live_$device.log" \
    python3 "$root/python/tests/live_torch.py" --device "$device" --record "$OUT/recorded"
done

# The recorded captures must convert and load as CI will convert them.
step "recorded captures convert" "$OUT/convert.log" env FX_RECORDED_DIR="$OUT/recorded" \
  python3 -m unittest discover -s "$root/python/tests" -p "test_inductor_plan.py" -v

# The tutorial's commands, exactly as docs/pytorch.md writes them.
sed -n '/<!-- tutorial:begin -->/,/<!-- tutorial:end -->/p' "$root/docs/pytorch.md" \
  | sed '/^```/d; /^<!--/d' > "$OUT/tutorial/commands.sh"
(cd "$OUT/tutorial" && step "tutorial (docs/pytorch.md)" "$OUT/tutorial/commands.log" bash -ex commands.sh)
cat "$summary"
! grep -q FAILED "$summary"
