#!/usr/bin/env bash
# Checks the bash, zsh and fish completion of fencelock and fencelockd as installed under PREFIX
# (bin/, share/bash-completion, share/zsh/vendor-completions, share/fish/vendor_completions.d),
# each by the shell itself: bash runs the completion function, zsh completes a typed line on a
# pseudo-terminal (tests/completion/complete.zsh), fish answers `complete -C`.
#   scripts/check-completion.sh PREFIX
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(realpath "$1")
scripts/install-deps.sh
export PATH=$prefix/bin:$PATH
work=$(mktemp -d "${TMPDIR:-/tmp}/fencelock-completion.XXXXXX")
trap 'rm -rf "$work"' EXIT
touch "$work/ca.pem"
fail() { echo "check-completion: FAIL: $*" >&2; exit 1; }

# The words each shell offers for a command line (its last word is the one being completed),
# sorted, on one line.
complete_bash() {
  bash -c "source '$prefix/share/bash-completion/completions/$1'
    read -ra COMP_WORDS <<<\"\$2\"; [[ \$2 == *' ' ]] && COMP_WORDS+=('')
    COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1)); _$1; printf '%s\n' \"\${COMPREPLY[@]}\"" _ "$1" "$2" |
    sed 's|.*/||' | sort -u | paste -sd' '
}
complete_zsh() {
  zsh tests/completion/complete.zsh "$prefix/share/zsh/vendor-completions" "$2" | sed 's|.*/||' |
    paste -sd' '
}
complete_fish() {
  fish -N -c "source '$prefix/share/fish/vendor_completions.d/$1.fish'; complete -C \$argv[1]" "$2" |
    cut -f1 | sed 's|.*/||' | sort -u | paste -sd' '
}

# expect LINE EXACT-ANSWER, or expect LINE '*WORD*' for an answer that contains WORD.
expect() {
  local program=${1%% *} shell got
  for shell in bash zsh fish; do
    got=$("complete_$shell" "$program" "$1")
    # shellcheck disable=SC2053  # the expected answer may be a pattern
    [[ $got == $2 ]] || fail "$shell completes '$1' as '$got', expected '$2'"
  done
}
expect 'fencelock acq' 'acquire'
# An empty word lists each command once (bash listed `run` four times, once per usage line).
expect 'fencelock ' 'acquire extend list release revoke run semaphore status token watch'
expect 'fencelock watch --token ' ''
expect 'fencelock --sk' '--skip-if-locked'
expect 'fencelock --verb' '--verbose'
expect 'fencelock list --sem' '--semaphores'
expect 'fencelock list --rw' '--rwlocks'
expect 'fencelock status ' ''
expect 'fencelock --ttl ' ''
expect "fencelock --cacert $work/c" '*ca.pem*'
expect 'fencelock run x -- ech' '*echo*'
expect 'fencelockd --tls-ce' '--tls-cert'
expect 'fencelockd ' 'keys'
echo "check-completion: bash, zsh and fish complete fencelock and fencelockd"
