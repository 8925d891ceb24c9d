#!/usr/bin/env bats
# fitrun run: every status class from a real command, the fields that go
# with it, invalid and duplicate lines, exit statuses, stdin and env.
# (`crash` cannot come from the exec runtime, whose jobs are children of
# the pool itself: tests/unit/test_pool.c covers it with a scripted runtime.)

load run_common

setup() { run_setup; }
teardown() { run_teardown; }

@test "each status class from a real command, with its fields" {
    {
        job ok echo hello
        job error sh -c 'echo "ValueError: bad" >&2; exit 3'
        job cpu sh -c 'while :; do :; done'
        job wall sleep 30
        job violation "$HELPERS/run_socket"
        job signal sh -c 'kill -SEGV $$'
        job flood yes
        echo '{"id": "bad", "argv": "not a list"}'
    } > jobs.jsonl
    # The helper programs live in the build tree, outside what jobs may read.
    run -1 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out out.jsonl \
        --cpu-time 300ms --wall-time 1s --memory 256M --output 64k --set sandbox.read="$HELPERS"
    [ "$(wc -l < out.jsonl)" -eq 8 ]
    [ "$(field out.jsonl ok status)" = ok ]
    [ "$(field out.jsonl ok exit_code)" = 0 ]
    [ "$(field out.jsonl ok stdout)" = hello ]
    [ "$(field out.jsonl error status)" = error ]
    [ "$(field out.jsonl error exit_code)" = 3 ]
    [ "$(field out.jsonl error error_type)" = "exit 3" ]
    [ "$(field out.jsonl error error_message)" = "ValueError: bad" ]
    [ "$(field out.jsonl cpu status)" = timeout ]
    [ "$(field out.jsonl cpu timeout)" = cpu ]
    [ "$(field out.jsonl wall status)" = timeout ]
    [ "$(field out.jsonl wall timeout)" = wall ]
    [ "$(field out.jsonl violation status)" = violation ]
    [ "$(field out.jsonl violation syscall)" = socket ]
    [ "$(field out.jsonl violation signal)" = SIGSYS ]
    [ "$(field out.jsonl signal status)" = signal ]
    [ "$(field out.jsonl signal signal)" = SIGSEGV ]
    [ "$(field out.jsonl signal exit_code)" = null ]
    [ "$(field out.jsonl flood status)" = output_limit ]
    [ "$(field out.jsonl bad status)" = invalid ]
    [ "$(field out.jsonl bad error_type)" = InvalidJob ]
    # the fixed schema, in order, on every line
    run jq -c 'keys_unsorted[0:14]' out.jsonl
    for l in "${lines[@]}"; do
        [ "$l" = '["id","status","exit_code","signal","syscall","error_type","error_message","stdout","stderr","cpu_ms","wall_ms","max_rss_kb","worker","line"]' ]
    done
    # the summary table on stderr
    [[ $stderr == *"Most common errors:"* ]]
    [[ $stderr == *"output_limit"* ]]
    # A job over its memory limit, with a CPU budget of its own: filling
    # 256 MiB page by page takes up to 2 s of CPU on a paravirtualised
    # guest, whose page faults cost 15-20 µs each (bench/README.md).
    job memory "$HELPERS/run_alloc" 2048 > jobs.jsonl
    run -0 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet \
        --cpu-time 30s --wall-time 60s --memory 256M --set sandbox.read="$HELPERS"
    [ "$(field out.jsonl memory status)" = memory ] || { cat out.jsonl; false; }
    [ "$(field out.jsonl memory exit_code)" != 0 ]
}

@test "CPU time is the default timeout, at ms resolution; wall time is the safety net" {
    {
        job burn sh -c 'while :; do :; done'
        job sleeper sleep 30
    } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --cpu-time 300ms --wall-time 1500ms
    [ "$(field out.jsonl burn timeout)" = cpu ]
    [ "$(field out.jsonl sleeper timeout)" = wall ]
    cpu=$(field out.jsonl burn cpu_ms)
    # killed at 300 ms of CPU, not at RLIMIT_CPU's next whole second
    [ "$cpu" -ge 300 ] && [ "$cpu" -lt 1000 ]
    [[ $(field out.jsonl burn error_message) == "CPU time limit of 300 ms exceeded"* ]]
    # the sleeper used next to no CPU but ran out of wall time
    [ "$(field out.jsonl sleeper cpu_ms)" -lt 300 ]
    [ "$(field out.jsonl sleeper wall_ms)" -ge 1500 ]
}

