#!/usr/bin/env bats
# fitrun's own cgroups on this machine's real cgroup v1 hierarchies
# (docs/cgroups.md): a cgroup per worker slot below the cgroup the test
# runs in, a real memory limit (not address space), OOM kills read from the
# job's own cgroup, and nothing left behind after a normal exit, SIGTERM or
# SIGKILL (the next run removes what a killed run left).
#
# Only fitrun creates cgroups here, each as fitrun-<its pid> below the
# cgroup of this shell for each controller; teardown checks that none of
# this test's runs left one.

load run_common

PIDS=()

setup() {
    run_setup
    [ "$(id -u)" = 0 ] || skip "needs root to create cgroups"
    "$FITRUN" detect --json > detect.json
    [ "$(jq -r .cgroup.delegated detect.json)" = true ] || skip "cgroups not delegated: $(jq -r .cgroup.delegated_reason detect.json)"
}

# The runs a test started, as proc_id PID: teardown kills those still
# running (a run the test waited for may have left its pid to another
# process: proc_common).
teardown() {
    proc_kill KILL "${PIDS[@]}"
    run_teardown
}

# own_dir CONTROLLER: this shell's cgroup directory for a v1 controller.
own_dir() {
    local mnt own
    mnt=$(awk -v c="$1" '$9 == "cgroup" && ("," $NF ",") ~ ("," c ",") { print $5; exit }' /proc/self/mountinfo)
    own=$(awk -F: -v c="$1" '("," $2 ",") ~ ("," c ",") { print $3; exit }' /proc/self/cgroup)
    echo "$mnt${own%/}"
}

# start_run SLOT OPTION...: `fitrun run --quiet OPTION... --jobs jobs.jsonl
# --out out.jsonl` in the background ($pid; $mem, its memory cgroup tree);
# returns once a process is in slot SLOT's cgroup (or after 5 s).
start_run() {
    local slot=$1
    shift
    "$FITRUN" run --quiet "$@" --jobs jobs.jsonl --out out.jsonl &
    pid=$!
    PIDS+=("$(proc_id "$pid")")
    mem=$(own_dir memory)/fitrun-$pid
    for _ in $(seq 100); do grep -q . "$mem/jobs/worker-$slot/cgroup.procs" 2> /dev/null && break; sleep 0.05; done
}

# trees PID: the fitrun-PID directories that exist, one a line.
trees() {
    local c
    for c in memory pids cpuacct; do
        [ -d "$(own_dir $c)/fitrun-$1" ] && echo "$(own_dir $c)/fitrun-$1"
    done
    return 0
}

profile() {
    cat > "$1" <<EOF
[resources]
workers = 2
[sandbox]
preset = python
cpu_time = 10s
wall_time = 60s
memory = $2
[runtime]
kind = python
interpreter = /usr/bin/python3
entry = transform
EOF
}

pyjob() {
    jq -cn --arg id "$1" --arg code "$2" '{id: $id, code: $code, inputs: [[[1]]], expected: [[[1]]]}'
}

# rf FILE ID FILTER: jq -c FILTER of the result for ID
rf() {
    jq -c --arg id "$2" "select(.id == \$id) | $3" "$1"
}

@test "detect: delegated here, with the controllers; cgroups = off says so" {
    [ "$(jq -r .cgroup.delegated_reason detect.json)" = "memory, pids, cpuacct (cgroup v1)" ]
    [ "$(jq -r .sandbox.memory.enforced_by detect.json)" = cgroup ]
    run -0 "$FITRUN" detect
    [[ "$output" == *"delegated   yes: memory, pids, cpuacct (cgroup v1)"* ]]
    printf '[resources]\ncgroups = off\n' > off.ini
    run -0 "$FITRUN" detect --json --profile off.ini
    [ "$(jq -r .cgroup.delegated <<< "$output")" = false ]
    [[ "$(jq -r .cgroup.delegated_reason <<< "$output")" == *"cgroups = off"* ]]
    [ "$(jq -r .sandbox.memory.enforced_by <<< "$output")" = RLIMIT_AS ]
}

