#!/usr/bin/env bash
# Times fusion-explorer on generated transformers (offscreen): time to first picture, Find of a node in the middle
# layer (collapsed at first: Find expands it) to the picture showing it, "Accept all profitable" to the updated
# picture, and peak memory, for 48, 330 and 3,300 layers (1,440, 9,900 and 99,000 nodes); then the
# engine's auto-fuse alone on the largest (fusion-cli fuse --auto, less its load time). Prints a Markdown table
# for docs/gui.md, with the machine and its load, and each process's CPU time beside its wall time (on a shared
# machine the wall time includes waiting for a core).
# Usage: scripts/bench-gui.sh [BUILD_DIR] [LAYERS...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
layers=("$@")
[ ${#layers[@]} -gt 0 ] || layers=(48 330 3300)
app="$build/app/gui/fusion-explorer"
cli="$build/app/cli/fusion-cli"
[ -x "$app" ] && [ -x "$cli" ] || { echo "build fusion-explorer and fusion-cli in $build first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time for CPU times: apt-get install time" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Private settings and caches, no display needed, no dialog can wait for an answer.
export XDG_CONFIG_HOME="$tmp/config" XDG_CACHE_HOME="$tmp/cache" QT_QPA_PLATFORM=offscreen

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| layers | nodes | first picture | find in a collapsed layer -> picture | accept all -> picture | peak memory | wall / CPU of the run |"
echo "|---|---|---|---|---|---|---|"
for n in "${layers[@]}"; do
  out="$tmp/gui-$n.txt"
  /usr/bin/time -f "%e %U %S" -o "$tmp/time-$n" "$app" --timing --find "l$((n / 2)).probs" --auto-fuse \
    --transformer "$n" > "$out"
  first=$(sed -n 's/^time to first picture: //p' "$out")
  find=$(sed -n 's/^find "[^"]*" to the picture showing it: //p' "$out")
  accept=$(sed -n 's/^accept all profitable to updated picture: //p' "$out")
  peak=$(sed -n 's/^peak memory: //p' "$out")
  read -r wall user sys < "$tmp/time-$n"
  cpu=$(awk "BEGIN { print $user + $sys }")
  echo "| $n | $((n * 30)) | $first | $find | $accept | $peak | ${wall} s / ${cpu} s |"
done

big="${layers[-1]}"
"$cli" generate transformer --layers "$big" > "$tmp/t.json"
/usr/bin/time -f "%e %U %S" -o "$tmp/load" "$cli" info "$tmp/t.json" > /dev/null
/usr/bin/time -f "%e %U %S" -o "$tmp/fuse" "$cli" fuse "$tmp/t.json" --auto -o "$tmp/t.fused.json" > /dev/null
read -r lw lu ls < "$tmp/load"
read -r fw fu fs < "$tmp/fuse"
echo
echo "engine, $((big * 30)) nodes: fusion-cli fuse --auto ${fw} s wall / $(awk "BEGIN { print $fu + $fs }") s CPU;" \
     "fusion-cli info (load and analysis only) ${lw} s wall / $(awk "BEGIN { print $lu + $ls }") s CPU"
