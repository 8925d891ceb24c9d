#!/usr/bin/env bats
# fitrun run: no process of a job survives — its process group, children
# that start their own session, double-forked daemons, on timeout and on a
# normal exit, checked with the pids the children wrote.

load run_common

setup() { run_setup; }
teardown() {
    # never leave a sleeper behind, whatever the test did; a pid whose
    # sleeper is gone (what the tests check) may be another process's now
    local f p
    for f in "$D"/pid.*; do
        [ -f "$f" ] && p=$(cat "$f") && proc_runs "$p" sleep 300 && kill -9 "$p" 2> /dev/null || true
    done
    run_teardown
}

# A shell job that leaves three kinds of descendants and then sleeps:
#   pid.group   a background child in the job's process group
#   pid.session a child that called setsid (its own session and group)
#   pid.daemon  a double fork: its parent exits, it is re-parented, setsid
TREE='sleep 300 & echo $! > pid.group.$1
setsid sleep 300 & echo $! > pid.session.$1
(setsid sh -c "sleep 300 & echo \$! > pid.daemon.$1; wait" &)
while [ ! -s pid.daemon.$1 ]; do sleep 0.01; done
'

# The jobs write their pid files into $D (root's 0700 temporary directory):
# fitrun's identity, and $D writable.
TREE_OPTS=(--preset none --set sandbox.processes=none --set sandbox.user=root)

tree_job() { # tree_job ID THEN...: the tree, then THEN (a shell command)
    local id=$1
    shift
    jq -cn --arg id "$id" --arg s "cd '$D'; $TREE $*" '{id: $id, argv: ["sh", "-c", $s, "sh", $id]}'
}

pids_of() { cat "$D"/pid.*."$1"; }

@test "timeout: the whole tree of the job is killed, nothing is left behind" {
    tree_job t1 'sleep 300' > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet "${TREE_OPTS[@]}" --set sandbox.write="$D" --wall-time 1s
    [ "$(field out.jsonl t1 status)" = timeout ]
    [ "$(field out.jsonl t1 timeout)" = wall ]
    [ "$(pids_of t1 | wc -l)" -eq 3 ]
    run ! alive $(pids_of t1)
}

@test "a job that exits normally leaves nothing behind either" {
    tree_job t2 'echo done' > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet "${TREE_OPTS[@]}" --set sandbox.write="$D"
    [ "$(field out.jsonl t2 status)" = ok ]
    [ "$(field out.jsonl t2 stdout)" = done ]
    run ! alive $(pids_of t2)
}

@test "the tree dies with its job, not only at the end of the run" {
    # a long-running fitrun (streaming): t3 times out while fitrun goes on
    coproc FR { exec "$FITRUN" run --jobs - --out - --quiet "${TREE_OPTS[@]}" --set sandbox.write="$D" --wall-time 1s; }
    local pid=$FR_PID # bash unsets FR_PID once the coprocess is reaped
    tree_job t3 'sleep 300' >&"${FR[1]}"
    IFS= read -r -t 20 line <&"${FR[0]}"
    [ "$(jq -r .status <<< "$line")" = timeout ]
    kill -0 "$pid" # still running
    wait_for eval '! alive $(pids_of t3)'
    exec {FR[1]}>&-
    wait "$pid"
}

@test "CPU timeout of a forking job kills its children too" {
    jq -cn --arg s "cd '$D'; sleep 300 & echo \$! > pid.child.c1; while :; do :; done" \
        '{id: "c1", argv: ["sh", "-c", $s]}' > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet "${TREE_OPTS[@]}" --set sandbox.write="$D" --cpu-time 300ms --wall-time 20s
    [ "$(field out.jsonl c1 timeout)" = cpu ]
    run ! alive $(pids_of c1)
}
