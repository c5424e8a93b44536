#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (GPU tests skip with a
# message where no CUDA device exists). Idempotent and incremental.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build="${FX_BUILD_DIR:-$root/build}"
cd "$build"
ctest --output-on-failure -j "${FX_JOBS:-$(nproc)}" --timeout 900