@test "8 pairs of (hog at 3x its limit, sleeper beside it), 2 workers: every hog memory, every sleeper ok" {
    profile p.ini 100M
    for i in 1 2 3 4 5 6 7 8; do
        pyjob "hog$i" $'def transform(g):\n    b = bytearray(300 << 20)\n    for i in range(0, len(b), 4096):\n        b[i] = 1\n    return g\n'
        pyjob "nap$i" $'import time\ndef transform(g):\n    time.sleep(0.3)\n    return g\n'
    done > jobs.jsonl
    run -0 --separate-stderr "$FITRUN" run --profile p.ini --jobs jobs.jsonl --out out.jsonl
    echo "$stderr"
    jq -c '{id, status, error_type, worker, max_rss_kb}' out.jsonl
    [[ "$stderr" == *"cgroups: 2 worker cgroups in "*"/fitrun-"*"/jobs (memory, pids, cpuacct)"* ]]
    [ "$(jq -s '[.[] | select(.id | startswith("hog")) | select(.status == "memory" and .error_type == "OOMKill" and .signal == "SIGKILL")] | length' out.jsonl)" = 8 ]
    [ "$(jq -s '[.[] | select(.id | startswith("nap")) | select(.status == "ok" and .passed == [true])] | length' out.jsonl)" = 8 ]
    [[ "$(field out.jsonl hog1 error_message)" == *"/jobs/worker-"*"/memory.oom_control"* ]]
    # the hog's peak is its cgroup's: its limit, not more
    [ "$(field out.jsonl hog1 max_rss_kb)" -le $((100 << 10)) ]
    [ "$(field out.jsonl hog1 max_rss_kb)" -ge $((90 << 10)) ]
}

@test "a 64 GiB MAP_NORESERVE reservation touching 20 MiB is ok under memory = 300M (RLIMIT_AS would refuse it)" {
    profile p.ini 300M
    pyjob nr $'import mmap\ndef transform(g):\n    m = mmap.mmap(-1, 64 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x4000)\n    for i in range(0, 20 << 20, 4096):\n        m[i] = 1\n    return g\n' > jobs.jsonl
    run -0 "$FITRUN" run --quiet --profile p.ini --jobs jobs.jsonl --out out.jsonl
    jq -c . out.jsonl
    [ "$(rf out.jsonl nr '[.status, .passed]')" = '["ok",[true]]' ]
    [ "$(field out.jsonl nr max_rss_kb)" -ge $((20 << 10)) ]
    # Control: without cgroups the same reservation fails under RLIMIT_AS.
    run -0 "$FITRUN" run --quiet --set resources.cgroups=off --profile p.ini --jobs jobs.jsonl --out off.jsonl
    jq -c . off.jsonl
    [ "$(field off.jsonl nr status)" != ok ]
}

@test "exec: limits are in the slot's cgroup while a job runs; nothing is left after a normal exit" {
    job a sleep 2 > jobs.jsonl
    start_run 0 --workers 1 --memory 64M --set sandbox.processes=3
    [ "$(cat "$mem/jobs/worker-0/memory.limit_in_bytes")" = $((64 << 20)) ]
    [ "$(cat "$(own_dir pids)/fitrun-$pid/jobs/worker-0/pids.max")" = 4 ] # 3 + the sandbox's relay
    grep -qx "$pid" "$mem/launcher/cgroup.procs"
    # the test's shell was never moved
    grep -qx "$$" "$(own_dir memory)/cgroup.procs"
    wait "$pid"
    [ "$(field out.jsonl a status)" = ok ]
    [ -z "$(trees "$pid")" ]
}

@test "a job right after a killed one in the same slot gets its whole pids allowance" {
    # The killed job's process may still be unreaped in the slot's cgroup
    # when the next job starts: pids.max is the allowance on top of it.
    for i in 1 2 3 4 5; do
        job "wall$i" sleep 30
        job "next$i" echo hi
        job "cpu$i" sh -c 'while :; do :; done'
        job "then$i" echo hi
        job "flood$i" yes
        job "after$i" echo hi
    done > jobs.jsonl
    run -0 "$FITRUN" run --quiet --workers 1 --output 4k --cpu-time 200ms --wall-time 300ms --jobs jobs.jsonl --out out.jsonl
    jq -c '[.id, .status, .error_type]' out.jsonl
    [ "$(jq -s '[.[] | select(.id | test("^(next|then|after)")) | select(.status == "ok")] | length' out.jsonl)" = 15 ]
    [ "$(jq -s '[.[] | select(.id | test("^(wall|cpu)")) | select(.status == "timeout")] | length' out.jsonl)" = 10 ]
}

