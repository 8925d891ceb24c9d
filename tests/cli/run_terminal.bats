#!/usr/bin/env bats
# Text from jobs reaches the terminal only with its control characters
# shown, never sent: a prediction must not be able to rewrite the summary a
# person reads (erase a line, forge "fitrun: done", ring the bell, flip the
# text direction). The results file keeps the real bytes.

load run_common

setup() {
    run_setup
    cat > py.ini <<EOF
[sandbox]
cpu_time = 2s
wall_time = 10s
[runtime]
kind = python
interpreter = /usr/bin/python3
EOF
}
teardown() { run_teardown; }

FORGED_NAME='X\x1b[2K\rfitrun: done\u2026\nFORGED\x07\u202e'

# no_controls FILE: not one C0 control other than newline, no DEL, no C1 and
# no bidi override in FILE.
no_controls() {
    /usr/bin/python3 - "$1" <<'EOF'
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="surrogateescape").read()
bad = re.findall(r"[\x00-\x09\x0b-\x1f\x7f\x80-\x9f\u202a-\u202e\u2066-\u2069]", text)
sys.exit("control characters on the terminal: %r" % bad if bad else 0)
EOF
}

@test "an exception class named with control characters: shown escaped in the summary, kept in the results" {
    code="E = type('$FORGED_NAME', (Exception,), {})
def transform(g):
    raise E('boom')"
    jq -cn --arg code "$code" '{id: "p1", code: $code, inputs: [[[1]]]}' > jobs.jsonl
    run -0 --separate-stderr "$FITRUN" run --profile py.ini --jobs jobs.jsonl --out out.jsonl --progress plain
    printf '%s' "$stderr" > err.txt
    no_controls err.txt
    # shown, escaped, on one line of the error table
    grep -F 'X\x1b[2K\rfitrun: done…\nFORGED\x07\u202e' err.txt
    [ "$(grep -c '^FORGED' err.txt)" -eq 0 ]
    # the results file keeps the real name
    want=$(/usr/bin/python3 -c "print('$FORGED_NAME', end='')")
    [ "$(jq -j .error_type out.jsonl)" = "$want" ]
}

@test "warnings that quote a job's id show its control characters" {
    jq -cn '{id: "a\u001b]0;owned\u0007", argv: ["true"]}' > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet
    # the jobs file changes under the results: the message quotes both ids
    jq -cn '{id: "b\u001b[31m\u0085", argv: ["true"]}' > jobs.jsonl
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --resume
    printf '%s' "$stderr" > err.txt
    no_controls err.txt
    grep -F 'line 1 of jobs.jsonl has id "b\x1b[31m\u0085", but out.jsonl:1 is the result of id "a\x1b]0;owned\x07"' err.txt
}
