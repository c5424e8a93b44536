#!/usr/bin/env bash
# resources/completion/fusion-cli.bash against a built fusion-cli: verbs after the program, a verb's own options
# after a dash, files otherwise. Usage: test_completion.sh COMPLETION_SCRIPT FUSION_CLI
set -euo pipefail
source "$1"
cli=$2
complete_words() {  # the words typed so far, the last one being completed
  COMP_WORDS=("$cli" "$@")
  COMP_CWORD=$#
  COMPREPLY=()
  _fusion_cli
  printf '%s\n' "${COMPREPLY[@]}"
}
expect() {  # WORD OUTPUT: OUTPUT lists WORD on a line of its own
  grep -qx -- "$1" <<< "$2" || { echo "FAILED: '$1' not offered; got:"; echo "$2"; exit 1; }
}
reject() {
  if grep -qx -- "$1" <<< "$2"; then echo "FAILED: '$1' offered; got:"; echo "$2"; exit 1; fi
}
out=$(complete_words "")
expect analyze "$out"
expect import "$out"
expect validate "$out"
out=$(complete_words an)
expect analyze "$out"
reject fuse "$out"
out=$(complete_words fuse --a)
expect --auto "$out"
expect --accept "$out"
out=$(complete_words validate --)
expect --json "$out"
expect --quiet "$out"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
touch "$dir/graph.json"
out=$(complete_words info "$dir/gr")
expect "$dir/graph.json" "$out"
echo "completion ok"
