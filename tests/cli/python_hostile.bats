#!/usr/bin/env bats
# The warm Python runtime against predictions that attack it, each as the
# attack was described (answer key, disarmed timers, forged records, bytes
# that break protocols, floods, memory of earlier predictions, a killed
# launcher, extreme durations): real /usr/bin/python3 workers, real fitrun.
# Each attack must fail with its exact status and leave no effect: the
# files it reads (the jobs and results files, secrets, /proc) stay closed
# (Landlock, per-slot uids), what it would write is absent, other slots'
# predictions are untouched, and a forged record or SIGSYS is not a
# violation.

load python_common
JOB_INPUTS=[1]

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
    python_profile "$1" 1 20s 1G "${@:2}"
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

@test "python hostile: the answer key, the results and secrets are out of reach, by every route" {
    # The attack of record: walk /proc/<ppid> up to fitrun, read --jobs
    # from its command line (absolute, or relative to the inherited cwd),
    # open the file and return its `expected`; the same for --out (other
    # predictions' outputs), fitrun's environment, /etc/shadow, a 0600 key.
    # Each route is its own job and must fail with exactly its status, and
    # nothing secret may appear in any result.
    W=$(mktemp -d /tmp/fitrun-hostile-XXXXXX)
    chmod 755 "$W"
    printf 'TOPSECRET\n' > "$W/key"
    chmod 600 "$W/key"
    cp "$D/p.ini" "$D/prelude.py" "$W/"
    read_job() { # ID PATH: open PATH and return its text
        job "$1" "def transform(g):
    with open($(jq -n --arg p "$2" '$p')) as f:
        return f.read()" '[1]' '{expected: ["ANSWERKEY"]}'
    }
    {
        read_job jobs_abs "$W/jobs.jsonl"
        read_job jobs_rel jobs.jsonl
        read_job results_abs "$W/out.jsonl"
        read_job results_rel out.jsonl
        read_job shadow /etc/shadow
        read_job key "$W/key"
        job ppid_cmdline $'import os\ndef transform(g):\n    with open(f"/proc/{os.getppid()}/cmdline", "rb") as f:\n        return f.read().decode()\n'
        # fitrun's own: every pid up to ours (fitrun started before us), the
        # last refusal raised if none opened
        job scan_cmdline $'import os\ndef transform(g):\n    last = None\n    for pid in range(1, os.getpid()):\n        try:\n            with open(f"/proc/{pid}/cmdline", "rb") as f:\n                return [pid, f.read().decode(errors="replace")]\n        except FileNotFoundError:\n            pass\n        except OSError as e:\n            last = e\n    raise last\n'
        job scan_environ $'import os\ndef transform(g):\n    last = None\n    for pid in range(1, os.getpid()):\n        try:\n            with open(f"/proc/{pid}/environ", "rb") as f:\n                return [pid, f.read().decode(errors="replace")]\n        except FileNotFoundError:\n            pass\n        except OSError as e:\n            last = e\n    raise last\n'
        job self_environ $'def transform(g):\n    with open("/proc/self/environ", "rb") as f:\n        return f.read().decode()\n'
        # after a denied read: its own inherited descriptors lead nowhere
        job own_fds $'import os\ndef transform(g):\n    return sorted(os.listdir("/dev/fd"))\n'
        job ok $'def transform(g):\n    return g\n' '[1]' '{expected: [1]}'
    } > "$W/jobs.jsonl"
    cd "$W"
    SECRET_TOKEN=ANSWERKEY run --separate-stderr "$FITRUN" run --profile p.ini --jobs jobs.jsonl --out out.jsonl --progress none
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    cp out.jsonl "$D/out.jsonl"
    for id in jobs_abs jobs_rel results_abs results_rel shadow key ppid_cmdline scan_cmdline scan_environ self_environ; do
        [ "$(r $id '[.status, .error_type, .outputs, .passed != [true]]')" = '["error","PermissionError",[null],true]' ] || { r $id .; false; }
    done
    # /dev/fd is /proc/self/fd: not readable either
    [ "$(r own_fds '[.status, .error_type]')" = '["error","PermissionError"]' ]
    [ "$(r ok '[.status, .passed]')" = '["ok",[true]]' ]
    run ! grep -E 'TOPSECRET|root:|ANSWERKEY"\]|SECRET_TOKEN' <(jq -c '[.outputs, .stdout, .stderr, .error_message]' out.jsonl)
}

