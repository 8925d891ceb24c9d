#!/usr/bin/env bats
# The man page fitrun(1): built from the commands' --help texts (one source
# for option descriptions), readable with `man -l`, installed by
# `cmake --install`; it, the docs and --help name the same options.

bats_require_minimum_version 1.5.0

setup() {
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    BUILD=${FITRUN_BUILD:-$SRC/build}
    FITRUN=${FITRUN:-$BUILD/fitrun}
    PAGE=$BUILD/fitrun.1
}

@test "fitrun.1 is built and man -l reads it without a warning, with every conventional section" {
    [ -s "$PAGE" ]
    run --separate-stderr env MANWIDTH=100 LC_ALL=C.UTF-8 man --warnings -l "$PAGE"
    [ "$status" -eq 0 ]
    [ -z "$stderr" ] || { echo "$stderr"; false; }
    for section in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" ENVIRONMENT FILES EXAMPLES "SEE ALSO"; do
        grep -qx "$section" <<< "$output" || { echo "no section $section"; false; }
    done
    [[ $output == *"fitrun $("$FITRUN" --version | cut -d' ' -f2)"* ]]
}

@test "every option of every --help is in the man page and the command's document, and nothing else is" {
    run /usr/bin/python3 "$SRC/tests/docs/check_options.py" --src "$SRC" --fitrun "$FITRUN" --man "$PAGE"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == "0 problems" ]]
}

@test "the check fails on an option the man page lacks or invents" {
    sed 's/^\\fB\\-\\-resume\\fR$/\\fB\\-\\-resumed\\fR/' "$PAGE" > "$BATS_TEST_TMPDIR/bad.1"
    run /usr/bin/python3 "$SRC/tests/docs/check_options.py" --src "$SRC" --fitrun "$FITRUN" --man "$BATS_TEST_TMPDIR/bad.1"
    [ "$status" -eq 1 ]
    [[ $output == *"--resume is in --help but not in the man page"* ]]
    [[ $output == *"--resumed is in the man page but not in --help"* ]]
}

@test "the man page shows each option's --help description" {
    run env MANWIDTH=200 man -l "$PAGE"
    # run's --resume and the wrapper's --explain, as their help says them
    want=$("$FITRUN" run --help | grep -- '^  --resume' | sed 's/^  --resume *//')
    [[ $output == *"$want"* ]]
    [[ $output == *"print what would be exported and why on stdout"* ]]
}

@test "cmake --install puts fitrun.1 under share/man/man1" {
    run cmake --install "$BUILD" --prefix "$BATS_TEST_TMPDIR/prefix"
    [ "$status" -eq 0 ]
    [ -f "$BATS_TEST_TMPDIR/prefix/share/man/man1/fitrun.1" ]
    run env MANWIDTH=100 man -l "$BATS_TEST_TMPDIR/prefix/share/man/man1/fitrun.1"
    [[ $output == *"container-aware launcher: detect what a process may use"* ]]
}

@test "every command answers -h and --help with exit 0 on stdout, and --version" {
    for cmd in "" detect run merge submit --init; do
        for h in -h --help; do
            run --separate-stderr "$FITRUN" $cmd $h
            [ "$status" -eq 0 ] || { echo "fitrun $cmd $h: $status"; false; }
            [[ $output == usage:* ]] || { echo "fitrun $cmd $h: $output"; false; }
        done
    done
    run -0 "$FITRUN" --version
    [[ $output =~ ^fitrun\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
    run -0 "$FITRUN" --help
    [[ $output == *"fitrun --version | --help"* ]]
}
