#!/usr/bin/env bats
# The environment fitrun exports to CMD: every thread-count variable, its
# own FITRUN_* values, user-set values left alone, a profile's [env]
# forcing, `--explain` and `--quiet` — through all three modes where it
# matters (the supervised path builds the child's envp differently from the
# exec path).

load wrap_common

THREAD_VARS="OMP_NUM_THREADS OPENBLAS_NUM_THREADS MKL_NUM_THREADS NUMEXPR_NUM_THREADS
VECLIB_MAXIMUM_THREADS BLIS_NUM_THREADS RAYON_NUM_THREADS GOMAXPROCS JULIA_NUM_THREADS
LOKY_MAX_CPU_COUNT PYTHON_CPU_COUNT"

# The value of $2 in the env(1) listing $1 ("" and status 1 when absent).
envval() {
    grep -m1 "^$2=" <<<"$1" | cut -d= -f2-
}

# Start from a clean slate: whatever the test harness runs under must not
# decide these tests.
clean_env() {
    local v
    for v in $THREAD_VARS FITRUN_CPUS FITRUN_WORKERS FITRUN_MEMORY_LIMIT JOBLIB_TEMP_FOLDER FITRUN_EXPORTED; do
        unset "$v"
    done
}

setup() {
    clean_env
}

exports_in_mode() {
    local mode=$1 v
    # --cpus sets the CPU count, whatever detection found.
    run -0 fr "$mode" -q --cpus 1 -- env
    for v in $THREAD_VARS; do
        [ "$(envval "$output" "$v")" = 1 ] || { echo "$mode: $v=$(envval "$output" "$v")"; return 1; }
    done
    [ "$(envval "$output" FITRUN_CPUS)" = 1 ]
    [[ "$(envval "$output" FITRUN_WORKERS)" =~ ^[1-9][0-9]*$ ]]
}

@test "every variable is exported with the CPU count (exec)" { exports_in_mode exec; }
@test "every variable is exported with the CPU count (--init)" { exports_in_mode subreaper; }
@test "every variable is exported with the CPU count (PID 1)" { needs_root; exports_in_mode pid1; }

@test "fractional CPUs: FITRUN_CPUS keeps the fraction, threads round down" {
    run -0 "$FITRUN" -q --cpus 1.5 -- env
    [ "$(envval "$output" FITRUN_CPUS)" = 1.5 ]
    [ "$(envval "$output" OMP_NUM_THREADS)" = 1 ]
    run -0 "$FITRUN" -q --cpus 0.5 -- env
    [ "$(envval "$output" GOMAXPROCS)" = 1 ] # never 0 threads
}

@test "without --cpus the values follow detection (and --explain agrees)" {
    run -0 "$FITRUN" -q -- env
    local omp
    omp=$(envval "$output" OMP_NUM_THREADS)
    [[ "$omp" =~ ^[1-9][0-9]*$ ]]
    [ "$omp" -le "$(nproc --all)" ]
    run -0 "$FITRUN" --explain
    [[ "$output" == *"set     OMP_NUM_THREADS=$omp  # OpenMP"* ]]
}

user_values_in_mode() {
    local mode=$1
    OMP_NUM_THREADS=7 MKL_NUM_THREADS= GOMAXPROCS=11 run -0 fr "$mode" -q --cpus 1 -- env
    [ "$(envval "$output" OMP_NUM_THREADS)" = 7 ]
    [ "$(grep -c '^OMP_NUM_THREADS=' <<<"$output")" -eq 1 ]
    grep -qx 'MKL_NUM_THREADS=' <<<"$output" # empty, but the user's
    [ "$(envval "$output" GOMAXPROCS)" = 11 ]
    [ "$(envval "$output" OPENBLAS_NUM_THREADS)" = 1 ]
}

@test "user-set variables are never overridden (exec)" { user_values_in_mode exec; }
@test "user-set variables are never overridden (--init)" { user_values_in_mode subreaper; }
@test "user-set variables are never overridden (PID 1)" { needs_root; user_values_in_mode pid1; }