@test "python hostile: predictions run as their slot's uid, with only fds 0-3, and cannot write anywhere" {
    [ "$(id -u)" = 0 ] || skip "per-slot uids need root"
    sed -i 's/^workers = 1$/workers = 2/' "$D/p.ini"
    {
        for i in 1 2 3 4; do
            job "who$i" $'import os, time\ndef transform(g):\n    time.sleep(0.3)\n    return [os.getuid(), os.getgid(), os.getgroups(), int(os.environ["FITRUN_WORKER"])]\n'
        done
        job fds $'import os\ndef transform(g):\n    out = []\n    for fd in range(64):\n        try:\n            os.fstat(fd)\n            out.append(fd)\n        except OSError:\n            pass\n    return out\n'
        job write_tmp "def transform(g):
    open('/tmp/fitrun-pwned-$BATS_ROOT_PID', 'w').write('x')"
        job write_cwd $'def transform(g):\n    open("pwned", "w").write("x")\n'
        job raise_limit $'import resource\ndef transform(g):\n    resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n'
    } > "$D/jobs.jsonl"
    cd "$D"
    run_jobs
    [ "$status" -eq 0 ]
    # slot k is uid = gid = base + k, no groups; base is uid_base (60000)
    # unless another run on this machine holds those uids
    [ "$(jq -s -c '[.[] | select(.id | startswith("who")) | .outputs[0] | select(.[0] >= 60000 and .[1] == .[0] and .[2] == []) | .[0] - .[3]] | unique | length' "$D/out.jsonl")" -eq 1 ]
    [ "$(jq -s -c '[.[] | select(.id | startswith("who"))] | length' "$D/out.jsonl")" -eq 4 ]
    # the notify socket and the Landlock ruleset went with apply, the job
    # pipe once read: 0-2 and the report; a reused process also holds
    # /dev/null on 4 and its socket to its worker on 6 (docs/python-runtime.md)
    if under_reuse; then
        [ "$(r fds .outputs)" = '[[0,1,2,3,4,6]]' ] || { r fds .; false; }
    else
        [ "$(r fds .outputs)" = '[[0,1,2,3]]' ]
    fi
    for id in write_tmp write_cwd; do
        [ "$(r $id '[.status, .error_type]')" = '["error","PermissionError"]' ] || { r $id .; false; }
    done
    [ ! -e "/tmp/fitrun-pwned-$BATS_ROOT_PID" ]
    [ ! -e "$D/pwned" ]
    [ "$(r raise_limit '[.status, .syscall]')" = '["violation","prlimit64"]' ]
}

# descends_from PID ANCESTOR: PID is ANCESTOR or one of its descendants.
descends_from() {
    local p=$1
    while [ -n "$p" ] && [ "$p" -gt 1 ]; do
        [ "$p" = "$2" ] && return 0
        p=$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2> /dev/null)
    done
    return 1
}

