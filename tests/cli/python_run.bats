#!/usr/bin/env bats
# `fitrun run` with the warm Python runtime ([runtime] kind = python):
# result fields and every status class, hooks, numpy outputs, prints,
# the hostile ARC sample, prelude failure, worker crash recovery,
# streaming, a real cgroup v1 CPU quota, nothing left behind.
# (The Python side alone: python_side.bats; the ARC tools: python_tools.bats.)

load python_common

setup() {
    FITRUN=${FITRUN:?FITRUN must point at the fitrun binary}
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    D=$BATS_TEST_TMPDIR
    # Every profile of these tests uses a prelude in $D: `pgrep -f $D` finds
    # exactly this test's interpreter and workers.
    printf 'import numpy as np\n' > "$D/prelude.py"
    profile "$D/p.ini"
}

teardown() {
    # Anything of this test still running (its command lines name $D): by pid.
    local pids
    pids=$(pgrep -f "$D/" || true)
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
    if [ -f "$D/cgroups" ]; then
        tac "$D/cgroups" | while read -r d; do [ -d "$d" ] && rmdir "$d"; done
    fi
    rm -f /tmp/fitrun-sample-pwned /tmp/fitrun-sample-pwned-2
}

# profile FILE [EXTRA INI LINES for [runtime]]
profile() {
    python_profile "$1" 2 5s 512M "${@:2}"
}

# r ID FILTER: a field of one result
r() {
    jq -c --arg id "$1" "select(.id == \$id) | $2" "$D/out.jsonl"
}

nothing_left() {
    ! pgrep -f "$D/" >/dev/null
}

@test "python run: result fields of ok and error results" {
    {
        job ok $'def transform(g):\n    return [r[::-1] for r in g]\n' '[[[1,2]],[[3,4]],[[5,6]]]' '{expected: [[[2,1]], [[0,0]], null]}'
        job err $'def transform(g):\n    x = 1\n    return g[7]\n' '[[[1]]]' '{expected: [[[1]]]}'
        job entry $'def solve(x):\n    return x * 2\n' '[1, 2]' '{entry: "solve"}'
    } > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    [ "$(wc -l < "$D/out.jsonl")" -eq 3 ]
    # The fixed fields, in order, then line, then the python runtime's own.
    [ "$(r ok 'keys_unsorted')" = '["id","status","exit_code","signal","syscall","error_type","error_message","stdout","stderr","cpu_ms","wall_ms","max_rss_kb","worker","line","outputs","passed"]' ]
    [ "$(r ok '[.status, .exit_code, .outputs, .passed]')" = '["ok",0,[[[2,1]],[[4,3]],[[6,5]]],[true,false,null]]' ]
    # max_rss_kb: the child's rusage counts the pages it inherited from the
    # interpreter (MBs); a memory cgroup of its own (docs/run.md) only what
    # the prediction itself was charged (~1.1-1.5 MB for this one).
    local rss=1000
    [ "$("$FITRUN" detect --json --profile "$D/p.ini" | jq .cgroup.delegated)" = true ] && rss=0
    [ "$(r ok "(.cpu_ms >= 0) and (.wall_ms > 0) and (.max_rss_kb > $rss) and (.worker | IN(0, 1))")" = true ]
    [ "$(r err '[.status, .error_type, .error_message, .error_line, .outputs, .passed]')" = '["error","IndexError","list index out of range",3,[null],[false]]' ]
    [ "$(r entry '.outputs')" = '[2,4]' ]
    [[ "$stderr" =~ python:\ /usr/bin/python3\ 3\.[0-9]+\.[0-9]+\ started\ once\ with\ 2\ workers ]]
    nothing_left
}

