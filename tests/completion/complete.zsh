#!/usr/bin/env zsh
# Prints the matches zsh's completion offers for a command line, one per line, by typing the line
# and a Tab into an interactive zsh on a pseudo-terminal (zsh/zpty) whose compadd also writes
# down what it adds.
#   zsh complete.zsh FPATH_DIR 'fencelock acq'
emulate -L zsh
fpath_dir=$1 line=$2
out=$(mktemp -d "${TMPDIR:-/tmp}/zsh-complete.XXXXXX")
zmodload zsh/zpty
zpty complete zsh -f -i
zpty -w complete "PROMPT= RPROMPT= fpath=(${(q)fpath_dir} \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w complete "compadd() { local -a m; builtin compadd -O m \"\$@\"; print -rl -- \$m >>| ${(q)out}/matches; builtin compadd \"\$@\"; }"
zpty -w complete "capture() { zle complete-word; print >| ${(q)out}/done; }; zle -N capture; bindkey '^I' capture"
zpty -w -n complete "$line"$'\t'
for i in {1..100}; do
  [[ -e $out/done ]] && break
  sleep 0.1
done
zpty -d complete
if [[ ! -e $out/done ]]; then
  print -u2 "complete.zsh: no completion within 10 s for '$line'"
  rm -rf $out
  exit 1
fi
[[ -e $out/matches ]] && sort -u $out/matches
rm -rf $out
