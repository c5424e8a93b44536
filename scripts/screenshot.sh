#!/usr/bin/env bash
# Starts fusion-explorer under Xvfb on a sample graph with auto-fuse applied and saves the window as a PNG.
# Usage: scripts/screenshot.sh [GRAPH] [OUT.png] [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
graph="${1:-$root/sample_graphs/gpt2_block.json}"
out="${2:-$root/docs/fusion-explorer.png}"
build="${3:-$root/build-gui}"
app="$build/app/gui/fusion-explorer"
[ -x "$app" ] || { echo "build fusion-explorer first: cmake --build $build --target fusion-explorer" >&2; exit 2; }
mkdir -p "$(dirname "$out")"
# A private settings folder, so the picture does not depend on the user's saved window state.
export XDG_CONFIG_HOME="$(mktemp -d)"
trap 'rm -rf "$XDG_CONFIG_HOME"' EXIT
xvfb-run -a -s "-screen 0 1600x1000x24" "$app" --auto-fuse --screenshot "$out" "$graph"
echo "wrote $out"
