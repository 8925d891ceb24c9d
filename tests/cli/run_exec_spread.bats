#!/usr/bin/env bats
# Exec jobs that spread their work over processes (`processes` > 1,
# shell.ini). CPU: the budget covers every process of the job: work spread
# over children that are waited for, grandchildren, a chain of processes or
# orphans re-parented to fitrun is counted and killed at the budget, with
# fitrun's own cgroups (the slot's CPU counter) and without them (the
# clocks of the job's tree and its session's orphans, with what each
# reaped), and a job whose reported CPU reached its budget is never `ok`.
# Every process here stays under RLIMIT_CPU (whole seconds), the backstop
# each process gets on its own. Memory: the slot's cgroup limit holds for
# the whole job; without cgroups RLIMIT_AS is per process, as documented
# (docs/run.md, "Limits and timeouts").

load run_common

setup() { run_setup; }
teardown() { run_teardown; }

PY=/usr/bin/python3
# burn S: Python code that uses S seconds of its own process's CPU.
burn() { printf 'import time\nt = time.process_time()\nwhile time.process_time() - t < %s: pass\n' "$1"; }

# spread ID MODE N S: a job whose Python process starts N processes
# that each use S s of CPU: seq (one after the other, each waited for),
# par (all at once, then waited for), nowait (all at once, never waited
# for: their zombies are re-parented to fitrun as the job is killed),
# chain (each level burns, then forks the next and waits for it), deep
# (nowait, 80 levels down a chain of processes).
spread() {
    local code="import os, sys, time
def burn(s):
$(burn s | sed 's/^/    /')
mode, n, s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
if mode == 'chain':
    for i in range(n):
        if os.fork():
            os.wait()
            os._exit(0)
        burn(s)
    os._exit(0)
if mode == 'deep':
    for i in range(80):
        if os.fork():
            os.wait()
            os._exit(0)
pids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        burn(s)
        os._exit(0)
    if mode == 'seq':
        os.waitpid(pid, 0)
    else:
        pids.append(pid)
if mode in ('nowait', 'deep'):
    time.sleep(n * s)
else:
    for p in pids:
        os.waitpid(p, 0)
print('done')"
    jq -cn --arg id "$1" --arg c "$code" --arg py "$PY" --arg m "$2" --arg n "$3" --arg s "$4" \
        '{id: $id, argv: [$py, "-c", $c, $m, $n, $s]}'
}

# orphans ID N S WAIT: a shell that starts N orphans (each S s of CPU),
# sleeps WAIT s and exits 0.
orphans() {
    local s
    s="for i in \$(seq $2); do ( $PY -c '$(burn "$3")' & ); done; sleep $4; echo done"
    jq -cn --arg id "$1" --arg s "$s" '{id: $id, argv: ["sh", "-c", $s]}'
}

# run_spread CGROUPS: the attacks, 1 s of CPU per job, shell.ini.
run_spread() {
    {
        spread seq seq 4 0.8
        spread par par 4 0.8
        spread chain chain 4 0.8
        spread nowait nowait 4 0.8
        spread deep deep 4 0.8
        orphans orphans 4 0.8 3
        orphans gone 4 0.3 2
        spread fair seq 3 0.2
    } > jobs.jsonl
    run -0 "$FITRUN" run --quiet --profile "$FITRUN_SRC/profiles/shell.ini" --set resources.cgroups="$1" \
        --set sandbox.processes=128 --workers 1 --cpu-time 1s --wall-time 20s --jobs jobs.jsonl --out out.jsonl
    for id in seq par chain nowait deep orphans gone; do
        [ "$(field out.jsonl $id status)" = timeout ] || { cat out.jsonl; false; }
        [ "$(field out.jsonl $id timeout)" = cpu ]
        [ "$(field out.jsonl $id error_type)" = CPUTimeout ]
        [ "$(field out.jsonl $id cpu_ms)" -ge 1000 ]
    done
    # Killed at the budget, not after spending 3.2 s; and what the kill
    # orphaned is not counted twice.
    for id in seq par chain nowait deep orphans; do
        [ "$(field out.jsonl $id cpu_ms)" -lt 1800 ] || { cat out.jsonl; false; }
        [ "$(field out.jsonl $id stdout)" = "" ]
    done
    # Work spread under the budget is ok, and counted.
    [ "$(field out.jsonl fair status)" = ok ] || { cat out.jsonl; false; }
    [ "$(field out.jsonl fair cpu_ms)" -ge 550 ]
}

@test "CPU spread over processes is the job's, with fitrun's cgroups" {
    run -0 "$FITRUN" detect
    [[ $output == *"delegated   yes"* ]] || skip "fitrun's cgroup is not delegated here"
    run_spread auto
}

@test "CPU spread over processes is the job's, without cgroups" {
    run_spread off
}

# memspread ID: four children that each touch 200 MB (under a 400M
# limit each, 800 MB together) and sleep; the parent exits 1 if one of
# them died.
memspread() {
    local code="import os, time
for i in range(4):
    if os.fork() == 0:
        b = bytearray(200 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        time.sleep(1)
        os._exit(0)
died = [os.wait()[1] for i in range(4)]
print(died)
raise SystemExit(1 if any(died) else 0)"
    jq -cn --arg id "$1" --arg c "$code" --arg py "$PY" '{id: $id, argv: [$py, "-c", $c]}'
}

@test "memory spread over processes: the job's limit with cgroups, each process's without" {
    # A CPU budget far above what 800 MB of page faults cost: 4 s of CPU
    # on a paravirtualised guest (15-20 µs a fault, bench/README.md).
    memspread m > jobs.jsonl
    run -0 "$FITRUN" run --quiet --profile "$FITRUN_SRC/profiles/shell.ini" --set resources.cgroups=off \
        --workers 1 --memory 400M --cpu-time 60s --wall-time 60s --jobs jobs.jsonl --out off.jsonl
    # Documented: RLIMIT_AS is per process (docs/run.md, "Limits and timeouts").
    [ "$(field off.jsonl m status)" = ok ] || { cat off.jsonl; false; }
    run -0 "$FITRUN" detect
    [[ $output == *"delegated   yes"* ]] || skip "fitrun's cgroup is not delegated here"
    run -0 "$FITRUN" run --quiet --profile "$FITRUN_SRC/profiles/shell.ini" --set resources.cgroups=auto \
        --workers 1 --memory 400M --cpu-time 60s --wall-time 60s --jobs jobs.jsonl --out cg.jsonl
    # Children OOM-killed in the slot's cgroup, the parent exits 1.
    [ "$(field cg.jsonl m status)" = memory ] || { cat cg.jsonl; false; }
    [ "$(field cg.jsonl m error_type)" = OOMKill ]
    [[ "$(field cg.jsonl m error_message)" == "a process of the job was killed by the out-of-memory killer"* ]]
}
