#!/usr/bin/env bats
# tools/arc/: the converter (arc_to_jobs.py) and the scorer (arc_score.py).
# Unit tests in tests/python/test_arc_tools.py; here also the command lines
# as a user types them, on the bundled sample.

bats_require_minimum_version 1.5.0

setup() {
    SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
    export FITRUN_SRC=$SRC
    T=$SRC/tools/arc
    S=$SRC/samples/arc
}

@test "arc tools: unittest suite" {
    cd "$SRC/tests/python"
    run /usr/bin/python3 -m unittest -v test_arc_tools
    echo "$output"
    [ "$status" -eq 0 ]
    [[ "$output" =~ Ran\ [0-9]+\ tests ]]
}

@test "arc_to_jobs: the sample's four files give its jobs.jsonl" {
    run --separate-stderr /usr/bin/python3 "$T/arc_to_jobs.py" --challenges "$S/challenges.json" \
        --solutions "$S/solutions.json" --predictions "$S/predictions.json" --predictions "$S/predictions_text.json"
    [ "$status" -eq 0 ]
    [ "$output" = "$(cat "$S/jobs.jsonl")" ]
    [[ "$stderr" =~ "jobs from 8 tasks" ]]
}

@test "arc_to_jobs: a broken predictions file is named with its line and the exit status is 1" {
    printf '{"007bbfb7": [\n"x",,\n]}\n' > "$BATS_TEST_TMPDIR/p.json"
    run --separate-stderr /usr/bin/python3 "$T/arc_to_jobs.py" --challenges "$S/challenges.json" \
        --predictions "$BATS_TEST_TMPDIR/p.json" --predictions "$S/predictions.json"
    [ "$status" -eq 1 ]
    [[ "$stderr" =~ p.json:2:5:\ invalid\ JSON ]]
    # the good file is still converted
    [ "$(wc -l <<< "$output")" -eq 32 ]
}

@test "arc_score: table and error counts from results" {
    # Results as fitrun writes them: the first job right, the second a timeout.
    jq -c 'select(.id == "007bbfb7#0") | {id, status: "ok", outputs: .expected}' "$S/jobs.jsonl" > "$BATS_TEST_TMPDIR/r.jsonl"
    echo '{"id":"007bbfb7#3","status":"violation","syscall":"socket","outputs":null}' >> "$BATS_TEST_TMPDIR/r.jsonl"
    run --separate-stderr /usr/bin/python3 "$T/arc_score.py" --jobs "$S/jobs.jsonl" "$BATS_TEST_TMPDIR/r.jsonl" --per-task
    [ "$status" -eq 0 ]
    [[ "$output" =~ "violation:socket" ]]
    [[ "$output" =~ missing\ +34 ]]
    grep -E '^007bbfb7 +4 +1\.000 +0\.250 ' <<< "$output"
    [[ "$stderr" =~ "34 jobs have no result" ]]
}
