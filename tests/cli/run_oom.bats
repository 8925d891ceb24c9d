#!/usr/bin/env bats
# OOM kills are `memory`: under a real cgroup v1 memory limit smaller than
# the job's own address-space limit (profile memory = 512M), the kernel's
# OOM killer SIGKILLs the job first; fitrun sees the oom_kill counter of its
# memory cgroup go up and reports `memory` (error_type OOMKill), for exec and
# python jobs alike, with `passed` null like a MemoryError. Other SIGKILLs
# stay `signal`; a python worker (not its child) killed by the OOM killer is
# a worker crash, retried once. docs/run.md, "OOM kills".
#
# These are the fallback for when fitrun has no cgroups of its own
# (`[resources] cgroups = off` here; a container whose cgroup is not
# delegated): jobs stay in fitrun's memory cgroup and RLIMIT_AS limits
# memory. run_cgroups.bats tests fitrun's own per-worker cgroups.
#
# The cgroup is a child of this process's own memory cgroup (the only place
# root may create one here), removed in teardown; only the subshell that
# execs fitrun is moved into it.

load run_common

CGS=()

setup() {
    run_setup
    [ "$(id -u)" = 0 ] || skip "needs root to create cgroups"
}

teardown() {
    local cg
    for cg in "${CGS[@]}"; do
        # fitrun and its jobs are gone (the run has ended); wait for the
        # kernel to drop the last of them before removing the group
        for _ in $(seq 100); do [ -s "$cg/cgroup.procs" ] || break; sleep 0.05; done
        [ -d "$cg" ] && rmdir "$cg"
    done
    run_teardown
}

