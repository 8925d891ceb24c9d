#!/usr/bin/env bats
# The built binaries keep their hardening (CMakeLists.txt, FITRUN_HARDEN):
# fitrun and libfitrun_sandbox.so are position-independent, with full RELRO
# (a GNU_RELRO segment and BIND_NOW), a non-executable stack, stack
# canaries and, outside Debug builds, FORTIFY_SOURCE checks. Read from the
# ELF files with readelf, as checksec does; a binary built without the
# flags must fail the same check.

bats_require_minimum_version 1.5.0

setup() {
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    BUILD=${FITRUN_BUILD:-$SRC/build}
    FITRUN=${FITRUN:-$BUILD/fitrun}
    LIB=$BUILD/lib/libfitrun_sandbox.so
    command -v readelf >/dev/null || skip "readelf (binutils) is not installed"
    grep -q '^FITRUN_HARDEN:BOOL=ON' "$BUILD/CMakeCache.txt" || skip "built with FITRUN_HARDEN=OFF"
}

# hardened FILE KIND [fortify]: prints every missing property, fails on any.
# KIND: exe (a PIE executable) or lib (a shared library).
hardened() {
    local f=$1 kind=$2 fortify=${3:-} missing=()
    local header dyn segs syms
    header=$(readelf -h "$f") dyn=$(readelf -d "$f") segs=$(readelf -lW "$f") syms=$(readelf -sW "$f")
    grep -q 'Type:.*DYN' <<< "$header" || missing+=("position-independent (ELF type DYN)")
    [ "$kind" = lib ] || grep -q 'FLAGS_1.*PIE' <<< "$dyn" || missing+=("PIE flag")
    grep -q 'GNU_RELRO' <<< "$segs" || missing+=("RELRO segment")
    grep -qE '\(FLAGS\).*BIND_NOW|FLAGS_1.*NOW' <<< "$dyn" || missing+=("BIND_NOW (full RELRO)")
    grep -E 'GNU_STACK' <<< "$segs" | grep -q 'RWE' && missing+=("non-executable stack")
    grep -q ' __stack_chk_fail' <<< "$syms" || missing+=("stack canary (__stack_chk_fail)")
    if [ -n "$fortify" ]; then
        grep -qE ' __[a-z]+_chk(@|$)' <<< "$syms" || missing+=("FORTIFY_SOURCE (__*_chk calls)")
    fi
    if ((${#missing[@]})); then
        printf '%s lacks: %s\n' "$f" "${missing[*]}"
        return 1
    fi
}

fortify() { # "fortify" unless the build has no optimisation (Debug: no FORTIFY_SOURCE)
    grep -q '^CMAKE_BUILD_TYPE:STRING=Debug$' "$BUILD/CMakeCache.txt" || echo fortify
}

@test "fitrun is PIE with full RELRO, a stack canary and FORTIFY_SOURCE" {
    run hardened "$FITRUN" exe "$(fortify)"
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "a static fitrun is static-pie: no interpreter, no shared libraries" {
    grep -q '^FITRUN_STATIC:BOOL=ON' "$BUILD/CMakeCache.txt" || skip "dynamic build (FITRUN_STATIC=OFF)"
    grep -q '^FITRUN_HAS_STATIC_PIE:INTERNAL=1' "$BUILD/CMakeCache.txt" || skip "no static-pie here: plain -static"
    run -0 readelf -lW "$FITRUN"
    [[ $output != *INTERP* ]]
    run -0 readelf -dW "$FITRUN"
    [[ $output != *NEEDED* ]]
    run -0 "$FITRUN" --version
}

@test "libfitrun_sandbox.so has full RELRO and a stack canary" {
    [ -f "$LIB" ] || skip "no $LIB in this build"
    run hardened "$LIB" lib "$(fortify)"
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "the check fails on a binary built without the hardening" {
    command -v cc >/dev/null || skip "no C compiler"
    # a read into a local array with a length known only at run time:
    # FORTIFY_SOURCE turns it into __read_chk, the protector adds a canary
    printf '#include <unistd.h>\nint main(int c, char **v) { char b[64]; (void)v; return read(0, b, (size_t)c) > 0 ? b[0] : 0; }\n' \
        > "$BATS_TEST_TMPDIR/soft.c"
    cc -O2 -U_FORTIFY_SOURCE -fno-stack-protector -no-pie -Wl,-z,norelro -Wl,-z,lazy \
        -o "$BATS_TEST_TMPDIR/soft" "$BATS_TEST_TMPDIR/soft.c"
    run hardened "$BATS_TEST_TMPDIR/soft" exe fortify
    [ "$status" -eq 1 ]
    for lack in "position-independent" "PIE flag" "RELRO segment" "BIND_NOW" "stack canary" "FORTIFY_SOURCE"; do
        [[ $output == *"$lack"* ]] || { echo "not reported: $lack; got: $output"; false; }
    done
    # and the same program with the flags passes: the check is not just strict
    cc -O2 -D_FORTIFY_SOURCE=2 -fstack-protector-all -fPIE -pie -Wl,-z,relro -Wl,-z,now \
        -o "$BATS_TEST_TMPDIR/hard" "$BATS_TEST_TMPDIR/soft.c"
    run hardened "$BATS_TEST_TMPDIR/hard" exe fortify
    echo "$output"
    [ "$status" -eq 0 ]
}
