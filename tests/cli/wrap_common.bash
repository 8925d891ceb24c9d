# wrap_common.bash — shared by tests/cli/wrap_*.bats (load wrap_common).
#
# fitrun runs in three modes in these tests:
#   exec       fitrun -- CMD             (plain wrapper: fitrun becomes CMD)
#   subreaper  fitrun --init -- CMD      (init duties outside a PID namespace)
#   pid1       unshare --pid --fork --mount-proc fitrun -- CMD
#                                        (PID 1 of a new PID namespace: init automatically)

bats_require_minimum_version 1.5.0 # run -N

FITRUN=${FITRUN:?FITRUN must point at the fitrun binary}
FITRUN_BUILD=${FITRUN_BUILD:-$(dirname "$FITRUN")}
HELPERS=$FITRUN_BUILD/tests/helpers

# fr MODE ARGS... — run fitrun in MODE; ARGS are fitrun's options and CMD.
fr() {
    local mode=$1
    shift
    case "$mode" in
    exec) "$FITRUN" "$@" ;;
    subreaper) "$FITRUN" --init "$@" ;;
    pid1) unshare --pid --fork --mount-proc "$FITRUN" "$@" ;;
    *) echo "fr: unknown mode $mode" >&2; return 99 ;;
    esac
}

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

# The pid of fitrun for a background job started as `fr MODE ...` (in pid1
# mode $! is unshare, and fitrun is its only child).
fitrun_pid() {
    local mode=$1 bgpid=$2 child=
    if [ "$mode" != pid1 ]; then
        echo "$bgpid"
        return
    fi
    wait_for pgrep -P "$bgpid" >/dev/null || return 1
    child=$(pgrep -P "$bgpid")
    echo "$child"
}

# Milliseconds since the epoch.
now_ms() { echo $(($(date +%s%N) / 1000000)); }

needs_root() {
    [ "$(id -u)" = 0 ] || skip "needs root (namespaces, mounts)"
}
