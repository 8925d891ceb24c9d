#!/usr/bin/env bats
# Exit statuses of `fitrun [options] -- CMD`: CMD's code, 128+signal,
# 127 not found, 126 not executable, 125 fitrun's own errors — in all three
# modes (exec, --init subreaper, PID 1 of a PID namespace).

load wrap_common

setup() {
    ulimit -c 0 # SIGQUIT/SIGSEGV/SIGABRT below must not leave core files
}

codes_in_mode() {
    local mode=$1 code
    for code in 0 1 2 42 100 124 125 126 127 128 129 200 254 255; do
        run -"$code" fr "$mode" -q -- sh -c "exit $code"
    done
}

@test "exit codes 0-255 pass through (exec)" { codes_in_mode exec; }
@test "exit codes 0-255 pass through (--init)" { codes_in_mode subreaper; }
@test "exit codes 0-255 pass through (PID 1)" { needs_root; codes_in_mode pid1; }

# A program killed by signal N gives 128+N. python resets the disposition
# first: signals ignored by the test harness are inherited as ignored
# (SIGKILL cannot be reset, nor ignored).
signals_in_mode() {
    local mode=$1 sig sigs="1 2 3 6 9 10 11 15 34 64"
    # In exec mode CMD itself dies of the signal, and a bash that sees its
    # child die of SIGINT/SIGQUIT may act as if it got them itself (it does
    # under ctest): leave those two to the supervised modes.
    [ "$mode" != exec ] || sigs="1 6 9 10 11 15 34 64"
    for sig in $sigs; do
        run -$((128 + sig)) fr "$mode" -q -- /usr/bin/python3 -c \
            "import os, signal; $sig != 9 and signal.signal($sig, signal.SIG_DFL); os.kill(os.getpid(), $sig)"
    done
}

@test "killed by signal N gives 128+N (exec)" { signals_in_mode exec; }
@test "killed by signal N gives 128+N (--init)" { signals_in_mode subreaper; }
@test "killed by signal N gives 128+N (PID 1)" { needs_root; signals_in_mode pid1; }

exec_errors_in_mode() {
    local mode=$1
    printf '#!/bin/sh\necho hi\n' >"$BATS_TEST_TMPDIR/noexec"
    chmod 0644 "$BATS_TEST_TMPDIR/noexec"

    run -127 fr "$mode" -q -- fitrun-no-such-command-xyz
    [[ "$output" == *"cannot run 'fitrun-no-such-command-xyz': No such file or directory (not found in PATH)"* ]]

    run -127 fr "$mode" -q -- /nonexistent/dir/cmd
    [[ "$output" == *"'/nonexistent/dir/cmd': No such file or directory"* ]]

    run -126 fr "$mode" -q -- "$BATS_TEST_TMPDIR/noexec"
    [[ "$output" == *"noexec': Permission denied"* ]]

    run -126 fr "$mode" -q -- "$BATS_TEST_TMPDIR"
    [[ "$output" == *"cannot run '$BATS_TEST_TMPDIR'"* ]]
}

@test "127 not found, 126 not executable, with errno (exec)" { exec_errors_in_mode exec; }
@test "127 not found, 126 not executable, with errno (--init)" { exec_errors_in_mode subreaper; }
@test "127 not found, 126 not executable, with errno (PID 1)" { needs_root; exec_errors_in_mode pid1; }

# ENOEXEC: an executable file the kernel cannot run (no #! line, not ELF)
# is run by /bin/sh, as execvp(3), env(1) and tini do; the status is the
# shell's, so garbage is 127 ("not found"), not 126.
enoexec_in_mode() {
    local mode=$1 d=$BATS_TEST_TMPDIR
    printf 'echo no-shebang "$@"; exit 3\n' >"$d/script"
    printf 'zzkx9-not-a-command\n' >"$d/garbage"
    chmod +x "$d/script" "$d/garbage"
    run -3 fr "$mode" -q -- "$d/script" a b
    [ "$output" = "no-shebang a b" ]
    run -127 fr "$mode" -q -- "$d/garbage"
    [[ "$output" == *"zzkx9-not-a-command: not found"* ]]
    [[ "$output" != *"fitrun: cannot run"* ]] # it ran: the shell, not fitrun, failed
}