# victim_run PROFILE: in a stream, a victim prediction (slot 0) names itself
# "fitrunvictim" and sleeps; once it runs, attackers in the other slot get
# its pid as input. Results in $D/out.jsonl.
victim_run() {
    coproc FR { exec "$FITRUN" run --profile "$1" --jobs - --out - --progress none 2>"$D/err"; }
    local fr=$FR_PID # (bash unsets FR_PID once it has reaped the coproc)
    job victim $'import ctypes, os, time\ndef transform(g):\n    ctypes.CDLL(None).prctl(15, b"fitrunvictim", 0, 0, 0)\n    time.sleep(4)\n    return [os.getpid(), os.getuid()]\n' >&"${FR[1]}"
    local pid="" i p
    # (only this run's: another run of this test may have its own victim)
    for i in $(seq 300); do
        for p in $(pgrep -x fitrunvictim); do
            descends_from "$p" "$fr" && pid=$p
        done
        [ -n "$pid" ] && break
        sleep 0.02
    done
    [ -n "$pid" ]
    echo "$pid" > "$D/victim.pid"
    {
        job mem $'def transform(pid):\n    with open(f"/proc/{pid}/mem", "rb") as f:\n        return f.read(1).hex()\n' "[$pid]"
        job environ $'def transform(pid):\n    with open(f"/proc/{pid}/environ", "rb") as f:\n        return f.read().decode()\n' "[$pid]"
        job kill $'import os, signal\ndef transform(pid):\n    os.kill(pid, signal.SIGKILL)\n    return "killed"\n' "[$pid]"
        job ptrace $'import ctypes\ndef transform(pid):\n    return ctypes.CDLL(None, use_errno=True).ptrace(16, pid, 0, 0)\n' "[$pid]"
    } >&"${FR[1]}"
    exec {FR[1]}>&-
    cat <&"${FR[0]}" > "$D/out.jsonl"
    wait "$fr"
}

@test "python hostile: a prediction cannot read, signal or trace a prediction of another slot" {
    sed -i -e 's/^workers = 1$/workers = 2/' -e 's/^cpu_time = 1s$/cpu_time = 10s/' "$D/p.ini"
    victim_run "$D/p.ini"
    cat "$D/out.jsonl"
    # the victim ran to its end in slot 0, untouched; the attackers in slot 1
    [ "$(r victim '[.status, .outputs[0][0], .worker]')" = "[\"ok\",$(cat "$D/victim.pid"),0]" ]
    [ "$(jq -s -c '[.[] | select(.id != "victim") | .worker] | unique' "$D/out.jsonl")" = '[1]' ]
    [ "$(r mem '[.status, .error_type]')" = '["error","PermissionError"]' ]
    [ "$(r environ '[.status, .error_type]')" = '["error","PermissionError"]' ]
    # the python preset lets a prediction signal only itself, and never ptrace
    [ "$(r kill '[.status, .syscall]')" = '["violation","kill"]' ]
    [ "$(r ptrace '[.status, .syscall]')" = '["violation","ptrace"]' ]

    # Without the seccomp filter (preset none) the kernel's own rules
    # still hold: another uid (root only), Landlock's signal scope (ABI 6).
    [ "$(id -u)" = 0 ] || skip "the rest needs per-slot uids (root)"
    ! under_reuse || skip "the rest needs preset = none, which reuse refuses"
    [ "$(r victim '.outputs[0][1] >= 60000')" = true ]
    sed -i 's/^preset = python$/preset = none/' "$D/p.ini"
    victim_run "$D/p.ini"
    cat "$D/out.jsonl"
    [ "$(r victim '[.status, .worker]')" = '["ok",0]' ]
    for id in mem environ kill; do
        [ "$(r $id '[.status, .error_type]')" = '["error","PermissionError"]' ] || { r $id .; false; }
    done
    [ "$(r ptrace '[.status, .outputs]')" = '["ok",[-1]]' ] # EPERM
}

