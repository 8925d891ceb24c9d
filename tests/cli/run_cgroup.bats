#!/usr/bin/env bats
# fitrun run under a real cgroup v1 limit: the plan (detection) sizes the
# pool, the plan line says why, and every result ran in worker 0.
# The cgroups are created as children of this process's own cgroup for the
# controller (the only place root may create them here) and removed after.

load run_common

CGS=()

setup() {
    run_setup
    [ "$(id -u)" = 0 ] || skip "needs root to create cgroups"
    for i in 1 2 3 4 5 6; do job "c$i" sleep 0.2; done > jobs.jsonl
}

teardown() {
    local cg
    for cg in "${CGS[@]}"; do
        [ -d "$cg" ] && rmdir "$cg"
    done
    run_teardown
}

# v1_cgroup CONTROLLER: create fitrun-test-pool-<pid>-<n> below our own
# cgroup of CONTROLLER; its directory goes to $cg (not printed: a $(...)
# subshell would lose the record teardown removes it by). Skips when there
# is no writable v1 hierarchy for it.
v1_cgroup() {
    local ctl=$1 mnt own dir
    mnt=$(awk -v c="$ctl" '$9 == "cgroup" && ("," $NF ",") ~ ("," c ",") { print $5; exit }' /proc/self/mountinfo)
    [ -n "$mnt" ] || skip "no cgroup v1 $ctl hierarchy"
    own=$(awk -F: -v c="$ctl" '("," $2 ",") ~ ("," c ",") { print $3; exit }' /proc/self/cgroup)
    dir=$mnt${own%/}/fitrun-test-pool-$$-${#CGS[@]}
    mkdir "$dir" 2> /dev/null || skip "cannot create a $ctl cgroup under $mnt$own"
    CGS+=("$dir")
    cg=$dir
}

# in_cgroup DIR CMD...: run CMD inside cgroup DIR (a fresh shell moves
# itself in, then execs CMD; nothing else is moved).
in_cgroup() {
    local dir=$1
    shift
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$dir" "$@"
}

@test "a CPU quota of 0.5 CPU: the plan gives 1 worker, and every job ran in worker 0" {
    v1_cgroup cpu
    echo 100000 > "$cg/cpu.cfs_period_us"
    echo 50000 > "$cg/cpu.cfs_quota_us"
    run -0 --separate-stderr in_cgroup "$cg" "$FITRUN" run --jobs jobs.jsonl --out out.jsonl
    echo "$stderr"
    [[ ${stderr_lines[0]} == "fitrun: plan: 1 worker "* ]]
    [[ ${stderr_lines[0]} == *"quota 0.5"* ]]
    [ "$(wc -l < out.jsonl)" -eq 6 ]
    [ "$(jq -r .worker out.jsonl | sort -u)" = 0 ]
    [ "$(jq -r .status out.jsonl | sort -u)" = ok ]
    # outside the cgroup the same run uses every CPU (here: more than one)
    if [ "$(nproc)" -gt 1 ]; then
        run -0 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out out2.jsonl
        [[ ${stderr_lines[0]} != "fitrun: plan: 1 worker "* ]]
        [ "$(jq -r .worker out2.jsonl | sort -u | wc -l)" -gt 1 ]
    fi
}

@test "a cpuset of one CPU: the plan gives 1 worker" {
    [ "$(nproc)" -gt 1 ] || skip "one CPU only: a one-CPU cpuset changes nothing"
    v1_cgroup cpuset
    cat "$(dirname "$cg")/cpuset.mems" > "$cg/cpuset.mems"
    first=$(cut -d, -f1 < "$(dirname "$cg")/cpuset.cpus" | cut -d- -f1)
    echo "$first" > "$cg/cpuset.cpus"
    run -0 --separate-stderr in_cgroup "$cg" "$FITRUN" run --jobs jobs.jsonl --out out.jsonl
    echo "$stderr"
    [[ ${stderr_lines[0]} == "fitrun: plan: 1 worker "* ]]
    [ "$(jq -r .worker out.jsonl | sort -u)" = 0 ]
}
