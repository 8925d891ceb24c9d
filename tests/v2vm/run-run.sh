#!/usr/bin/env bash
# tests/v2vm/run-run.sh — `fitrun run` in a real cgroup v2 hierarchy.
#
# This machine's cgroups are v1; ../shared/tools/cgroup-v2-vm boots a small
# VM (busybox userspace, pure cgroup v2) and runs one command in a cgroup
# with cpu.max, cpuset.cpus and memory.max set. In each case below the VM
# runs `fitrun detect --json --profile exec.ini` (the plan for the profile
# the run uses is asserted: quota, cpuset, memory limit, workers) and
# `fitrun run` of the exec jobs of
# tests/containers/exec/ (busybox applets only: the VM has no Python). The
# per-job outcomes (id, status, passed) must equal those of the same run on
# the host, and every job must get its expected status (expect.txt).
#
# Prints one PASS/FAIL line per case and exits non-zero on any failure.
# Without root and without qemu installed the VM cannot run: SKIP, exit 0.
# Env: FITRUN, FITRUN_SRC, FITRUN_SHARED (ctest sets them);
#      FITRUN_TEST_KEEP_TMP=1 keeps the result folders.
set -uo pipefail

# shellcheck source=common.bash
. "$(dirname "${BASH_SOURCE[0]}")/common.bash"
EXEC=$SRC/tests/containers/exec           # jobs, profile, expectations (shared with the container matrix)
PY=/usr/bin/python3
CHECK=("$PY" "$SRC/tests/containers/check.py")
T_START=$EPOCHREALTIME
MIB=$((1 << 20))

say() { printf '%s\n' "$*"; }
elapsed() { awk -v a="$1" -v b="${2:-$EPOCHREALTIME}" 'BEGIN { printf "%.1f", b - a }'; }

v2vm_require run

