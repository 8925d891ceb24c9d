#!/usr/bin/env bats
# fitrun run over pipes: one long-lived process, a job written -> its result
# read back before the next job is written; batches; progress output.

load run_common

setup() { run_setup; }
teardown() { run_teardown; }

@test "streaming: write one job, read its result, write the next — one fitrun process" {
    coproc FR { exec "$FITRUN" run --jobs - --out - --quiet; }
    local pid=$FR_PID i line
    for i in $(seq 1 20); do
        job "s$i" echo "n$i" >&"${FR[1]}"
        IFS= read -r -t 20 line <&"${FR[0]}"
        [ "$(jq -r .id <<< "$line")" = "s$i" ]
        [ "$(jq -r .stdout <<< "$line")" = "n$i" ]
        kill -0 "$pid" # the same process all along
    done
    exec {FR[1]}>&-
    wait "$pid"
}

@test "streaming batches: 8 jobs in, 8 results out, repeatedly, with invalid lines answered at once" {
    coproc FR { exec "$FITRUN" run --jobs - --out - --quiet --workers 2; }
    local pid=$FR_PID b i line got
    for b in 1 2 3; do
        for i in $(seq 1 8); do job "b$b-$i" echo "$b.$i"; done >&"${FR[1]}"
        got=()
        for i in $(seq 1 8); do
            IFS= read -r -t 20 line <&"${FR[0]}"
            got+=("$(jq -r .id <<< "$line")")
        done
        [ "$(printf '%s\n' "${got[@]}" | sort | tr '\n' ' ')" = "$(printf "b$b-%s\n" 1 2 3 4 5 6 7 8 | sort | tr '\n' ' ')" ]
    done
    echo 'not json' >&"${FR[1]}"
    IFS= read -r -t 20 line <&"${FR[0]}"
    [ "$(jq -r .status <<< "$line")" = invalid ]
    exec {FR[1]}>&-
    rc=0
    wait "$pid" || rc=$? # (not `run wait`: run's subshell cannot wait for our coproc)
    [ "$rc" -eq 1 ]      # an invalid line was seen
}

@test "a slow job does not hold back the results of others (written when known)" {
    coproc FR { exec "$FITRUN" run --jobs - --out - --quiet --workers 2; }
    local pid=$FR_PID # bash unsets FR_PID once the coprocess is reaped
    { job slow sleep 6; job fast echo fast; } >&"${FR[1]}"
    IFS= read -r -t 5 line <&"${FR[0]}" # before the slow one can finish
    [ "$(jq -r .id <<< "$line")" = fast ]
    IFS= read -r -t 20 line <&"${FR[0]}"
    [ "$(jq -r .id <<< "$line")" = slow ]
    exec {FR[1]}>&-
    wait "$pid"
}

@test "--progress plain: a progress line every few seconds on stderr" {
    for i in $(seq 1 14); do job "p$i" sleep 0.5; done > jobs.jsonl
    run -0 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --workers 1 --progress plain
    [[ $stderr == *"fitrun: progress "*"/14 ("*"%) "*" jobs/s ETA "*"ok "* ]]
    [[ $stderr == *"done: 14 results"* ]]
}

@test "--progress bar: one line redrawn in place on a terminal" {
    command -v script > /dev/null || skip "script (util-linux) not installed"
    for i in $(seq 1 6); do job "p$i" sleep 0.3; done > jobs.jsonl
    # script gives fitrun a terminal; auto means bar there
    script -qec "'$FITRUN' run --jobs jobs.jsonl --out out.jsonl --workers 1" typescript > /dev/null
    [ "$(wc -l < out.jsonl)" -eq 6 ]
    grep -q $'\r' typescript
    grep -aq '6/6 \[' typescript
    grep -aq 'jobs/s\]' typescript
    # and without a terminal, auto prints no progress at all
    run -0 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --workers 1
    [[ $stderr != *$'\r'* ]]
}