@test "a whole-second CPU budget holds by the job's own clock when jobs share the CPUs" {
    # The kernel counts RLIMIT_CPU in scheduler ticks, which run ahead of a
    # job's real CPU time when jobs share a CPU: a limit at the budget sent
    # SIGXCPU early (cpu_ms 950-990 here, 1,600 of a 2 s budget on a busy
    # machine, then `signal`). The pool's kill at the budget comes first.
    for i in 1 2 3 4 5 6; do job "b$i" sh -c 'while :; do :; done'; done > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --cpu-time 1s --workers 6
    [ "$(jq -sc 'map([.status, .timeout]) | unique' out.jsonl)" = '[["timeout","cpu"]]' ] || { cat out.jsonl; false; }
    [ "$(jq -s 'map(.cpu_ms) | min' out.jsonl)" -ge 1000 ] || { cat out.jsonl; false; }
}

@test "output beyond the cap is cut, the job killed and marked output_limit" {
    { job flood yes; job errflood sh -c 'yes >&2'; job fits sh -c 'head -c 1000 /dev/zero'; } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --output 10k --preset none \
        --set sandbox.processes=none
    [ "$(field out.jsonl flood status)" = output_limit ]
    [ "$(field out.jsonl flood signal)" = SIGKILL ]
    [ "$(jq -r 'select(.id == "flood") | .stdout | length' out.jsonl)" -eq 10240 ]
    [ "$(field out.jsonl errflood status)" = output_limit ]
    [ "$(jq -r 'select(.id == "errflood") | .stderr | length' out.jsonl)" -eq 10240 ]
    [ "$(field out.jsonl fits status)" = ok ]
    [ "$(jq -r 'select(.id == "fits") | .stdout | length' out.jsonl)" -eq 1000 ]
}

@test "invalid and duplicate lines: one result each, naming the line; the run goes on" {
    {
        job a echo a
        echo 'this is not json'
        echo
        echo '{"argv": ["true"]}'
        job a echo again
        echo '[1,2,3]'
        echo '{"id": "b", "argv": ["echo", "b"]'
        job c echo c
    } > jobs.jsonl
    run -1 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out out.jsonl
    # 8 lines, 1 blank: 7 results
    [ "$(wc -l < out.jsonl)" -eq 7 ]
    [ "$(field out.jsonl a status | sort | tr '\n' ' ')" = "invalid ok " ]
    [ "$(jq -r 'select(.error_type == "DuplicateId") | .line' out.jsonl)" = 5 ]
    [ "$(jq -r 'select(.line == 2) | .error_type' out.jsonl)" = InvalidJSON ]
    [[ $(jq -r 'select(.line == 2) | .error_message' out.jsonl) == "line 2: not valid JSON"* ]]
    [ "$(jq -r 'select(.line == 4) | .error_type' out.jsonl)" = MissingId ]
    [ "$(jq -r 'select(.line == 6) | .error_message' out.jsonl)" = "line 6: a job must be a JSON object" ]
    [ "$(jq -r 'select(.line == 7) | .status' out.jsonl)" = invalid ]
    [ "$(field out.jsonl c status)" = ok ]
    [ "$(field out.jsonl c stdout)" = c ]
}

@test "exit status 0 when every job got a result, whatever its status" {
    { job fails false; job ok true; } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl fails status)" = error ]
}

@test "stdout carries only results; the plan and the summary go to stderr" {
    job a echo a > jobs.jsonl
    run -0 --separate-stderr "$FITRUN" run --jobs jobs.jsonl
    [ "${#lines[@]}" -eq 1 ]
    jq -e '.id == "a"' <<< "$output"
    [[ $stderr == "fitrun: plan: "* ]]
    [[ $stderr == *"done: 1 result in"* ]]
    run -0 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --quiet
    [ -z "$stderr" ]
    # Results thrown away: /dev/null holds nothing a job could read.
    run -0 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --quiet --out /dev/null
    [ -z "$stderr" ]
}