@test "python run: every status class" {
    # Every job has `expected`: `passed` is reported for ok and error only
    # (the prediction ran to its end), null for every other status.
    local e='{expected: [[[1]]]}'
    {
        job ok $'def transform(g):\n    return g\n' '' "$e"
        job error $'def transform(g):\n    raise ValueError("bad grid")\n' '' "$e"
        job syntax $'def transform(g)\n    return g\n' '' "$e"
        job unser $'def transform(g):\n    return {1, 2}\n' '' "$e"
        job cpu $'def transform(g):\n    while True:\n        pass\n' '' "$e"
        job violation $'import socket\ndef transform(g):\n    socket.socket()\n' '' "$e"
        job signal $'import ctypes\ndef transform(g):\n    ctypes.string_at(0)\n' '' "$e"
        job flood $'def transform(g):\n    while True:\n        print("x" * 100)\n' '' "$e"
        job crash $'import os\ndef transform(g):\n    os._exit(7)\n' '' "$e"
        echo '{"id": "invalid", "inputs": [1]}'
    } > "$D/jobs.jsonl"
    # A generous wall time: on a loaded machine the CPU-bound loop must still
    # reach its 1 s of CPU before the wall clock runs out.
    run_jobs --wall-time 60s
    [ "$status" -eq 1 ] # an invalid line
    [ "$(r ok .status)" = '"ok"' ]
    [ "$(r error '[.status, .error_type, .error_message]')" = '["error","ValueError","bad grid"]' ]
    [ "$(r syntax '[.status, .error_type, .error_line]')" = '["error","SyntaxError",1]' ]
    [ "$(r unser '[.status, .error_type]')" = '["error","UnserializableOutput"]' ]
    [ "$(r cpu '[.status, .timeout]')" = '["timeout","cpu"]' ]
    [ "$(r cpu '.cpu_ms >= 500 and .cpu_ms < 2500')" = true ] # rusage is tick-sampled
    [ "$(r violation '[.status, .syscall]')" = '["violation","socket"]' ]
    [ "$(r signal '[.status, .signal]')" = '["signal","SIGSEGV"]' ]
    [ "$(r flood '[.status, (.stdout | length)]')" = '["output_limit",65536]' ]
    [ "$(r crash '[.status, .exit_code, .error_type]')" = '["crash",7,"NoResult"]' ]
    [ "$(r invalid '[.status, .error_type]')" = '["invalid","InvalidJob"]' ]
    [[ "$(r invalid .error_message)" =~ code ]]
    [ "$(r ok .passed)" = '[true]' ]
    [ "$(r error .passed)" = '[false]' ]
    [ "$(r syntax .passed)" = '[false]' ]
    [ "$(r unser .passed)" = '[false]' ]
    for id in cpu violation signal flood crash; do
        [ "$(r $id .passed)" = null ] || { echo "$id: passed $(r $id .passed)"; false; }
    done
    # A memory hog, in a run of its own with a CPU budget far above what its
    # page faults cost (filling 512 MiB takes 2 s of CPU on a paravirtualised
    # guest, 15-20 µs a fault: bench/README.md). A memory cgroup of its own
    # (docs/cgroups.md) OOM-kills the prediction; RLIMIT_AS makes its
    # allocation fail.
    job memory $'def transform(g):\n    x = []\n    while True:\n        x.append(bytearray(50 << 20))\n' '' "$e" > "$D/jobs.jsonl"
    run_jobs --cpu-time 30s --wall-time 60s
    [ "$status" -eq 0 ]
    local memtype=MemoryError
    [ "$("$FITRUN" detect --json --profile "$D/p.ini" | jq .cgroup.delegated)" = true ] && memtype=OOMKill
    [ "$(r memory '[.status, .error_type, .passed]')" = "[\"memory\",\"$memtype\",null]" ] || { cat "$D/out.jsonl"; false; }
    # Wall time: sleeping code, a short wall limit.
    job wall $'import time\nprint("before", flush=True)\ndef transform(g):\n    time.sleep(60)\n' '' "$e" > "$D/jobs.jsonl"
    run_jobs --wall-time 1s
    [ "$status" -eq 0 ]
    [ "$(r wall '[.status, .timeout, .stdout, .passed]')" = '["timeout","wall","before\n",null]' ]
    [ "$(r wall '.wall_ms >= 900 and .wall_ms < 10000 and .cpu_ms < 500')" = true ]
    nothing_left
}

@test "python run: fitrun_input and fitrun_output hooks of the prelude" {
    cat > "$D/prelude.py" <<'EOF'
import numpy as np
def fitrun_input(value):
    return np.array(value)
def fitrun_output(value):
    return {"shape": list(value.shape), "sum": value.sum()}
EOF
    job h $'def transform(a):\n    assert isinstance(a, np.ndarray)\n    return a.T\n' '[[[1,2,3]]]' '{expected: [{shape: [3,1], sum: 6}]}' > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    [ "$(r h '[.status, .outputs, .passed]')" = '["ok",[{"shape":[3,1],"sum":6}],[true]]' ]
}

