# fish completion for fencelock, the command-line client of fencelockd. Commands and options are
# read from `fencelock --help` when fish first completes fencelock, so they match the installed
# binary.

set -l __fencelock_help (fencelock --help 2>/dev/null | string collect)
set -g __fencelock_commands (string replace -rf '^  ([a-z][a-z-]*) .*' '$1' -- \
    (string split \n -- $__fencelock_help | sed -n '/^Commands:/,/^$/p') | sort -u)

function __fencelock_after_dashdash -d "true after `--`: the rest is the command to run"
    contains -- -- (commandline -opc)
end

function __fencelock_needs_command -d "true until a command word is on the line"
    set -l tokens (commandline -opc)
    for token in $tokens[2..-1]
        contains -- $token -- $__fencelock_commands; and return 1
    end
    return 0
end

function __fencelock_command_to_run
    set -l tokens (commandline -opc) (commandline -ct)
    set -l at (contains -i -- -- $tokens)
    __fish_complete_subcommand --commandline $tokens[(math $at + 1)..-1]
end

complete -c fencelock -f
complete -c fencelock -n __fencelock_after_dashdash -x -a '(__fencelock_command_to_run)'
complete -c fencelock -n '__fencelock_needs_command; and not __fencelock_after_dashdash' \
    -a "$__fencelock_commands"

# Options are the --words that start a line, open a [bracket] or take a VALUE; not the ones
# mentioned in passing (fencelockd's flags, say).
for option in (string split \n -- $__fencelock_help |
        grep -oE -- '(^ *(-[a-z], )?|\[)--[a-z][a-z-]*|--[a-z][a-z-]* [A-Z]+' | grep -oE -- '--[a-z][a-z-]*' |
        string replace -- -- '' | sort -u)
    switch $option
        case cacert cert key
            complete -c fencelock -n 'not __fencelock_after_dashdash' -l $option -r -F
        case endpoint timeout api-key ttl wait grace owner name permits request-id token limit
            complete -c fencelock -n 'not __fencelock_after_dashdash' -l $option -x
        case '*'
            complete -c fencelock -n 'not __fencelock_after_dashdash' -l $option
    end
end
