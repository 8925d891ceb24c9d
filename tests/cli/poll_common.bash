# poll_common.bash — small helpers shared by the *_common.bash files.

# wait_for CMD... — poll (10 ms steps) until CMD succeeds; fail after 10 s.
wait_for() {
    local i
    for ((i = 0; i < 1000; i++)); do
        "$@" && return 0
        sleep 0.01
    done
    echo "timed out waiting for: $*" >&2
    return 1
}
