#!/usr/bin/env bats
# A worker's own pipes (docs/python-runtime.md, "The pipes"): with the
# python preset (no prediction can create a process) the job, report,
# stdout and stderr pipes of a worker carry one prediction after another.
# Whatever a prediction does to them (fake reports, job frames and channel
# messages; closed or redirected descriptors; a flood past a cap; packet
# mode left on them; a signal handler or a thread still writing after it
# returned; a job its child never read to the end), the next predictions
# of the same worker (workers = 1) get exactly their own results, under
# fork and under reuse isolation. With processes allowed, pipes stay per
# job. Real /usr/bin/python3 workers, real fitrun.

load python_common

setup() {
    FITRUN=${FITRUN:?FITRUN must point at the fitrun binary}
    D=$BATS_TEST_TMPDIR
    : > "$D/prelude.py"
}

teardown() {
    local pids
    pids=$(pgrep -f "$D/" || true)
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
}

# Prints on both streams, in many writes, and returns its input.
VICTIM=$'import os, sys\ndef transform(g):\n    for i in range(300):\n        os.write(1, b"out-%04d|" % i)\n    print("victim-out")\n    print("victim-err", file=sys.stderr)\n    return g\n'
VICTIM_OUT=$(for i in $(seq 0 299); do printf 'out-%04d|' "$i"; done; echo victim-out)

# attacked ISOLATION ATTACK_CODE [PROFILE LINES...]: the attack, then two
# victims, in one worker; each victim's result is exactly its own.
attacked() {
    local iso=$1 code=$2
    python_profile "$D/p.ini" 1 4s 512M "isolation = $iso"
    local line
    for line in "${@:3}"; do
        sed -i "s/^output = .*/$line/" "$D/p.ini"
    done
    {
        job attack "$code"
        job victim "$VICTIM" '[[[1, 2]]]'
        job victim2 "$VICTIM" '[[[4]]]'
    } > "$D/jobs.jsonl"
    run_jobs
    echo "$stderr"
    [ "$status" -eq 0 ]
    jq -c '.stdout |= .[:200]' "$D/out.jsonl"
    want=$(jq -cn --arg out "$VICTIM_OUT" '[$out + "\n", "victim-err\n", "ok", null]')
    [ "$(jq -c 'select(.id == "victim") | [.stdout, .stderr, .status, .error_type]' "$D/out.jsonl")" = "$want" ]
    [ "$(jq -c 'select(.id == "victim2") | [.stdout, .stderr, .status, .error_type]' "$D/out.jsonl")" = "$want" ]
    [ "$(jq -c 'select(.id == "victim") | .outputs' "$D/out.jsonl")" = '[[[1,2]]]' ]
    [ "$(jq -c 'select(.id == "victim2") | .outputs' "$D/out.jsonl")" = '[[[4]]]' ]
    [ "$(jq -s 'map(.worker) | unique' "$D/out.jsonl" | jq -c .)" = '[0]' ]
}

@test "python pipes: fake reports, job frames and channel messages on every stream are the attacker's own" {
    code=$'import os, struct\nFAKE = b\'{"outputs":[[[9]]],"error_type":null,"error_message":null,"error_line":null,"memory":false}\'\ndef transform(g):\n    for fd in (1, 2, 3):\n        os.write(fd, FAKE)\n        os.write(fd, struct.pack("=I", len(FAKE)) + FAKE)\n        os.write(fd, b"E\\0\\0\\0" + struct.pack("=I", 2) + bytes(48))\n        os.write(fd, b"\\n\\0\\0\\0\\0}" * 100)\n    return 9\n'
    for iso in fork reuse; do
        attacked "$iso" "$code"
        # Its report is two objects and more: no readable result.
        [ "$(jq -r 'select(.id == "attack") | .error_type' "$D/out.jsonl")" = NoResult ]
    done
}

@test "python pipes: a prediction holds no end of the job pipe and cannot read a later job" {
    code=$'import os\ndef transform(g):\n    got = []\n    for fd in range(0, 64):\n        try:\n            got.append([fd, len(os.read(fd, 1 << 16))]) if fd in (4, 5) or fd > 6 else os.fstat(fd)\n        except OSError as e:\n            got.append([fd, e.errno]) if fd in (4, 5) else None\n    return got\n'
    # fd 5 (the job) is closed (EBADF) before any code runs; fd 4 is closed
    # (fork) or /dev/null (reuse); nothing else is open but fd 6 (reuse: its
    # socket to its worker).
    attacked fork "$code"
    [ "$(jq -c 'select(.id == "attack") | .outputs' "$D/out.jsonl")" = '[[[4,9],[5,9]]]' ]
    attacked reuse "$code"
    [ "$(jq -c 'select(.id == "attack") | .outputs' "$D/out.jsonl")" = '[[[4,0],[5,9]]]' ]
}

