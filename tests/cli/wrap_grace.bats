#!/usr/bin/env bats
# After the main child exits, fitrun SIGTERMs what remains of its process
# group, waits --grace, SIGKILLs, reaps, and only then exits with the main
# child's status. Time bounds are loose on purpose (shared, noisy machine):
# they only tell "waited for the grace period" from "did not", and "killed"
# from "hung".

load wrap_common

@test "a SIGTERM-ignoring leftover is SIGKILLed after --grace (--init)" {
    local pidfile=$BATS_TEST_TMPDIR/left.pid t0 t1
    t0=$(now_ms)
    run -3 fr subreaper --grace 1s -- "$HELPERS/wrap_ignoreterm" "$pidfile" 3
    t1=$(now_ms)
    [[ "$output" == *"still running after the grace period: sending SIGKILL"* ]]
    local left
    left=$(cat "$pidfile")
    # Gone for good (not even a zombie: fitrun reaped it before exiting).
    [ ! -e "/proc/$left" ]
    [ $((t1 - t0)) -ge 1000 ]  # it did wait for the grace period
    [ $((t1 - t0)) -lt 20000 ] # and did not hang
}

@test "a SIGTERM-ignoring leftover is SIGKILLed after --grace (PID 1)" {
    needs_root
    local pidfile=$BATS_TEST_TMPDIR/left.pid t0 t1
    t0=$(now_ms)
    run -4 fr pid1 --grace 500ms -- "$HELPERS/wrap_ignoreterm" "$pidfile" 4
    t1=$(now_ms)
    [[ "$output" == *"sending SIGKILL"* ]]
    [ $((t1 - t0)) -ge 500 ]
    [ $((t1 - t0)) -lt 20000 ]
}

@test "leftovers that obey SIGTERM end the wait early (--init)" {
    # The background sleep stays in the group; a 60 s grace would show.
    local t0 t1
    t0=$(now_ms)
    run -5 fr subreaper -q --grace 60s -- sh -c 'sleep 1000 & echo $! >"$0"; exit 5' "$BATS_TEST_TMPDIR/pid"
    t1=$(now_ms)
    [ ! -e "/proc/$(cat "$BATS_TEST_TMPDIR/pid")" ]
    [ $((t1 - t0)) -lt 20000 ]
}

@test "leftovers that obey SIGTERM end the wait early (PID 1)" {
    needs_root
    local t0 t1
    t0=$(now_ms)
    run -6 fr pid1 -q --grace 60s -- sh -c 'sleep 1000 & exit 6'
    t1=$(now_ms)
    [ $((t1 - t0)) -lt 20000 ]
}

@test "a stopped leftover still gets to act on SIGTERM (SIGCONT follows)" {
    local t0 t1
    t0=$(now_ms)
    run -0 fr subreaper -q --grace 60s -- sh -c 'sleep 1000 & kill -STOP $!; echo $! >"$0"' "$BATS_TEST_TMPDIR/pid"
    t1=$(now_ms)
    [ ! -e "/proc/$(cat "$BATS_TEST_TMPDIR/pid")" ]
    [ $((t1 - t0)) -lt 20000 ]
}

@test "--grace 0 kills the leftovers at once" {
    local pidfile=$BATS_TEST_TMPDIR/left.pid t0 t1
    t0=$(now_ms)
    run -0 fr subreaper -q --grace 0 -- "$HELPERS/wrap_ignoreterm" "$pidfile" 0
    t1=$(now_ms)
    [ ! -e "/proc/$(cat "$pidfile")" ]
    [ $((t1 - t0)) -lt 20000 ]
}

@test "processes outside the child's group are not touched by the cleanup" {
    # setsid puts the sleeper in its own session/group: not fitrun's to
    # kill (with --init it is reparented on, and survives fitrun). The main
    # child waits until setsid has happened, or the cleanup could win the race.
    run -0 fr subreaper -q --grace 1s -- sh -c '
        setsid sleep 30 </dev/null >/dev/null 2>&1 &
        p=$!
        echo $p >"$0"
        while [ "$(cut -d" " -f6 /proc/$p/stat)" = "$(cut -d" " -f6 /proc/$$/stat)" ]; do sleep 0.01; done' \
        "$BATS_TEST_TMPDIR/pid"
    local p
    p=$(cat "$BATS_TEST_TMPDIR/pid")
    [ -e "/proc/$p" ]
    kill -KILL "$p"
}
