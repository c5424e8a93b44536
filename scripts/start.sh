#!/usr/bin/env bash
# The main command: installs what is missing, builds, and opens Fusion Explorer on a sample graph.
# Usage: scripts/start.sh [GRAPH.json]   (default: sample_graphs/relu_mul_add.json)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build="${FX_BUILD_DIR:-$root/build}"
graph="${1:-$root/sample_graphs/relu_mul_add.json}"

if [[ -x "$build/app/gui/fusion-explorer" ]]; then
  if [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" && -z "${QT_QPA_PLATFORM:-}" ]]; then
    echo "start: no display found; running under a virtual X server (xvfb-run). Set DISPLAY to see the window." >&2
    exec xvfb-run -a -s "-screen 0 1600x1000x24" "$build/app/gui/fusion-explorer" "$graph"
  fi
  exec "$build/app/gui/fusion-explorer" "$graph"
fi
echo "start: the GUI was not built (Qt 6 or Graphviz missing); showing the analysis with fusion-cli" >&2
"$build/app/cli/fusion-cli" info "$graph"
if "$build/app/cli/fusion-cli" --help | grep -q '^  analyze'; then
  exec "$build/app/cli/fusion-cli" analyze "$graph"
fi
