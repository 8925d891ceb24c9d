#!/usr/bin/env bats
# The warm Python runtime against predictions that attack it, each as the
# attack was described (answer key, disarmed timers, forged records, bytes
# that break protocols, floods, memory of earlier predictions, a killed
# launcher, extreme durations): real /usr/bin/python3 workers, real fitrun.
# File confinement (Landlock) and per-slot uids come from the sandbox; what
# is asserted here is that nothing of the runtime's own processes, memory
# or descriptors leads a prediction to the answers.

bats_require_minimum_version 1.5.0

setup() {
    FITRUN=${FITRUN:?FITRUN must point at the fitrun binary}
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    D=$BATS_TEST_TMPDIR
    # Every profile here has its prelude in $D: `pgrep -f $D/` finds exactly
    # this test's interpreter and workers (teardown kills them by pid).
    printf 'PRELUDE = 1\n' > "$D/prelude.py"
    profile "$D/p.ini"
}

teardown() {
    local pids dir
    for dir in "$D" ${W:+"$W"}; do
        pids=$(pgrep -f "$dir/" || true)
        [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
    done
    [ -z "${W:-}" ] || rm -rf "$W"
}

# profile FILE [EXTRA INI LINES]
profile() {
    local f=$1
    shift
    cat > "$f" <<EOF
[resources]
workers = 1
[sandbox]
preset = python
cpu_time = 1s
wall_time = 20s
memory = 1G
output = 64K
[runtime]
kind = python
interpreter = /usr/bin/python3
prelude = prelude.py
entry = transform
EOF
    printf '%s\n' "$@" >> "$f"
}

# job ID CODE [INPUTS_JSON [EXTRA_JSON_FIELDS]]: one job line.
job() {
    jq -cn --arg id "$1" --arg code "$2" --argjson inputs "${3:-[1]}" "{id: \$id, code: \$code, inputs: \$inputs}${4:+ + $4}"
}

run_jobs() {
    run --separate-stderr "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --progress none "$@"
}

# r ID FILTER: a field of one result
r() {
    jq -c --arg id "$1" "select(.id == \$id) | $2" "$D/out.jsonl"
}

# alive PID...: some pid is a live (non-zombie) process
alive() {
    local p st
    for p in "$@"; do
        st=$(ps -o stat= -p "$p" 2>/dev/null) || continue
        [[ $st == Z* ]] || return 0
    done
    return 1
}

# tree PID: PID's descendants, one per line
tree() {
    pstree -p "$1" | grep -o '([0-9]*)' | tr -d '()' | grep -vx "$1"
}

# vmhwm PID: peak resident memory in kB
vmhwm() {
    awk '/^VmHWM:/ {print $2}' "/proc/$1/status"
}

@test "python hostile: the answer key is not reachable through the runtime's processes, memory or descriptors" {
    # The attack: walk /proc/<ppid> up to fitrun, read --jobs from its
    # command line, open the file, return its `expected`.
    cat > "$D/walk.py" <<'EOF'
import os
def readable(path):
    try:
        with open(path, "rb") as f:
            f.read(1)
        return True
    except OSError:
        return False
def fds_open(pid):
    """Any descriptor of pid that can be opened or followed."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")  # the numbers: root owns the directory
    except OSError:
        return False
    for n in names:
        for probe in (lambda p: os.readlink(p), lambda p: os.close(os.open(p, os.O_RDONLY))):
            try:
                probe(f"/proc/{pid}/fd/{n}")
                return True
            except OSError:
                pass
    return False
def transform(jobs_path):
    # Up to fitrun: the sandbox's relay, the worker, the zygote, fitrun.
    seen, pid = [], os.getppid()
    while pid > 1 and len(seen) < 6:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        with open(f"/proc/{pid}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        fitrun = os.path.basename(cmd.split(b"\0")[0]) == b"fitrun"
        seen.append({"fitrun": fitrun, "names_jobs": jobs_path.encode() in cmd, "fd": fds_open(pid),
                     "mem": readable(f"/proc/{pid}/mem"), "environ": readable(f"/proc/{pid}/environ")})
        if fitrun:
            break
        pid = ppid
    own = {}
    for n in os.listdir("/proc/self/fd"):
        try:
            own[n] = os.readlink(f"/proc/self/fd/{n}")
        except OSError:  # the descriptor listdir itself used
            pass
    return {"ancestors": seen, "own_fds": own}
EOF
    jq -cn --arg code "$(cat "$D/walk.py")" --arg p "$D/jobs.jsonl" \
        '{id: "walk", code: $code, inputs: [$p], expected: [{"secret": 42}]}' > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    r walk .outputs
    [ "$(r walk .status)" = '"ok"' ]
    # The relay's, the worker's and the zygote's command lines do not name
    # the jobs file; fitrun's does (its own argv), which only Landlock can
    # hide the file behind, once the runtime asks for it: not asserted here.
    [ "$(r walk '[.outputs[0].ancestors[] | [.fitrun, .names_jobs]]')" = '[[false,false],[false,false],[false,false],[true,true]]' ]
    # None of the three is dumpable: no descriptor, memory or environment
    # of theirs is open to a prediction (it has no CAP_SYS_PTRACE).
    [ "$(r walk '[.outputs[0].ancestors[] | .fd, .mem, .environ] | any')" = false ]
    # Its own descriptors: /dev/null and pipes (stdout, stderr, report); the
    # job pipe was closed before the code ran, the violation record is the
    # relay's alone.
    [ "$(r walk '.outputs[0].own_fds | keys')" = '["0","1","2","3"]' ]
    [ "$(r walk '.outputs[0].own_fds | map(test("^(/dev/null|pipe:\\[[0-9]+\\])$")) | all')" = true ]

    # The same as an unprivileged user: fitrun, the zygote, the worker and
    # the prediction then share uid and (empty) capabilities, and only
    # being non-dumpable keeps their descriptors and memory closed.
    command -v setpriv >/dev/null && [ "$(id -u)" -eq 0 ] || skip "needs root and setpriv"
    W=$(mktemp -d /tmp/fitrun-hostile-XXXXXX)
    chmod 755 "$W"
    cp "$D/p.ini" "$D/prelude.py" "$W/"
    jq -cn --arg code "$(cat "$D/walk.py")" --arg p "$W/jobs.jsonl" \
        '{id: "walk", code: $code, inputs: [$p], expected: [{"secret": 42}]}' > "$W/jobs.jsonl"
    chmod 644 "$W"/*
    run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$FITRUN" run --profile "$W/p.ini" --jobs "$W/jobs.jsonl" --out - --progress none
    echo "$output"
    [ "$status" -eq 0 ]
    [ "$(jq -c '[.status, ([.outputs[0].ancestors[] | .fd, .mem, .environ] | any)]' <<< "$output")" = '["ok",false]' ]
}

@test "python hostile: a prediction that disarms its timers and ignores SIGXCPU is killed at its CPU budget" {
    # setitimer(ITIMER_PROF, 0) + SIG_IGN for SIGXCPU and SIGPROF, 1 s budget:
    # it used to run 1.6 s and come back ok. fitrun reads its CPU clock.
    job disarm $'import signal\ndef transform(g):\n    signal.setitimer(signal.ITIMER_PROF, 0)\n    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n    signal.signal(signal.SIGPROF, signal.SIG_IGN)\n    while True:\n        pass\n' '[1]' '{expected: [1]}' > "$D/jobs.jsonl"
    job spin $'def transform(g):\n    while True:\n        pass\n' >> "$D/jobs.jsonl"
    run_jobs --wall-time 60s
    [ "$status" -eq 0 ]
    for id in disarm spin; do
        [ "$(r $id '[.status, .timeout, .signal, .error_type, .passed]')" = '["timeout","cpu","SIGKILL","CPUTimeout",null]' ] || { r $id .; false; }
        [ "$(r $id '.cpu_ms >= 1000 and .cpu_ms < 1500')" = true ] || { r $id .cpu_ms; false; }
    done
    # A 300 ms budget: no RLIMIT_CPU rounding to whole seconds (it ran 4x).
    job spin300 $'def transform(g):\n    while True:\n        pass\n' > "$D/jobs.jsonl"
    run_jobs --wall-time 60s --cpu-time 300ms
    [ "$(r spin300 '[.status, .timeout, (.cpu_ms >= 300 and .cpu_ms < 600)]')" = '["timeout","cpu",true]' ] || { r spin300 .; false; }
}

@test "python hostile: a forged violation record decides nothing; only the sandbox's supervisor names a violation" {
    # A well-formed record ("ptrace" on x86-64, what the sandbox's relay
    # writes) on every descriptor the prediction has (fd 4, the relay's,
    # is not among them), then a normal return.
    rec='import os, struct\nM, A, N = 0x46525631, 0xC000003E, 101\nREC = struct.pack("<IIiI", M, A, N, (~M ^ A ^ N) & 0xffffffff)\ndef forge():\n    for fd in range(3, 64):\n        try:\n            os.write(fd, REC)\n        except OSError:\n            pass\n'
    job forged "$(printf "$rec")"$'\ndef transform(g):\n    forge()\n    return g\n' '[1]' '{expected: [1]}' > "$D/jobs.jsonl"
    # The same, then death by its own SIGSYS: a signal, not a violation.
    job suicide "$(printf "$rec")"$'\nimport signal\ndef transform(g):\n    forge()\n    os.kill(os.getpid(), signal.SIGSYS)\n' >> "$D/jobs.jsonl"
    job real $'import socket\ndef transform(g):\n    socket.socket()\n' >> "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    # (the record it wrote on fd 3, its report, only spoils its report)
    [ "$(r forged '[.status, .error_type, .syscall, .passed]')" = '["crash","NoResult",null,null]' ]
    [ "$(r suicide '[.status, .signal, .syscall]')" = '["signal","SIGSYS",null]' ]
    [ "$(r real '[.status, .syscall]')" = '["violation","socket"]' ]
}

@test "python hostile: garbage, partial, duplicated and forged reports give documented results" {
    {
        # bytes on the report fd, then a normal return: two texts, no report
        job garbage $'import os\ndef transform(g):\n    os.write(3, b"\\x00\\xff{[")\n    return g\n'
        # half a report, then exit 0 before the runtime writes its own
        job partial $'import os\ndef transform(g):\n    os.write(3, b\'{"outputs":[1\')\n    os._exit(0)\n'
        # a complete report of its own, then the runtime's: duplicated
        job duplicated $'import os\ndef transform(g):\n    os.write(3, b\'{"outputs":[1]}\')\n    return 2\n'
        # a report claiming facts only the worker knows, then exit 0: its
        # outputs count (it could have returned them), its "facts" do not
        job forged $'import os\ndef transform(g):\n    os.write(3, b\'{"outputs":[7],"wstatus":9,"status":"timeout","passed":[true],"violation_nr":101}\')\n    os._exit(0)\n' '[1]' '{expected: [8]}'
        # a report, then a non-zero exit: no report
        job exit3 $'import os\ndef transform(g):\n    os.write(3, b\'{"outputs":[1]}\')\n    os._exit(3)\n'
        # a report nested far deeper than any output may be
        job deep $'import os\ndef transform(g):\n    os.write(3, b\'{"outputs":[\' + b"[" * 500 + b"]" * 500 + b"]}")\n    os._exit(0)\n'
    } > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    for id in garbage partial duplicated exit3 deep; do
        [ "$(r $id '[.status, .error_type, .outputs]')" = '["crash","NoResult",null]' ] || { r $id .; false; }
    done
    [ "$(r exit3 .exit_code)" = 3 ]
    [ "$(r forged '[.status, .exit_code, .signal, .outputs, .passed]')" = '["ok",0,null,[7],[false]]' ]
    # never the machinery's crash
    [ "$(jq -s '[.[] | select(.error_type == "WorkerCrash" or .attempts)] | length' "$D/out.jsonl")" -eq 0 ]
}

@test "python hostile: NUL, lone surrogates and control characters give well-formed results" {
    {
        job print_nul $'def transform(g):\n    print("a\\0b")\n    return g\n'
        job raise_nul $'def transform(g):\n    raise ValueError("bad\\0thing")\n'
        job surrogate $'def transform(g):\n    return "x\\udc80y"\n' '[1]' '{expected: ["x\ufffdy"]}'
        job pair $'def transform(g):\n    return ["\\ud83d\\ude00", {"k\\udc80": 1}]\n'
        job ctrl_class $'def transform(g):\n    raise type("X\\x1b[2K\\rfitrun: done\\nFORGED\\x07", (Exception,), {})("m\\x1b[31m")\n'
        job raw_bytes $'import sys\ndef transform(g):\n    sys.stdout.buffer.write(b"ok\\xff\\xfe\\x00end")\n    return g\n'
    } > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    [ "$(r print_nul '[.status, .stdout]')" = '["ok","a\u0000b\n"]' ]
    [ "$(r raise_nul '[.status, .error_type, .error_message]')" = '["error","ValueError","bad\u0000thing"]' ]
    # a lone surrogate is U+FFFD, as an invalid byte of output is
    [ "$(r surrogate '[.status, .outputs, .passed]')" = '["ok",["x�y"],[true]]' ]
    [ "$(r pair '[.status, .outputs]')" = '["ok",[["��",{"k�":1}]]]' ]
    [ "$(r ctrl_class '[.status, .error_type, .error_message]')" = '["error","X\u001b[2K\rfitrun: done\nFORGED\u0007","m\u001b[31m"]' ]
    [ "$(r raw_bytes '[.status, .stdout]')" = '["ok","ok��\u0000end"]' ]
    [ "$(jq -s '[.[] | select(.status == "crash")] | length' "$D/out.jsonl")" -eq 0 ]
    # every line is JSON that jansson-style readers take too (python's json)
    /usr/bin/python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$D/out.jsonl"
}

@test "python hostile: inputs with NUL run exactly; inputs nested deeper than the limit are invalid before anything runs" {
    {
        job nul $'def transform(s):\n    assert s == "a\\0b", repr(s)\n    return s\n' '["a\u0000b"]' '{expected: ["a\u0000b"]}'
        # (written by hand: jq does not print values this deep)
        printf '{"id": "deep1500", "code": "def transform(g):\\n    return 1\\n", "inputs": [%s1%s]}\n' \
            "$(printf '[%.0s' $(seq 1500))" "$(printf ']%.0s' $(seq 1500))"
        jq -cn '{id: "deep101", code: "def transform(g):\n    return 1\n", inputs: [reduce range(101) as $i (1; [.])]}'
        jq -cn '{id: "deep100", code: "def transform(g):\n    return g\n", inputs: [reduce range(100) as $i (1; [.])], expected: [reduce range(100) as $i (1; [.])]}'
        jq -cn '{id: "deepexp", code: "def transform(g):\n    return 1\n", inputs: [1], expected: [reduce range(101) as $i (1; {a: .})]}'
    } > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 1 ] # invalid lines
    [ "$(r nul '[.status, .outputs, .passed]')" = '["ok",["a\u0000b"],[true]]' ]
    for id in deep1500 deep101 deepexp; do
        [ "$(r $id '[.status, .error_type, .cpu_ms]')" = '["invalid","InvalidJob",null]' ] || { r $id .; false; }
        [[ "$(r $id .error_message)" =~ "nested deeper than 100 levels" ]]
    done
    [ "$(r deep100 '[.status, .passed]')" = '["ok",[true]]' ]
}

@test "python hostile: outputs count against [sandbox] result while being read; fitrun and the worker stay small" {
    {
        # 15 MB of "[]," written straight to the report pipe
        job flood $'import os\ndef transform(g):\n    os.write(3, b\'{"outputs":[[\' + b"[]," * 5000000 + b"[]]]}")\n    os._exit(0)\n' '[1]' '{expected: [1]}'
        # a 9 MB output returned normally
        job big $'def transform(g):\n    return [[]] * 3000000\n' '[1]' '{expected: [1]}'
        # just below the limit: fine
        job fits $'def transform(g):\n    return "x" * 1000000\n'
        # stays running while the peaks are read
        job sleeper $'import time\ndef transform(g):\n    time.sleep(30)\n'
    } > "$D/jobs.jsonl"
    # building 3,000,000 lists takes about a second of CPU on this VM
    sed -i 's/^cpu_time = 1s$/cpu_time = 10s/' "$D/p.ini"
    "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --progress none 2> "$D/err" &
    fr=$!
    # The sleeper runs once the others are done: its worker has a child.
    worker=
    for i in $(seq 1000); do
        [ "$(wc -l < "$D/out.jsonl" 2>/dev/null || echo 0)" -ge 3 ] && {
            for w in $(pgrep -P "$(pgrep -o -P "$fr")"); do [ -n "$(pgrep -P "$w")" ] && worker=$w; done
            [ -n "$worker" ] && break
        }
        sleep 0.03
    done
    [ -n "$worker" ]
    fitrun_kb=$(vmhwm "$fr")
    worker_kb=$(vmhwm "$worker")
    zygote_kb=$(vmhwm "$(pgrep -o -P "$fr")")
    kill -TERM "$fr"
    wait "$fr" || true
    echo "peak kB: fitrun $fitrun_kb, worker $worker_kb, zygote $zygote_kb"
    [ "$(r flood '[.status, .error_type, .outputs, .passed]')" = '["output_limit","ResultLimit",null,null]' ]
    [ "$(r big '[.status, .error_type]')" = '["output_limit","ResultLimit"]' ]
    [[ "$(r big .error_message)" =~ "result limit of 1.0 MiB" ]]
    [ "$(r fits '[.status, (.outputs[0] | length)]')" = '["ok",1000000]' ]
    # With the 1 MiB default: fitrun holds a job's report (1 MiB + 16 KiB)
    # and its result line, never a tree of it; it used to reach 711 MB.
    [ "$fitrun_kb" -lt 16384 ]
    # The worker never holds outputs (it used to reach 408 MB): a fork of
    # the zygote plus its own few objects.
    [ "$worker_kb" -lt $((zygote_kb + 8192)) ]
}

@test "python hostile: a prediction finds nothing of the previous prediction in its own memory" {
    # One worker: job b's child is forked from the worker that ran job a.
    # a's code, inputs, prints and outputs carry markers; b scans every
    # readable mapping of its own process (/proc/self/mem) for them. The
    # markers are split in two halves, so b's own code and inputs never hold
    # them whole.
    cat > "$D/scan.py" <<'EOF'
def transform(halves):
    found = set()
    with open("/proc/self/maps") as m, open("/proc/self/mem", "rb", 0) as mem:
        for line in m:
            parts = line.split()
            if "r" not in parts[1] or (len(parts) > 5 and parts[5].startswith("[v")):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except OSError:
                continue
            for a, b in halves:
                i = data.find(a.encode())
                while i >= 0:
                    if data[i + len(a):i + len(a) + len(b)] == b.encode():
                        found.add(a + b)
                        break
                    i = data.find(a.encode(), i + 1)
    return sorted(found)
EOF
    m=$RANDOM$RANDOM
    jq -cn --arg m "$m" '{id: "a", code: ("X = \"CODE_" + $m + "_MARK\"\ndef transform(g):\n    print(\"PRINT_" + $m + "_MARK\")\n    return [\"OUT_" + $m + "_MARK\", g]\n"), inputs: [("IN_" + $m + "_MARK")]}' > "$D/jobs.jsonl"
    jq -cn --arg m "$m" --arg code "$(cat "$D/scan.py")" \
        '{id: "b", code: $code, inputs: [[["CODE_" + $m, "_MARK"], ["PRINT_" + $m, "_MARK"], ["OUT_" + $m, "_MARK"], ["IN_" + $m, "_MARK"]]]}' >> "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    [ "$(r a .status)" = '"ok"' ]
    [ "$(r b '[.status, .outputs]')" = '["ok",[[]]]' ] || { r b .; false; }
    [ "$(r a .worker)" = "$(r b .worker)" ]
}

@test "python hostile: SIGKILL of fitrun ends every worker and prediction within 1 s" {
    sed -i -e 's/^workers = 1$/workers = 2/' -e 's/^cpu_time = 1s$/cpu_time = 60s/' "$D/p.ini"
    {
        job sleep $'import time\ndef transform(g):\n    time.sleep(60)\n'
        job spin $'def transform(g):\n    while True:\n        pass\n'
    } > "$D/jobs.jsonl"
    "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --progress none 2>/dev/null &
    fr=$!
    # fitrun -> zygote -> 2 workers -> 2 sandbox relays -> 2 predictions
    for i in $(seq 500); do
        [ "$(tree "$fr" | wc -l)" -ge 7 ] && break
        sleep 0.02
    done
    pids=$(tree "$fr")
    [ "$(wc -l <<< "$pids")" -eq 7 ]
    kill -KILL "$fr"
    wait "$fr" || true
    for i in $(seq 100); do
        alive $pids || break
        sleep 0.01
    done
    ! alive $pids
}

@test "python hostile: the longest durations work: --wall-time 597h and the 365-day maximum" {
    job j $'def transform(g):\n    return g\n' '[1]' '{expected: [1]}' > "$D/jobs.jsonl"
    # Used to crash every job (OverflowError in the worker's poll) and give
    # RuntimeInternalError (setitimer): every accepted value must work,
    # the CPU backstops included (they stay within the maximum).
    for args in "--wall-time 597h" "--wall-time 8760h --cpu-time 8760h" "--cpu-time 31535999s"; do
        run_jobs $args
        [ "$status" -eq 0 ] || { echo "$args: $stderr"; false; }
        [ "$(r j '[.status, .passed]')" = '["ok",[true]]' ] || { echo "$args"; r j .; false; }
    done
    # Beyond the maximum is the option parser's error, before anything runs.
    run_jobs --cpu-time 99999999999999s
    [ "$status" -eq 125 ]
    [[ "$stderr" =~ "longer than the maximum" ]]
}

@test "python hostile: FITRUN_JOB_ID and FITRUN_WORKER are the prediction's own" {
    sed -i 's/^workers = 1$/workers = 2/' "$D/p.ini"
    for i in 1 2 3 4; do
        job "id-$i" $'import os\ndef transform(g):\n    return [os.environ["FITRUN_JOB_ID"], os.environ["FITRUN_WORKER"]]\n'
    done > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    [ "$(jq -s '[.[] | select(.outputs[0][0] == .id and .outputs[0][1] == (.worker | tostring))] | length' "$D/out.jsonl")" -eq 4 ]
}