@test "python run: numpy arrays, scalars and tuples become JSON" {
    job n $'def transform(g):\n    a = np.array(g)\n    return (a * 2, np.int64(3), np.float32(0.5), np.bool_(True), a.mean())\n' '[[[1,2],[3,4]]]' > "$D/jobs.jsonl"
    job t $'def transform(g):\n    return tuple(zip(*g))\n' '[[[1,2],[3,4]]]' '{expected: [[[1,3],[2,4]]]}' >> "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    [ "$(r n '[.status, .outputs]')" = '["ok",[[[[2,4],[6,8]],3,0.5,true,2.5]]]' ]
    [ "$(r t '.passed')" = '[true]' ]
}

@test "python run: the prediction is a module in sys.modules, as a script is: dataclasses with postponed annotations, pickle of its own classes" {
    # dataclasses looks a class's module up in sys.modules under `from
    # __future__ import annotations`, pickle finds a class through it: the
    # same code run as a script works.
    local code=$'from __future__ import annotations\nimport pickle, sys\nfrom dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\ndef transform(g):\n    return [P(1).x, pickle.loads(pickle.dumps(P(2))).x, __name__, sys.modules[__name__].transform is transform]\n'
    job dc "$code" > "$D/jobs.jsonl"
    for iso in fork reuse; do
        run_jobs --set "runtime.isolation=$iso"
        [ "$status" -eq 0 ]
        [ "$(r dc '[.status, .outputs]')" = '["ok",[[1,2,"__prediction__",true]]]' ] || { cat "$D/out.jsonl"; false; }
    done
    printf '%s' "$code" > "$D/script.py"
    printf 'exec(open("%s").read())\nprint(transform(None)[:2])\n' "$D/script.py" > "$D/main.py"
    [ "$(/usr/bin/python3 "$D/main.py")" = "[1, 2]" ]
}

@test "python run: prints are captured and never reach the results stream" {
    job p $'import sys\nprint("at import")\ndef transform(g):\n    print(\'{"id": "forged", "status": "ok"}\')\n    print("err", file=sys.stderr)\n    return g\n' > "$D/jobs.jsonl"
    printf 'print("prelude says hi")\n' >> "$D/prelude.py"
    run --separate-stderr "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out - --progress none
    [ "$status" -eq 0 ]
    # stdout is exactly one result line (the prelude's print went to stderr)
    [ "$(wc -l <<< "$output")" -eq 1 ]
    [ "$(jq -c '[.id, .status, .stdout, .stderr, .outputs]' <<< "$output")" = '["p","ok","at import\n{\"id\": \"forged\", \"status\": \"ok\"}\n","err\n",[[[1]]]]' ]
    [[ "$stderr" =~ "prelude says hi" ]]
}

@test "python run: the bundled ARC sample gets the expected status for every prediction" {
    run --separate-stderr "$FITRUN" run --profile "$SRC/profiles/arc-python.ini" --jobs "$SRC/samples/arc/jobs.jsonl" \
        --out "$D/out.jsonl" --progress none
    [ "$status" -eq 0 ]
    [ "$(wc -l < "$D/out.jsonl")" -eq "$(wc -l < "$SRC/samples/arc/jobs.jsonl")" ]
    # Each result against samples/arc/expected.json: status among the accepted
    # ones, error_type/signal when given, and every `ok`-tagged prediction
    # solving its task (passed all true).
    run jq -rn --slurpfile exp "$SRC/samples/arc/expected.json" '
        [inputs] | .[] | . as $r | $exp[0][$r.id] as $e
        | select(($e.status | index($r.status)) == null
                 or ($e.error_type and $e.error_type != $r.error_type and $r.status == "error")
                 or ($e.signal and $e.signal != $r.signal)
                 or ($e.solves == true and ($r.passed | all) != true)
                 or ($e.solves == false and ($r.passed | all)))
        | "\($r.id): got \($r.status) \($r.error_type) \($r.signal), expected \($e)"' "$D/out.jsonl"
    echo "$output"
    [ -z "$output" ]
    # The hostile ones did nothing.
    [ ! -e /tmp/fitrun-sample-pwned ]
    [ ! -e /tmp/fitrun-sample-pwned-2 ]
    # The summary and the most common errors are printed.
    [[ "$stderr" =~ "Most common errors" ]]
    # and the scorer reads the results
    run /usr/bin/python3 "$SRC/tools/arc/arc_score.py" --jobs "$SRC/samples/arc/jobs.jsonl" "$D/out.jsonl"
    [ "$status" -eq 0 ]
    grep -E '^MEAN +4\.5 ' <<< "$output"
}