@test "the summary gives fitrun's own CPU per result, without its jobs' CPU" {
    # Two jobs that each spend about a quarter of a second of CPU in a shell
    # loop (0.24 s on the 2-CPU development guest).
    spin='i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done'
    { job s1 sh -c "$spin"; job s2 sh -c "$spin"; } > jobs.jsonl
    run -0 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --cpu-time 30s --wall-time 60s
    line=$(grep "fitrun's own CPU: " <<< "$stderr")
    [[ $line =~ own\ CPU:\ ([0-9]+)\ ms,\ ([0-9]+)\ us\ per\ result\ \(user\ ([0-9]+),\ system\ ([0-9]+)\)$ ]]
    ms=${BASH_REMATCH[1]} per=${BASH_REMATCH[2]} user=${BASH_REMATCH[3]} sys=${BASH_REMATCH[4]}
    jobs_ms=$(jq -s 'map(.cpu_ms) | add' out.jsonl)
    # The jobs' CPU is theirs, not the launcher's.
    [ "$jobs_ms" -gt 200 ]
    [ "$ms" -lt $((jobs_ms / 2)) ]
    # The per-result figure is the total over 2 results; user + system is it.
    [ $((ms * 1000 / 2 - per)) -ge -500 ] && [ $((ms * 1000 / 2 - per)) -le 500 ]
    [ $((user + sys - per)) -ge -1 ] && [ $((user + sys - per)) -le 1 ]
}

@test "a command that cannot be executed: error with exit 127 and why" {
    { job missing /nonexistent/prog; job notexec /tmp; } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl missing status)" = error ]
    [ "$(field out.jsonl missing exit_code)" = 127 ]
    [ "$(field out.jsonl missing error_type)" = ExecNotFound ]
    [[ $(field out.jsonl missing stderr) == *"cannot execute '/nonexistent/prog': No such file"* ]]
    [ "$(field out.jsonl notexec exit_code)" = 126 ]
    [ "$(field out.jsonl notexec error_type)" = ExecPermission ]
}

@test "stdin is fed to the job; without it the job reads /dev/null" {
    {
        jq -cn '{id: "in", argv: ["cat"], stdin: "line 1\nline 2\n"}'
        job noin cat
        head -c 300000 /dev/zero | tr '\0' x | jq -cRs '{id: "big", argv: ["wc", "-c"], stdin: .}'
    } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl in stdout)" = "$(printf 'line 1\nline 2')" ]
    [ "$(field out.jsonl noin stdout)" = "" ]
    [ "$(field out.jsonl big stdout)" = 300000 ]
}

@test "jobs see FITRUN_JOB_ID, FITRUN_WORKER, thread variables and the profile's [env]" {
    printf '[env]\nMY_VAR = from profile\nOMP_NUM_THREADS = 7\n' > p.ini
    job e1 sh -c 'echo "$FITRUN_JOB_ID|$FITRUN_WORKER|$MY_VAR|$OMP_NUM_THREADS|$OPENBLAS_NUM_THREADS"' > jobs.jsonl
    run -0 env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS "$FITRUN" run --profile p.ini --jobs jobs.jsonl \
        --out out.jsonl --quiet --cpus 1 --workers 1
    [ "$(field out.jsonl e1 stdout)" = "e1|0|from profile|7|1" ]
}

@test "undecodable output bytes become U+FFFD; the line stays valid JSON" {
    job bin sh -c 'printf "a\377b\300"' > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl bin stdout)" = "a�b�" ]
}

@test "--shard K/N runs only its lines (invalid ones too) and names the output" {
    for i in 1 2 3 4 5 6 7 8 9; do job "s$i" echo "$i"; done > jobs.jsonl
    sed -i '5s/.*/not json/' jobs.jsonl # line 5 belongs to shard 1 of 3
    run -0 "$FITRUN" run --jobs jobs.jsonl --out 'res.{shard}.jsonl' --shard 0/3 --quiet
    [ "$(jq -r .line res.0.jsonl | sort -n | tr '\n' ' ')" = "1 4 7 " ]
    run -1 "$FITRUN" run --jobs jobs.jsonl --out 'res.{shard}.jsonl' --shard 1/3 --quiet
    [ "$(jq -r .line res.1.jsonl | sort -n | tr '\n' ' ')" = "2 5 8 " ]
    [ "$(jq -r 'select(.line == 5) | .status' res.1.jsonl)" = invalid ]
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out 'res.{shard}.jsonl'
    [[ $stderr == *"{shard} needs --shard"* ]]
}
