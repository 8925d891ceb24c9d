#!/usr/bin/env bash
# tests/containers/run-cgroups.sh — fitrun's own cgroups (docs/cgroups.md)
# inside real podman containers (runc, this host's cgroup v1).
#
#   default, --memory=256m, --cgroupns=private: podman mounts the cgroup
#       hierarchies read-only: `fitrun detect` says not delegated, and why
#       (mounted read-only), and memory is RLIMIT_AS;
#   --privileged --cgroupns=private --memory=400m (the only shape podman
#       gives a writable cgroup tree here): delegated; 8 pairs of (a
#       prediction touching 3x its 100M limit, a sleeping one beside it),
#       2 workers: every hog `memory` (OOMKill), every neighbour ok; then
#       predictions that together eat more than the container's 400m: each
#       is killed in its own cgroup, the zygote survives and the run ends 0
#       (not 125); nothing left in the container's cgroup after the runs,
#       and after SIGKILL the next run removes the dead run's tree.
#
# The image is the matrix's (run-matrix.sh builds it: fitrun-test:containers,
# with /usr/bin/python3); this build tree is mounted at /b, so the fitrun
# under test is this tree's, with its runtime script and sandbox library.
# Prints PASS/FAIL per shape; SKIP (exit 0) without root or without the
# image (FAIL without the image where CI=true).
# Env: FITRUN (its directory is the build tree), FITRUN_SRC.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=${FITRUN_SRC:-$(cd "$HERE/../.." && pwd)}
FITRUN=${FITRUN:-$SRC/build/fitrun}
BUILD=$(cd "$(dirname "$FITRUN")" && pwd)
IMAGE=localhost/fitrun-test:containers
NAME=fitrun-test-cgroups-$$

[ "$(id -u)" = 0 ] || { echo "SKIP containers cgroups: not root"; exit 0; }
# ctest runs run-matrix.sh first (a fixture); CI must run these, never skip them.
if ! podman image exists "$IMAGE" 2> /dev/null; then
    if [ "${CI:-}" = true ]; then
        echo "FAIL containers cgroups: no $IMAGE (run-matrix.sh builds it; it did not run or removed it)"
        exit 1
    fi
    echo "SKIP containers cgroups: no $IMAGE (run run-matrix.sh first)"
    exit 0
fi

# One podman test at a time (run-matrix.sh's lock, taken the same way:
# flock -o, so that podman's lingering children do not hold it).
LOCK=/run/lock/fitrun-test-containers.lock
if [ -z "${FITRUN_TEST_CONTAINERS_LOCKED:-}" ]; then
    FITRUN_TEST_CONTAINERS_LOCKED=1 flock -o -w 900 -E 75 "$LOCK" bash "${BASH_SOURCE[0]}" "$@"
    rc=$?
    [ $rc = 75 ] && echo "FAIL containers cgroups: another podman test held $LOCK for 15 minutes"
    exit $rc
fi

TMP=$(mktemp -d /tmp/fitrun-test-containers-cgroups.XXXXXX)
PRE_CGROUPS=$(ls -d /sys/fs/cgroup/*/libpod_parent 2> /dev/null | tr '\n' ' ')
cleanup() {
    local c h
    for c in $(podman ps -a --format '{{.Names}}' 2> /dev/null | grep "^$NAME"); do
        podman rm -f -t 0 "$c" > /dev/null 2>&1
    done
    for h in /sys/fs/cgroup/*/libpod_parent; do
        [ -d "$h" ] || continue
        case " $PRE_CGROUPS " in *" $h "*) continue ;; esac
        rmdir "$h/conmon" 2> /dev/null
        rmdir "$h" 2> /dev/null
    done
    rm -rf "$TMP"
}
trap cleanup EXIT

RUN=(podman run --rm --runtime runc --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 --network none
     -v "$BUILD:/b:ro" -v "$TMP:/out" --entrypoint /bin/sh)
NFAIL=0
result() { # result SHAPE OUTPUT: PASS when no line of OUTPUT starts with "not ok"
    if grep -q '^not ok' <<< "$2" || ! grep -q '^ok' <<< "$2"; then
        NFAIL=$((NFAIL + 1))
        echo "FAIL $1"
    else
        echo "PASS $1"
    fi
    sed 's/^/       /' <<< "$2"
}