@test "python run: a failing prelude stops the run before any job, once, with file:line, exit 125" {
    printf 'import os\nimport fitrun_no_such_module\n' > "$D/prelude.py"
    for i in 1 2 3 4 5; do job "j$i" $'def transform(g):\n    return g\n'; done > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 125 ]
    [ ! -s "$D/out.jsonl" ]
    [ "$(grep -c fitrun_no_such_module <<< "$stderr")" -eq 1 ]
    [[ "$stderr" =~ $D/prelude.py:2:\ ModuleNotFoundError ]]
    nothing_left
}

@test "python run: a missing interpreter is one clear error, exit 125" {
    profile "$D/p.ini" 'interpreter = /nonexistent/python3'
    sed -i '/^interpreter = \/usr\/bin\/python3$/d' "$D/p.ini"
    job j $'def transform(g):\n    return g\n' > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 125 ]
    [[ "$stderr" =~ /nonexistent/python3 ]]
}

@test "python run: a runtime script of another protocol version is refused, exit 125" {
    mkdir "$D/py"
    sed 's/^PROTOCOL = [0-9]*$/PROTOCOL = 5/' "$SRC/launcher/runtime/python/fitrun_runtime.py" > "$D/py/fitrun_runtime.py"
    ! cmp -s "$D/py/fitrun_runtime.py" "$SRC/launcher/runtime/python/fitrun_runtime.py"
    job j $'def transform(g):\n    return g\n' > "$D/jobs.jsonl"
    FITRUN_PYTHON_DIR=$D/py run_jobs
    [ "$status" -eq 125 ]
    [[ "$stderr" =~ fitrun_runtime.py\ speaks\ protocol\ 5,\ this\ fitrun\ [0-9]+ ]]
    [ ! -e "$D/out.jsonl" ] || [ ! -s "$D/out.jsonl" ]
}

@test "python run: interpreter = a command name is looked up in PATH" {
    profile "$D/p.ini"
    sed -i 's|^interpreter = /usr/bin/python3$|interpreter = python3|' "$D/p.ini"
    job j $'import numpy\ndef transform(g):\n    return g\n' > "$D/jobs.jsonl"
    PATH=/usr/bin:/bin run_jobs
    [ "$status" -eq 0 ]
    [ "$(r j .status)" = '"ok"' ]
    [[ "$stderr" =~ python:\ /usr/bin/python3\ 3\. ]]
    # not found: one clear error naming the PATH searched
    run --separate-stderr env PATH=/nonexistent "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl"
    [ "$status" -eq 125 ]
    [[ "$stderr" =~ "python interpreter python3: not found in PATH (/nonexistent)" ]]
}

# Two slow jobs (one per worker), then six quick ones, run in the
# background: $fr is fitrun's pid, its stderr goes to $D/err.
start_slow_and_quick() {
    job slow0 $'import time\ndef transform(g):\n    time.sleep(1.5)\n    return 0\n' > "$D/jobs.jsonl"
    job slow1 $'import time\ndef transform(g):\n    time.sleep(1.5)\n    return 1\n' >> "$D/jobs.jsonl"
    for i in 1 2 3 4 5 6; do job "q$i" $'def transform(g):\n    return 5\n'; done >> "$D/jobs.jsonl"
    "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --progress none 2> "$D/err" &
    fr=$!
}

# this_zygote: the pid of this test's interpreter, or nothing.
this_zygote() {
    pgrep -o -f "fitrun_runtime.py .*$D/" || true
}

# busy_workers: the workers of this test's interpreter that run a
# prediction now (a worker then has a child of its own), one per line.
busy_workers() {
    local w zygote
    zygote=$(this_zygote)
    for w in $( [ -n "$zygote" ] && pgrep -P "$zygote"); do
        [ -z "$(pgrep -P "$w")" ] || echo "$w"
    done
}

