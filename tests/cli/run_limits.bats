#!/usr/bin/env bats
# Sizes and durations on the command line and in profiles: whole bytes, at
# most 1 EiB and 365 days, checked before anything runs (125, file:line for
# profiles); and one meaning of 0/none for every limit (docs/run.md,
# "Limits and timeouts").

load run_common

setup() {
    run_setup
    job a echo a > jobs.jsonl
}
teardown() { run_teardown; }

# refused OPTION VALUE TEXT: `fitrun run OPTION VALUE` exits 125 before
# running anything, with TEXT in the message.
refused() {
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out out.jsonl "$1" "$2"
    [[ $stderr == *"$1 $2: "*"$3"* ]]
    [ ! -s out.jsonl ]
}

@test "durations up to 365 days run jobs normally (597h is past 2^31 ms)" {
    for t in 597h 8760h 31536000; do
        run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --wall-time "$t" --cpu-time "$t"
        [ "$(field out.jsonl a status)" = ok ]
        [ "$(field out.jsonl a stdout)" = a ]
    done
}

@test "durations past 365 days are refused, never wrapped into instant timeouts" {
    refused --cpu-time 18446744073710ms "longer than the maximum, 365 days (8760h)"
    refused --cpu-time 99999999999999s "longer than the maximum"
    refused --wall-time 8761h "longer than the maximum"
    refused --wall-time 1e3s "bad duration"
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --set sandbox.wall_time=525601m
    [[ $stderr == *"--set sandbox.wall_time=525601m: bad duration '525601m' for wall_time: longer than the maximum"* ]]
}

@test "sizes are whole bytes: 0.5 and 1.3K are refused, 1.5K is 1536" {
    refused --memory 0.5 "bad size '0.5' for memory: not a whole number of bytes"
    refused --memory 1.3K "not a whole number of bytes"
    refused --memory 1048577T "larger than the maximum, 1 EiB"
    printf '[sandbox]\n\nmemory = 0.5\n' > my.ini
    run -125 --separate-stderr "$FITRUN" run --profile my.ini --jobs jobs.jsonl
    [ "$stderr" = "fitrun: my.ini:3: bad size '0.5' for memory: not a whole number of bytes (examples: 512M, 2G, 64k, none)" ]
    job big head -c 1600 /dev/zero > big.jsonl
    run -0 "$FITRUN" run --jobs big.jsonl --out out.jsonl --quiet --output 1.5K
    [ "$(field out.jsonl big status)" = output_limit ]
    [ "$(jq -r '.stdout | length' out.jsonl)" -eq 1536 ]
}

@test "0, none and unlimited mean the same: no limit" {
    job lim cat /proc/self/limits > lim.jsonl
    for v in 0 none unlimited; do
        # /proc is outside what exec jobs may read (Landlock): this job needs it.
        run -0 "$FITRUN" run --jobs lim.jsonl --out out.jsonl --quiet --memory "$v" --cpu-time "$v" \
            --set sandbox.read=/proc
        [ "$(field out.jsonl lim status)" = ok ]
        field out.jsonl lim stdout | grep -E '^Max address space +unlimited'
        field out.jsonl lim stdout | grep -E '^Max cpu time +unlimited'
    done
}

@test "output cannot be switched off: 0, none and unlimited are refused alike" {
    for v in 0 none unlimited 0K; do
        refused --output "$v" "output cannot be switched off (none, unlimited and 0 all mean no limit)"
    done
    printf '[sandbox]\nresult = 0\n' > my.ini
    run -125 --separate-stderr "$FITRUN" run --profile my.ini --jobs jobs.jsonl
    [[ $stderr == "fitrun: my.ini:2: bad size '0' for result: result cannot be switched off"* ]]
}

@test "the other commands check sizes and durations the same way" {
    run -125 --separate-stderr "$FITRUN" --grace 8761h -- true
    [[ $stderr == *"--grace"* ]]
    run -125 --separate-stderr "$FITRUN" detect --memory-per-worker 0.5
    [[ $stderr == *"--memory-per-worker 0.5: bad size '0.5'"* ]]
    run -125 --separate-stderr "$FITRUN" --shm-threshold 1.3K -- true
    [[ $stderr == *"--shm-threshold"* ]]
}

@test "--cpus is checked once: run, detect and the wrapper refuse a bad value with the same message" {
    for v in 99999 8192.5 0 -1 x 1e400 nan ''; do
        run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --cpus "$v"
        local from_run=$stderr
        [[ $from_run == "fitrun: --cpus $v: bad value '$v' for cpus (auto, or a number above 0 and at most 8192"* ]]
        run -125 --separate-stderr "$FITRUN" --cpus "$v" -- true
        [ "$stderr" = "$from_run" ] || { echo "wrapper: $stderr"; false; }
        run -125 --separate-stderr "$FITRUN" detect --cpus "$v"
        [ "$stderr" = "$from_run" ] || { echo "detect: $stderr"; false; }
    done
    # The limit itself is accepted by all three.
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --cpus 8192 --workers 1
    run -0 "$FITRUN" --cpus 8192 -- true
    run -0 "$FITRUN" detect --cpus 8192
    # So are the other options run and detect share: one rule, one message.
    for args in "--workers 0" "--workers 4097" "--memory-per-worker 0.5" "--rounding up"; do
        run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl $args
        local from_run=$stderr
        run -125 --separate-stderr "$FITRUN" detect $args
        [ "$stderr" = "$from_run" ] || { echo "detect $args: $stderr; run: $from_run"; false; }
    done
}
