# fish completion for fencelockd. Its flags are read from `fencelockd --help` when fish first
# completes fencelockd, so they match the installed binary.

complete -c fencelockd -f
complete -c fencelockd -n __fish_is_first_arg -a keys -d 'manage the API key file'
for flag in (fencelockd --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | string replace -- -- '' |
        sort -u)
    switch $flag
        case config '*-file' tls-cert tls-key tls-client-ca
            complete -c fencelockd -l $flag -r -F
        case '*'
            complete -c fencelockd -l $flag
    end
end