@test "python run: a worker killed mid-job is replaced and the job retried; the run completes" {
    start_slow_and_quick
    # Kill a worker while it runs a job.
    victim=
    for i in $(seq 500); do
        victim=$(busy_workers | head -1)
        [ -z "$victim" ] || break
        sleep 0.02
    done
    [ -n "$victim" ]
    kill -KILL "$victim"
    wait "$fr"
    echo "$(cat "$D/err")"
    [ "$(wc -l < "$D/out.jsonl")" -eq 8 ]
    # The killed worker's job ran again (attempts 2) on a fresh worker and succeeded.
    [ "$(jq -s '[.[] | select(.attempts == 2 and .status == "ok")] | length' "$D/out.jsonl")" -eq 1 ]
    [ "$(jq -s '[.[] | select(.status != "ok")] | length' "$D/out.jsonl")" -eq 0 ]
    grep -q "retrying it once" "$D/err"
    ! kill -0 "$victim" 2>/dev/null
    nothing_left
}

@test "python run: a killed interpreter is started again, its workers' jobs retried; the run completes; not forever" {
    start_slow_and_quick
    # Once both workers run their slow job.
    for i in $(seq 500); do
        busy=$(busy_workers | wc -l)
        [ "$busy" -lt 2 ] || break
        sleep 0.02
    done
    [ "$busy" -eq 2 ]
    zygote=$(this_zygote)
    kill -KILL "$zygote"
    wait "$fr"
    cat "$D/err"
    [ "$(wc -l < "$D/out.jsonl")" -eq 8 ]
    [ "$(jq -s '[.[] | select(.status != "ok")] | length' "$D/out.jsonl")" -eq 0 ]
    [ "$(r slow0 .attempts)" = 2 ] && [ "$(r slow1 .attempts)" = 2 ]
    grep -q "the interpreter (pid $zygote) died during the run; started again (pid [0-9]*)" "$D/err"
    nothing_left
    # An interpreter that keeps dying: started again 3 times, then the run
    # stops (125) and says so; the jobs without a result are --resume's.
    for i in 1 2 3 4 5 6 7 8; do job "long$i" $'import time\ndef transform(g):\n    time.sleep(30)\n'; done > "$D/jobs.jsonl"
    "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --progress none 2> "$D/err" &
    fr=$!
    killed=0
    for i in $(seq 1000); do
        kill -0 "$fr" 2>/dev/null || break
        z=$(this_zygote)
        # Only once it is ready: both workers are its children. (Before, its
        # one child may be the sandbox self-test's, and an interpreter
        # killed while it starts again stops the run at once.)
        if [ -n "$z" ] && [ "$(pgrep -c -P "$z")" -ge 2 ]; then kill -KILL "$z" && killed=$((killed + 1)); fi
        sleep 0.05
    done
    run wait "$fr"
    cat "$D/err"
    [ "$status" -eq 125 ]
    [ "$(grep -c "died during the run; started again" "$D/err")" -eq 3 ]
    grep -q "died during the run, 4 times: not started again" "$D/err"
    [ "$(wc -l < "$D/out.jsonl")" -lt 8 ]
    [ "$(jq -s '[.[] | select(.status != "crash")] | length' "$D/out.jsonl")" -eq 0 ]
    nothing_left
}

@test "python run: streaming, one job at a time over pipes through one fitrun run" {
    coproc FR { exec "$FITRUN" run --profile "$D/p.ini" --jobs - --out - --progress none 2>"$D/err"; }
    # (bash unsets FR_PID once it has reaped the coproc: keep it)
    local pid=$FR_PID
    for i in 1 2 3 4 5; do
        job "s$i" "def transform(g):
    return $i" >&"${FR[1]}"
        read -r -t 20 line <&"${FR[0]}"
        [ "$(jq -c '[.id, .outputs]' <<< "$line")" = "[\"s$i\",[$i]]" ]
    done
    exec {FR[1]}>&-
    wait "$pid"
    # one interpreter for the whole stream
    [ "$(grep -c 'started once' "$D/err")" -eq 1 ]
}

