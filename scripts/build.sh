#!/usr/bin/env bash
# Configures and builds Fusion Explorer into build/ (incremental on a second run).
# Usage: scripts/build.sh [extra cmake -D options]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FX_BUILD_DIR:-$root/build}"
jobs="${FX_JOBS:-$(nproc)}"

# A configure that failed half way (a missing package) leaves a CMakeCache.txt but no build.ninja: configure again.
if [[ ! -f "$build/CMakeCache.txt" || ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
elif (($# > 0)); then
  cmake "$build" "$@"
fi
cmake --build "$build" -j "$jobs"
