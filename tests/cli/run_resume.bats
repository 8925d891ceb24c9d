#!/usr/bin/env bats
# fitrun run: SIGTERM/SIGINT stop the run (running jobs killed, finished
# results kept, summary, 143/130); --resume completes the same --out so that
# interrupted + resumed = one uninterrupted run, without duplicates.

load run_common

# fast_jobs N: N job lines `echo I` with ids fI, from one jq (a jq per line
# costs ~25 ms on a slow machine: a minute for 3,000).
fast_jobs() {
    seq 1 "$1" | jq -cR '{id: ("f" + .), argv: ["echo", .]}'
}

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
    # the same from a pipe, checked when it ends; and a line that is blank now
    run -125 --separate-stderr sh -c 'cat abc.jsonl | "$1" run --jobs - --out r.jsonl --resume' sh "$FITRUN"
    [[ $stderr == *"is a result for line "*", but stdin has 1 line"* ]]
    { job A echo A; echo; job C echo C; } > abc.jsonl
    run -125 --separate-stderr sh -c 'cat abc.jsonl | "$1" run --jobs - --out r.jsonl --resume' sh "$FITRUN"
    [[ $stderr == *"is a result for line 2 of stdin, which is blank"* ]]
    [ "$(md5sum < r.jsonl)" = "$before" ]
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

# early_signal SIG...: start fitrun on a FIFO of jobs, so that it waits in
# open(2) for a writer, before its pool (and its signalfd) exists; send each
# SIG there (from Python: a shell's background job would ignore SIGINT),
# then write one job. Prints fitrun's exit status as subprocess reports it
# (negative: killed by that signal). Extra fitrun options: $EARLY_OPTS.
early_signal() {
    rm -f jobs.fifo
    mkfifo jobs.fifo
    /usr/bin/python3 - "$FITRUN" "$@" <<'PY'
import os, signal, subprocess, sys, time
fitrun, names = sys.argv[1], sys.argv[2:]
opts = os.environ.get("EARLY_OPTS", "").split()
with open("err.txt", "w") as err:
    p = subprocess.Popen([fitrun, "run", "--jobs", "jobs.fifo", "--out", "out.jsonl", "--preset", "none",
                          "--progress", "none"] + opts, stderr=err)
deadline = time.monotonic() + 20
while open(f"/proc/{p.pid}/wchan").read() != "wait_for_partner":  # in open("jobs.fifo")
    assert time.monotonic() < deadline and p.poll() is None, "fitrun never opened jobs.fifo"
    time.sleep(0.01)
for name in names:
    p.send_signal(getattr(signal, "SIG" + name))
with open("jobs.fifo", "w") as w:
    w.write('{"id": "a", "argv": ["true"]}\n')
print(p.wait(timeout=20))
PY
}

@test "a signal before the pool exists ends the run as an interrupt: 130/143, summary, never the default action" {
    run -0 early_signal INT
    [ "$output" = 130 ]
    grep -q 'interrupted by SIGINT: 0 results' err.txt
    [ ! -s out.jsonl ]
    run -0 early_signal TERM
    [ "$output" = 143 ]
    grep -q 'SIGTERM: stopping' err.txt
    # two pending at once: one interrupt (the kernel hands over SIGINT first)
    run -0 early_signal TERM INT
    [ "$output" = 130 ]
    [ "$(grep -c 'stopping' err.txt)" -eq 1 ]
}

@test "--quiet: an interrupt prints nothing (no notice, no summary, no --resume advice)" {
    "$FITRUN" run "${OPTS[@]}" --out part.jsonl --quiet 2> err.txt &
    local pid=$!
    wait_for test -s part.jsonl
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" -eq 143 ]
    [ "$(wc -l < part.jsonl)" -lt 32 ]
    [ ! -s err.txt ] || { cat err.txt; false; }
    # before the pool, and while a python runtime starts: the same
    EARLY_OPTS=--quiet run -0 early_signal INT
    [ "$output" = 130 ]
    [ ! -s err.txt ] || { cat err.txt; false; }
    printf 'import time\ntime.sleep(30)\n' > slow.py
    printf '[runtime]\nkind = python\ninterpreter = /usr/bin/python3\nprelude = slow.py\n' > slow.ini
    jq -cn '{id: "p", code: "def transform(g):\n    return g\n", inputs: [[[1]]]}' > p.jsonl
    "$FITRUN" run --profile slow.ini --jobs p.jsonl --out out.jsonl --quiet 2> err.txt &
    pid=$!
    sleep 1
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" -eq 143 ]
    [ ! -s err.txt ] || { cat err.txt; false; }
}

