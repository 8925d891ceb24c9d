#!/usr/bin/env bats
# The Python side of the warm runtime (launcher/runtime/python/fitrun_runtime.py),
# driven directly over its protocol by tests/python/drive_runtime.py, without
# the fitrun binary: tests/python/test_runtime.py (unittest). Hostile
# predictions there need the sandbox library of the build ($FITRUN_BUILD/lib).

bats_require_minimum_version 1.5.0

setup() {
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    export FITRUN_SRC=$SRC
}

@test "python runtime: unittest suite of the Python side" {
    cd "$SRC/tests/python"
    run /usr/bin/python3 -m unittest -v test_runtime
    echo "$output"
    [ "$status" -eq 0 ]
    # The suite really ran (a broken import would run nothing and pass).
    [[ "$output" =~ Ran\ [0-9]+\ tests ]]
    [[ "$output" =~ test_segfault_is_a_signal_and_the_worker_survives\ .*\ ok ]]
}

@test "python runtime: hostile predictions are contained when the sandbox library is built" {
    [ -e "${FITRUN_BUILD:-/nonexistent}/lib/libfitrun_sandbox.so" ] || skip "no sandbox library in FITRUN_BUILD"
    cd "$SRC/tests/python"
    run /usr/bin/python3 -m unittest -v test_runtime.Hostile
    echo "$output"
    [ "$status" -eq 0 ]
    [[ ! "$output" =~ skipped ]]
}

@test "python runtime: the driver runs a jobs file from the command line, sandboxed" {
    [ -e "${FITRUN_BUILD:-/nonexistent}/lib/libfitrun_sandbox.so" ] || skip "no sandbox library in FITRUN_BUILD"
    cd "$SRC"
    printf '%s\n' '{"id":"a","code":"def transform(g):\n    return g[::-1]\n","inputs":[[[1],[2]]],"expected":[[[2],[1]]]}' > "$BATS_TEST_TMPDIR/jobs.jsonl"
    run --separate-stderr /usr/bin/python3 tests/python/drive_runtime.py --workers 1 --jobs "$BATS_TEST_TMPDIR/jobs.jsonl"
    [ "$status" -eq 0 ]
    [ "$(jq -r .status <<< "$output")" = ok ]
    [ "$(jq -c .passed <<< "$output")" = '[true]' ]
    [ "$(jq -r .sandbox <<< "$stderr")" = on ]
}

@test "python runtime: the driver refuses to run predictions without the sandbox library unless asked by name" {
    # A checkout without a build: the driver and the runtime alone.
    T=$BATS_TEST_TMPDIR/checkout
    mkdir -p "$T/tests/python" "$T/launcher/runtime/python"
    cp "$SRC/tests/python/drive_runtime.py" "$T/tests/python/"
    cp "$SRC/launcher/runtime/python/fitrun_runtime.py" "$T/launcher/runtime/python/"
    printf '%s\n' '{"id":"a","code":"def transform(g):\n    return g\n","inputs":[1]}' > "$BATS_TEST_TMPDIR/jobs.jsonl"
    cd "$T"
    run --separate-stderr env -u FITRUN_BUILD -u FITRUN -u FITRUN_SANDBOX_LIB FITRUN_SRC="$T" \
        /usr/bin/python3 tests/python/drive_runtime.py --workers 1 --jobs "$BATS_TEST_TMPDIR/jobs.jsonl"
    [ "$status" -eq 2 ]
    [ -z "$output" ]
    [[ "$stderr" =~ "refusing to run predictions without the sandbox" ]]
    run --separate-stderr env -u FITRUN_BUILD -u FITRUN -u FITRUN_SANDBOX_LIB FITRUN_SRC="$T" \
        /usr/bin/python3 tests/python/drive_runtime.py --workers 1 --no-sandbox --jobs "$BATS_TEST_TMPDIR/jobs.jsonl"
    [ "$status" -eq 0 ]
    [ "$(jq -r .status <<< "$output")" = ok ]
    [ "$(jq -r .sandbox <<< "$stderr")" = off ]
}
