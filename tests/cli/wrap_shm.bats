#!/usr/bin/env bats
# The /dev/shm rule: when /dev/shm is smaller than the threshold (default
# 2 GiB) and JOBLIB_TEMP_FOLDER is unset, fitrun points joblib at a
# disk-backed per-user directory and says so. Each test runs in its own
# mount namespace with a real tmpfs of the wanted size on /dev/shm (the
# mount disappears with the namespace).

load wrap_common

setup() {
    needs_root
    unset JOBLIB_TEMP_FOLDER
    # The joblib directory goes under TMPDIR, i.e. under this test's own
    # temporary directory (removed by bats), never into /var/tmp.
    export TMPDIR=$BATS_TEST_TMPDIR
}

# in_shm SIZE CMD... — run CMD with a SIZE tmpfs on /dev/shm.
in_shm() {
    local size=$1
    shift
    unshare --mount sh -c 'mount -t tmpfs -o size="$0" fitrun-test-wrap /dev/shm && exec "$@"' "$size" "$@"
}

@test "small /dev/shm: JOBLIB_TEMP_FOLDER points at a disk-backed directory, and fitrun says so" {
    run -0 --separate-stderr in_shm 64m "$FITRUN" -- sh -c 'echo "$JOBLIB_TEMP_FOLDER"'
    local dir=$BATS_TEST_TMPDIR/fitrun-joblib-$(id -u)
    [ "$output" = "$dir" ]
    [ -d "$dir" ]
    [ "$(stat -c %a "$dir")" = 700 ]
    [[ "$stderr" == *"JOBLIB_TEMP_FOLDER=$dir: /dev/shm is only 64.0 MiB (< 2.0 GiB)"* ]]
}

@test "small /dev/shm as PID 1 and with --init: the same" {
    run -0 in_shm 64m unshare --pid --fork --mount-proc "$FITRUN" -q -- sh -c 'echo "$JOBLIB_TEMP_FOLDER"'
    [ "$output" = "$BATS_TEST_TMPDIR/fitrun-joblib-$(id -u)" ]
    run -0 in_shm 64m "$FITRUN" -q --init -- sh -c 'echo "$JOBLIB_TEMP_FOLDER"'
    [ "$output" = "$BATS_TEST_TMPDIR/fitrun-joblib-$(id -u)" ]
}

@test "joblib itself then puts its memmaps there" {
    run -0 in_shm 64m "$FITRUN" -q -- /usr/bin/python3 -c \
        'from joblib._memmapping_reducer import _get_temp_dir; print(_get_temp_dir("pool")[0])'
    [ "$output" = "$BATS_TEST_TMPDIR/fitrun-joblib-$(id -u)/pool" ]
}

@test "a user-set JOBLIB_TEMP_FOLDER is left alone" {
    JOBLIB_TEMP_FOLDER=/somewhere/else run -0 in_shm 64m "$FITRUN" -q -- sh -c 'echo "$JOBLIB_TEMP_FOLDER"'
    [ "$output" = /somewhere/else ]
    [ ! -e "$BATS_TEST_TMPDIR/fitrun-joblib-$(id -u)" ]
}

@test "a large /dev/shm (>= threshold) changes nothing" {
    # tmpfs size is only a limit: 3g costs no memory.
    run -0 in_shm 3g "$FITRUN" -q -- sh -c 'echo "[${JOBLIB_TEMP_FOLDER-unset}]"'
    [ "$output" = "[unset]" ]
    run -0 in_shm 3g "$FITRUN" --explain
    [[ "$output" == *"skipped JOBLIB_TEMP_FOLDER  # /dev/shm is 3.0 GiB, not below the 2.0 GiB threshold"* ]]
}

@test "--shm-threshold moves the line" {
    run -0 in_shm 64m "$FITRUN" -q --shm-threshold 32M -- sh -c 'echo "[${JOBLIB_TEMP_FOLDER-unset}]"'
    [ "$output" = "[unset]" ]
    run -0 in_shm 64m "$FITRUN" -q --shm-threshold 128M -- sh -c 'echo "[${JOBLIB_TEMP_FOLDER-unset}]"'
    [ "$output" = "[$BATS_TEST_TMPDIR/fitrun-joblib-$(id -u)]" ]
}

@test "--explain shows the decision without creating the directory" {
    run -0 in_shm 64m "$FITRUN" --explain
    [[ "$output" == *"set     JOBLIB_TEMP_FOLDER=$BATS_TEST_TMPDIR/fitrun-joblib-$(id -u)  # /dev/shm is only 64.0 MiB"* ]]
    [ ! -e "$BATS_TEST_TMPDIR/fitrun-joblib-$(id -u)" ]
}

@test "a squatted joblib directory is refused with a warning; the rest is exported" {
    ln -s / "$BATS_TEST_TMPDIR/fitrun-joblib-$(id -u)"
    run -0 --separate-stderr in_shm 64m "$FITRUN" -- sh -c 'echo "[${JOBLIB_TEMP_FOLDER-unset}] $OMP_NUM_THREADS"'
    [[ "$output" == "[unset] "[1-9]* ]]
    [[ "$stderr" == *"fitrun-joblib-$(id -u) exists but is not a directory owned by uid"*"refusing to use it"* ]]
}