# ---- read-only shapes
for shape in "" "--memory=256m" "--cgroupns=private"; do
    out=$("${RUN[@]}" --name "$NAME-ro" $shape "$IMAGE" -c '
        /b/fitrun detect --json > /out/d.json
        /usr/bin/python3 - << "EOF"
import json
d = json.load(open("/out/d.json"))
ok = lambda name, c: print(("ok - " if c else "not ok - ") + name)
ok("not delegated", d["cgroup"]["delegated"] is False)
ok("why: mounted read-only", "mounted read-only" in d["cgroup"]["delegated_reason"])
ok("memory is RLIMIT_AS", d["sandbox"]["memory"]["enforced_by"] == "RLIMIT_AS")
print("  reason:", d["cgroup"]["delegated_reason"])
EOF' 2>&1)
    result "read-only cgroups (${shape:-default})" "$out"
done

# ---- a writable cgroup tree
cat > "$TMP/p.ini" << 'EOF'
[resources]
workers = 2
[sandbox]
preset = python
cpu_time = 10s
wall_time = 60s
memory = 100M
[runtime]
kind = python
interpreter = /usr/bin/python3
entry = transform
EOF
sed 's/^memory = 100M$/memory = 300M/' "$TMP/p.ini" > "$TMP/big.ini"
HOG=$'def transform(g):\n    b = bytearray(300 << 20)\n    for i in range(0, len(b), 4096):\n        b[i] = 1\n    return g\n'
EAT=$'def transform(g):\n    b = bytearray(280 << 20)\n    for i in range(0, len(b), 4096):\n        b[i] = 1\n    return g\n'
NAP=$'import time\ndef transform(g):\n    time.sleep(0.3)\n    return g\n'
SLOW=$'import time\ndef transform(g):\n    time.sleep(30)\n    return g\n'
pyjob() { jq -cn --arg id "$1" --arg code "$2" '{id: $id, code: $code, inputs: [[[1]]], expected: [[[1]]]}'; }
for i in 1 2 3 4 5 6 7 8; do pyjob "hog$i" "$HOG"; pyjob "nap$i" "$NAP"; done > "$TMP/pairs.jsonl"
for i in 1 2 3 4; do pyjob "eat$i" "$EAT"; done > "$TMP/eat.jsonl"
for i in 1 2; do pyjob "slow$i" "$SLOW"; done > "$TMP/slow.jsonl"
echo '{"id":"one","argv":["true"]}' > "$TMP/one.jsonl"

out=$("${RUN[@]}" --name "$NAME-rw" --privileged --cgroupns=private --memory=400m "$IMAGE" -c '
    ok() { if "$@"; then echo "ok - $N"; else echo "not ok - $N"; fi; }
    left() { ls -d /sys/fs/cgroup/memory/fitrun-* /sys/fs/cgroup/pids/fitrun-* 2> /dev/null; }
    /b/fitrun detect --json > /out/d.json
    N="delegated: memory, pids, cpuacct"; ok grep -q "\"delegated_reason\": \"memory, pids, cpuacct (cgroup v1)\"" /out/d.json
    /b/fitrun run --quiet --profile /out/p.ini --jobs /out/pairs.jsonl --out /out/pairs.out
    N="8 pairs: run exits 0"; ok [ $? = 0 ]
    N="8 hogs memory (OOMKill in their own cgroup)"
    ok [ "$(grep "\"id\":\"hog" /out/pairs.out | grep "\"status\":\"memory\"" | grep -c "jobs/worker-[01]/memory.oom_control")" = 8 ]
    N="8 neighbours ok"; ok [ "$(grep "\"id\":\"nap" /out/pairs.out | grep -c "\"status\":\"ok\"")" = 8 ]
    /b/fitrun run --profile /out/big.ini --jobs /out/eat.jsonl --out /out/eat.out 2> /out/eat.err
    rc=$?
    N="predictions eating the container: run exits 0 (the zygote survives), not 125"; ok [ $rc = 0 ]
    N="every eater ok or memory, none crash"; ok [ "$(grep -c "\"status\":\"\(ok\|memory\)\"" /out/eat.out)" = 4 ]
    N="nothing left after the runs"; ok [ -z "$(left)" ]
    /b/fitrun run --quiet --profile /out/p.ini --jobs /out/slow.jsonl --out /out/slow.out &
    pid=$!
    i=0
    while [ $i -lt 100 ] && ! grep -q . /sys/fs/cgroup/memory/fitrun-$pid/jobs/worker-1/cgroup.procs 2> /dev/null; do sleep 0.1; i=$((i + 1)); done
    kill -KILL $pid; wait $pid
    N="SIGKILL leaves a tree"; ok [ -n "$(left)" ]
    /b/fitrun run --workers 1 --jobs /out/one.jsonl --out /out/one.out 2> /out/one.err
    N="the next run removes it"; ok [ -z "$(left)" ] && grep -q "removed" /out/one.err
    grep -h "^fitrun: cgroups" /out/eat.err /out/one.err | sed "s/^/  /"
    grep -o "\"id\":\"eat[0-9]\",\"status\":\"[a-z]*\"" /out/eat.out | sed "s/^/  /"
' 2>&1)
result "writable cgroups (--privileged --cgroupns=private --memory=400m)" "$out"

[ -z "$(podman ps -a --format '{{.Names}}' | grep "^$NAME")" ] || { echo "FAIL a container was left behind"; NFAIL=$((NFAIL + 1)); }
exit $((NFAIL > 0))
