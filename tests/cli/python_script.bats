#!/usr/bin/env bats
# A prediction behaves as its code does run as a plain script by the same
# interpreter (`python3 pred.py < /dev/null`, stdout and stderr on pipes):
# the same prints, status and exception, under fork and under reuse.
# Each test runs the code both ways and compares (docs/python-runtime.md,
# "What differs from running the code as a script", lists what does differ).

load python_common

setup() {
    FITRUN=${FITRUN:?FITRUN must point at the fitrun binary}
    D=$BATS_TEST_TMPDIR
    printf 'import numpy as np\n' > "$D/prelude.py"
    python_profile "$D/p.ini" 1 10s 512M
}

teardown() {
    local pids
    pids=$(pgrep -f "$D/" || true)
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
}

# as_script CODE: runs CODE as $D/pred.py, as a user would, with both
# streams on pipes and the environment a prediction gets (LANG=C.UTF-8);
# its stdout in $D/s.out, its stderr in $D/s.err with its path written as
# a prediction's file name, <prediction>.
as_script() {
    printf '%s' "$1" > "$D/pred.py"
    { env -i LANG=C.UTF-8 PATH="$PATH" /usr/bin/python3 "$D/pred.py" < /dev/null 2>&1 1>&3 | cat > "$D/s.err"; } 3>&1 | cat > "$D/s.out"
    sed -i "s|$D/pred.py|<prediction>|g" "$D/s.err"
}

# as_prediction CODE ISOLATION: runs CODE as one job; fitrun's own stderr
# goes to $D/fitrun.err unless FITRUN_STDERR names another file, or is
# "tty": a terminal (script(1)'s).
as_prediction() {
    job p "$1" > "$D/jobs.jsonl"
    rm -f "$D/out.jsonl"
    local cmd=("$FITRUN" run -q --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl"
               --set runtime.isolation="$2")
    if [ "${FITRUN_STDERR:-}" = tty ]; then
        script -qec "${cmd[*]@Q}" /dev/null > "$D/fitrun.err"
    else
        "${cmd[@]}" 2> "${FITRUN_STDERR:-$D/fitrun.err}"
    fi
}

# same_as_script ISOLATION: the prediction ran to `ok`, and printed what the script printed
same_as_script() {
    [ "$(jq -r .status "$D/out.jsonl")" = ok ] || { cat "$D/out.jsonl"; return 1; }
    diff <(jq -j .stdout "$D/out.jsonl") "$D/s.out"
    diff <(jq -j .stderr "$D/out.jsonl") "$D/s.err"
}

@test "python script: stdout and stderr are made for the pipes they write, whatever fitrun's own stderr is (reconfigure, seekable, tell)" {
    # The interpreter's streams were made for fitrun's stderr: over a file
    # or /dev/null (a batch job's log) they cached "seekable", and
    # reconfigure(encoding=...) then asked the pipe for its position:
    # error OSError [Errno 29] Illegal seek, where the script works; over a
    # terminal, stdout was line-buffered.
    code=$'import sys\n'
    code+=$'print(sys.stdout.seekable(), sys.stderr.seekable(), sys.stdout.buffer.raw.seekable())\n'
    code+=$'print(sys.stdout.line_buffering, sys.stderr.line_buffering, sys.stdout.write_through)\n'
    code+=$'try:\n    sys.stdout.tell()\nexcept OSError as e:\n    print(type(e).__name__)\n'
    code+=$'sys.stdout.reconfigure(encoding="utf-8", errors="replace")\n'
    code+=$'sys.stderr.reconfigure(encoding="utf-8", newline="\\r\\n")\n'
    code+=$'print("caf\\u00e9 \\u2713", file=sys.stderr)\nprint("done \\u2713")\n'
    code+=$'def transform(g):\n    return g\n'
    as_script "$code"
    [ "$(head -1 "$D/s.out")" = "False False False" ]
    for iso in fork reuse; do
        for err in "$D/fitrun.err" /dev/null tty; do
            FITRUN_STDERR=$err as_prediction "$code" "$iso"
            same_as_script
        done
    done
}

@test "python script: sys.argv is a script's without arguments, not the runtime's command line (argparse)" {
    code=$'import argparse, sys\np = argparse.ArgumentParser()\np.add_argument("--n", type=int, default=3)\n'
    code+=$'print(p.parse_args().n, len(sys.argv))\ndef transform(g):\n    return g\n'
    as_script "$code"
    [ "$(cat "$D/s.out")" = "3 1" ]
    for iso in fork reuse; do
        as_prediction "$code" "$iso"
        same_as_script
    done
}

@test "python script: warnings and tracebacks it prints show its lines; a DeprecationWarning of its own code is shown; inspect.getsource works" {
    code=$'import inspect, traceback, warnings\n'
    code+=$'warnings.warn("old", DeprecationWarning)\n'
    code+=$'def transform(g):\n    warnings.warn("look")\n    return g\n'
    code+=$'try:\n    1 / 0\nexcept ZeroDivisionError:\n    traceback.print_exc()\n'
    code+=$'print(inspect.getsource(transform), end="")\n'
    code+=$'transform(0)\n'
    as_script "$code"
    grep -qx '  warnings.warn("old", DeprecationWarning)' "$D/s.err"
    grep -qx '    1 / 0' "$D/s.err"
    for iso in fork reuse; do
        as_prediction "$code" "$iso"
        same_as_script
    done
}
