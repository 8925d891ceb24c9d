#!/bin/sh
# inside.sh — what run-matrix.sh runs inside each container shape.
#
# Started with `--entrypoint /bin/sh` so that `fitrun detect` sees the bare
# container (not an environment already exported by fitrun as PID 1; the
# PID 1 shapes test that separately). Mounts: /t = tests/containers (ro),
# /h = helper programs of the exec jobs (put first in PATH), /out = this
# shape's result folder. Every step writes NAME.out, NAME.err
# and NAME.rc into /out; the host does all the asserting (check.py).
#   FITRUN_TEST_SAMPLE=0   skip the ARC sample run
out=/out
t=/t
share=/usr/local/share/fitrun
PATH=/h:$PATH
export PATH
# The container shares the host's uids but not its /run (fitrun's uid
# registry) nor its /proc: a range apart from the host runs' (60000 up), so
# that RLIMIT_NPROC, counted per uid across the machine, stays apart.
ids="--set sandbox.uid_base=63000"

step() { # step NAME CMD... — run CMD, keep its output and status
    name=$1; shift
    "$@" >"$out/$name.out" 2>"$out/$name.err"
    echo $? >"$out/$name.rc"
}

grep '^Seccomp' /proc/self/status >"$out/seccomp.txt"
nproc >"$out/nproc.txt" 2>&1
step detect fitrun detect --json
# the wrapper (not as PID 1 here): what it exports to a command
step env fitrun -- /usr/bin/env
step exec fitrun run $ids --profile "$t/exec/exec.ini" --jobs "$t/exec/jobs.jsonl" --out "$out/exec.jsonl"
if [ "${FITRUN_TEST_SAMPLE:-1}" = 1 ] && [ -f "$share/samples/arc/jobs.jsonl" ] &&
   [ -f "$share/profiles/arc-python.ini" ]; then
    step sample fitrun run $ids --profile "$share/profiles/arc-python.ini" \
        --jobs "$share/samples/arc/jobs.jsonl" --out "$out/sample.jsonl"
fi
exit 0
