#!/usr/bin/env bats
# fitrun run: INI profiles (file:line errors, exit 125), command-line
# overrides, bad options, the plan line, --workers.

load run_common

setup() {
    run_setup
    job a echo a > jobs.jsonl
}
teardown() { run_teardown; }

# bad_profile LINE MESSAGE: my.ini (already written) is refused, nothing runs
bad_profile() {
    run -125 --separate-stderr "$FITRUN" run --profile my.ini --jobs jobs.jsonl --out out.jsonl
    [ "$stderr" = "fitrun: my.ini:$1: $2" ] || [[ $stderr == "fitrun: my.ini:$1: $2"* ]]
    [ ! -s out.jsonl ]
}

@test "profile errors name the file and the line, and exit 125" {
    printf '[sandbox]\npreset = exec\ncpu_tme = 2s\n' > my.ini
    bad_profile 3 "unknown key 'cpu_tme' in [sandbox]"
    printf '[resources]\nworkers = 2\n\n[sandbx]\n' > my.ini
    bad_profile 4 "unknown section [sandbx]"
    printf '[sandbox]\nwall_time = 10 secs\n' > my.ini
    bad_profile 2 "bad duration '10 secs' for wall_time"
    printf '; a comment\n[sandbox]\nmemory = 512X\n' > my.ini
    bad_profile 3 "bad size '512X' for memory"
    printf '[sandbox]\nallow = read, sockett\n' > my.ini
    bad_profile 2 "unknown syscall 'sockett' in allow"
    printf '[resources]\nrounding = sideways\n' > my.ini
    bad_profile 2 "bad value 'sideways' for rounding"
    printf '[runtime]\nkind = perl\n' > my.ini
    bad_profile 2 "bad value 'perl' for kind"
    printf '[env]\nA-B = 1\n' > my.ini
    bad_profile 2 "bad variable name 'A-B' in [env]"
    printf '[sandbox]\ncpu_time\n' > my.ini
    bad_profile 2 "syntax error"
}

@test "mistakes seen only once every key is known still name the file and the line" {
    # Checked after the command line's options: each names where its key was set.
    printf '[sandbox]\nallow = socket\ndeny = socket\n' > my.ini
    run -125 --separate-stderr "$FITRUN" run --profile my.ini --jobs jobs.jsonl --out out.jsonl
    [[ $stderr == "fitrun: "*"/my.ini:3: [sandbox] deny: syscall 'socket' is in both allow and deny" ]] || { echo "$stderr"; false; }
    printf '[sandbox]\npreset = exec\nread = /nonexistent/fitrun-test\n' > my.ini
    run -125 --separate-stderr "$FITRUN" run --profile my.ini --jobs jobs.jsonl --out out.jsonl
    [[ $stderr == "fitrun: "*"/my.ini:3: [sandbox] read: read path '/nonexistent/fitrun-test': No such file or directory" ]] || { echo "$stderr"; false; }
    run -0 "$FITRUN" run --profile my.ini --jobs jobs.jsonl --out out.jsonl --quiet --set sandbox.read=
    rm -f out.jsonl
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --set sandbox.write=/nonexistent/fitrun-test
    [[ $stderr == *"fitrun: the command line: [sandbox] write: write path '/nonexistent/fitrun-test': No such file or directory" ]] || { echo "$stderr"; false; }
    printf '[runtime]\nkind = python\nisolation = reuse\n[sandbox]\nallow = clone\n' > my.ini
    run -125 --separate-stderr "$FITRUN" run --profile my.ini --jobs jobs.jsonl --out out.jsonl
    [[ $stderr == *"/my.ini:3: [runtime] isolation = reuse cannot be combined with [sandbox] allow = clone ("*"/my.ini:5)"* ]] || { echo "$stderr"; false; }
    [ ! -s out.jsonl ]
}