@test "a job that leaves a process behind: the run still removes its cgroups" {
    job a sh -c 'sleep 20 & exit 0' > jobs.jsonl
    job b sh -c 'setsid sleep 20 & exit 0' >> jobs.jsonl
    "$FITRUN" run --quiet --workers 2 --set sandbox.processes=4 --jobs jobs.jsonl --out out.jsonl &
    pid=$!
    PIDS+=("$(proc_id "$pid")")
    wait "$pid"
    [ "$(field out.jsonl a status)" = ok ]
    [ -z "$(trees "$pid")" ]
}

@test "SIGTERM: the run stops and removes its cgroups" {
    profile p.ini 100M
    for i in 1 2 3; do pyjob "s$i" $'import time\ndef transform(g):\n    time.sleep(30)\n    return g\n'; done > jobs.jsonl
    "$FITRUN" run --quiet --profile p.ini --jobs jobs.jsonl --out out.jsonl &
    pid=$!
    PIDS+=("$(proc_id "$pid")")
    mem=$(own_dir memory)/fitrun-$pid
    for _ in $(seq 200); do grep -q . "$mem/jobs/worker-1/cgroup.procs" 2> /dev/null && break; sleep 0.05; done
    grep -q . "$mem/jobs/worker-1/cgroup.procs"
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" = 143 ]
    [ -z "$(trees "$pid")" ]
}

@test "SIGKILL: the next run kills what the dead run left and removes its cgroups" {
    job a sleep 30 > jobs.jsonl
    job b sleep 30 >> jobs.jsonl
    start_run 1 --workers 2
    grep -q . "$mem/jobs/worker-1/cgroup.procs"
    left=$(cat "$mem"/jobs/worker-*/cgroup.procs)
    kill -KILL "$pid"
    wait "$pid" || true
    [ -n "$(trees "$pid")" ] # what the killed run left
    job c true > next.jsonl
    run -0 --separate-stderr "$FITRUN" run --workers 1 --jobs next.jsonl --out next.out
    echo "$stderr"
    [[ "$stderr" == *"cgroups: removed "*" of dead fitrun processes"* ]]
    [ -z "$(trees "$pid")" ]
    for p in $left; do ! kill -0 "$p" 2> /dev/null; done
    [ "$(field next.out c status)" = ok ]
}

@test "a run beside a live run leaves the live run's cgroups alone" {
    job a sleep 2 > jobs.jsonl
    start_run 0 --workers 1
    grep -q . "$mem/jobs/worker-0/cgroup.procs"
    job b true > next.jsonl
    run -0 --separate-stderr "$FITRUN" run --workers 1 --jobs next.jsonl --out next.out
    [[ "$stderr" != *"removed"* ]]
    [ -d "$mem/jobs/worker-0" ]
    wait "$pid"
    [ "$(field out.jsonl a status)" = ok ]
    [ -z "$(trees "$pid")" ]
}

@test "runs that start at the same moment in one cgroup never take each other for dead" {
    # A run that has made its sub-tree but not yet moved into it is alive
    # (SLURM array tasks start like this). 6 at once, 8 rounds: before,
    # about one run in nine was SIGKILLed by a neighbour's cleanup.
    job a sleep 0.2 > jobs.jsonl
    local round k fails=0
    for round in $(seq 8); do
        local pids=()
        for k in 1 2 3 4 5 6; do
            "$FITRUN" run --quiet --workers 1 --jobs jobs.jsonl --out "o$round.$k.jsonl" 2> "e$round.$k.txt" &
            pids+=($!)
        done
        for k in "${pids[@]}"; do wait "$k" || fails=$((fails + 1)); done
    done
    cat e*.txt
    [ "$fails" = 0 ]
    [ "$(cat o*.jsonl | jq -r .status | sort | uniq -c | awk '{print $1, $2}')" = "48 ok" ]
    ! grep -q removed e*.txt
}

@test "cgroups = off: no cgroup is made and RLIMIT_AS limits memory" {
    job a sleep 1 > jobs.jsonl
    "$FITRUN" run --quiet --set resources.cgroups=off --workers 1 --jobs jobs.jsonl --out out.jsonl &
    pid=$!
    PIDS+=("$(proc_id "$pid")")
    sleep 0.5
    [ -z "$(trees "$pid")" ]
    wait "$pid"
    [ "$(field out.jsonl a status)" = ok ]
}
