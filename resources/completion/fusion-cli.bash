# bash completion for fusion-cli: its verbs, and each verb's options, read from the program's own --help texts so
# that they never drift from it; files otherwise ("-" is stdin or stdout).
_fusion_cli() {
  local cur=${COMP_WORDS[COMP_CWORD]} prog=${COMP_WORDS[0]} words
  if ((COMP_CWORD == 1)); then
    words=$("$prog" --help 2>/dev/null | awk '/^verbs:/ {v = 1; next} v && /^  [a-z]/ {print $1}')
    mapfile -t COMPREPLY < <(compgen -W "$words --help --help-all --version" -- "$cur")
  elif [[ $cur == -* ]]; then
    words=$("$prog" "${COMP_WORDS[1]}" --help 2>/dev/null | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
    mapfile -t COMPREPLY < <(compgen -W "$words --help" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
}
complete -o filenames -o bashdefault -F _fusion_cli fusion-cli
