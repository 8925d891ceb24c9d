#!/usr/bin/env bats
# Several launchers on one node: each `fitrun run --shard K/N` pinned to its
# own CPUs (taskset here; a cgroup cpuset is read the same way) sizes its
# pool to those CPUs, keeps its jobs on them, and `fitrun merge` gets every
# job exactly once (docs/scale-out.md, "Several launchers on one node").

bats_require_minimum_version 1.5.0

setup() {
    FITRUN=${FITRUN:-$BATS_TEST_DIRNAME/../../build/fitrun}
    D=$(mktemp -d /tmp/fitrun-test-node-shards.XXXXXX)
    cd "$D"
    # Each job prints its usable CPUs and its pool's size.
    for i in $(seq 1 24); do
        if ((i % 2)); then
            printf '{"id":"j%d","argv":["env","-u","OMP_NUM_THREADS","-u","OMP_THREAD_LIMIT","nproc"]}\n' "$i"
        else
            printf '{"id":"j%d","argv":["printenv","FITRUN_WORKERS"]}\n' "$i"
        fi
    done > jobs.jsonl
}

teardown() {
    cd /
    rm -rf "$D"
}

@test "two launchers, one CPU each, --shard K/2: pools of one, jobs on their CPU, merge complete" {
    command -v taskset || skip "no taskset"
    [ "$(nproc)" -ge 2 ] || skip "needs 2 usable CPUs"
    read -r c0 c1 < <(/usr/bin/python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')
    taskset -c "$c0" "$FITRUN" run --jobs jobs.jsonl --shard 0/2 --out 'results.{shard}.jsonl' --quiet &
    p0=$!
    taskset -c "$c1" "$FITRUN" run --jobs jobs.jsonl --shard 1/2 --out 'results.{shard}.jsonl' --quiet &
    p1=$!
    wait "$p0"
    wait "$p1"
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl results.0.jsonl results.1.jsonl
    [ "$status" -eq 0 ]
    echo "$output" > merged.jsonl
    [ "$(jq -r .id merged.jsonl | sort -V | tr '\n' ' ')" = "$(seq 1 24 | sed 's/^/j/' | tr '\n' ' ')" ]
    # Every job ran, on a pool of one worker, and saw one CPU.
    [ "$(jq -r 'select(.status == "ok") | .id' merged.jsonl | wc -l)" -eq 24 ]
    [ "$(jq -r '.worker' merged.jsonl | sort -u)" = 0 ]
    [ "$(jq -r '.stdout | rtrimstr("\n")' merged.jsonl | sort -u)" = 1 ]
    # Each shard's file holds only its own lines: (line - 1) mod 2 = K.
    [ "$(jq -r '(.line - 1) % 2' results.0.jsonl | sort -u)" = 0 ]
    [ "$(jq -r '(.line - 1) % 2' results.1.jsonl | sort -u)" = 1 ]
}
