#!/usr/bin/env bats
# fitrun run, interrupted at random points and resumed (tests/stress/resume.py,
# a bounded run): SIGINT, SIGTERM, SIGHUP, SIGKILL, a results file cut inside
# its last line or given a garbage line, a jobs file appended to or edited,
# then --resume, until a run ends by itself. Every non-blank input line of
# the shard must end with exactly one result, for the id that line holds,
# with the status it deserves; nothing lost, nothing twice. The seed is
# random and printed: rerun a failure with --seed S.

load run_common

stress() {
    run /usr/bin/python3 "$FITRUN_SRC/tests/stress/resume.py" --jobs 80 --rounds 5 "$@"
    echo "$output" # shown when the test fails: the seed, the rounds, the broken invariant
    [ "$status" -eq 0 ]
}

@test "interrupted and resumed at random, exec jobs: --jobs FILE, --jobs - (a file, a slow pipe), --out - then --resume" {
    stress --mode file --mode stdin --mode pipe --mode stdout
}

@test "interrupted and resumed at random: --shard 1/3 and 0/3, and python predictions" {
    stress --mode shard --mode python
}