TMP=$(mktemp -d /tmp/fitrun-test-v2vm-run.XXXXXX)
cleanup() {
    if [ "${FITRUN_TEST_KEEP_TMP:-0}" = 1 ]; then say "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

NPASS=0 NFAIL=0
report() { # report NAME T0 [FAILURE...]
    local name=$1 t0=$2; shift 2
    if (($#)); then
        NFAIL=$((NFAIL + 1)); say "FAIL $name ($(elapsed "$t0")s)"; printf '       %s\n' "$@"
    else
        NPASS=$((NPASS + 1)); say "PASS $name ($(elapsed "$t0")s)"
    fi
}
check() { # check LABEL check.py-args... (appends to the caller's fails)
    local label=$1 out; shift
    out=$("${CHECK[@]}" "$@" 2>&1) || fails+=("$label: $out")
}

# ------------------------------------------------------------------ host reference
# The memory job's program, static: the same binary on the host and in the
# VM (where /payload is first in PATH).
P=$TMP/payload
mkdir -p "$P"
if ! cc -static -O2 -o "$P/fitrun-test-memhog" "$EXEC/memhog.c" 2>"$TMP/memhog.log"; then
    say "FAIL v2vm run: cannot build memhog.c (cc -static): $(head -3 "$TMP/memhog.log")"; exit 1
fi
HOST=$TMP/host.jsonl
t0=$EPOCHREALTIME
fails=()
# The jobs run under per-slot uids and Landlock: they must be able to reach
# the memory job's program (mktemp made $TMP 0700), and read its folder.
chmod 755 "$TMP"
# In the VM fitrun runs in `box`, which is not delegated (it holds init):
# memory is RLIMIT_AS there, and the reference must be the same fallback
# (under a memory cgroup memhog, which reserves far more than it touches,
# is ok). run-cgroups.sh tests fitrun's own cgroups in the VM.
PATH=$P:$PATH "$FITRUN" run --profile "$EXEC/exec.ini" --jobs "$EXEC/jobs.jsonl" --out "$HOST" \
    --set sandbox.read="/proc,$P" --set resources.cgroups=off 2>"$TMP/host.err"
rc=$?
if [ $rc = 0 ]; then
    check "exec jobs" results "$EXEC/jobs.jsonl" "$HOST"
    check "exec jobs" expect "$HOST" "$EXEC/expect.txt"
else
    fails+=("fitrun run exited $rc: $(tail -3 "$TMP/host.err" | tr '\n' ' ')")
fi
report host "$t0" "${fails[@]}"

# ------------------------------------------------------------------ the payload
# Everything the guest needs: fitrun (the VM tool copies its ldd libraries),
# memhog, the profile and jobs, and a script that writes each output between
# markers, since the guest's stdout is one stream.
cp "$FITRUN" "$P/fitrun"
cp "$EXEC/exec.ini" "$EXEC/jobs.jsonl" "$P/"
cat >"$P/guest.sh" <<'EOF'
#!/bin/sh
# runs in the VM, in /payload, inside the limited cgroup "box"
# The VM's root directory is 0700, which would leave the jobs' per-slot uids
# unable to reach any file (fitrun would then keep uid 0 and say so): open
# it, as on any ordinary system, so that the slot uids are tested here too.
chmod 755 /
section() { echo "=====fitrun-test $1"; }
section detect;         ./fitrun detect --json --profile exec.ini 2>/tmp/detect.err;     echo "=====rc $?"
section run;            ./fitrun run --profile exec.ini --jobs jobs.jsonl --out - 2>/tmp/run.err; echo "=====rc $?"
section cgroup;         cat /proc/self/cgroup;                                           echo "=====rc $?"
section detect.err;     cat /tmp/detect.err
section run.err;        cat /tmp/run.err
section end
EOF
chmod +x "$P/guest.sh"

# split_sections FILE DIR — "=====fitrun-test NAME" ... "=====rc N" into DIR/NAME.out + NAME.rc
split_sections() {
    awk -v dir="$2" '
        /^=====fitrun-test / { name = $2; file = dir "/" name ".out"; printf "" > file; next }
        /^=====rc /          { print $2 > (dir "/" name ".rc"); name = ""; next }
        name != ""           { print >> file }' "$1"
}

# vmcase NAME CPU_MAX CPUSET MEMORY_MAX [workers=N] -- DETECT-EXPR...
#   the box cgroup gets cpu.max CPU_MAX, cpuset.cpus CPUSET, memory.max
#   MEMORY_MAX (bytes, below the 1 GiB guest RAM: a limit at or above
#   total RAM means "no limit") and pids.max 256; workers=N is the pool
#   size `fitrun run --profile exec.ini` must log in its plan line
vmcase() {
    local name=$1 cpumax=$2 cpuset=$3 memmax=$4; shift 4
    local pworkers='' t0=$EPOCHREALTIME fails=() rc d=$TMP/$name
    while (($#)) && [ "$1" != -- ]; do
        case $1 in workers=*) pworkers=${1#workers=} ;; esac
        shift
    done
    shift
    mkdir -p "$d"
    "$VM" -t 300 -m 1024 --cpu-max "$cpumax" --cpuset "$cpuset" --mem-max "$memmax" --pids-max 256 \
        "$P" ./guest.sh >"$d/stdout" 2>"$d/stderr"
    rc=$?
    [ $rc = 0 ] || fails+=("cgroup-v2-vm exited $rc: $(tail -5 "$d/stderr" | tr '\n' ' ')")
    split_sections "$d/stdout" "$d"
    local step
    for step in detect run; do
        [ "$(cat "$d/$step.rc" 2>/dev/null)" = 0 ] ||
            fails+=("$step: exit status $(cat "$d/$step.rc" 2>/dev/null || echo missing): $(tail -c 300 "$d/$step.err.out" 2>/dev/null | tr '\n' ' ')")
    done
    grep -q '^0::/box$' "$d/cgroup.out" 2>/dev/null ||
        fails+=("the guest command did not run in /box: $(tr '\n' ' ' <"$d/cgroup.out" 2>/dev/null)")
    if [ "$(cat "$d/detect.rc" 2>/dev/null)" = 0 ]; then
        check "detect --json" detect "$d/detect.out" cgroup.version=2 "$@"
    fi
    if [ "$(cat "$d/run.rc" 2>/dev/null)" = 0 ]; then
        # the pool's size, from the plan line `fitrun run` logs at start
        local got
        got=$(sed -n 's/.*plan: \([0-9][0-9]*\) worker.*/\1/p' "$d/run.err.out" | head -1)
        [ "$got" = "$pworkers" ] ||
            fails+=("fitrun run: plan of ${got:-?} workers, expected $pworkers: $(grep -m1 'plan:' "$d/run.err.out")")
        check "exec jobs" results "$EXEC/jobs.jsonl" "$d/run.out"
        check "exec jobs" expect "$d/run.out" "$EXEC/expect.txt"
        check "exec jobs" compare host "$HOST" "v2vm-$name" "$d/run.out"
        # ... and the results never name more workers than that
        local nw
        nw=$("$PY" -c 'import json,sys; print(len({json.loads(l).get("worker") for l in open(sys.argv[1]) if l.strip()}))' "$d/run.out" 2>/dev/null)
        [ "${nw:-0}" -le "${pworkers:-0}" ] || fails+=("results name $nw distinct workers, the plan said $pworkers")
    fi
    report "v2vm-$name" "$t0" "${fails[@]}"
}

# A fractional quota on two CPUs: 1.5 CPUs -> floor -> one worker.
vmcase quota-1.5 "150000 100000" 0-1 $((768 * MIB)) workers=1 -- \
    cpu.quota=1.5 cpu.quota_source~cpu.max cpu.affinity=2 cpu.effective=1.5 \
    memory.limit=$((768 * MIB)) memory.limit_source~memory.max plan.workers=1
# A cpuset of one CPU and 256 MiB: exec.ini's 200M per worker fits one.
vmcase cpuset-memory "max 100000" 1 $((256 * MIB)) workers=1 -- \
    cpu.quota=null cpu.affinity=1 cpu.effective=1 memory.limit=$((256 * MIB)) plan.workers=1
# Room for two workers: 2 CPUs of quota, 512 MiB (2 x 200M).
vmcase two-workers "200000 100000" 0-1 $((512 * MIB)) workers=2 -- \
    cpu.quota=2 cpu.effective=2 memory.limit=$((512 * MIB)) plan.workers=2

say "v2vm run: $NPASS passed, $NFAIL failed; total $(elapsed "$T_START")s"
((NFAIL == 0))
