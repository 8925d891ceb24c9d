#!/usr/bin/env bats
# Zombie reaping: orphaned grandchildren are re-parented to fitrun (PID 1,
# or the child subreaper with --init) and must be reaped while the main
# child still runs. tests/helpers/wrap_orphan makes the orphans and checks
# /proc itself: exit 0 = every orphan vanished, 1 = a zombie was left.

load wrap_common

@test "control: wrap_orphan reports zombies nobody reaps" {
    # It makes itself the subreaper and never reaps: the check must fail.
    run -1 "$HELPERS/wrap_orphan" --self-subreaper 3 1
    [[ "$output" == *"state Z"* ]]
    [[ "$output" == *"0 of 3 orphans reaped"* ]]
}

@test "orphaned grandchildren are reaped (--init, child subreaper)" {
    run -0 fr subreaper -q -- "$HELPERS/wrap_orphan" 20 10
    [[ "$output" == *"20 of 20 orphans reaped"* ]]
}

@test "orphaned grandchildren are reaped (PID 1 of a PID namespace)" {
    needs_root
    run -0 fr pid1 -q -- "$HELPERS/wrap_orphan" 20 10
    [[ "$output" == *"20 of 20 orphans reaped"* ]]
}

@test "no zombie children of fitrun remain while it runs (--init)" {
    # Orphans that die while the main child sleeps on: look at fitrun's
    # children in /proc from the outside.
    fr subreaper -q -- sh -c '
        for i in 1 2 3 4 5; do (sleep 0.2 &) ; done
        sleep 1.5' 3>&- &
    local bg=$!
    bg_track "$bg"
    sleep 1 # the orphans have died (0.2 s) and the main child still sleeps
    local c state zombies=0
    for c in $(cat /proc/"$bg"/task/*/children); do
        state=$(sed 's/.*) \(.\).*/\1/' "/proc/$c/stat")
        [ "$state" != Z ] || zombies=$((zombies + 1))
    done
    wait "$bg"
    [ "$zombies" -eq 0 ]
}

@test "as PID 1, fitrun reaps orphans and still returns the main child's status" {
    needs_root
    run -3 fr pid1 -q -- sh -c '(sleep 0.1 &); (sleep 0.1 &); sleep 0.5; exit 3'
}
