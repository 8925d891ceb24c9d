#!/usr/bin/env bash
# run-detect.sh — `fitrun detect --json` in a REAL cgroup v2 hierarchy.
#
# This machine is cgroup v1, so ../shared/tools/cgroup-v2-vm boots a small VM
# whose userspace sits in pure cgroup v2 (see ../shared/notes/cgroup-v2-vm.md;
# ~3-10 s a run). The payload is a temp dir with a copy of the binary (the
# tool copies its ldd libraries). Cases:
#   1. the VM's own limits on /sys/fs/cgroup/box: cpu.max, cpuset, memory.max, pids.max
#   2. nested: a parent cgroup beside box, TIGHTER than its leaf child; the
#      process moves into the leaf and the parent's limits must win
#   3. one-field cpu.max and memory.high in a leaf (parser on a real kernel
#      file: the kernel normalises "max" to "max 100000")
# Assertions read the JSON with /usr/bin/python3 on the host.
set -euo pipefail

: "${FITRUN:?FITRUN must point at the fitrun binary}"
: "${FITRUN_SHARED:?FITRUN_SHARED must point at the shared folder}"
VM=$FITRUN_SHARED/tools/cgroup-v2-vm
[ -x "$VM" ] || { echo "run-detect.sh: $VM missing or not executable" >&2; exit 1; }

payload=$(mktemp -d /tmp/fitrun-test-detect-v2vm.XXXXXX)
trap 'rm -rf "$payload"' EXIT
cp "$FITRUN" "$payload/fitrun"
fails=0

# check NAME JSON PYTHON-ASSERTIONS: the assertions see the report as `j`.
check() {
    local name=$1 json=$2 code=$3
    if JSON=$json /usr/bin/python3 -c '
import json, os, sys
j = json.loads(os.environ["JSON"])
for line in sys.argv[1].strip().splitlines():
    line = line.strip()
    if line and not eval(line):
        print("  FAILED:", line)
        print(json.dumps(j, indent=1))
        sys.exit(1)
' "$code"; then
        echo "ok - $name"
    else
        echo "not ok - $name"
        fails=$((fails + 1))
    fi
}

# vm OPTIONS... -- CMD...: run in the VM; print stdout, keep stderr for failures.
vm() {
    local rc=0
    "$VM" "$@" 2>"$payload.err" || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "cgroup-v2-vm exited $rc:" >&2
        cat "$payload.err" >&2
    fi
    rm -f "$payload.err"
    return "$rc"
}

# 1 ---- the box's own limits
out=$(vm --cpu-max "50000 100000" --cpuset 0 --mem-max 268435456 --pids-max 64 "$payload" ./fitrun detect --json)
check "box: cpu.max 50000 100000, cpuset 0, memory.max 256M, pids.max 64" "$out" '
j["cgroup"]["version"] == 2 and j["cgroup"]["hybrid"] is False
j["cgroup"]["controllers"]["cpu"]["path"] == "/sys/fs/cgroup/box"
j["cpu"]["quota"] == 0.5
j["cpu"]["quota_source"] == "/sys/fs/cgroup/box/cpu.max"
j["cpu"]["cpuset"] == 1 and j["cpu"]["cpuset_list"] == "0"
j["cpu"]["affinity"] == 1 and j["cpu"]["affinity_list"] == "0"
j["cpu"]["affinity_source"] == "sched_getaffinity"
j["cpu"]["effective"] == 0.5
j["memory"]["limit"] == 268435456
j["memory"]["limit_source"] == "/sys/fs/cgroup/box/memory.max"
j["pids"]["limit"] == 64
j["pids"]["current"] >= 1 and j["pids"]["available"] == 64 - j["pids"]["current"]
j["shm"]["size"] == 64 * 1024 * 1024 and j["shm"]["free"] > 0
j["plan"]["workers"] == 1
'

# 2 ---- nested: parent beside box tighter than its leaf
cat > "$payload/nested.sh" <<'SH'
set -e
P=/sys/fs/cgroup/fitrun-parent
mkdir "$P"
echo "20000 100000" > "$P/cpu.max"
echo 134217728 > "$P/memory.max"
echo 32 > "$P/pids.max"
echo 1 > "$P/cpuset.cpus"
echo "+cpu +cpuset +memory +pids" > "$P/cgroup.subtree_control"
mkdir "$P/leaf"
echo "80000 100000" > "$P/leaf/cpu.max"
echo 268435456 > "$P/leaf/memory.max"
echo max > "$P/leaf/pids.max"
echo $$ > "$P/leaf/cgroup.procs"
exec ./fitrun detect --json
SH
out=$(vm --cpu-max "150000 100000" --cpuset 0-1 --mem-max 536870912 --pids-max 64 "$payload" sh ./nested.sh)
check "nested: parent cpu.max 0.2 / memory 128M / pids 32 / cpuset 1 beat the leaf's looser limits" "$out" '
j["cgroup"]["controllers"]["cpu"]["path"] == "/sys/fs/cgroup/fitrun-parent/leaf"
j["cpu"]["quota"] == 0.2
j["cpu"]["quota_source"] == "/sys/fs/cgroup/fitrun-parent/cpu.max"
j["cpu"]["cpuset_list"] == "1" and j["cpu"]["affinity"] == 1
j["cpu"]["effective"] == 0.2
j["memory"]["limit"] == 134217728
j["memory"]["limit_source"] == "/sys/fs/cgroup/fitrun-parent/memory.max"
j["pids"]["limit"] == 32
j["pids"]["limit_source"] == "/sys/fs/cgroup/fitrun-parent/pids.max"
j["pids"]["current"] == 1
j["plan"]["workers"] == 1
'

# 3 ---- a sibling of box with a one-field cpu.max and only memory.high set
# (reported, never a limit); box's limits no longer apply there
cat > "$payload/high.sh" <<'SH'
set -e
H=/sys/fs/cgroup/fitrun-high
mkdir "$H"
echo 150000 > "$H/cpu.max"
echo 100663296 > "$H/memory.high"
echo $$ > "$H/cgroup.procs"
exec ./fitrun detect --json
SH
out=$(vm --cpu-max "max 100000" --cpuset 0-1 --mem-max max --pids-max max "$payload" sh ./high.sh)
check "one-field cpu.max 150000 = 1.5 CPUs; memory.high reported, not a limit" "$out" '
j["cpu"]["quota"] == 1.5
j["cpu"]["quota_source"] == "/sys/fs/cgroup/fitrun-high/cpu.max"
j["cpu"]["effective"] == 1.5
j["memory"]["high"] == 100663296
j["memory"]["high_source"] == "/sys/fs/cgroup/fitrun-high/memory.high"
j["memory"]["limit"] is None
j["pids"]["limit"] is None
j["plan"]["workers"] == 1
'

if [ "$fails" -ne 0 ]; then
    echo "run-detect.sh: $fails case(s) failed" >&2
    exit 1
fi
echo "run-detect.sh: all cases passed"