@test "ENOEXEC: a file without #! runs under /bin/sh like execvp, env(1) and tini (exec)" { enoexec_in_mode exec; }
@test "ENOEXEC: a file without #! runs under /bin/sh like execvp, env(1) and tini (--init)" { enoexec_in_mode subreaper; }
@test "ENOEXEC: a file without #! runs under /bin/sh like execvp, env(1) and tini (PID 1)" {
    needs_root
    enoexec_in_mode pid1
}

usage_errors_in_mode() {
    local mode=$1
    run -125 fr "$mode" --no-such-option -- true
    [[ "$output" == *"unknown option '--no-such-option'"* ]]
    run -125 fr "$mode" -x -- true
    [[ "$output" == *"unknown option '-x'"* ]]
    run -125 fr "$mode" --grace
    [[ "$output" == *"'--grace' needs a value"* ]]
    run -125 fr "$mode" --grace soon -- true
    [[ "$output" == *"--grace: invalid duration 'soon'"* ]]
    run -125 fr "$mode" --cpus 0 -- true
    [[ "$output" == *"--cpus 0: bad value '0' for cpus"* ]]
    run -125 fr "$mode" --shm-threshold lots -- true
    [[ "$output" == *"--shm-threshold"* ]]
    run -125 fr "$mode" --profile "$BATS_TEST_TMPDIR/missing.ini" -- true
    [[ "$output" == *"missing.ini"* ]]
    run -125 fr "$mode" -q --
    [[ "$output" == *"no command given"* ]]
}

@test "125 for fitrun's own errors (exec)" { usage_errors_in_mode exec; }
@test "125 for fitrun's own errors (--init)" { usage_errors_in_mode subreaper; }
@test "125 for fitrun's own errors (PID 1)" { needs_root; usage_errors_in_mode pid1; }

@test "a bad profile is reported with its file and line, exit 125" {
    printf '[resources]\ncpus = many\n' >"$BATS_TEST_TMPDIR/bad.ini"
    run -125 "$FITRUN" --profile "$BATS_TEST_TMPDIR/bad.ini" -- true
    [[ "$output" == *"bad.ini:2"* ]]
}

@test "fitrun CMD works without --, and options stop at CMD" {
    run -0 "$FITRUN" -q sh -c 'echo "$0 $1"' -q x
    [ "$output" = "-q x" ]
    run -7 "$FITRUN" -q --init sh -c 'exit 7'
}

@test "--help prints the options and exits 0" {
    # (`fitrun --help` alone is main.c's overview; after a wrapper option
    # it is the wrapper's own help.)
    run -0 "$FITRUN" --init --help
    for opt in --init --explain --quiet --grace --forward-to-group --cpus --profile --shm-threshold; do
        [[ "$output" == *"$opt"* ]] || { echo "missing $opt"; return 1; }
    done
}

@test "plain mode replaces fitrun with CMD (same pid), --init does not" {
    "$FITRUN" -q -- sh -c 'echo $$ >"$0"' "$BATS_TEST_TMPDIR/pid" &
    local pid=$!
    wait "$pid"
    [ "$(cat "$BATS_TEST_TMPDIR/pid")" = "$pid" ]
    run -0 "$FITRUN" -q --init -- sh -c 'cat /proc/$PPID/comm'
    [ "$output" = fitrun ]
}

@test "--grace without --init warns that it has no effect" {
    run -0 "$FITRUN" -q --grace 1s -- true
    [[ "$output" == *"--grace has no effect without --init"* ]]
}