@test "FITRUN_CPUS from the environment is both kept and used as the CPU count" {
    FITRUN_CPUS=2 run -0 "$FITRUN" -q -- env
    [ "$(envval "$output" FITRUN_CPUS)" = 2 ]
    [ "$(envval "$output" OMP_NUM_THREADS)" = 2 ]
}

@test "a nested fitrun recomputes what the outer one set, but keeps the user's values" {
    # The Docker image runs `fitrun -- fitrun run`: the inner run must not
    # take the outer wrapper's whole-allocation values for the user's.
    [ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs for the outer and inner values to differ"
    run -0 "$FITRUN" -q --cpus 2 -- "$FITRUN" -q --cpus 1 -- env
    [ "$(envval "$output" OMP_NUM_THREADS)" = 1 ]
    [ "$(envval "$output" FITRUN_CPUS)" = 1 ]
    [ "$(grep -c '^FITRUN_EXPORTED=' <<<"$output")" -eq 1 ]
    [[ "$(envval "$output" FITRUN_EXPORTED)" == *"OMP_NUM_THREADS=1"* ]]
    OMP_NUM_THREADS=2 run -0 "$FITRUN" -q --cpus 2 -- "$FITRUN" -q --cpus 1 -- env
    [ "$(envval "$output" OMP_NUM_THREADS)" = 2 ]
    run -0 "$FITRUN" -q --cpus 2 -- sh -c 'GOMAXPROCS=7 exec "$0" -q --init --cpus 1 -- env' "$FITRUN"
    [ "$(envval "$output" GOMAXPROCS)" = 7 ]
    [ "$(envval "$output" MKL_NUM_THREADS)" = 1 ]
}

@test "--cpus above what was detected is used as asked, and said so" {
    local n=$(($(nproc) + 3))
    run -0 "$FITRUN" -q --cpus "$n" -- env
    [ "$(envval "$output" FITRUN_CPUS)" = "$n" ]
    [ "$(envval "$output" OMP_NUM_THREADS)" = "$n" ]
    run -0 "$FITRUN" --cpus "$n" --explain
    [[ "$output" == *"# note: --cpus $n exceeds the $(nproc) CPU"*" detected (affinity); using $n as asked"* ]]
}

@test "an outer fitrun's FITRUN_CPUS is not the inner one's override: it detects again" {
    # `fitrun -- fitrun ...` (the Docker image runs `fitrun -- fitrun run`).
    local alone
    alone=$("$FITRUN" --explain | grep '^set     GOMAXPROCS=')
    run -0 "$FITRUN" -q -- "$FITRUN" --explain
    [[ "$output" == *"# note: FITRUN_CPUS="*" was exported by an outer fitrun: detecting again"* ]]
    [[ "$output" != *"override"*"FITRUN_CPUS"* ]]
    # the same value and source as without the outer fitrun (a quota, the affinity...)
    grep -qF "$alone (replaces the value an outer fitrun exported)" <<<"$output"
    # The user's own FITRUN_CPUS (not in the outer record) is still an override.
    run -0 "$FITRUN" -q -- env FITRUN_CPUS=1 "$FITRUN" --explain
    [[ "$output" == *"from the CPU override FITRUN_CPUS=1"* ]]
}

@test "the rest of the environment passes through untouched" {
    FOO='a b=c' PATH=$PATH run -0 "$FITRUN" -q --init -- env
    grep -qx 'FOO=a b=c' <<<"$output"
    grep -qx "PATH=$PATH" <<<"$output"
}

@test "--explain prints what would be exported and why, and does not run CMD" {
    OMP_NUM_THREADS=9 run -0 "$FITRUN" --explain --cpus 1 -- touch "$BATS_TEST_TMPDIR/ran"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    [[ "$output" == *"# mode: exec"* ]]
    [[ "$output" == *"# command: touch $BATS_TEST_TMPDIR/ran"* ]]
    [[ "$output" == *"kept    OMP_NUM_THREADS=9  # already set in the environment, left alone (fitrun would export 1"* ]]
    [[ "$output" == *"set     GOMAXPROCS=1  # the Go runtime: 1 effective CPUs, from the CPU override --cpus"* ]]
    [[ "$output" == *"set     FITRUN_CPUS=1  #"* ]]
    [[ "$output" == *"FITRUN_WORKERS="* ]]
    [[ "$output" == *"JOBLIB_TEMP_FOLDER"* ]]
    # One line per variable: 14, joblib's, and the FITRUN_EXPORTED record.
    [ "$(grep -cE '^(set|kept|forced|skipped) ' <<<"$output")" -eq 16 ]
}

@test "--explain works without CMD, and as PID 1 says so" {
    run -0 "$FITRUN" --explain
    [[ "$output" == *"set     OMP_NUM_THREADS="* ]]
    needs_root
    run -0 fr pid1 --explain -- true
    [[ "$output" == *"# mode: init (PID 1)"* ]]
    run -0 fr subreaper --explain -- true
    [[ "$output" == *"# mode: init (child subreaper)"* ]]
}

@test "fitrun announces what it exports on stderr; --quiet silences it" {
    run -0 --separate-stderr "$FITRUN" --cpus 1 -- true
    [[ "$stderr" == "fitrun: 1 CPUs: 1 threads, "*" workers" ]]
    OMP_NUM_THREADS=4 run -0 --separate-stderr "$FITRUN" --cpus 1 -- true
    [[ "$stderr" == *"kept from the environment: OMP_NUM_THREADS"* ]]
    run -0 --separate-stderr "$FITRUN" -q --cpus 1 -- true
    [ -z "$stderr" ]
    run -0 --separate-stderr "$FITRUN" -q --init --cpus 1 -- true
    [ -z "$stderr" ]
}

@test "a profile's [env] values are forced over the user's, its [resources] apply" {
    cat >"$BATS_TEST_TMPDIR/p.ini" <<'EOF'
[resources]
cpus = 1

[env]
OMP_NUM_THREADS = 5
MY_SETTING = from-profile
EOF
    OMP_NUM_THREADS=9 MY_SETTING=mine run -0 "$FITRUN" -q --profile "$BATS_TEST_TMPDIR/p.ini" -- env
    [ "$(envval "$output" OMP_NUM_THREADS)" = 5 ]
    [ "$(envval "$output" MY_SETTING)" = from-profile ]
    [ "$(envval "$output" GOMAXPROCS)" = 1 ] # [resources] cpus
    [ "$(grep -c '^OMP_NUM_THREADS=' <<<"$output")" -eq 1 ]
    # --cpus on the command line wins over the profile (needs 2 CPUs to show).
    [ "$(nproc)" -ge 2 ] || return 0
    run -0 "$FITRUN" -q --profile "$BATS_TEST_TMPDIR/p.ini" --cpus 2 --init -- env
    [ "$(envval "$output" GOMAXPROCS)" = 2 ]
    [ "$(envval "$output" OMP_NUM_THREADS)" = 5 ]
    OMP_NUM_THREADS=9 run -0 "$FITRUN" --profile "$BATS_TEST_TMPDIR/p.ini" --explain
    [[ "$output" == *"forced  OMP_NUM_THREADS=5  # forced by profile $BATS_TEST_TMPDIR/p.ini [env]; the environment had '9'"* ]]
}

# A real memory cgroup (v1 here; a child of the cgroup we are in, as the
# rules of this machine require), so FITRUN_MEMORY_LIMIT comes from the
# kernel and not from a fixture.
@test "FITRUN_MEMORY_LIMIT comes from a real memory cgroup limit" {
    needs_root
    local cur base cg
    cur=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
    base=/sys/fs/cgroup/memory$cur
    if [ -z "$cur" ] || [ ! -w "$base" ]; then
        # cgroup v2: the memory controller lives in the unified hierarchy.
        skip "no writable v1 memory cgroup here"
    fi
    cg=$base/fitrun-test-wrap-$$-$BATS_TEST_NUMBER
    mkdir "$cg"
    cg_track "$cg"
    echo $((256 * 1024 * 1024)) >"$cg/memory.limit_in_bytes"
    run -0 sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" -q -- env' sh "$cg" "$FITRUN"
    [ "$(envval "$output" FITRUN_MEMORY_LIMIT)" = 268435456 ]
}
