#!/usr/bin/env bats
# fitrun merge: completeness, duplicates, missing jobs with their shard,
# torn and garbage lines with file:line, and the exit status.

bats_require_minimum_version 1.5.0

setup() {
    FITRUN=${FITRUN:-$BATS_TEST_DIRNAME/../../build/fitrun}
    D=$(mktemp -d /tmp/fitrun-test-shard-bats.XXXXXX)
    cd "$D"
    # 9 jobs a1..a9 on lines 1..9; 3 shards: (L-1) mod 3
    for i in 1 2 3 4 5 6 7 8 9; do printf '{"id":"a%d","argv":["true"]}\n' "$i"; done > jobs.jsonl
}

teardown() {
    cd /
    rm -rf "$D"
}

# result ID STATUS [LINE]: one result line as fitrun run writes it (the
# input line defaults to the number in the id: a7 is on line 7)
result() {
    local line=${3:-${1#a}}
    printf '{"id":"%s","status":"%s","exit_code":0,"worker":0,"line":%s}\n' "$1" "$2" "$line"
}

# shard K N: all results of shard K of N, in reverse (completion) order
shard() {
    local k=$1 n=$2 l
    for ((l = 9; l >= 1; l--)); do
        (((l - 1) % n == k)) && result "a$l" ok
    done
    return 0
}

ids() { jq -r .id "$@" | tr '\n' ' '; }

@test "complete shards merge in input order, exit 0, stdout only results" {
    for k in 0 1 2; do shard $k 3 > results.$k.jsonl; done
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl results.0.jsonl results.1.jsonl results.2.jsonl
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | jq -r .id | tr '\n' ' ')" = "a1 a2 a3 a4 a5 a6 a7 a8 a9 " ]
    [ "$(printf '%s\n' "$output" | wc -l)" -eq 9 ]
    [[ $stderr == *"complete: 9 of 9 jobs have a result, from 3 files"* ]]
    # byte for byte what the shard wrote
    [ "$(printf '%s\n' "$output" | sed -n 4p)" = "$(grep '"a4"' results.0.jsonl)" ]
}

@test "a deleted shard: its ids listed with the shard, exit 1, the rest still merged" {
    for k in 0 1 2; do shard $k 3 > results.$k.jsonl; done
    rm results.1.jsonl
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl --shards 3 results.0.jsonl results.2.jsonl
    [ "$status" -eq 1 ]
    [ "$(printf '%s\n' "$output" | jq -r .id | tr '\n' ' ')" = "a1 a3 a4 a6 a7 a9 " ]
    [[ $stderr == *'missing id "a2" (jobs.jsonl:2, shard 1 of 3)'* ]]
    [[ $stderr == *'missing id "a5" (jobs.jsonl:5, shard 1 of 3)'* ]]
    [[ $stderr == *'missing id "a8" (jobs.jsonl:8, shard 1 of 3)'* ]]
    [[ $stderr == *"3 of 9 jobs have no result; rerun shard(s) 1 with --resume (SLURM: sbatch --array=1 SCRIPT)"* ]]
    [[ $stderr == *"INCOMPLETE: 6 of 9"* ]]
}

@test "the shard count is inferred from results.K.jsonl names, even with the last shard gone" {
    for k in 0 1 2; do shard $k 3 > results.$k.jsonl; done
    rm results.2.jsonl
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl results.*.jsonl
    [ "$status" -eq 1 ]
    [[ $stderr == *"3 shards, inferred from the file names"* ]]
    [[ $stderr == *'missing id "a3" (jobs.jsonl:3, shard 2 of 3)'* ]]
    [[ $stderr == *'missing id "a9" (jobs.jsonl:9, shard 2 of 3)'* ]]
    [[ $stderr == *"rerun shard(s) 2 "* ]]
}

@test "unnamed result files: missing ids with their line, and a hint for --shards" {
    shard 0 2 > first.jsonl
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl first.jsonl
    [ "$status" -eq 1 ]
    [[ $stderr == *'missing id "a2" (jobs.jsonl:2)'* ]]
    [[ $stderr == *"pass --shards N"* ]]
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl --shards 2 first.jsonl
    [ "$status" -eq 1 ]
    [[ $stderr == *'missing id "a2" (jobs.jsonl:2, shard 1 of 2)'* ]]
}

@test "duplicates: the first complete result wins, each dropped one is reported" {
    shard 0 2 > results.0.jsonl
    { result a2 error; result a4 ok; result a6 ok; result a8 ok; result a2 ok; } > results.1.jsonl
    # a third file repeating a1 (e.g. a shard run twice without --resume)
    result a1 timeout > results.1b.jsonl
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl --shards 2 results.0.jsonl results.1.jsonl results.1b.jsonl
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | jq -r 'select(.id=="a2").status')" = error ]
    [ "$(printf '%s\n' "$output" | jq -r 'select(.id=="a1").status')" = ok ]
    [ "$(printf '%s\n' "$output" | wc -l)" -eq 9 ]
    [[ $stderr == *'results.1.jsonl:5: another result for line 2, id "a2" (first at results.1.jsonl:1); dropped'* ]]
    [[ $stderr == *'results.1b.jsonl:1: another result for line 1, id "a1" (first at results.0.jsonl:'*'); dropped'* ]]
    [[ $stderr == *"2 duplicate results dropped"* ]]
}