@test "a missing profile is an error naming it" {
    run -125 --separate-stderr "$FITRUN" run --profile nope.ini --jobs jobs.jsonl
    [[ $stderr == *"cannot read profile nope.ini: No such file or directory"* ]]
}

@test "profiles/default.ini runs, and says what the built-in defaults are" {
    run -0 "$FITRUN" run --profile "$FITRUN_SRC/profiles/default.ini" --jobs jobs.jsonl --out a.jsonl --quiet
    run -0 "$FITRUN" run --jobs jobs.jsonl --out b.jsonl --quiet
    [ "$(jq -c '[.id, .status, .stdout]' a.jsonl)" = "$(jq -c '[.id, .status, .stdout]' b.jsonl)" ]
}

@test "command-line options override the profile" {
    printf '[sandbox]\ncpu_time = 20s\nwall_time = 20s\n' > my.ini
    job burn sh -c 'while :; do :; done' > burn.jsonl
    run -0 "$FITRUN" run --profile my.ini --jobs burn.jsonl --out out.jsonl --quiet --cpu-time 200ms
    [ "$(field out.jsonl burn timeout)" = cpu ]
    [ "$(field out.jsonl burn cpu_ms)" -lt 5000 ]
    run -0 "$FITRUN" run --profile my.ini --jobs burn.jsonl --out out.jsonl --quiet --set sandbox.cpu_time=200ms
    [ "$(field out.jsonl burn timeout)" = cpu ]
    run -0 "$FITRUN" run --profile my.ini --jobs burn.jsonl --out out.jsonl --quiet --set sandbox.wall_time=300ms
    [ "$(field out.jsonl burn timeout)" = wall ]
}

@test "bad options: exit 125 with a message" {
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --cpu-time 2parsecs
    [[ $stderr == *"--cpu-time 2parsecs: bad duration"* ]]
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --set sandbox.cpu_tme=1s
    [[ $stderr == *"--set sandbox.cpu_tme=1s: unknown key 'cpu_tme' in [sandbox]"* ]]
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --set nodot=1
    [[ $stderr == *"expected SECTION.KEY=VALUE"* ]]
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --workers 0
    [[ $stderr == *"--workers 0: bad value '0' for workers"* ]]
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl --progress loud
    [[ $stderr == *"--progress 'loud'"* ]]
    run -125 --separate-stderr "$FITRUN" run --frobnicate
    [[ $stderr == *"--frobnicate"* ]]
    run -125 --separate-stderr "$FITRUN" run --jobs missing.jsonl
    [[ $stderr == *"cannot open jobs file missing.jsonl: No such file or directory"* ]]
    run -125 --separate-stderr "$FITRUN" run --jobs jobs.jsonl extra-arg
    [[ $stderr == *"unexpected argument 'extra-arg'"* ]]
    run -0 "$FITRUN" run --help
    [[ $output == *"usage: fitrun run"* ]]
}

@test "the plan is logged at start; --workers overrides it and sets the worker fields" {
    for i in $(seq 1 12); do job "w$i" sleep 0.1; done > many.jsonl
    run -0 --separate-stderr "$FITRUN" run --jobs many.jsonl --out out.jsonl --workers 3
    [[ ${stderr_lines[0]} == "fitrun: plan: 3 workers"* ]]
    [ "$(jq -r .worker out.jsonl | sort -u | tr '\n' ' ')" = "0 1 2 " ]
    [[ $stderr == *"with 3 workers"* ]]
}

@test "kind = python fails before any job when the runtime cannot start" {
    printf '[runtime]\nkind = python\ninterpreter = /nonexistent/python3\n' > py.ini
    jq -cn '{id: "p", code: "def transform(x): return x", inputs: [1]}' > py.jsonl
    run -125 --separate-stderr "$FITRUN" run --profile py.ini --jobs py.jsonl --out out.jsonl
    [[ $stderr == *"python runtime"* ]]
    [ ! -s out.jsonl ]
}
