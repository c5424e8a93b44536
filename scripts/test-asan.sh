#!/usr/bin/env bash
# The whole test suite again under AddressSanitizer and UndefinedBehaviorSanitizer: the `asan` preset (Debug,
# -O1, -fsanitize=address,undefined -fno-sanitize-recover=all) configured and built in build-asan/, then
# `ctest --preset asan` (its ASAN/UBSAN/LSAN_OPTIONS; suppressions in tests/sanitizers/). The fuzz_* tests are
# left out: they build and run their own sanitized clang tree, the same in every build, and the default suite
# runs them. scripts/test.sh runs this after the default suite. Idempotent and incremental.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="${FX_JOBS:-$(nproc)}"
cd "$root"
"$root/scripts/install-deps.sh"

# Configuring every time costs seconds and re-applies the preset's cache variables to an older build-asan/.
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$jobs"
ctest --preset asan -j "$jobs" --timeout 900