@test "results held for a results file are written at an interrupt: the summary's count is on disk, resume runs only the rest" {
    # fast jobs: at any moment some finished results are still held back
    fast_jobs 3000 > fast.jsonl
    "$FITRUN" run --jobs fast.jsonl --preset none --set sandbox.processes=none --workers 2 --out part.jsonl 2> err.txt &
    local pid=$!
    wait_for test -s part.jsonl
    sleep 0.3
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" -eq 143 ]
    said=$(sed -n 's/.*interrupted by SIGTERM: \([0-9]*\) results\{0,1\} in.*/\1/p' err.txt)
    [ -n "$said" ] && [ "$said" -lt 3000 ]
    [ "$(wc -l < part.jsonl)" -eq "$said" ]
    [ "$(tail -c 1 part.jsonl | od -An -c | tr -d ' ')" = '\n' ]

    run -0 --separate-stderr "$FITRUN" run --jobs fast.jsonl --preset none --set sandbox.processes=none \
        --workers 2 --out part.jsonl --resume
    [[ $stderr == *"resuming part.jsonl: $said results kept"* ]]
    [[ $stderr == *"done: $((3000 - said)) results in"* ]]
    [ "$(wc -l < part.jsonl)" -eq 3000 ]
    [ "$(jq -r .id part.jsonl | sort | uniq -d)" = "" ]
    [ "$(jq -r 'select(.status != "ok" or .stdout != (.id[1:] + "\n")) | .id' part.jsonl)" = "" ]
}

@test "SIGKILL with results held for the file: --resume runs the jobs whose results were lost, and only those" {
    fast_jobs 3000 > fast.jsonl
    "$FITRUN" run --jobs fast.jsonl --preset none --set sandbox.processes=none --workers 2 --out part.jsonl --quiet &
    local pid=$!
    wait_for test -s part.jsonl
    sleep 0.3
    kill -KILL "$pid"
    wait "$pid" || true
    kept=$(wc -l < part.jsonl) # complete lines; a torn last one is cut
    [ "$kept" -ge 1 ] && [ "$kept" -lt 3000 ]

    run -0 --separate-stderr "$FITRUN" run --jobs fast.jsonl --preset none --set sandbox.processes=none \
        --workers 2 --out part.jsonl --resume
    [[ $stderr == *"resuming part.jsonl: $kept results kept"* ]]
    [[ $stderr == *"done: $((3000 - kept)) results in"* ]]
    [ "$(wc -l < part.jsonl)" -eq 3000 ]
    [ "$(jq -r .id part.jsonl | sort | uniq -d)" = "" ]
    [ "$(jq -r 'select(.status != "ok" or .stdout != (.id[1:] + "\n")) | .id' part.jsonl)" = "" ]
}

@test "--resume: a kept DuplicateId result whose earlier line no longer has that id is 125, never a lost job" {
    # B, A, A: line 3 is A's DuplicateId; line 2 (A) was running at the interrupt
    for i in B A A; do job "$i" echo "$i"; done > dup.jsonl
    run -1 "$FITRUN" run --jobs dup.jsonl --out r.jsonl --quiet
    jq -c 'select(.line != 2)' r.jsonl > kept.jsonl
    mv kept.jsonl r.jsonl
    before=$(md5sum < r.jsonl)
    # line 2, which had no result, now holds C: A is no longer a duplicate,
    # and skipping line 3 would leave A without a result
    for i in B C A; do job "$i" echo "$i"; done > dup.jsonl
    run -125 --separate-stderr "$FITRUN" run --jobs dup.jsonl --out r.jsonl --resume
    [[ $stderr == *'--resume: r.jsonl:'*' is the DuplicateId result of id "A" for line 3 of dup.jsonl, but no earlier line has that id now'* ]]
    [ "$(md5sum < r.jsonl)" = "$before" ]
    # the same from a stream
    run -125 --separate-stderr "$FITRUN" run --jobs - --out r.jsonl --resume < dup.jsonl
    [[ $stderr == *'DuplicateId result of id "A" for line 3 of stdin, but no earlier line has that id now'* ]]
    [ "$(count r.jsonl A)" -eq 1 ]
    # with the jobs file the results came from, line 2 runs and line 3 stays done
    for i in B A A; do job "$i" echo "$i"; done > dup.jsonl
    run -0 "$FITRUN" run --jobs dup.jsonl --out r.jsonl --resume --quiet
    [ "$(jq -c '[.line, .id, .status]' r.jsonl | sort)" = "$(printf '%s\n' '[1,"B","ok"]' '[2,"A","ok"]' '[3,"A","invalid"]')" ]
}

