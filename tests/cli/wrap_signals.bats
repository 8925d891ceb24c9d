#!/usr/bin/env bats
# Signal forwarding as init: every catchable signal sent to fitrun reaches
# the child (or with --forward-to-group its whole process group), one at a
# time, recorded by tests/helpers/wrap_sigrecorder — as a subreaper
# (--init) and as PID 1 of a PID namespace. SIGTTIN/SIGTTOU/SIGCHLD are
# fitrun's own and never forwarded (docs/entrypoint.md).

load wrap_common

# Every signal 1..64 except: KILL and STOP (cannot be caught), CHLD (means
# "reap" to fitrun), TTIN and TTOU (ignored by fitrun), and 32/33 (glibc's
# internal real-time signals). SIGRTMIN is 34 with glibc.
all_signals() {
    local s
    for s in $(seq 1 64); do
        case $s in 9 | 17 | 19 | 21 | 22 | 32 | 33) ;; *) echo "$s" ;; esac
    done
}

# deliver MODE FORK FITRUN_OPTIONS... — start the recorder under fitrun,
# send every signal to fitrun, each only after the previous one was
# recorded (standard signals coalesce; order of delivery is then the order
# of sending), and check the recorded list. FORK=1: the recorder has a
# second process in its group, which must get everything when
# --forward-to-group is given, and only fitrun's cleanup otherwise.
deliver() {
    local mode=$1 fork=$2
    shift 2
    local rec=$BATS_TEST_TMPDIR/rec sigs n bg pid group=0
    sigs=($(all_signals))
    [[ " $* " == *" --forward-to-group "* ]] && group=1
    local rargs=(--exit-after "${#sigs[@]}")
    ((fork)) && rargs=(--fork "${rargs[@]}")
    fr "$mode" -q --grace 1s "$@" -- "$HELPERS/wrap_sigrecorder" "${rargs[@]}" "$rec" 3>&- &
    bg=$!
    bg_track "$bg"
    pid=$(fitrun_pid "$mode" "$bg")
    wait_for test -e "$rec.ready"
    ((fork)) && wait_for test -e "$rec.child.ready"
    for n in "${sigs[@]}"; do
        kill -"$n" "$pid"
        wait_for grep -qx "$n" "$rec"
        if ((group)); then wait_for grep -qx "$n" "$rec.child"; fi
    done
    wait "$bg" # the recorder exits 0 after the last signal; so does fitrun
    diff <(printf '%s\n' "${sigs[@]}") "$rec"
    if ((fork && group)); then
        diff <(printf '%s\n' "${sigs[@]}") "$rec.child"
    elif ((fork)); then
        # Not forwarded to the group: the second member only saw fitrun's
        # cleanup after the main child exited: SIGTERM, then SIGCONT (whose
        # handler may interrupt the first one, hence the sort).
        diff <(printf '15\n18\n') <(sort -n "$rec.child")
    fi
}

@test "every catchable signal is forwarded to the child (--init)" { deliver subreaper 0; }
@test "every catchable signal is forwarded to the child (PID 1)" { needs_root; deliver pid1 0; }
@test "--forward-to-group delivers every signal to the whole group (--init)" {
    deliver subreaper 1 --forward-to-group
}
@test "--forward-to-group delivers every signal to the whole group (PID 1)" {
    needs_root
    deliver pid1 1 --forward-to-group
}
@test "without --forward-to-group only the child gets them; the group gets the cleanup (--init)" {
    deliver subreaper 1
}

# SIGTTIN/SIGTTOU/SIGCHLD sent to fitrun: not forwarded, and fitrun is not
# stopped. A SIGUSR1 afterwards must be the only thing recorded.
not_forwarded() {
    local mode=$1 rec=$BATS_TEST_TMPDIR/rec bg pid
    fr "$mode" -q -- "$HELPERS/wrap_sigrecorder" --exit-after 1 "$rec" 3>&- &
    bg=$!
    bg_track "$bg"
    pid=$(fitrun_pid "$mode" "$bg")
    wait_for test -e "$rec.ready"
    kill -TTIN "$pid"
    kill -TTOU "$pid"
    kill -CHLD "$pid"
    sleep 0.3 # give a wrong forward time to show up before the marker
    local state
    state=$(sed 's/.*) \(.\).*/\1/' "/proc/$pid/stat")
    [ "$state" != T ] || { echo "fitrun was stopped"; kill -CONT "$pid"; return 1; }
    kill -USR1 "$pid"
    wait "$bg"
    diff <(echo 10) "$rec"
}

@test "SIGTTIN, SIGTTOU and SIGCHLD are not forwarded (--init)" { not_forwarded subreaper; }
@test "SIGTTIN, SIGTTOU and SIGCHLD are not forwarded (PID 1)" { needs_root; not_forwarded pid1; }

@test "a signal that kills the child gives 128+N after forwarding (--init)" {
    fr subreaper -q -- sleep 1000 3>&- &
    local bg=$!
    bg_track "$bg"
    wait_for pgrep -P "$bg" sleep >/dev/null
    kill -TERM "$bg"
    local rc=0
    wait "$bg" || rc=$?
    [ "$rc" -eq 143 ]
}

@test "a signal that kills the child gives 128+N after forwarding (PID 1)" {
    needs_root
    fr pid1 -q -- sleep 1000 3>&- &
    local bg=$! pid
    bg_track "$bg"
    pid=$(fitrun_pid pid1 "$bg")
    wait_for pgrep -P "$pid" sleep >/dev/null
    kill -USR1 "$pid"
    local rc=0
    wait "$bg" || rc=$?
    [ "$rc" -eq 138 ]
}