@test "python hostile: numpy, a lazy stdlib import and (where installed) a torch CPU matmul work under the python preset" {
    {
        job numpy $'import numpy as np\ndef transform(g):\n    a = np.arange(16.).reshape(4, 4)\n    return [int(np.linalg.matrix_rank(a @ a.T)), float((a @ a).sum())]\n'
        # modules the interpreter has not imported yet: read from its stdlib
        job lazy $'def transform(g):\n    import colorsys, fractions, decimal, zoneinfo\n    return [str(fractions.Fraction(3, 6)), str(decimal.Decimal("1.10") + decimal.Decimal("2.20")), round(colorsys.rgb_to_hsv(0.2, 0.4, 0.4)[2], 3)]\n'
    } > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    [ "$(r numpy '[.status, .outputs]')" = '["ok",[[2,3920]]]' ] || { r numpy .; false; }
    [ "$(r lazy '[.status, .outputs]')" = '["ok",[["1/2","3.30",0.4]]]' ] || { r lazy .; false; }

    /usr/bin/python3 -c 'import torch' 2>/dev/null || skip "torch is not importable by /usr/bin/python3"
    printf 'import torch\n' > "$D/prelude.py"
    sed -i -e 's/^cpu_time = 1s$/cpu_time = 20s/' -e 's/^memory = 1G$/memory = 4G/' "$D/p.ini"
    job torch $'import torch\ndef transform(g):\n    return float((torch.ones(64, 64) @ torch.ones(64, 64)).sum())\n' > "$D/jobs.jsonl"
    run_jobs --wall-time 60s
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ "$(r torch '[.status, .outputs]')" = '["ok",[262144]]' ] || { r torch .; false; }
}

@test "python hostile: a prediction that disarms its timers and ignores SIGXCPU is killed at its CPU budget" {
    # setitimer(ITIMER_PROF, 0) + SIG_IGN for SIGXCPU and SIGPROF, 1 s budget:
    # it used to run 1.6 s and come back ok. fitrun reads its CPU clock.
    job disarm $'import signal\ndef transform(g):\n    signal.setitimer(signal.ITIMER_PROF, 0)\n    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n    signal.signal(signal.SIGPROF, signal.SIG_IGN)\n    while True:\n        pass\n' '[1]' '{expected: [1]}' > "$D/jobs.jsonl"
    job spin $'def transform(g):\n    while True:\n        pass\n' >> "$D/jobs.jsonl"
    run_jobs --wall-time 60s
    [ "$status" -eq 0 ]
    for id in disarm spin; do
        [ "$(r $id '[.status, .timeout, .error_type, .passed]')" = '["timeout","cpu","CPUTimeout",null]' ] || { r $id .; false; }
        [ "$(r $id '.cpu_ms >= 1000 and .cpu_ms < 1500')" = true ] || { r $id .cpu_ms; false; }
    done
    # The one that disarmed its timers can only have been killed by fitrun.
    # The other may meet its own SIGPROF backstop (budget + 200 ms) first
    # when this machine is loaded enough to delay fitrun's kill that long:
    # docs/run.md documents that signal for a CPU timeout.
    [ "$(r disarm .signal)" = '"SIGKILL"' ] || { r disarm .; false; }
    case $(r spin .signal) in '"SIGKILL"' | '"SIGPROF"') ;; *) r spin .; false ;; esac
    # A 300 ms budget: no RLIMIT_CPU rounding to whole seconds (it ran 4x).
    job spin300 $'def transform(g):\n    while True:\n        pass\n' > "$D/jobs.jsonl"
    run_jobs --wall-time 60s --cpu-time 300ms
    [ "$(r spin300 '[.status, .timeout, (.cpu_ms >= 300 and .cpu_ms < 600)]')" = '["timeout","cpu",true]' ] || { r spin300 .; false; }
}

