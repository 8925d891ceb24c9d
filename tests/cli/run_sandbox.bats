#!/usr/bin/env bats
# fitrun run, exec runtime: least privilege as a job sees it. Each attack
# is a real command; each test asserts the exact outcome and that the
# effect is absent (nothing read, written, signalled). Landlock cases say
# what they need and are skipped on a kernel without it.

load run_common

setup() {
    run_setup
    LL=$("$FITRUN" detect --json | jq .sandbox.landlock.abi)
    ROOT=$([ "$(id -u)" = 0 ] && echo yes || echo no)
}
teardown() {
    # sleepers a SIGKILL test may have left: by pid, found by their marker
    for p in $(pgrep -f "sleep 4242\.$$" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    run_teardown
}

need_landlock() { [ "$LL" -ge "${1:-1}" ] || skip "Landlock ABI >= ${1:-1} needed (have $LL)"; }
need_root() { [ "$ROOT" = yes ] || skip "needs root (per-slot uids)"; }

# sh ID SCRIPT — a job running `sh -c SCRIPT`.
sh_job() { jq -cn --arg id "$1" --arg s "$2" '{id: $id, argv: ["sh", "-c", $s]}'; }

# A root-only secret, an answer key in the jobs file, a marker in the results.
secret_jobs() {
    printf 'TOPSECRET\n' > secret
    chmod 600 secret
    {
        echo '{"id": "mark", "argv": ["echo", "RESULTMARK"], "expected": "ANSWERKEY"}'
        job shadow cat /etc/shadow
        job secret cat "$D/secret"
        job jobs_abs cat "$D/jobs.jsonl"
        job jobs_rel cat jobs.jsonl
        job results cat "$D/out.jsonl"
        sh_job cmdline 'exec cat /proc/$PPID/cmdline'
        sh_job environ 'exec cat /proc/$PPID/environ'
        job self cat /proc/self/environ
    } > jobs.jsonl
}

# Every attack of secret_jobs failed: an error, and none of the secrets out.
assert_nothing_read() {
    [ "$(field out.jsonl mark status)" = ok ]
    local id
    for id in shadow secret jobs_abs jobs_rel results cmdline environ self; do
        [ "$(field out.jsonl "$id" status)" = error ] || { echo "$id: $(grep "\"$id\"" out.jsonl)"; return 1; }
        [ "$(field out.jsonl "$id" stdout)" = "" ] || { echo "$id read something"; return 1; }
    done
    run ! grep -E 'TOPSECRET|ANSWERKEY|RESULTMARK.*RESULTMARK|root:' <(jq -r .stdout out.jsonl)
}

@test "a job reads no secret: shadow, a 0600 file, the jobs and results files, /proc of its parents" {
    need_landlock
    secret_jobs
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --workers 1
    assert_nothing_read
    [[ "$(field out.jsonl shadow stderr)" == *"Permission denied"* ]]
    # Landlock alone, with fitrun's own uid (root reads 0600 files by DAC):
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --workers 1 --set sandbox.user=root
    assert_nothing_read
}

@test "control: without Landlock and as root the same jobs read everything" {
    [ "$ROOT" = yes ] || skip "needs root"
    secret_jobs
    run -0 "$HELPERS/no_landlock" "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --workers 1 \
        --set sandbox.user=root
    [ "$(field out.jsonl secret stdout)" = TOPSECRET ]
    [[ "$(field out.jsonl jobs_rel stdout)" == *ANSWERKEY* ]]
    [[ "$(field out.jsonl cmdline stdout)" == *jobs.jsonl* ]]
}

@test "without Landlock, per-slot uids still keep root's 0600 files and the 0700 run directory out of reach" {
    need_root
    secret_jobs
    run -0 "$HELPERS/no_landlock" "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --workers 1
    [ "$(grep -c 'file reads are not confined' <<< "$output")" -eq 1 ]
    for id in shadow secret jobs_abs jobs_rel results; do
        [ "$(field out.jsonl "$id" status)" = error ]
        [ "$(field out.jsonl "$id" stdout)" = "" ]
    done
}

@test "a job writes nowhere unless write = allows it" {
    need_landlock 3
    chmod 755 "$D"
    mkdir -m 1777 out
    {
        sh_job anywhere "echo pwned > $D/pwned"
        sh_job tmp "echo pwned > /tmp/fitrun-pwned-$$"
        sh_job devnull 'echo x > /dev/null && echo fine'
        sh_job allowed "echo written > $D/out/file && mkdir $D/out/sub && mv $D/out/file $D/out/sub/"
    } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --set sandbox.write="$D/out" \
        --set sandbox.processes=8
    [ "$(field out.jsonl anywhere status)" = error ]
    [[ "$(field out.jsonl anywhere stderr)" == *"Permission denied"* ]]
    [ ! -e pwned ]
    [ "$(field out.jsonl tmp status)" = error ]
    [ ! -e "/tmp/fitrun-pwned-$$" ]
    [ "$(field out.jsonl devnull stdout)" = fine ]
    [ "$(field out.jsonl allowed status)" = ok ]
    [ "$(cat out/sub/file)" = written ]
}

@test "slots cannot signal, read or trace each other" {
    need_root
    chmod 755 "$D"
    mkdir -m 1777 x
    {
        sh_job victim "echo \$\$ > $D/x/victim; sleep 3; echo survived"
        sh_job attacker "while [ ! -s $D/x/victim ]; do sleep 0.05; done; v=\$(cat $D/x/victim)
kill -9 \$v; echo kill=\$?
cat /proc/\$v/environ; echo environ=\$?
exec strace -p \$v"
    } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --workers 2 \
        --set sandbox.processes=16 --set sandbox.write="$D/x"
    [ "$(field out.jsonl victim status)" = ok ]
    [ "$(field out.jsonl victim stdout)" = survived ]
    [ "$(field out.jsonl victim worker)" != "$(field out.jsonl attacker worker)" ]
    [[ "$(field out.jsonl attacker stdout)" == *"kill=1"*"environ=1"* ]]
    [[ "$(field out.jsonl attacker stderr)" == *"Operation not permitted"* ]]
    [ "$(field out.jsonl attacker status)" = violation ]
    [ "$(field out.jsonl attacker syscall)" = ptrace ]
}

@test "two runs at once never share a uid, and a uid some process uses is skipped" {
    need_root
    # A process of uid B (the first slot uid this test asks for) already
    # exists: run A must skip it. Run B starts while A holds its range.
    local base=$((62000 + $$ % 1000 * 8))
    setpriv --reuid=$base --regid=$base --clear-groups sleep 30 &
    local squatter=$!
    for i in 0 1; do sh_job "a$i" 'id -u; sleep 2' ; done > a.jsonl
    for i in 0 1; do sh_job "b$i" 'id -u' ; done > b.jsonl
    "$FITRUN" run --jobs a.jsonl --out a.out --quiet --workers 2 --set sandbox.uid_base=$base --set sandbox.processes=16 &
    local a=$!
    wait_for eval '[ "$(ps -eo uid= | awk -v b=$base '"'"'$1 > b && $1 <= b + 8'"'"' | wc -l)" -ge 2 ]'
    run -0 --separate-stderr "$FITRUN" run --jobs b.jsonl --out b.out --workers 2 --set sandbox.uid_base=$base --set sandbox.processes=16
    wait $a
    kill $squatter; wait $squatter || true
    local ua ub
    ua=$(jq -r .stdout a.out | grep . | sort -n | tr '\n' ' ')
    ub=$(jq -r .stdout b.out | grep . | sort -n | tr '\n' ' ')
    echo "a: $ua b: $ub"
    # A skipped the squatter's uid; B skipped A's two; each run's slots are consecutive.
    [ "$ua" = "$((base + 1)) $((base + 2)) " ]
    [ "$ub" = "$((base + 3)) $((base + 4)) " ]
    [[ "$stderr$output" == *"slots run as uids $((base + 3))-$((base + 4))"* ]]
}

@test "a job cannot raise its limits" {
    {
        sh_job cpu 'ulimit -t unlimited; ulimit -t'
        sh_job nproc 'ulimit -p unlimited; ulimit -p'
    } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet
    for id in cpu nproc; do
        [ "$(field out.jsonl $id status)" = violation ]
        [ "$(field out.jsonl $id syscall)" = prlimit64 ]
        [ "$(field out.jsonl $id stdout)" = "" ]
    done
    # preset none: no filter, and the kernel refuses (no CAP_SYS_RESOURCE).
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --preset none
    [[ "$(field out.jsonl cpu stderr)" == *"Operation not permitted"* ]]
    [ "$(field out.jsonl cpu stdout)" = 3 ] # cpu_time 2s plus the backstop's 20%, rounded up, as before
    [[ "$(field out.jsonl nproc stderr)" == *"Operation not permitted"* ]]
    [ "$(field out.jsonl nproc stdout)" = 1 ]
}

@test "a forged violation record is a signal, not a violation" {
    # A record shaped like the relay's on every low descriptor, then SIGSYS.
    sh_job forge 'for fd in 3 4 5 6; do printf "2VRF>\000\000\300eeee" 2>/dev/null >&$fd; done; kill -SYS $$' > jobs.jsonl
    for preset in exec none; do
        run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --preset $preset --set sandbox.deny=socket
        [ "$(field out.jsonl forge status)" = signal ]
        [ "$(field out.jsonl forge signal)" = SIGSYS ]
        [ "$(field out.jsonl forge syscall)" = null ]
    done
}

@test "a SIGXCPU a job sends itself is a signal; at its spent budget it is a CPU timeout" {
    # kill -XCPU $$ after 1 ms of a 2 s budget used to be `timeout cpu`,
    # "CPU time limit of 2000 ms exceeded (used 1 ms)". The relay reaped
    # the job, so its rusage holds the job's CPU and says who sent it.
    {
        job early sh -c 'kill -XCPU $$'
        job spent /usr/bin/python3 -c 'import os, signal, time; [0 for _ in iter(lambda: time.process_time() < 1.85, False)]; os.kill(os.getpid(), signal.SIGXCPU)'
    } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --cpu-time 2s --wall-time 20s
    [ "$(jq -c 'select(.id == "early") | [.status, .signal, .error_type, .timeout]' out.jsonl)" = '["signal","SIGXCPU","SIGXCPU",null]' ]
    [ "$(jq -c 'select(.id == "spent") | [.status, .signal, .error_type, .timeout, .cpu_ms >= 1800]' out.jsonl)" = '["timeout","SIGXCPU","CPUTimeout","cpu",true]' ] || { cat out.jsonl; false; }
}

@test "a denied call is named in every preset" {
    job sock "$HELPERS/run_socket" > jobs.jsonl
    for preset in exec none; do
        run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --preset $preset \
            --set sandbox.deny=socket --set sandbox.read="$HELPERS"
        [ "$(field out.jsonl sock status)" = violation ]
        [ "$(field out.jsonl sock syscall)" = socket ]
    done
}

@test "shells and pipelines run with processes > 1, and are a violation with processes = 1" {
    {
        sh_job pipe 'echo hi | tr a-z A-Z'
        sh_job subst 'x=$(echo sub); echo "$x"'
        jq -cn '{id: "bash", argv: ["bash", "-c", "for i in 1 2; do echo $i | cat; done; wait"]}'
    } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --set sandbox.processes=16
    [ "$(field out.jsonl pipe stdout)" = HI ]
    [ "$(field out.jsonl subst stdout)" = sub ]
    [ "$(field out.jsonl bash stdout)" = "$(printf '1\n2')" ]
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --set sandbox.processes=1
    [ "$(field out.jsonl pipe status)" = violation ]
    [ "$(field out.jsonl pipe syscall)" = pipe2 ] # the pipe comes before the fork
}

@test "ls -l is no violation" {
    {
        job usr ls -l /usr/bin/env
        job root ls -l /
    } > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet
    [ "$(field out.jsonl usr status)" = ok ]
    [[ "$(field out.jsonl usr stdout)" == *"/usr/bin/env" ]]
    if [ "$LL" -ge 1 ]; then
        # "/" is not in what jobs may read: the kernel says no, the filter does not.
        [ "$(field out.jsonl root status)" = error ]
        [[ "$(field out.jsonl root stderr)" == *"Permission denied"* ]]
    else
        [ "$(field out.jsonl root status)" = ok ]
    fi
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --set sandbox.read=/
    [ "$(field out.jsonl root status)" = ok ]
    [[ "$(field out.jsonl root stdout)" == *" usr"* ]]
}

@test "cpu_ms is the job's own CPU when fitrun kills it at its wall or output limit" {
    {
        sh_job wall 'while :; do :; done'
        sh_job flood 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; exec yes'
    } > jobs.jsonl
    for preset in exec none; do
        run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --preset $preset \
            --wall-time 2s --cpu-time none --output 64k
        [ "$(field out.jsonl wall status)" = timeout ]
        [ "$(field out.jsonl wall cpu_ms)" -ge 200 ] # the relay alone used ~1 ms
        [ "$(field out.jsonl flood status)" = output_limit ]
        [ "$(field out.jsonl flood cpu_ms)" -ge 100 ]
    done
}

@test "SIGKILL of fitrun ends every job and its children within 1 s" {
    local marker="4242.$$"
    {
        sh_job t1 "sleep $marker | sleep $marker & sleep $marker & wait"
        sh_job t2 "sleep $marker & sleep $marker; wait"
    } > jobs.jsonl
    for preset in exec none; do
        "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --preset $preset --workers 2 \
            --set sandbox.processes=16 --wall-time 60s &
        local fr=$!
        wait_for eval '[ "$(pgrep -cf "sleep $marker")" -ge 5 ]'
        kill -9 "$fr"
        wait "$fr" || true
        local t0=$SECONDS ok=no
        for _ in $(seq 20); do
            if ! pgrep -f "sleep $marker" >/dev/null; then ok=yes; break; fi
            sleep 0.05
        done
        [ "$ok" = yes ] || { pgrep -af "sleep $marker"; return 1; }
        [ $((SECONDS - t0)) -le 1 ]
    done
    # The killed jobs' orphans may stay zombies of PID 1 for a while, and a
    # zombie still counts against its uid's RLIMIT_NPROC. The next run does
    # not wait for them: it reserves uids no process uses (sandbox/idrange.c,
    # tested below).
}

@test "without Landlock the run says so once, and require_landlock makes it fatal" {
    { job a true; job b true; job c true; } > jobs.jsonl
    run -0 "$HELPERS/no_landlock" "$FITRUN" run --jobs jobs.jsonl --out out.jsonl
    [ "$(grep -c 'file reads are not confined (no Landlock: the kernel has no Landlock system calls' <<< "$output")" -eq 1 ]
    [ "$(jq -r .status out.jsonl | sort -u)" = ok ]
    run -125 "$HELPERS/no_landlock" --errno EPERM "$FITRUN" run --jobs jobs.jsonl --out out2.jsonl \
        --set sandbox.require_landlock=true
    [[ "$output" == *"[sandbox]: require_landlock is set, but Landlock is not available: a seccomp profile (container runtime) denies the Landlock system calls"* ]]
    [ ! -s out2.jsonl ]
}

@test "fitrun warns when the jobs file is readable by jobs" {
    need_landlock
    chmod 755 "$D"
    job a true > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --set sandbox.read="$D"
    [[ "$output" == *"sandbox: jobs.jsonl is inside what [sandbox] read/write lets every job read"* ]]
    [[ "$output" == *"sandbox: out.jsonl is inside"* ]]
}
