#!/usr/bin/env bats
# detect_cgroups.bats — `fitrun detect --json` inside REAL cgroup v1 limits.
#
# Each test creates its own cgroups (fitrun-test-detect-<pid>-<test>-...) as
# children of the cgroup this process is already in for that controller
# (root may only do that here; the memory cgroup is not the root), moves a
# subshell into them — `echo $BASHPID > cgroup.procs`, then exec fitrun;
# the test runner itself never moves — and removes them in teardown.
# Tests skip, saying why, only when cgroups cannot be created at all.
# (cgroup v2 is tested for real in tests/v2vm/run-detect.sh.)

load proc_common

PY=/usr/bin/python3

# Directory of this process's v1 cgroup for controller $1, or nothing.
# mountinfo: the fields after the lone "-" are fstype, source, super options.
own_cgroup() {
    local ctl=$1 mp root path
    read -r mp root < <(awk -v c="$ctl" '{
        for (i = 7; i <= NF; i++) if ($i == "-") break
        if ($(i + 1) != "cgroup") next
        n = split($(i + 3), o, ",")
        for (j = 1; j <= n; j++) if (o[j] == c) { print $5, $4; exit }
    }' /proc/self/mountinfo)
    [ -n "$mp" ] || return 0
    path=$(awk -F: -v c="$ctl" '{
        n = split($2, a, ",")
        for (i = 1; i <= n; i++) if (a[i] == c) { sub(/^[^:]*:[^:]*:/, ""); print; exit }
    }' /proc/self/cgroup)
    [ "$root" = / ] || return 0 # a bind-mounted subtree: not what these tests are about
    [ "$path" = / ] && path=
    echo "$mp$path"
}

# mkcg CONTROLLER NAME: create a cgroup below our own one; prints its path.
# Skips the test when that is impossible.
mkcg() {
    local parent dir
    parent=$(own_cgroup "$1")
    [ -n "$parent" ] || skip "no cgroup v1 '$1' hierarchy mounted here"
    [ "$(id -u)" = 0 ] || skip "not root: cannot create cgroups under $parent"
    dir=$parent/fitrun-test-detect-$$-$BATS_TEST_NUMBER-$2
    mkdir "$dir" 2>"$BATS_TEST_TMPDIR/mkdir.err" || skip "cannot create $dir: $(cat "$BATS_TEST_TMPDIR/mkdir.err")"
    echo "$dir" >> "$BATS_TEST_TMPDIR/cgroups"
    echo "$dir"
}

# mkchild DIR: a child cgroup of one we created.
mkchild() {
    mkdir "$1/child"
    echo "$1/child" >> "$BATS_TEST_TMPDIR/cgroups"
    echo "$1/child"
}

# bg_in DIR CMD...: start CMD in the background inside cgroup DIR (one fork:
# $! is the process that joins and then execs CMD); teardown kills it
# while its pid is still its (proc_common: a test may have waited for it).
bg_in() {
    local d=$1
    shift
    ( echo "$BASHPID" > "$d/cgroup.procs" && exec "$@" ) &
    proc_id $! >> "$BATS_TEST_TMPDIR/pids"
}

teardown() {
    if [ -f "$BATS_TEST_TMPDIR/pids" ]; then
        while read -r id; do
            proc_kill TERM "$id"
            wait "${id%%:*}" 2> /dev/null
        done < "$BATS_TEST_TMPDIR/pids"
        rm -f "$BATS_TEST_TMPDIR/pids"
    fi
    [ -f "$BATS_TEST_TMPDIR/cgroups" ] || return 0
    # Deepest first; the subshells that joined them have exited.
    tac "$BATS_TEST_TMPDIR/cgroups" | while read -r d; do
        [ -d "$d" ] && rmdir "$d"
    done
    rm -f "$BATS_TEST_TMPDIR/cgroups"
}

# in_cgroups DIR... -- CMD...: run CMD in a subshell that joined every DIR.
in_cgroups() {
    local dirs=()
    while [ "$1" != -- ]; do dirs+=("$1"); shift; done
    shift
    (
        for d in "${dirs[@]}"; do echo "$BASHPID" > "$d/cgroup.procs" || exit 99; done
        exec "$@"
    )
}

# j EXPR: evaluate a Python expression over the JSON in $output (as `j`).
j() {
    "$PY" -c 'import json,sys; j=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1" <<<"$output"
}

@test "cpu quota on a parent applies to a nested child without one" {
    p=$(mkcg cpu quota)
    echo 100000 > "$p/cpu.cfs_period_us"
    echo 50000 > "$p/cpu.cfs_quota_us"
    c=$(mkchild "$p")
    [ "$(cat "$c/cpu.cfs_quota_us")" = -1 ]
    run in_cgroups "$c" -- "$FITRUN" detect --json
    [ "$status" -eq 0 ]
    [ "$(j 'j["cgroup"]["version"]')" = 1 ]
    [ "$(j 'j["cgroup"]["controllers"]["cpu"]["path"]')" = "$c" ]
    [ "$(j 'j["cpu"]["quota"]')" = 0.5 ]
    [ "$(j 'j["cpu"]["quota_source"]')" = "$p/cpu.cfs_quota_us" ]
    [ "$(j 'j["cpu"]["effective"]')" = 0.5 ]
    [ "$(j 'j["plan"]["workers"]')" = 1 ]
}

