#!/usr/bin/env bats
# Every shell command that README.md, docs/*.md and the other READMEs mark
# runnable (a ```sh runnable block, CONTRIBUTING.md) runs as written, in a
# scratch directory that looks like a checkout, and exits 0.

bats_require_minimum_version 1.5.0

setup() {
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    BUILD=${FITRUN_BUILD:-$SRC/build}
    RUNNER=$SRC/tests/docs/run_docs.py
}

@test "every runnable block of the documentation runs as written" {
    run /usr/bin/python3 "$RUNNER" --src "$SRC" --build "$BUILD"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *" failed"* ]]
}

@test "the runnable blocks cover the README, the profiles and the run, wrapper and detect docs" {
    for doc in README.md profiles/README.md docs/run.md docs/entrypoint.md docs/detect.md docs/scale-out.md; do
        grep -qE '^ *```(sh|bash) runnable' "$SRC/$doc" || { echo "no runnable block in $doc"; false; }
    done
}

@test "the runner fails on a failing block and names its file and line" {
    d=$BATS_TEST_TMPDIR/src
    mkdir -p "$d/tests/docs"
    cp -r "$SRC/tests/docs/kit" "$d/tests/docs/"
    printf '# t\n\n```sh runnable\ntrue\n```\n\ntext\n\n```sh runnable\nfitrun --version\nfalse\n```\n\n```sh\nfalse # not marked: never run\n```\n' > "$d/t.md"
    run /usr/bin/python3 "$RUNNER" --src "$d" --build "$BUILD" t.md
    [ "$status" -eq 1 ]
    [[ $output == *"ok   t.md:3"* ]]
    [[ $output == *"FAIL t.md:9"* ]]
    [[ $output == *"2 runnable blocks, 1 failed"* ]]
    [[ $output == *"fitrun "[0-9]* ]] # the block ran with the fitrun under test on PATH
    printf '# nothing marked\n' > "$d/none.md"
    run /usr/bin/python3 "$RUNNER" --src "$d" --build "$BUILD" none.md
    [ "$status" -eq 1 ]
    [[ $output == *"no block is marked runnable"* ]]
}

@test "the README's dependency story holds for this build" {
    # README, "Dependencies and why": a static binary (FITRUN_STATIC, on by
    # default; static-pie where the toolchain allows); the sandbox library
    # links libseccomp and libcap; libcgroup is linked statically into
    # fitrun only.
    if grep -qx 'FITRUN_STATIC:BOOL=ON' "$BUILD/CMakeCache.txt"; then
        run ldd "$BUILD/fitrun"
        [[ $output == *"not a dynamic executable"* || $output == *"statically linked"* ]]
        grep -qE 'statically linked|static-pie linked' <<< "$(file "$BUILD/fitrun")"
    fi
    run -0 ldd "$BUILD/lib/libfitrun_sandbox.so"
    [[ $output == *libseccomp.so* ]]
    [[ $output == *libcap.so* ]]
    [[ $output != *libcgroup* ]]
    [[ $(ldd "$BUILD/fitrun" 2>&1) != *libcgroup* ]] || ! grep -qx 'FITRUN_STATIC:BOOL=ON' "$BUILD/CMakeCache.txt"
    grep -q 'libcgroup is linked statically into `fitrun` only' "$SRC/README.md"
    grep -q 'statically linked' "$SRC/docker/README.md"
}
