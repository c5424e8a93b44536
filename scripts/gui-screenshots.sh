#!/usr/bin/env bash
# The pictures of docs/gui.md (Before | After of gpt2_block, a why-not answer drawn on the graph) and of
# docs/workshop.md (a lesson's revealed prediction in instructor mode), taken under Xvfb with private settings. Usage: scripts/gui-screenshots.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
app="$build/app/gui/fusion-explorer"
[ -x "$app" ] || { echo "build fusion-explorer first: cmake --build $build --target fusion-explorer" >&2; exit 2; }
export XDG_CONFIG_HOME="$(mktemp -d)" XDG_CACHE_HOME="$(mktemp -d)"
trap 'rm -rf "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME"' EXIT
shot() { xvfb-run -a -s "-screen 0 1600x1000x24" "$app" --auto-fuse --screenshot "$@"; }
shot "$root/docs/gui-before-after.png" --view side-by-side "$root/sample_graphs/gpt2_block.json"
shot "$root/docs/gui-why-not.png" --why-not q_b,masked "$root/sample_graphs/gpt2_block.json"
# A 1600x900 projector: --instructor takes the whole screen.
xvfb-run -a -s "-screen 0 1600x900x24" "$app" --lesson 02-vertical-fusion --lesson-step 2 --answer 1024 --instructor \
  --screenshot "$root/docs/workshop-lesson.png"
echo "wrote docs/gui-before-after.png, docs/gui-why-not.png and docs/workshop-lesson.png"