@test "an id repeated in the jobs file and run by another shard counts once" {
    { echo '{"id":"a1"}'; echo '{"id":"a2"}'; echo '{"id":"a3"}'; echo '{"id":"a1"}'; } > rep.jsonl
    # 2 shards: lines 1,3 and 2,4; shard 1 never saw line 1, so it ran line 4
    { result a3 ok; result a1 ok; } > results.0.jsonl
    { result a1 error 4; result a2 ok; } > results.1.jsonl
    run --separate-stderr "$FITRUN" merge --jobs rep.jsonl results.0.jsonl results.1.jsonl
    [ "$status" -eq 0 ]
    # line 4 gets the DuplicateId result one run writes (merge writes it: shard 1 could not)
    [ "$(printf '%s\n' "$output" | jq -c '[.id,.status,.error_type,.line]' | tr '\n' ' ')" = \
      '["a1","ok",null,1] ["a2","ok",null,2] ["a3","ok",null,3] ["a1","invalid","DuplicateId",4] ' ]
    [[ $stderr == *'rep.jsonl:4: id "a1" repeats line 1; only line 1 needs a result'* ]]
    [[ $stderr == *'results.1.jsonl:1: a second run of id "a1" (line 4 repeats line 1: another shard ran it); dropped'* ]]
    [[ $stderr == *"1 DuplicateId result written for a repeated id another shard ran"* ]]
    # one run would answer line 4 with an `invalid` DuplicateId result: kept in place
    printf '{"id":"a1","status":"invalid","error_type":"DuplicateId","line":4}\n' > results.1.jsonl
    result a2 ok >> results.1.jsonl
    run --separate-stderr "$FITRUN" merge --jobs rep.jsonl results.0.jsonl results.1.jsonl
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | jq -c '[.id,.status]' | tr '\n' ' ')" = '["a1","ok"] ["a2","ok"] ["a3","ok"] ["a1","invalid"] ' ]
}

@test "ids repeated across shards: the merge equals one run of the whole file" {
    # a1 on lines 1 and 4, a2 on lines 2 and 6: with 2 shards each repeat
    # lands in the other shard, which runs it as a job
    for id in a1 a2 a3 a1 a5 a2 a7; do printf '{"id":"%s","argv":["echo","%s"]}\n' "$id" "$id"; done > rep.jsonl
    "$FITRUN" run --jobs rep.jsonl --out whole.jsonl --quiet --workers 1 || [ $? -eq 1 ]
    for k in 0 1; do "$FITRUN" run --jobs rep.jsonl --out "results.$k.jsonl" --shard $k/2 --quiet --workers 1 || [ $? -eq 1 ]; done
    run --separate-stderr "$FITRUN" merge --jobs rep.jsonl results.0.jsonl results.1.jsonl
    [ "$status" -eq 0 ]
    printf '%s\n' "$output" > merged.jsonl
    # the same results in input order: equal except the measured fields
    same() { jq -c 'del(.cpu_ms, .wall_ms, .max_rss_kb, .worker)' "$1"; }
    [ "$(same merged.jsonl)" = "$(jq -s -c 'sort_by(.line)[]' whole.jsonl | jq -c 'del(.cpu_ms, .wall_ms, .max_rss_kb, .worker)')" ]
    # the DuplicateId lines byte for byte
    [ "$(grep DuplicateId merged.jsonl)" = "$(jq -s -c 'sort_by(.line)[] | select(.error_type == "DuplicateId")' whole.jsonl)" ]
    [ "$(grep -c DuplicateId merged.jsonl)" -eq 2 ]
}

