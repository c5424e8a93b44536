#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (GPU tests skip with a
# message where no CUDA device exists); then builds and runs the whole suite again under ASan and UBSan
# (scripts/test-asan.sh, build-asan/). FX_SKIP_ASAN=1 skips that second pass for a quick local run; CI runs it.
# Idempotent and incremental.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build="${FX_BUILD_DIR:-$root/build}"
cd "$build"
ctest --output-on-failure -j "${FX_JOBS:-$(nproc)}" --timeout 900
if [[ "${FX_SKIP_ASAN:-0}" != 1 ]]; then
  "$root/scripts/test-asan.sh"
fi
