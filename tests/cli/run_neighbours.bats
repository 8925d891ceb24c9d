#!/usr/bin/env bats
# Several fitrun runs beside each other in one cgroup never hurt each other
# (tests/stress/neighbours.py, a bounded run): a python-preset run of ARC
# predictions and an exec run in its own pid namespace live through the
# test while churners start short runs beside them (python and exec, a
# third in their own pid namespace), interrupt them with SIGINT, SIGTERM
# or SIGKILL and resume them. The long runs must exit 0 with every result
# right, no run may be SIGKILLed by anyone but the test, every resumed run
# must end with one right result per job, and nothing may be left: no
# fitrun cgroup, no process, no file. Real v1 cgroups, in a cgroup the
# test makes for itself below this shell's (root only; skipped elsewhere).
# The seed is random and printed: rerun a failure with --seed S.

load run_common

FITRUN_SHARED=${FITRUN_SHARED:-$FITRUN_SRC/../shared}

setup() {
    run_setup
    [ "$(id -u)" = 0 ] || skip "needs root to create cgroups and pid namespaces"
    command -v unshare > /dev/null || skip "no unshare"
    [ -d "$FITRUN_SHARED/data/arc-agi-1/training" ] || skip "no ARC data in $FITRUN_SHARED"
}

teardown() {
    run_teardown
}

@test "runs started, interrupted and resumed beside a live run and a live run in its own pid namespace: none hurts another" {
    FITRUN=$FITRUN FITRUN_SHARED=$FITRUN_SHARED run /usr/bin/python3 "$FITRUN_SRC/tests/stress/neighbours.py" --seconds 12
    echo "$output" # shown when the test fails: the seed, the broken promise, the directory kept
    [ "$status" -ne 77 ] || skip "${lines[-1]}"
    [ "$status" -eq 0 ]
    [[ "$output" == *"nothing left: no fitrun cgroup, no process, no file"* ]]
}
