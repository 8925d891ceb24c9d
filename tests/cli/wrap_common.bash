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
# It execs, so that `fr ... &` gives fitrun's (or unshare's) pid in $!:
# only call it in a subshell (run, &, $(...)).
fr() {
    local mode=$1
    shift
    case "$mode" in
    exec) exec "$FITRUN" "$@" ;;
    subreaper) exec "$FITRUN" --init "$@" ;;
    pid1) exec unshare --pid --fork --mount-proc "$FITRUN" "$@" ;;
    *) echo "fr: unknown mode $mode" >&2; return 99 ;;
    esac
}

# wait_for: see poll_common.bash
load poll_common
load proc_common

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

# Background jobs of a test: `bg_track $!` after starting one; teardown
# kills what is left of each tree (by pid, children first), so a failing
# test leaves no process behind. fitrun blocks SIGTERM (it forwards it), so
# SIGKILL is the only way. A tracked job the test has already waited for
# may have left its pid to another process: teardown signals it only while
# the pid still names the job (proc_common: its start time). A stopped
# process cannot reap its children, so their pids stay theirs.
BG_PIDS=()
bg_track() { BG_PIDS+=("$(proc_id "$1")"); }

kill_tree() {
    local pid=$1 c
    kill -STOP "$pid" 2>/dev/null || return 0
    for c in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do
        kill_tree "$c"
    done
    kill -KILL "$pid" 2>/dev/null || true
}

# cgroups a test created: removed in teardown too (rmdir only works once
# empty, which is what we want: never remove a cgroup with processes).
CGROUPS=()
cg_track() { CGROUPS+=("$1"); }

teardown() {
    local p
    for p in "${BG_PIDS[@]}"; do
        ! proc_is "$p" || kill_tree "${p%%:*}"
    done
    for p in "${CGROUPS[@]}"; do
        [ ! -d "$p" ] || rmdir "$p"
    done
}