@test "without --resume the results file is replaced only once the runtime is up: a failing prelude or an interrupt at start-up keeps it" {
    job a echo a > one.jsonl
    run -0 "$FITRUN" run --jobs one.jsonl --out out.jsonl --quiet
    before=$(md5sum < out.jsonl)
    printf '[runtime]\nkind = python\ninterpreter = /usr/bin/python3\nprelude = missing.py\n' > bad.ini
    run -125 --separate-stderr "$FITRUN" run --profile bad.ini --jobs one.jsonl --out out.jsonl
    [[ $stderr == *"prelude failed"* ]]
    [ "$(md5sum < out.jsonl)" = "$before" ]
    # interrupted while the runtime starts: no job ran, nothing replaced
    printf 'import time\ntime.sleep(30)\n' > slow.py
    printf '[runtime]\nkind = python\ninterpreter = /usr/bin/python3\nprelude = slow.py\n' > slow.ini
    "$FITRUN" run --profile slow.ini --jobs one.jsonl --out out.jsonl --quiet &
    local pid=$!
    sleep 1
    kill -TERM "$pid"
    rc=0
    wait "$pid" || rc=$?
    [ "$rc" -eq 143 ]
    [ "$(md5sum < out.jsonl)" = "$before" ]
    # a run that starts replaces it
    job b echo b > one.jsonl
    run -0 "$FITRUN" run --jobs one.jsonl --out out.jsonl --quiet
    [ "$(jq -r .id out.jsonl)" = b ]
}

@test "--resume names a second result for the same line (file:line), as merge does; the first counts" {
    for i in A B; do job "$i" echo "$i"; done > ab.jsonl
    run -0 "$FITRUN" run --jobs ab.jsonl --out r.jsonl --quiet
    jq -c 'select(.line == 1)' r.jsonl > twice.jsonl
    jq -c 'select(.line == 1)' r.jsonl >> twice.jsonl # two copies concatenated
    run -0 --separate-stderr "$FITRUN" run --jobs ab.jsonl --out twice.jsonl --resume
    [[ $stderr == *"twice.jsonl:2: a second result for line 1 (the first counts); ignored"* ]]
    [[ $stderr == *"resuming twice.jsonl: 1 result kept"* ]]
    [ "$(count twice.jsonl B)" -eq 1 ]
}

@test "a results file in use by another fitrun run is refused (125): two runs never write the same file" {
    for i in $(seq 1 20); do job "c$i" sleep 0.1; done > cc.jsonl
    "$FITRUN" run --jobs cc.jsonl --out cc.out --resume --quiet --workers 2 &
    local pid=$!
    wait_for test -s cc.out
    before=$(wc -l < cc.out)
    run -125 --separate-stderr "$FITRUN" run --jobs cc.jsonl --out cc.out --resume --quiet
    [[ $stderr == *"--out cc.out: in use by another fitrun (pid $pid)"* ]]
    run -125 --separate-stderr "$FITRUN" run --jobs cc.jsonl --out cc.out --quiet # nor replaced
    [[ $stderr == *"in use by another fitrun (pid $pid)"* ]]
    [ "$(wc -l < cc.out)" -ge "$before" ] # not truncated
    wait "$pid"
    [ "$(wc -l < cc.out)" -eq 20 ]
    [ "$(jq -r .id cc.out | sort | uniq -d)" = "" ]
    # once it has ended (also when SIGKILLed: the lock goes with the process)
    "$FITRUN" run --jobs cc.jsonl --out cc.out --quiet --workers 2 &
    pid=$!
    wait_for test -s cc.out
    kill -KILL "$pid"
    wait "$pid" || true
    run -0 "$FITRUN" run --jobs cc.jsonl --out cc.out --resume --quiet
    [ "$(wc -l < cc.out)" -eq 20 ]
    [ "$(jq -r .id cc.out | sort | uniq -d)" = "" ]
}
