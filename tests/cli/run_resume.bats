#!/usr/bin/env bats
# fitrun run: SIGTERM/SIGINT stop the run (running jobs killed, finished
# results kept, summary, 143/130); --resume completes the same --out so that
# interrupted + resumed = one uninterrupted run, without duplicates.

load run_common

setup() {
    run_setup
    # 30 jobs of 0.1-0.5 s, one duplicate id, one invalid line
    for i in $(seq 1 30); do job "j$i" sh -c "sleep 0.$((i % 5 + 1)); echo $i"; done > jobs.jsonl
    job j7 echo duplicate >> jobs.jsonl
    echo 'not json' >> jobs.jsonl
    OPTS=(--jobs jobs.jsonl --preset none --set sandbox.processes=none --workers 2)
}
teardown() { run_teardown; }

# outcome FILE: the sorted (line, id, status, error_type) of every result
outcome() { jq -c '[.line, .id, .status, .error_type]' "$1" | sort; }

# interrupt SIGNAL: start a run on part.jsonl, signal it once some results
# are written, wait for it; sets $rc.
interrupt() {
    "$FITRUN" run "${OPTS[@]}" --out part.jsonl 2> err.txt &
    local pid=$!
    wait_for test -s part.jsonl
    sleep 0.5
    kill -"$1" "$pid"
    rc=0
    wait "$pid" || rc=$?
}

@test "SIGTERM mid-run, then --resume: exactly the uninterrupted set of results" {
    run -1 "$FITRUN" run "${OPTS[@]}" --out full.jsonl --quiet
    [ "$(wc -l < full.jsonl)" -eq 32 ]

    interrupt TERM
    [ "$rc" -eq 143 ]
    done_before=$(wc -l < part.jsonl)
    [ "$done_before" -ge 1 ] && [ "$done_before" -lt 32 ]
    grep -q 'SIGTERM: stopping' err.txt
    grep -q 'interrupted by SIGTERM' err.txt
    grep -q 'run again with --resume' err.txt

    run -1 --separate-stderr "$FITRUN" run "${OPTS[@]}" --out part.jsonl --resume
    [[ $stderr == *"resuming part.jsonl: $done_before results kept"* ]]
    [ "$(wc -l < part.jsonl)" -eq 32 ]
    [ "$(outcome part.jsonl)" = "$(outcome full.jsonl)" ]
    # and no id twice, apart from the duplicate line's own result
    [ "$(jq -r 'select(.error_type != "DuplicateId") | .id' part.jsonl | sort | uniq -d)" = "" ]
}

@test "SIGINT exits 130; a second --resume after a complete run adds nothing" {
    interrupt INT
    [ "$rc" -eq 130 ]
    grep -q 'interrupted by SIGINT' err.txt
    run -1 "$FITRUN" run "${OPTS[@]}" --out part.jsonl --resume --quiet
    [ "$(wc -l < part.jsonl)" -eq 32 ]
    before=$(md5sum < part.jsonl)
    run -0 "$FITRUN" run "${OPTS[@]}" --out part.jsonl --resume --quiet
    [ "$(md5sum < part.jsonl)" = "$before" ]
}

@test "a torn last line is cut, and its job runs again" {
    run -1 "$FITRUN" run "${OPTS[@]}" --out full.jsonl --quiet
    head -n 10 full.jsonl > part.jsonl
    sed -n 11p full.jsonl | head -c 40 >> part.jsonl # killed mid-write
    torn_id=$(sed -n 11p full.jsonl | jq -r .id)
    run -1 --separate-stderr "$FITRUN" run "${OPTS[@]}" --out part.jsonl --resume
    [[ $stderr == *"part.jsonl:11: incomplete last line"* ]]
    [ "$(outcome part.jsonl)" = "$(outcome full.jsonl)" ]
    [ "$(count part.jsonl "$torn_id")" -eq 1 ]
}

@test "without --resume an existing results file is replaced" {
    echo '{"id": "stale", "status": "ok"}' > out.jsonl
    job a true > one.jsonl
    run -0 "$FITRUN" run --jobs one.jsonl --out out.jsonl --quiet
    [ "$(wc -l < out.jsonl)" -eq 1 ]
    [ "$(jq -r .id out.jsonl)" = a ]
}

