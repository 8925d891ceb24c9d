#!/usr/bin/env bats
# plan_agree.bats — one plan everywhere: for the same profile and options,
# `fitrun detect` (plan.workers), `fitrun run` (its "plan:" line) and the
# wrapper `fitrun -- CMD` (FITRUN_WORKERS) size the same pool. All three
# build their options with fr_profile_detect_opts/fr_profile_plan_opts;
# these tests hold them to it from the outside, under a real cgroup v1
# memory limit (the case that used to disagree: detect planned without the
# built-in 512M per worker) and with overrides.
#
# Cgroups are created as children of this process's own memory cgroup
# (the only place root may create them here), named
# fitrun-test-plan-<pid>-<n>, and removed in teardown.

bats_require_minimum_version 1.5.0

PY=/usr/bin/python3
CGS=()

setup() {
    cd "$BATS_TEST_TMPDIR"
    # Whatever runs the tests must not decide the plan.
    unset FITRUN_CPUS FITRUN_WORKERS FITRUN_MEMORY_LIMIT FITRUN_EXPORTED
    printf '{"id": "a", "argv": ["true"]}\n' > jobs.jsonl
}

teardown() {
    local cg
    for cg in "${CGS[@]}"; do
        [ -d "$cg" ] && rmdir "$cg"
    done
    return 0
}

# v1_memory_cgroup BYTES: a memory cgroup with that limit below our own;
# its directory goes to $cg. Skips when none can be created.
v1_memory_cgroup() {
    local mnt own dir
    [ "$(id -u)" = 0 ] || skip "needs root to create cgroups"
    mnt=$(awk '$9 == "cgroup" && ("," $NF ",") ~ /,memory,/ { print $5; exit }' /proc/self/mountinfo)
    [ -n "$mnt" ] || skip "no cgroup v1 memory hierarchy"
    own=$(awk -F: '("," $2 ",") ~ /,memory,/ { print $3; exit }' /proc/self/cgroup)
    dir=$mnt${own%/}/fitrun-test-plan-$$-${#CGS[@]}
    mkdir "$dir" 2> /dev/null || skip "cannot create a memory cgroup under $mnt$own"
    CGS+=("$dir")
    echo "$1" > "$dir/memory.limit_in_bytes"
    cg=$dir
}

# in_cgroup DIR CMD...: run CMD inside cgroup DIR ("" = where we are).
in_cgroup() {
    local dir=$1
    shift
    if [ -z "$dir" ]; then
        "$@"
    else
        sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$dir" "$@"
    fi
}

# workers_of CGROUP FITRUN-OPTIONS...: "detect run wrapper", the workers
# each one plans (run: --cpus/--profile/--workers are options of all three).
workers_of() {
    local dir=$1 d r w
    shift
    d=$(in_cgroup "$dir" "$FITRUN" detect --json "$@" |
        "$PY" -c 'import json,sys; print(json.load(sys.stdin)["plan"]["workers"])') || return 1
    r=$(in_cgroup "$dir" "$FITRUN" run --progress none "$@" --jobs jobs.jsonl --out out.jsonl 2>&1 >/dev/null |
        sed -n 's/^fitrun: plan: \([0-9]*\) worker.*/\1/p') || return 1
    w=$(in_cgroup "$dir" "$FITRUN" -q "$@" -- env | sed -n 's/^FITRUN_WORKERS=//p') || return 1
    echo "$d $r $w"
}

# agree EXPECTED CGROUP OPTIONS...: all three plan EXPECTED workers.
agree() {
    local want=$1 got
    shift
    got=$(workers_of "$@")
    [ "$got" = "$want $want $want" ] || { echo "detect run wrapper: $got, want $want each (options: ${*:2})"; return 1; }
}

@test "a real 700M memory limit: detect, run and the wrapper all plan 1 worker (512M per worker)" {
    [ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs: with one, 1 worker proves nothing"
    v1_memory_cgroup $((700 * 1024 * 1024))
    # The built-in profile (profiles/default.ini: memory_per_worker = 512M).
    agree 1 "$cg"
    # The same values from a file.
    printf '[resources]\nmemory_per_worker = 512M\n' > p512.ini
    agree 1 "$cg" --profile p512.ini
    # A smaller per-worker size lets the CPUs decide again, in all three.
    printf '[resources]\nmemory_per_worker = 256M\n' > p256.ini
    agree 2 "$cg" --profile p256.ini
    # and detect says why, with the cgroup's limit file as the source
    run -0 in_cgroup "$cg" "$FITRUN" detect --json
    [[ "$output" == *"memory: 700.0 MiB ["*"fitrun-test-plan-$$-0/memory.limit_in_bytes] / 512.0 MiB per worker = 1: 2 -> 1 workers"* ]]
}

@test "outside the cgroup the three agree too (the plan follows the CPUs)" {
    agree "$(nproc)" ""
}

@test "overrides reach all three alike: profile cpus and workers, --cpus above the detected count" {
    printf '[resources]\ncpus = 3\nrounding = floor\n' > c3.ini
    agree 3 "" --profile c3.ini
    agree 5 "" --profile c3.ini --cpus 5.5
    printf '[resources]\nworkers = 4\nmemory_per_worker = none\n' > w4.ini
    agree 4 "" --profile w4.ini
    # FITRUN_CPUS (the user's) beats the profile's cpus in all three
    FITRUN_CPUS=6 agree 6 "" --profile c3.ini
}
