#!/usr/bin/env bats
# The Python client (python/fitrun/): its unittest suite against real fitrun
# processes (tests/python/test_client.py), and the ways a user gets it —
# the build tree, `cmake --install`, `pip install` offline — and the example.

bats_require_minimum_version 1.5.0

setup() {
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    BUILD=${FITRUN_BUILD:-$SRC/build}
    export FITRUN_SRC=$SRC
    export FITRUN=${FITRUN:-$BUILD/fitrun}
    PY=/usr/bin/python3
    XY=$($PY -c 'import sys; print("%d.%d" % sys.version_info[:2])')
}

# One Runner round trip with the Python command "$@", printing where the
# package and the binary came from.
smoke() {
    "$@" -c 'import fitrun, os
with fitrun.Runner() as r:
    res = r.map([{"id": "a", "argv": ["echo", "hi"]}])
print(os.path.dirname(fitrun.__file__), fitrun.find_fitrun(), res[0]["id"], res[0]["stdout"].strip())'
}

@test "python client: unittest suite (real fitrun processes)" {
    cd "$SRC/tests/python"
    run $PY -m unittest -v test_client
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" =~ Ran\ [0-9]+\ tests ]]
    [[ "$output" =~ test_sigkill_of_fitrun_mid_batch_fails_every_waiter_promptly\ .*\ ok ]]
    [[ "$output" =~ test_ctrl_c_in_map_leaves_no_process\ .*\ ok ]]
    [[ "$output" =~ test_the_plain_bar_without_tqdm\ .*\ ok ]]
    [[ "$output" =~ test_terminate_at_any_moment_of_the_start_is_an_interrupt\ .*\ ok ]]
    [[ "$output" =~ test_the_constructor_returns_with_fitrun_ready\ .*\ ok ]]
    [[ "$output" =~ test_a_profile_error_is_a_runner_error_with_file_and_line\ .*\ ok ]]
}

@test "python client: after a build, PYTHONPATH=build/python imports it and it finds build/fitrun" {
    diff -r --exclude=__pycache__ "$SRC/python/fitrun" "$BUILD/python/fitrun"
    cd "$BATS_TEST_TMPDIR"
    run --separate-stderr smoke env -u FITRUN PATH=/usr/bin:/bin PYTHONPATH="$BUILD/python" $PY
    [ "$status" -eq 0 ]
    [ "$output" = "$BUILD/python/fitrun $BUILD/fitrun a hi" ]
}

@test "python client: cmake --install puts it where Debian's Python looks for the prefix" {
    D=$BATS_TEST_TMPDIR/root
    for prefix in /usr/local /usr /opt/fitrun; do
        DESTDIR=$D cmake --install "$BUILD" --prefix "$prefix" >/dev/null
    done
    [ -f "$D/usr/local/lib/python$XY/dist-packages/fitrun/_runner.py" ]
    [ -f "$D/usr/lib/python3/dist-packages/fitrun/arc/_score.py" ]
    [ -f "$D/opt/fitrun/lib/python$XY/site-packages/fitrun/__init__.py" ]
    # /usr/local's directory is on Debian's sys.path (with the root moved to $D)
    $PY -c 'import sys; assert "/usr/local/lib/python'"$XY"'/dist-packages" in sys.path'
    cd "$BATS_TEST_TMPDIR"
    run --separate-stderr smoke env PYTHONPATH="$D/usr/local/lib/python$XY/dist-packages" $PY
    [ "$status" -eq 0 ]
    [ "$output" = "$D/usr/local/lib/python$XY/dist-packages/fitrun $FITRUN a hi" ]
}

@test "python client: pip install works offline (no index) into a venv" {
    $PY -m venv "$BATS_TEST_TMPDIR/venv"
    run "$BATS_TEST_TMPDIR/venv/bin/pip" install --no-index --no-cache-dir "$SRC/python"
    echo "$output"
    [ "$status" -eq 0 ]
    cd "$BATS_TEST_TMPDIR"
    run --separate-stderr smoke "$BATS_TEST_TMPDIR/venv/bin/python"
    [ "$status" -eq 0 ]
    [ "$output" = "$BATS_TEST_TMPDIR/venv/lib/python$XY/site-packages/fitrun $FITRUN a hi" ]
}

@test "python client: the LLM-evaluation example runs on the bundled sample" {
    run --separate-stderr env PYTHONPATH="$BUILD/python" $PY "$SRC/examples/llm_eval_loop.py" --rounds 2
    echo "$output"
    echo "$stderr"
    [ "$status" -eq 0 ]
    [[ "$output" =~ round\ 1:\ 24\ predictions ]]
    [[ "$output" =~ round\ 2: ]]
    grep -E '^MEAN +[0-9.]+ ' <<< "$output"
    [[ "$output" =~ "Most common errors:" ]]
}