@test "--resume needs a results file; --out must not be the jobs file" {
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --resume
    [[ $stderr == *"--resume needs --out FILE"* ]]
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out jobs.jsonl
    [[ $stderr == *"is the jobs file"* ]]
    [ "$(wc -l < jobs.jsonl)" -eq 32 ] # untouched
}

@test "--resume checks each kept result's id against its line: a changed jobs file is 125, never a silent skip" {
    for i in A B C; do job "$i" echo "$i"; done > abc.jsonl
    run -0 "$FITRUN" run --jobs abc.jsonl --out r.jsonl --quiet
    # line 2's id B replaced by D: D has no result and must not be skipped
    for i in A D C; do job "$i" echo "$i"; done > abc.jsonl
    before=$(md5sum < r.jsonl)
    run -125 --separate-stderr "$FITRUN" run --jobs abc.jsonl --out r.jsonl --resume
    [[ $stderr == *'--resume: line 2 of abc.jsonl has id "D", but r.jsonl:'*' is the result of id "B" for that line'* ]]
    [[ $stderr != *"0 results"* ]] # nothing ran, nothing was counted as done
    [ "$(md5sum < r.jsonl)" = "$before" ]
    # the same from a stream: checked as the line arrives, 125 again
    run -125 --separate-stderr "$FITRUN" run --jobs - --out r.jsonl --resume < abc.jsonl
    [[ $stderr == *'line 2 of stdin has id "D", but r.jsonl:'*'"B"'* ]]
    [ "$(count r.jsonl D)" -eq 0 ]
    # lines removed from the end: their results name lines the file no longer has
    job A echo A > abc.jsonl
    run -125 --separate-stderr "$FITRUN" run --jobs abc.jsonl --out r.jsonl --resume
    [[ $stderr == *"but abc.jsonl has 1 line"* ]]
    # with the jobs file the results came from, resume is a no-op as before
    for i in A B C; do job "$i" echo "$i"; done > abc.jsonl
    run -0 "$FITRUN" run --jobs abc.jsonl --out r.jsonl --resume --quiet
    [ "$(md5sum < r.jsonl)" = "$before" ]
}

@test "--resume does not answer an over-long line twice" {
    job A echo A > long.jsonl
    head -c $((65 << 20)) /dev/zero | tr '\0' x >> long.jsonl
    echo >> long.jsonl
    job C echo C >> long.jsonl
    run -1 "$FITRUN" run --jobs long.jsonl --out r.jsonl --quiet
    [ "$(wc -l < r.jsonl)" -eq 3 ]
    run -0 "$FITRUN" run --jobs long.jsonl --out r.jsonl --resume --quiet
    [ "$(wc -l < r.jsonl)" -eq 3 ]
}

# start_and_signal SIGNAL PROFILE JOBS: start fitrun run with SIGINT
# inherited as ignored (as a non-interactive shell's background job gets it),
# send SIGNAL once it is running, set $rc.
start_and_signal() {
    (trap '' INT; exec "$FITRUN" run --profile "$2" --jobs "$3" --out out.jsonl --progress none 2> err.txt) &
    local pid=$!
    sleep 1
    kill -"$1" "$pid"
    rc=0
    wait "$pid" || rc=$?
}

@test "SIGINT inherited as ignored: 130 whether it arrives during start-up or in the pool" {
    printf 'import time\ntime.sleep(30)\n' > slow.py
    printf '[runtime]\nkind = python\ninterpreter = /usr/bin/python3\nprelude = slow.py\n' > slow.ini
    jq -cn '{id: "p", code: "def transform(g):\n    return g\n", inputs: [[[1]]]}' > p.jsonl
    SECONDS=0
    start_and_signal INT slow.ini p.jsonl
    [ "$rc" -eq 130 ]
    [ "$SECONDS" -lt 10 ]
    grep -q "interrupted while" err.txt
    start_and_signal HUP slow.ini p.jsonl
    [ "$rc" -eq 129 ]
    # the pool, the same
    printf '[sandbox]\npreset = none\n' > none.ini
    job s sleep 5 > s.jsonl
    start_and_signal INT none.ini s.jsonl
    [ "$rc" -eq 130 ]
    grep -q "interrupted by SIGINT" err.txt
}