# memory_cgroup MiB: create fitrun-test-oom-<pid>-<n> below our own memory
# cgroup with a limit of MiB (and the same memory+swap limit when the
# kernel has memsw, so nothing swaps instead); its directory goes to $cg.
memory_cgroup() {
    local mnt own dir
    mnt=$(awk '$9 == "cgroup" && ("," $NF ",") ~ /,memory,/ { print $5; exit }' /proc/self/mountinfo)
    [ -n "$mnt" ] || skip "no cgroup v1 memory hierarchy"
    own=$(awk -F: '("," $2 ",") ~ /,memory,/ { print $3; exit }' /proc/self/cgroup)
    dir=$mnt${own%/}/fitrun-test-oom-$$-${#CGS[@]}
    mkdir "$dir" 2> /dev/null || skip "cannot create a memory cgroup under $mnt$own"
    CGS+=("$dir")
    echo $(($1 << 20)) > "$dir/memory.limit_in_bytes"
    if [ -e "$dir/memory.memsw.limit_in_bytes" ]; then
        echo $(($1 << 20)) > "$dir/memory.memsw.limit_in_bytes"
    fi
    cg=$dir
}

# rf FILE ID FILTER: jq -c FILTER of the result for ID
rf() {
    jq -c --arg id "$2" "select(.id == \$id) | $3" "$1"
}

oom_kills() {
    awk '$1 == "oom_kill" { print $2 }' "$1/memory.oom_control"
}

# in_cgroup DIR CMD...: a fresh shell moves itself into DIR, then execs CMD.
in_cgroup() {
    local dir=$1
    shift
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$dir" "$@"
}

# alloc ID MiB: an exec job that allocates and touches MiB (bytes * n
# writes every page; a C helper's malloc+memset+free may be optimised away).
alloc() {
    job "$1" /usr/bin/python3 -c "b = b'x' * ($2 << 20)"
}

@test "exec: a job OOM-killed below its address-space limit is memory; other SIGKILLs stay signal" {
    memory_cgroup 64
    {
        alloc big 200
        alloc small 8
        job self-kill sh -c 'kill -KILL $$'
        alloc big2 200
    } > jobs.jsonl
    before=$(oom_kills "$cg")
    run -0 --separate-stderr in_cgroup "$cg" "$FITRUN" run --set resources.cgroups=off --workers 1 --memory 512M --jobs jobs.jsonl --out out.jsonl
    echo "$stderr"
    cat out.jsonl
    [ "$(oom_kills "$cg")" -ge $((before + 2)) ]
    [ "$(rf out.jsonl big '[.status, .signal, .error_type]')" = '["memory","SIGKILL","OOMKill"]' ]
    [[ "$(field out.jsonl big error_message)" == *"out-of-memory killer"*"/memory.oom_control"* ]]
    [ "$(field out.jsonl big2 status)" = memory ]
    [ "$(field out.jsonl small status)" = ok ]
    [ "$(rf out.jsonl self-kill '[.status, .signal]')" = '["signal","SIGKILL"]' ]
    [[ "$stderr" == *OOMKill* ]] # in the most common errors
    # Control: outside the cgroup 200M fits the 512M address space.
    run -0 "$FITRUN" run --quiet --set resources.cgroups=off --workers 1 --memory 512M --jobs jobs.jsonl --out host.jsonl
    [ "$(field host.jsonl big status)" = ok ]
}

@test "exec: two workers OOM-killed in the same cgroup both get memory" {
    memory_cgroup 96
    {
        alloc a 300
        alloc b 300
        job s sleep 0.3
    } > jobs.jsonl
    run -0 --separate-stderr in_cgroup "$cg" "$FITRUN" run --set resources.cgroups=off --workers 2 --memory 512M --jobs jobs.jsonl --out out.jsonl
    echo "$stderr"
    cat out.jsonl
    [ "$(field out.jsonl a status)" = memory ]
    [ "$(field out.jsonl b status)" = memory ]
    [ "$(field out.jsonl s status)" = ok ]
}

# python_profile FILE PRELUDE: one worker, the python preset, 512M per job.
python_profile() {
    cat > "$1" <<EOF
[resources]
workers = 1
cgroups = off
[sandbox]
preset = python
cpu_time = 5s
wall_time = 60s
memory = 512M
[runtime]
kind = python
interpreter = /usr/bin/python3
prelude = $2
entry = transform
EOF
}

pyjob() {
    jq -cn --arg id "$1" --arg code "$2" '{id: $id, code: $code, inputs: [[[1]]], expected: [[[1]]]}'
}

@test "python: an OOM-killed prediction is memory with passed null, like its MemoryError on the host" {
    memory_cgroup 160
    printf 'import numpy as np\n' > "$D/prelude.py"
    python_profile "$D/p.ini" "$D/prelude.py"
    {
        # A bomb that grows 80 MB at a time: the 160M cgroup's OOM killer ends
        # it long before the 512M address-space limit.
        pyjob bomb $'def transform(g):\n    hoard = []\n    while True:\n        hoard.append([0] * 10_000_000)\n'
        pyjob touch $'def transform(g):\n    b = b"x" * (300 << 20)\n    return g\n'
        pyjob ok $'def transform(g):\n    return g\n'
        pyjob err $'def transform(g):\n    return g[5]\n'
    } > jobs.jsonl
    run -0 --separate-stderr in_cgroup "$cg" "$FITRUN" run --profile "$D/p.ini" --jobs jobs.jsonl --out out.jsonl
    echo "$stderr"
    jq -c '{id, status, signal, error_type, passed}' out.jsonl
    [ "$(rf out.jsonl bomb '[.status, .signal, .error_type, .passed]')" = '["memory","SIGKILL","OOMKill",null]' ]
    [ "$(rf out.jsonl touch '[.status, .error_type, .passed]')" = '["memory","OOMKill",null]' ]
    [ "$(rf out.jsonl ok '[.status, .passed]')" = '["ok",[true]]' ]
    [ "$(rf out.jsonl err '[.status, .passed]')" = '["error",[false]]' ]
    # On the host the same predictions hit the 512M address-space limit
    # (MemoryError) or fit: the bomb's (status, passed) is the same.
    run -0 "$FITRUN" run --quiet --profile "$D/p.ini" --jobs jobs.jsonl --out host.jsonl
    jq -c '{id, status, error_type, passed}' host.jsonl
    [ "$(rf host.jsonl bomb '[.status, .error_type, .passed]')" = '["memory","MemoryError",null]' ]
    [ "$(rf host.jsonl touch '[.status, .passed]')" = '["ok",[true]]' ]
}

@test "python: a worker killed by the OOM killer (not its child) is a crash, retried once" {
    memory_cgroup 160
    # Make the workers, not the predictions' children, the OOM killer's
    # choice: oom_score_adj 1000 in every process the zygote forks, back to
    # 0 in the children of those (down to 0 needs no privilege; the hook
    # runs right after fork, before the sandbox). The zygote waits a little
    # before each fork: a replacement worker forked while the killed
    # worker's child is still giving its memory back would make the
    # zygote (the largest process at 0) the next victim, and end the run.
    cat > "$D/prelude.py" <<'EOF'
import os, time
_ZYGOTE = os.getpid()
def _adj():
    with open("/proc/self/oom_score_adj", "w") as f:
        f.write("1000" if os.getppid() == _ZYGOTE else "0")
def _settle():
    if os.getpid() == _ZYGOTE:
        time.sleep(0.5)
os.register_at_fork(before=_settle, after_in_child=_adj)
EOF
    python_profile "$D/p.ini" "$D/prelude.py"
    {
        pyjob hog $'def transform(g):\n    b = b"x" * (300 << 20)\n    return g\n'
        pyjob ok $'def transform(g):\n    return g\n'
    } > jobs.jsonl
    run -0 --separate-stderr in_cgroup "$cg" "$FITRUN" run --profile "$D/p.ini" --jobs jobs.jsonl --out out.jsonl
    echo "$stderr"
    jq -c '{id, status, signal, error_type, attempts}' out.jsonl
    [ "$(oom_kills "$cg")" -ge 2 ]
    [ "$(rf out.jsonl hog '[.status, .error_type, .attempts]')" = '["crash","WorkerCrash",2]' ]
    # (Whether a later unexplained SIGKILL is then `signal` depends on how
    # many processes the kernel killed: the limit docs/run.md describes.)
    [ "$(field out.jsonl ok status)" = ok ]
}