@test "a child quota tighter than its parent wins" {
    p=$(mkcg cpu tight)
    echo 100000 > "$p/cpu.cfs_period_us"
    echo 150000 > "$p/cpu.cfs_quota_us"
    c=$(mkchild "$p")
    echo 100000 > "$c/cpu.cfs_period_us"
    echo 25000 > "$c/cpu.cfs_quota_us"
    run in_cgroups "$c" -- "$FITRUN" detect --json
    [ "$status" -eq 0 ]
    [ "$(j 'j["cpu"]["quota"]')" = 0.25 ]
    [ "$(j 'j["cpu"]["quota_source"]')" = "$c/cpu.cfs_quota_us" ]
}

@test "a one-CPU cpuset: affinity and plan follow it" {
    cs=$(mkcg cpuset one)
    parent=$(dirname "$cs")
    cp "$parent/cpuset.mems" "$cs/cpuset.mems"
    # The highest CPU the parent allows (not CPU 0, to see it is the real one).
    list=$parent/cpuset.effective_cpus
    [ -f "$list" ] || list=$parent/cpuset.cpus # kernels before cpuset.effective_cpus
    cpu=$("$PY" -c 'import sys; s=sys.argv[1].strip().split(",")[-1]; print(s.split("-")[-1])' "$(cat "$list")")
    echo "$cpu" > "$cs/cpuset.cpus"
    run in_cgroups "$cs" -- "$FITRUN" detect --json
    [ "$status" -eq 0 ]
    [ "$(j 'j["cpu"]["affinity"]')" = 1 ]
    [ "$(j 'j["cpu"]["affinity_list"]')" = "$cpu" ]
    [ "$(j 'j["cpu"]["cpuset"]')" = 1 ]
    [ "$(j 'j["cpu"]["cpuset_list"]')" = "$cpu" ]
    [ "$(j 'j["cpu"]["cpuset_source"]')" = "$cs/$(basename "$list")" ]
    [ "$(j 'j["cpu"]["effective"]')" = 1.0 ]
    [ "$(j 'j["plan"]["workers"]')" = 1 ]
}

@test "memory limit under the current memory cgroup, nested child inherits it" {
    m=$(mkcg memory limit)
    echo 268435456 > "$m/memory.limit_in_bytes"
    c=$(mkchild "$m")
    echo 536870912 > "$c/memory.limit_in_bytes" # looser than the parent: the parent still binds
    run in_cgroups "$c" -- "$FITRUN" detect --json --memory-per-worker 200M
    [ "$status" -eq 0 ]
    [ "$(j 'j["cgroup"]["controllers"]["memory"]["path"]')" = "$c" ]
    [ "$(j 'j["memory"]["limit"]')" = 268435456 ]
    [ "$(j 'j["memory"]["limit_source"]')" = "$m/memory.limit_in_bytes" ]
    [ "$(j 'j["plan"]["memory_per_worker"]')" = 209715200 ]
    [ "$(j 'j["plan"]["workers"]')" = 1 ] # 256 MiB / 200 MiB
    [ "$(j 'any(r.startswith("memory: 256.0 MiB") for r in j["plan"]["reasons"])')" = True ]
}

@test "pids limit: limit, current and room" {
    p=$(mkcg pids limit)
    echo 64 > "$p/pids.max"
    run in_cgroups "$p" -- "$FITRUN" detect --json
    [ "$status" -eq 0 ]
    [ "$(j 'j["pids"]["limit"]')" = 64 ]
    [ "$(j 'j["pids"]["limit_source"]')" = "$p/pids.max" ]
    [ "$(j 'j["pids"]["current"]')" = 1 ] # fitrun alone (it does not start threads)
    [ "$(j 'j["pids"]["available"]')" = 63 ]
}

@test "a parent's pids limit counts the parent's whole subtree" {
    p=$(mkcg pids shared)
    echo 20 > "$p/pids.max"
    c=$(mkchild "$p")
    # Three sleepers in the parent itself use its budget.
    bg_in "$p" sleep 60
    bg_in "$p" sleep 60
    bg_in "$p" sleep 60
    for _ in $(seq 100); do [ "$(cat "$p/pids.current")" -ge 3 ] && break; sleep 0.1; done
    [ "$(cat "$p/pids.current")" -eq 3 ]
    run in_cgroups "$c" -- "$FITRUN" detect --json
    [ "$status" -eq 0 ]
    [ "$(j 'j["pids"]["limit"]')" = 20 ]
    [ "$(j 'j["pids"]["current"]')" = 1 ]    # the own (child) cgroup
    [ "$(j 'j["pids"]["available"]')" = 16 ] # 20 - (3 sleepers + fitrun)
}

@test "all limits at once: table names every source" {
    q=$(mkcg cpu all)
    echo 100000 > "$q/cpu.cfs_period_us"
    echo 150000 > "$q/cpu.cfs_quota_us"
    m=$(mkcg memory all)
    echo 1073741824 > "$m/memory.limit_in_bytes"
    p=$(mkcg pids all)
    echo 100 > "$p/pids.max"
    run in_cgroups "$q" "$m" "$p" -- "$FITRUN" detect
    [ "$status" -eq 0 ]
    [[ "$output" == *"quota       1.5"*"$q/cpu.cfs_quota_us"* ]]
    [[ "$output" == *"limit       1.0 GiB (1073741824)"*"$m/memory.limit_in_bytes"* ]]
    [[ "$output" == *"limit       100"*"$p/pids.max"* ]]
    [[ "$output" == *"plan        1 worker x 1 thread (rounding floor)"* ]]
    run in_cgroups "$q" "$m" "$p" -- "$FITRUN" detect --rounding ceil --json
    [ "$(j 'j["plan"]["workers"]')" = 2 ]
}

@test "the test runner itself was never moved" {
    # Every cgroup this shell is in is outside fitrun-test-*.
    ! grep -q fitrun-test- /proc/$$/cgroup
}