@test "an inferred shard count is said, also when the merge is complete" {
    for k in 0 1 2; do shard $k 3 > results.$k.jsonl; done
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl results.0.jsonl results.1.jsonl results.2.jsonl
    [ "$status" -eq 0 ]
    [[ $stderr == *"complete: 9 of 9 jobs have a result, from 3 files (3 shards, inferred from the file names)"* ]]
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl --shards 3 results.0.jsonl results.1.jsonl results.2.jsonl
    [[ $stderr != *"inferred"* ]]
}

@test "results of another jobs file do not fill gaps" {
    shard 0 2 > results.0.jsonl
    { result zz ok 2; result a4 ok; result a6 ok; result a8 ok; result a10 ok; } > results.1.jsonl
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl results.0.jsonl results.1.jsonl
    [ "$status" -eq 1 ]
    [[ $stderr == *'results.1.jsonl:1: result for line 2 (id "zz"), but line 2 of jobs.jsonl is "a2"; dropped'* ]]
    [[ $stderr == *'results.1.jsonl:5: result for line 10 (id "a10"), but line 10 of jobs.jsonl is no job; dropped'* ]]
    [[ $stderr == *'missing id "a2" (jobs.jsonl:2, shard 1 of 2)'* ]]
}

@test "results without a line field (other writers) are placed by id" {
    for i in 9 8 7 6 5 4 3 2 1; do printf '{"id":"a%d","status":"ok"}\n' $i; done > other.jsonl
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl other.jsonl
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | jq -r .id | tr '\n' ' ')" = "a1 a2 a3 a4 a5 a6 a7 a8 a9 " ]
    [[ $stderr == *'9 results without "line" placed by their id'* ]]
}

@test "torn last line and garbage lines: reported with file:line, skipped, job missing" {
    shard 0 3 > results.0.jsonl
    shard 2 3 > results.2.jsonl
    { result a8 ok; echo 'Traceback (most recent call last):'; echo '[1, 2, 3]'; result a5 ok
      printf '{"id":"a2","status":"ok","stdout":"hal'; } > results.1.jsonl
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl results.0.jsonl results.1.jsonl results.2.jsonl
    [ "$status" -eq 1 ]
    [[ $stderr == *"results.1.jsonl:2: not a result line: '[' or '{' expected near 'Traceback'; skipped"* ]]
    [[ $stderr == *'results.1.jsonl:3: not a result line: no "status"; skipped'* ]]
    [[ $stderr == *"results.1.jsonl:5: torn last line ("*"no newline"*"); skipped"* ]]
    [[ $stderr == *'missing id "a2" (jobs.jsonl:2, shard 1 of 3)'* ]]
    [ "$(printf '%s\n' "$output" | wc -l)" -eq 8 ]
    # what --resume does next: append the missing result; then complete
    printf '\n' >> results.1.jsonl
    result a2 ok >> results.1.jsonl
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl results.0.jsonl results.1.jsonl results.2.jsonl
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | jq -r .id | tr '\n' ' ')" = "a1 a2 a3 a4 a5 a6 a7 a8 a9 " ]
}

@test "a last line without newline that is complete JSON is kept" {
    shard 0 1 | head -c -1 > results.0.jsonl   # no final newline
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl results.0.jsonl
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | wc -l)" -eq 9 ]
}