@test "python pipes: descriptors closed or redirected onto each other" {
    for iso in fork reuse; do
        attacked "$iso" $'import os\ndef transform(g):\n    os.dup2(3, 1)\n    os.dup2(3, 2)\n    print("x", flush=True)\n    os.close(3)\n    os.close(0)\n    return g\n'
        attacked "$iso" $'import os\ndef transform(g):\n    os.closerange(0, 64)\n    return g\n'
        attacked "$iso" $'import os\ndef transform(g):\n    os.dup2(1, 3)\n    return g\n'
    done
}

@test "python pipes: a flood past the output cap, then a return; a result past its cap" {
    for iso in fork reuse; do
        attacked "$iso" $'import sys\ndef transform(g):\n    sys.stdout.write("x" * 70000)\n    return g\n'
        [ "$(jq -r 'select(.id == "attack") | .status' "$D/out.jsonl")" = output_limit ]
        # A full pipe left behind (at most the cap: ok or output_limit, as fitrun read it)
        attacked "$iso" $'import os, fcntl\ndef transform(g):\n    fcntl.fcntl(2, fcntl.F_SETFL, os.O_NONBLOCK)\n    try:\n        while True:\n            os.write(2, b"y" * 4096)\n    except BlockingIOError:\n        pass\n    return g\n'
        attacked "$iso" $'def transform(g):\n    return "z" * (2 << 20)\n'
        [ "$(jq -r 'select(.id == "attack") | .error_type' "$D/out.jsonl")" = ResultLimit ]
    done
}

# The report pipe is read at EXITED, or from the job's wake-up (20 ms after
# RUN) as it fills: a result larger than the pipe waits for the wake-up,
# then arrives whole, under either isolation; so does one just under it.
@test "python pipes: a result larger than the pipe arrives whole, one smaller too" {
    for iso in fork reuse; do
        python_profile "$D/p.ini" 1 10s 512M "isolation = $iso"
        {
            job big $'def transform(g):\n    return "b" * 300000\n'
            job small $'def transform(g):\n    return "s" * 60000\n'
            job after $'def transform(g):\n    return g\n' '[[[7]]]'
        } > "$D/jobs.jsonl"
        run_jobs
        [ "$status" -eq 0 ]
        [ "$(jq -r 'select(.id == "big") | [.status, (.outputs[0] | length)] | @tsv' "$D/out.jsonl")" = "$(printf 'ok\t300000')" ]
        [ "$(jq -r 'select(.id == "small") | [.status, (.outputs[0] | length)] | @tsv' "$D/out.jsonl")" = "$(printf 'ok\t60000')" ]
        [ "$(jq -c 'select(.id == "after") | .outputs' "$D/out.jsonl")" = '[[[7]]]' ]
    done
}

# fitrun kills a reused process at a limit (here the result's), which may
# land after the process said it was done and its worker kept it for the
# next job: that job must not run in the dying process (it was killed with
# it, in about one run in five, before RUN could ask for a fresh one).
# Eight attacks in one run, each followed by a victim.
@test "python pipes: a reused process fitrun killed at a limit does not run the next job" {
    python_profile "$D/p.ini" 1 4s 512M "isolation = reuse"
    for i in 1 2 3 4 5 6 7 8; do
        job "attack$i" $'def transform(g):\n    return "z" * (2 << 20)\n'
        job "victim$i" "$VICTIM" "[[[$i]]]"
    done > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    jq -c 'del(.stdout)' "$D/out.jsonl"
    [ "$(jq -r 'select(.id | startswith("attack")) | .error_type' "$D/out.jsonl" | sort -u)" = ResultLimit ]
    # Each attack's process is gone after it, whoever noticed first.
    [ "$(jq -r 'select(.id | startswith("attack")) | .worker_replaced | split(":")[0]' "$D/out.jsonl" | sort -u | grep -cv '^ended$\|^killed$')" -eq 0 ]
    for i in 1 2 3 4 5 6 7 8; do
        [ "$(jq -c --arg id "victim$i" 'select(.id == $id) | [.status, .outputs, .worker_replaced]' "$D/out.jsonl")" = "[\"ok\",[[[$i]]],null]" ]
    done
}

# Packet mode (O_DIRECT) on a pipe's write end makes each write a packet; a
# read shorter than a packet drops its rest. The write ends' file
# descriptions are the worker's, shared by its children: a flag left on
# them must not cut the next prediction's output (1M cap: fitrun's reads
# then end mid-packet).
@test "python pipes: flags a prediction leaves on its pipes (packet mode, non-blocking) do not reach the next one" {
    for iso in fork reuse; do
        attacked "$iso" $'import os, fcntl\ndef transform(g):\n    for fd in (1, 2, 3):\n        fcntl.fcntl(fd, fcntl.F_SETFL, os.O_DIRECT | os.O_NONBLOCK | os.O_APPEND)\n    return g\n' "output = 1M"
        [ "$(jq -r 'select(.id == "attack") | .status' "$D/out.jsonl")" = ok ]
    done
    # And a victim that writes more than fitrun's first read buffer (64K) in
    # packets that do not divide it.
    python_profile "$D/p.ini" 1 4s 512M
    sed -i 's/^output = .*/output = 1M/' "$D/p.ini"
    big=$'import os\ndef transform(g):\n    for i in range(20000):\n        os.write(1, b"%06d|" % i)\n    return g\n'
    {
        job attack $'import os, fcntl\ndef transform(g):\n    fcntl.fcntl(1, fcntl.F_SETFL, os.O_DIRECT)\n    return g\n'
        job big "$big"
    } > "$D/jobs.jsonl"
    run_jobs
    [ "$status" -eq 0 ]
    want=$(/usr/bin/python3 -c 'print("".join("%06d|" % i for i in range(20000)), end="")')
    [ "$(jq -r 'select(.id == "big") | .stdout' "$D/out.jsonl")" = "$want" ]
}