@test "python run: the pool and start-up under a real cgroup v1 CPU quota" {
    [ "$(id -u)" = 0 ] || skip "not root"
    parent=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3 }' /proc/self/cgroup)
    mp=$(awk '$9 == "cgroup" && $NF ~ /(^|,)cpu(,|$)/ { print $5; exit }' /proc/self/mountinfo)
    [ -n "$mp" ] || skip "no cgroup v1 cpu hierarchy"
    [ "$parent" = / ] && parent=
    cg=$mp$parent/fitrun-test-python-$$-$BATS_TEST_NUMBER
    mkdir "$cg" || skip "cannot create $cg"
    echo "$cg" >> "$D/cgroups"
    echo 100000 > "$cg/cpu.cfs_period_us"
    echo 50000 > "$cg/cpu.cfs_quota_us" # half a CPU
    profile "$D/p.ini"
    sed -i -e 's/^workers = 2$/workers = auto/' -e 's/^wall_time = 5s$/wall_time = 60s/' "$D/p.ini"
    for i in $(seq 20); do job "c$i" $'def transform(g):\n    return np.array(g).sum()\n' '[[[1,2]]]'; done > "$D/jobs.jsonl"
    job spin $'def transform(g):\n    while True:\n        pass\n' >> "$D/jobs.jsonl"
    run --separate-stderr bash -c 'echo $BASHPID > "$1/cgroup.procs" && exec "${@:2}"' _ "$cg" \
        "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --progress none
    echo "$stderr"
    [ "$status" -eq 0 ]
    # the quota decides the pool: one worker, and the interpreter started once
    [[ "$stderr" =~ plan:\ 1\ worker ]]
    [[ "$stderr" =~ "started once with 1 worker " ]]
    [ "$(jq -s '[.[] | select(.status == "ok" and .outputs == [3])] | length' "$D/out.jsonl")" -eq 20 ]
    # CPU time, not wall time, is the limit: the throttled spin still gets its full second of CPU
    [ "$(r spin '[.status, .timeout]')" = '["timeout","cpu"]' ]
    [ "$(r spin '.cpu_ms >= 500 and .wall_ms >= 1500')" = true ]
    nothing_left
}

@test "python run: SIGTERM during a slow prelude stops the start at once (143), nothing left" {
    printf 'import time\ntime.sleep(60)\n' > "$D/prelude.py"
    job j $'def transform(g):\n    return g\n' > "$D/jobs.jsonl"
    "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --progress none 2> "$D/err" &
    fr=$!
    for i in $(seq 200); do pgrep -f "fitrun_runtime.py .*$D/" >/dev/null && break; sleep 0.02; done
    sleep 0.3
    SECONDS=0
    kill -TERM "$fr"
    rc=0
    wait "$fr" || rc=$?
    [ "$rc" -eq 143 ]
    [ "$SECONDS" -lt 10 ]
    grep -q "interrupted while" "$D/err"
    [ ! -s "$D/out.jsonl" ]
    nothing_left
}

@test "python run: a memory limit the interpreter cannot live with is one clear error before any job" {
    # RLIMIT_AS (no cgroups of fitrun's own) counts the interpreter's whole
    # address space in every prediction.
    for i in 1 2 3; do job "j$i" $'def transform(g):\n    return g\n'; done > "$D/jobs.jsonl"
    run_jobs --memory 40M --set resources.cgroups=off
    [ "$status" -eq 125 ]
    [ ! -s "$D/out.jsonl" ]
    [[ "$stderr" =~ SelfTestFailed ]]
    [[ "$stderr" =~ "memory limit is below the interpreter's own size" ]]
    nothing_left
}

@test "python run: with a memory cgroup per slot, 40M is a prediction's own memory: the interpreter's fits" {
    "$FITRUN" detect --json --profile "$D/p.ini" > "$D/d.json"
    [ "$(jq .cgroup.delegated "$D/d.json")" = true ] || skip "cgroups not delegated: $(jq -r .cgroup.delegated_reason "$D/d.json")"
    for i in 1 2 3; do job "j$i" $'def transform(g):\n    return g\n'; done > "$D/jobs.jsonl"
    job big $'def transform(g):\n    b = bytearray(60 << 20)\n    for i in range(0, len(b), 4096):\n        b[i] = 1\n    return g\n' >> "$D/jobs.jsonl"
    run_jobs --memory 40M
    [ "$status" -eq 0 ]
    for i in 1 2 3; do [ "$(r "j$i" .status)" = '"ok"' ]; done
    [ "$(r big '[.status, .error_type]')" = '["memory","OOMKill"]' ]
    nothing_left
}

@test "python run: a call the interpreter needs and the policy denies is named before any job" {
    # the self-test runs a prediction the way a worker does, the zygote
    # reading its violations: CPython allocates with mmap
    for i in 1 2; do job "j$i" $'def transform(g):\n    return g\n'; done > "$D/jobs.jsonl"
    run_jobs --set sandbox.deny=mmap
    [ "$status" -eq 125 ]
    [ ! -s "$D/out.jsonl" ]
    [[ "$stderr" == *"SelfTestFailed: a sandboxed child of the interpreter cannot run Python code (the sandbox denied mmap, which it needs)"* ]]
    nothing_left
}
