#!/usr/bin/env bats
# scripts/layers.py, the layering check ctest runs on the build (lint/layers):
# on a small tree of its own it finds a circle, an upward dependency and a
# folder no layer claims, and passes a tree that has none of them.

bats_require_minimum_version 1.5.0

setup() {
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    command -v cc >/dev/null && command -v nm >/dev/null || skip "needs cc and nm"
    T=$BATS_TEST_TMPDIR/tree
    mkdir -p "$T"
}

# src PATH CODE: a source file of the fake tree, compiled where CMake puts
# objects (build/<target>.dir/<path>.o).
src() {
    mkdir -p "$T/$(dirname "$1")" "$T/build/core.dir/$(dirname "$1")"
    printf '%s\n' "$2" > "$T/$1"
    cc -c -o "$T/build/core.dir/$1.o" "$T/$1"
}

@test "a clean layering passes" {
    src common/text.c 'int text(void) { return 1; }'
    src launcher/detect/cpu.c 'int text(void); int cpu(void) { return text(); }'
    src launcher/cli/main.c 'int cpu(void); int main(void) { return cpu(); }'
    run /usr/bin/python3 "$SRC/scripts/layers.py" --src "$T" "$T/build"
    echo "$output"
    [ "$status" -eq 0 ]
    [[ $output == *"3 source files, 2 edges, 0 problems"* ]]
}

@test "a circle, an upward call and an unlayered folder are each a problem" {
    src common/text.c 'int cli(void); int text(void) { return cli(); }'          # common -> cli: upward
    src launcher/detect/a.c 'int b(void); int a(void) { return b(); }'
    src launcher/detect/b.c 'int a(void); int b(void) { return a(); }'           # a <-> b
    src launcher/cli/main.c 'int cli(void) { return 0; } int main(void) { return 0; }'
    src launcher/newthing/x.c 'int x(void) { return 0; }'
    run /usr/bin/python3 "$SRC/scripts/layers.py" --src "$T" "$T/build"
    echo "$output"
    [ "$status" -eq 1 ]
    [[ $output == *"circle: launcher/detect/a.c <-> launcher/detect/b.c"* ]]
    [[ $output == *"upward: common/text.c (common) -> launcher/cli/main.c (cli)"* ]]
    [[ $output == *"unlayered: launcher/newthing/x.c"* ]]
    [[ $output == *"3 problems"* ]]
}