@test "python pipes: a signal handler or a thread still writing after the prediction returned" {
    handler=$'import os, signal\ndef transform(g):\n    keep = [os.dup(1), os.dup(2), os.dup(3)]\n    def h(*a):\n        for fd in keep + [1, 2, 3]:\n            try:\n                os.write(fd, b"LEAK")\n            except OSError:\n                pass\n    signal.signal(signal.SIGALRM, h)\n    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)\n    return g\n'
    thread=$'import os, threading\ndef transform(g):\n    def loop():\n        while True:\n            for fd in (1, 2, 3):\n                os.write(fd, b"LEAK")\n    threading.Thread(target=loop, daemon=True).start()\n    return g\n'
    for iso in fork reuse; do
        attacked "$iso" "$handler"
        attacked "$iso" "$thread"
    done
}

# A job larger than a pipe (written as the child reads it), and one whose
# child is killed while it reads it (a 60 MB job under a 40 MB memory
# limit): what it left unread is dropped, not taken for the next job's
# frame (the next child would wait for a job of 0x61616161 bytes).
@test "python pipes: a job larger than the pipe, and a job its child never read to the end" {
    # id, its input's size, the memory limit, what it gives (outputs, or the status)
    local cases=("large 300000 512M [300000]" "unread $((60 << 20)) 40M \"memory\"")
    local iso c id size limit want
    for iso in fork reuse; do
        for c in "${cases[@]}"; do
            read -r id size limit want <<<"$c"
            python_profile "$D/p.ini" 1 4s "$limit" "isolation = $iso"
            {
                /usr/bin/python3 -c 'import json, sys; print(json.dumps({"id": sys.argv[1], "code": "def transform(g):\n    return len(g)\n", "inputs": ["a" * int(sys.argv[2])]}))' "$id" "$size"
                job victim "$VICTIM" '[[[1, 2]]]'
            } > "$D/jobs.jsonl"
            run_jobs
            [ "$status" -eq 0 ]
            [ "$(jq -c --arg id "$id" 'select(.id == $id) | if .status == "ok" then .outputs else .status end' "$D/out.jsonl")" = "$want" ]
            [ "$(jq -c 'select(.id == "victim") | [.status, .outputs, .stdout]' "$D/out.jsonl")" = "$(jq -cn --arg out "$VICTIM_OUT" '["ok", [[[1,2]]], $out + "\n"]')" ]
        done
    done
}

# A sandbox that lets a prediction create processes keeps pipes per job:
# a descendant that outlives the prediction's process would otherwise
# write into the next one's pipes (the worker kills the process group,
# but a per-job pipe does not depend on it).
@test "python pipes: with processes allowed each job has pipes of its own, framed the same way" {
    python_profile "$D/p.ini" 1 4s 512M
    # set_robust_list: glibc's fork makes it in the child; without it the
    # descendant is a violation (killed at once, and, depending on when the
    # supervisor sees it, the forker's status too) instead of outliving it.
    sed -i 's/^preset = python$/preset = python\nallow = fork, vfork, clone, clone3, wait4, set_robust_list\nprocesses = 8/' "$D/p.ini"
    {
        job forker $'import os, time\ndef transform(g):\n    if os.fork() == 0:\n        for i in range(100):\n            os.write(1, b"LEAK")\n            time.sleep(0.01)\n        os._exit(0)\n    return g\n'
        job victim "$VICTIM" '[[[1, 2]]]'
        /usr/bin/python3 -c 'import json; print(json.dumps({"id": "large", "code": "def transform(g):\n    return len(g)\n", "inputs": ["a" * 300000]}))'
    } > "$D/jobs.jsonl"
    run_jobs
    echo "$stderr"
    [ "$status" -eq 0 ]
    [ "$(jq -c 'select(.id == "forker") | [.status, .outputs]' "$D/out.jsonl")" = '["ok",[[[1]]]]' ]
    [ "$(jq -c 'select(.id == "victim") | [.status, .outputs, .stdout]' "$D/out.jsonl")" = "$(jq -cn --arg out "$VICTIM_OUT" '["ok", [[[1,2]]], $out + "\n"]')" ]
    [ "$(jq -c 'select(.id == "large") | .outputs' "$D/out.jsonl")" = '[300000]' ]
}