@test "--ready-fd: one JSON record once the python workers are warm, before any job runs; then the descriptor is closed" {
    cat > prelude.py <<'PY'
import os, sys
# fd 7 itself may be one of the runtime's own (its Landlock ruleset): what
# must not be here is a descriptor above 2 of the ready file.
ready = os.path.realpath("both.txt")
leaked = [fd for fd in os.listdir("/proc/self/fd") if int(fd) > 2 and os.path.realpath(f"/proc/self/fd/{fd}") == ready]
sys.stderr.write("prelude: fd 7 inherited\n" if leaked else "prelude: ran without fd 7\n")
PY
    printf '[resources]\nworkers = 2\n[runtime]\nkind = python\ninterpreter = /usr/bin/python3\nprelude = prelude.py\n' > py.ini
    jq -cn '{id: "p", code: "def transform(g):\n    return g\n", inputs: [[[1]]]}' > p.jsonl
    # stderr and the ready record share one file: their order is the order written
    "$FITRUN" run --profile py.ini --jobs p.jsonl --out out.jsonl --ready-fd 7 7>both.txt 2>&7
    cat both.txt
    grep -qx 'prelude: ran without fd 7' both.txt
    record=$(grep '^{' both.txt)
    [ "$(jq -c '[.ready, .workers, .runtime, (.pid | type)]' <<< "$record")" = '[true,2,"python","number"]' ]
    prelude_at=$(grep -n '^prelude:' both.txt | cut -d: -f1)
    warm_at=$(grep -n 'fitrun: python: .* started once with 2 workers' both.txt | cut -d: -f1)
    ready_at=$(grep -n '^{"ready"' both.txt | cut -d: -f1)
    done_at=$(grep -n 'fitrun: done: 1 result' both.txt | cut -d: -f1)
    [ "$prelude_at" -lt "$warm_at" ] && [ "$warm_at" -lt "$ready_at" ] && [ "$ready_at" -lt "$done_at" ]
    [ "$(jq -r .status out.jsonl)" = ok ]
    # exec runtime, streamed: the record comes before the first job is written
    coproc FR { exec "$FITRUN" run --jobs - --out - --quiet --workers 3 --ready-fd 8 8>ready.txt; }
    local pid=$FR_PID
    wait_for test -s ready.txt
    [ "$(jq -c '[.ready, .workers, .runtime, .pid]' ready.txt)" = "[true,3,\"exec\",$pid]" ]
    job e sh -c 'echo hi >&8' >&"${FR[1]}" # not the job's to write to
    IFS= read -r -t 20 line <&"${FR[0]}"
    [ "$(jq -r .status <<< "$line")" = error ]
    exec {FR[1]}>&-
    wait "$pid"
}

@test "--out to a pipe: each result is readable as soon as it is known, while a later job still runs" {
    { job a echo 1; job b echo 2; job slow sleep 30; } > jobs.jsonl
    coproc FR { exec "$FITRUN" run --jobs jobs.jsonl --out - --quiet --workers 2; }
    local pid=$FR_PID line got=()
    for _ in 1 2; do
        IFS= read -r -t 10 line <&"${FR[0]}"
        got+=("$(jq -r .id <<< "$line")")
    done
    [ "$(printf '%s\n' "${got[@]}" | sort | tr '\n' ' ')" = "a b " ]
    kill -0 "$pid" # slow is still running
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" -eq 143 ]
}

@test "--out to a regular file: results are on disk shortly after they are known, while a later job still runs" {
    { job a echo 1; job slow sleep 30; } > jobs.jsonl
    # no CPU or wall clock to check: only the held result wakes the loop
    "$FITRUN" run --jobs jobs.jsonl --out r.jsonl --quiet --workers 2 \
        --set sandbox.cpu_time=none --set sandbox.wall_time=none &
    local pid=$!
    wait_for grep -q '"id":"a"' r.jsonl
    kill -0 "$pid" # slow is still running
    [ "$(wc -l < r.jsonl)" -eq 1 ]
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" -eq 143 ]
    [ "$(jq -r .id r.jsonl)" = a ]
}

@test "--ready-fd: no record when fitrun ends before it can take jobs; bad descriptors are refused" {
    printf 'raise SystemExit(3)\n' > bad.py
    printf '[runtime]\nkind = python\ninterpreter = /usr/bin/python3\nprelude = bad.py\n' > bad.ini
    run -125 "$FITRUN" run --profile bad.ini --jobs - --out - --ready-fd 3 3>ready.txt < /dev/null
    [ ! -s ready.txt ]
    run -125 --separate-stderr "$FITRUN" run --ready-fd 2 < /dev/null
    [ "$stderr" = "fitrun: --ready-fd '2': expected a descriptor number of 3 or more" ]
    run -125 --separate-stderr "$FITRUN" run --ready-fd 9 < /dev/null
    [ "$stderr" = "fitrun: --ready-fd 9: Bad file descriptor" ]
    run -125 --separate-stderr "$FITRUN" run --ready-fd 9 9< /dev/null < /dev/null
    [ "$stderr" = "fitrun: --ready-fd 9: the descriptor is open read-only" ]
}