@test "invalid job lines are not missing; their invalid results are kept in place" {
    { echo '{"id":"a1"}'; echo '{oops'; echo; echo '{"argv":["true"]}'; echo '{"id":7}'; echo '{"id":"a6"}';
      echo '{"id":"a1"}'; } > jobs2.jsonl
    # what one `fitrun run` writes for it (in completion order), plus two strays
    { result a6 ok; result a1 ok; result zz ok 2
      printf '{"id":null,"status":"invalid","error_type":"InvalidJSON","line":2}\n'
      printf '{"id":null,"status":"invalid","error_type":"MissingId","line":5}\n'
      printf '{"id":null,"status":"invalid","error_type":"MissingId","line":4}\n'
      printf '{"id":"a1","status":"invalid","error_type":"DuplicateId","line":7}\n'
      result zz ok 3; printf '{"status":"ok"}\n'; } > results.0.jsonl
    run --separate-stderr "$FITRUN" merge --jobs jobs2.jsonl results.0.jsonl
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | jq -r .line | tr '\n' ' ')" = "1 2 4 5 6 7 " ]
    [[ $stderr == *"jobs2.jsonl:2: not a job (not valid JSON: "*"); no result expected"* ]]
    [[ $stderr == *'jobs2.jsonl:4: not a job (the job has no "id"); no result expected'* ]]
    [[ $stderr == *'jobs2.jsonl:5: not a job ("id" must be a non-empty string)'* ]]
    [[ $stderr == *'jobs2.jsonl:7: id "a1" repeats line 1'* ]]
    [[ $stderr == *'results.0.jsonl:3: result for line 2 (id "zz"), but line 2 of jobs2.jsonl is not a job; dropped'* ]]
    [[ $stderr == *'results.0.jsonl:8: result for line 3 (id "zz"), but line 3 of jobs2.jsonl is no job; dropped'* ]]
    [[ $stderr == *'results.0.jsonl:9: a result with neither "line" nor a job'"'"'s "id"; skipped'* ]]
    [ "$(printf '%s\n' "$output" | jq -r 'select(.line == 2).error_type')" = InvalidJSON ]
    [[ $stderr == *"complete: 2 of 2 jobs have a result, from 1 file (1 shard, inferred from the file names); 4 results for invalid input lines kept"* ]]
    [[ $stderr != *"jobs2.jsonl:3"* ]]   # a blank line is nothing
}

@test "an unreadable result file counts as missing, not as an error" {
    shard 0 2 > results.0.jsonl
    run --separate-stderr "$FITRUN" merge --jobs jobs.jsonl results.0.jsonl results.1.jsonl
    [ "$status" -eq 1 ]
    [[ $stderr == *"cannot open results.1.jsonl: No such file or directory; its jobs count as missing"* ]]
    [[ $stderr == *'missing id "a2" (jobs.jsonl:2, shard 1 of 2)'* ]]
}

@test "jobs from stdin" {
    shard 0 1 > results.0.jsonl
    run --separate-stderr bash -c "\"$FITRUN\" merge --jobs - results.0.jsonl < jobs.jsonl"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | wc -l)" -eq 9 ]
}

@test "usage errors exit 125" {
    run "$FITRUN" merge results.0.jsonl
    [ "$status" -eq 125 ]
    [[ $output == *"--jobs FILE is required"* ]]
    run "$FITRUN" merge --jobs jobs.jsonl
    [ "$status" -eq 125 ]
    [[ $output == *"no result files given"* ]]
    run "$FITRUN" merge --jobs jobs.jsonl --shards 0 r.jsonl
    [ "$status" -eq 125 ]
    [[ $output == *"--shards '0': expected a whole number from 1 to 1000000000"* ]]
    run "$FITRUN" merge --jobs jobs.jsonl --shards 1000000001 r.jsonl
    [ "$status" -eq 125 ]
    run "$FITRUN" merge --jobs nope.jsonl results.0.jsonl
    [ "$status" -eq 125 ]
    [[ $output == *"cannot open jobs file nope.jsonl: No such file or directory"* ]]
    run "$FITRUN" merge --help
    [ "$status" -eq 0 ]
    [[ $output == *"usage: fitrun merge"* ]]
}

@test "a full stdout is an error (125), not a silent short merge" {
    shard 0 1 > results.0.jsonl
    run bash -c "\"$FITRUN\" merge --jobs jobs.jsonl results.0.jsonl > /dev/full"
    [ "$status" -eq 125 ]
    [[ $output == *"writing the merged results"* ]]
}