@test "python hostile: a forged violation record decides nothing; only the sandbox's supervisor names a violation" {
    # A well-formed record ("ptrace" on x86-64, as the sandbox's relay
    # writes one for exec jobs) on every descriptor the prediction has,
    # then a normal return. A python prediction's violations are read by
    # its worker from the seccomp listener, which the prediction gave up
    # before its code ran: there is nothing to write a record to.
    rec='import os, struct\nM, A, N = 0x46525631, 0xC000003E, 101\nREC = struct.pack("<IIiI", M, A, N, (~M ^ A ^ N) & 0xffffffff)\ndef forge():\n    for fd in range(3, 64):\n        try:\n            os.write(fd, REC)\n        except OSError:\n            pass\n'
    job forged "$(printf "$rec")"$'\ndef transform(g):\n    forge()\n    return g\n' '[1]' '{expected: [1]}' > "$D/jobs.jsonl"
    # The same, then death by its own SIGSYS: a signal, not a violation.
    job suicide "$(printf "$rec")"$'\nimport signal\ndef transform(g):\n    forge()\n    os.kill(os.getpid(), signal.SIGSYS)\n' >> "$D/jobs.jsonl"
    job real $'import socket\ndef transform(g):\n    socket.socket()\n' >> "$D/jobs.jsonl"
    # A CPU timeout faked with the backstops' own signals, long before the budget.
    for sig in SIGXCPU SIGPROF; do
        job "fake_$sig" "import os, signal
def transform(g):
    os.kill(os.getpid(), signal.$sig)
" >> "$D/jobs.jsonl"
    done
    run_jobs
    [ "$status" -eq 0 ]
    for sig in SIGXCPU SIGPROF; do
        [ "$(r "fake_$sig" '[.status, .signal, .timeout]')" = "[\"signal\",\"$sig\",null]" ] || { r "fake_$sig" .; false; }
    done
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

@test "python hostile: a report with outputs for inputs the job lacks, or ok without an output per input, is no report" {
    # A report of its own on fd 3, then exit 0: more outputs than inputs
    # (with the right one first, and a result line that says one value per
    # input no longer), or none at all with nothing failed, used to be `ok`.
    forge() { # ID REPORT: a prediction of two inputs writing REPORT
        job "$1" "import os
def transform(g):
    os.write(3, b'$2')
    os._exit(0)
" '[1, 2]' '{expected: [1, 2]}'
    }
    {
        forge more '{"outputs":[1,2,3]}'
        forge none '{"outputs":[]}'
        forge fewer '{"outputs":[1],"memory":false}'
        # what the runtime itself writes: one per input; none when the code
        # failed before any call; fewer after a MemoryError
        forge all '{"outputs":[1,2]}'
        job syntax $'def transform(g):\n    return (\n' '[1, 2]' '{expected: [1, 2]}'
        job memory $'def transform(g):\n    if g == 2:\n        raise MemoryError\n    return g\n' '[1, 2, 3]' '{expected: [1, 2, 3]}'
    } > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    for id in more none fewer; do
        [ "$(r $id '[.status, .error_type, .outputs, .passed]')" = '["crash","NoResult",null,null]' ] || { r $id .; false; }
    done
    [ "$(r all '[.status, .outputs, .passed]')" = '["ok",[1,2],[true,true]]' ]
    [ "$(r syntax '[.status, .error_type, .outputs, .passed]')" = '["error","SyntaxError",[],[false,false]]' ]
    [ "$(r memory '[.status, .outputs, .passed]')" = '["memory",[1,null],null]' ]
}

@test "python hostile: a prediction cannot make its result say the sandbox failed to apply" {
    # {"sandbox_error": 1} on fd 3, then exit 0, used to be `crash`
    # SandboxError, "applying the sandbox in the prediction's child failed:
    # Operation not permitted", from a child that had applied it. Its
    # worker received the filter's listener, which a child sends only once
    # applied, and says so in EXITED.
    # A real failure stays SandboxError: the sandbox library's apply,
    # through a shim, fails for the job "applyfail" (not for the start-up's
    # self-test, which has no job).
    command -v cc > /dev/null || skip "no C compiler"
    # (It switches to reuse itself, below.)
    ! under_reuse || skip "a reused process applies the sandbox once: the reuse half below"
    cat > "$D/shim.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int fr_policy_apply_notify(const void *p, int sock, int slot)
{
    const char *id = getenv("FITRUN_JOB_ID");
    if (id && !strcmp(id, "applyfail")) {
        close(sock);
        return -EPERM;
    }
    int (*real)(const void *, int, int) = (int (*)(const void *, int, int))dlsym(RTLD_NEXT, "fr_policy_apply_notify");
    return real(p, sock, slot);
}
C
    cc -shared -fPIC -o "$D/shim.so" "$D/shim.c" -Wl,--no-as-needed -L"$FITRUN_BUILD/lib" -l:libfitrun_sandbox.so \
        -Wl,-rpath,"$FITRUN_BUILD/lib" -ldl
    {
        job forged $'import os\ndef transform(g):\n    os.write(3, b\'{"sandbox_error": 1}\')\n    os._exit(0)\n'
        job applyfail $'def transform(g):\n    return g\n'
        job ok $'def transform(g):\n    return g\n'
    } > "$D/jobs.jsonl"
    FITRUN_SANDBOX_LIB=$D/shim.so run_jobs
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ "$(r forged '[.status, .error_type]')" = '["crash","NoResult"]' ] || { r forged .; false; }
    [ "$(r applyfail '[.status, .error_type, .error_message]')" = '["crash","SandboxError","applying the sandbox in the prediction'"'"'s child failed: Operation not permitted"]' ] || { r applyfail .; false; }
    [ "$(r ok '[.status, .outputs]')" = '["ok",[1]]' ]
    # Under reuse a process applies the sandbox once, before its first job
    # (so the shim cannot fail it for one job): the forgery alone.
    profile "$D/p.ini" "isolation = reuse"
    run_jobs
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ "$(r forged '[.status, .error_type]')" = '["crash","NoResult"]' ] || { r forged .; false; }
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
    # Under reuse b runs in a's process, whose memory holds what a left
    # there, freed but not erased (docs/python-runtime.md, "What reuse does
    # not guarantee").
    ! under_reuse || skip "a reused process's memory holds what its earlier predictions left"
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
    # Landlock keeps /proc/self out of a prediction's reach, and a slot's
    # uid cannot open its own /proc/self/mem (a non-dumpable process's
    # files there belong to root). This test is about what the memory
    # holds, so it lets the scan read /proc, as fitrun's own uid.
    sed -i 's|^\[runtime\]$|read = /proc\nuser = root\n[runtime]|' "$D/p.ini"
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
    # fitrun -> zygote -> 2 workers -> 2 predictions
    for i in $(seq 500); do
        [ "$(tree "$fr" | wc -l)" -ge 5 ] && break
        sleep 0.02
    done
    pids=$(tree "$fr")
    [ "$(wc -l <<< "$pids")" -eq 5 ]
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

@test "python hostile: without Landlock the run says so once, and require_landlock = true is fatal before any job" {
    H=${FITRUN_BUILD:?}/tests/helpers
    {
        job a $'def transform(g):\n    return g\n' '[1]' '{expected: [1]}'
        job b $'def transform(g):\n    return g\n'
    } > "$D/jobs.jsonl"
    run --separate-stderr "$H/no_landlock" "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --progress none
    [ "$status" -eq 0 ] || { echo "$stderr"; false; }
    [ "$(grep -c 'file reads are not confined (no Landlock: the kernel has no Landlock system calls' <<< "$stderr")" -eq 1 ]
    [ "$(jq -s -c '[.[] | .status] | unique' "$D/out.jsonl")" = '["ok"]' ]
    run --separate-stderr "$H/no_landlock" --errno EPERM "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" \
        --out "$D/out2.jsonl" --progress none --set sandbox.require_landlock=true
    [ "$status" -eq 125 ]
    [[ "$stderr" == *"[sandbox]: require_landlock is set, but Landlock is not available: a seccomp profile (container runtime) denies the Landlock system calls"* ]]
    [[ "$stderr" != *"started once"* ]] # no interpreter was started
    [ ! -s "$D/out2.jsonl" ]
}
