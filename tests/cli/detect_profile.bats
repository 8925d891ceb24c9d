#!/usr/bin/env bats
# detect_profile.bats — `fitrun detect --profile FILE`: the profile's
# [resources] reach the plan exactly as in `fitrun run`, its cpus rank
# below --cpus and FITRUN_CPUS, profile errors exit 125 with file:line, and
# a python profile's interpreter is started once and its start-up reported
# (table and "python" key), with the slow-start warning past 1 s.

bats_require_minimum_version 1.5.0

FIXTURES=$FITRUN_SRC/tests/fixtures
PY=/usr/bin/python3

j() {
    "$PY" -c 'import json,sys; j=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1" <<<"$output"
}

# fx NAME [options...]: detect --json on a fixture, empty environment.
fx() {
    local name=$1
    shift
    env -i "$FITRUN" detect --json --sysroot "$FIXTURES/$name" "$@"
}

setup() {
    P=$BATS_TEST_TMPDIR
}

@test "an exec profile's [resources] reach the plan, and it is named" {
    cat >"$P/exec.ini" <<'EOF'
[resources]
cpus = auto
workers = auto
memory_per_worker = 2G
rounding = ceil
EOF
    run -0 fx systemd-slice --profile "$P/exec.ini"
    [ "$(j 'j["profile"]["path"]')" = "$P/exec.ini" ]
    [ "$(j 'j["profile"]["runtime"]')" = exec ]
    [ "$(j 'j["plan"]["rounding"]')" = ceil ]
    [ "$(j 'j["plan"]["memory_per_worker"]')" = 2147483648 ]
    [ "$(j 'j["plan"]["workers"]')" = 1 ]      # ceil(2.5) = 3, then 3 GiB / 2 GiB = 1
    [ "$(j '"python" in j')" = False ]         # no interpreter for an exec runtime
    # Options on the command line win over the profile.
    run -0 fx systemd-slice --profile "$P/exec.ini" --memory-per-worker 1G --rounding floor
    [ "$(j 'j["plan"]["workers"]')" = 2 ]
    [ "$(j 'j["plan"]["memory_per_worker"]')" = 1073741824 ]
    printf '[resources]\nworkers = 5\n' >"$P/w.ini"
    run -0 fx systemd-slice --profile "$P/w.ini"
    [ "$(j 'j["plan"]["workers"]')" = 5 ]
    [ "$(j 'j["plan"]["workers_override"]')" = 5 ]
    run -0 fx systemd-slice --profile "$P/w.ini" --workers 3
    [ "$(j 'j["plan"]["workers"]')" = 3 ]
}

@test "the table names the profile" {
    printf '[resources]\nrounding = nearest\n' >"$P/t.ini"
    run -0 env -i "$FITRUN" detect --sysroot "$FIXTURES/systemd-slice" --profile "$P/t.ini"
    [[ "$output" == *"profile"*"  file        $P/t.ini"*"  runtime     exec"* ]]
    [[ "$output" == *"(rounding nearest)"* ]]
    run -0 env -i "$FITRUN" detect --sysroot "$FIXTURES/systemd-slice"
    [[ "$output" == *"  file        built-in defaults (profiles/default.ini)"* ]]
}

@test "a profile's cpus overrides detection; FITRUN_CPUS and then --cpus beat it" {
    printf '[resources]\ncpus = 3\n' >"$P/c.ini"
    run -0 fx docker-v2-cgroupns-cpus-0.5 --profile "$P/c.ini"
    [ "$(j 'j["cpu"]["override_source"]')" = "profile $P/c.ini:2" ]
    [ "$(j 'j["cpu"]["effective"]')" = 3.0 ]
    [ "$(j 'j["plan"]["workers"]')" = 3 ]
    [ "$(j '"cpus = 3 (profile '"$P"'/c.ini:2) exceeds the 0.5 CPUs detected (quota); using 3 as asked" in j["notes"]')" = True ]
    run -0 env -i FITRUN_CPUS=2 "$FITRUN" detect --json --sysroot "$FIXTURES/docker-v2-cgroupns-cpus-0.5" --profile "$P/c.ini"
    [ "$(j 'j["cpu"]["override_source"]')" = FITRUN_CPUS=2 ]
    [ "$(j 'j["cpu"]["effective"]')" = 2.0 ]
    [ "$(j '"cpus = 3 (profile '"$P"'/c.ini:2) ignored: FITRUN_CPUS=2 given" in j["notes"]')" = True ]
    run -0 env -i FITRUN_CPUS=2 "$FITRUN" detect --json --sysroot "$FIXTURES/docker-v2-cgroupns-cpus-0.5" --profile "$P/c.ini" --cpus 1
    [ "$(j 'j["cpu"]["override_source"]')" = --cpus ]
    [ "$(j 'j["cpu"]["effective"]')" = 1.0 ]
    [ "$(j '"FITRUN_CPUS=2 ignored: --cpus given" in j["notes"]')" = True ]
}

@test "profile errors exit 125 with file:line, and print no report" {
    printf '[resources]\nworkers = 2\n[sandbox]\ncpu_tme = 1s\n' >"$P/bad.ini"
    run --separate-stderr "$FITRUN" detect --json --profile "$P/bad.ini"
    [ "$status" -eq 125 ]
    [ -z "$output" ]
    [[ "$stderr" == *"$P/bad.ini:4: unknown key 'cpu_tme' in [sandbox]"* ]]
    run --separate-stderr "$FITRUN" detect --profile "$P/missing.ini"
    [ "$status" -eq 125 ]
    [[ "$stderr" == *"cannot read profile $P/missing.ini: No such file or directory"* ]]
    run "$FITRUN" detect --profile
    [ "$status" -eq 125 ]
    [[ "$output" == "fitrun: detect: option '--profile' needs a value"* ]]
}

python_profile() { # NAME PRELUDE-SOURCE
    printf '%s\n' "$2" >"$P/$1.py"
    cat >"$P/$1.ini" <<EOF
[sandbox]
preset = python
[runtime]
kind = python
interpreter = /usr/bin/python3
prelude = $1.py
EOF
}

@test "a python profile: the interpreter starts once and the start-up is reported" {
    python_profile fast 'import json'
    run -0 --separate-stderr "$FITRUN" detect --json --profile "$P/fast.ini"
    [ "$(j 'j["profile"]["runtime"]')" = python ]
    [ "$(j 'j["python"]["interpreter"]')" = /usr/bin/python3 ]
    [ "$(j 'j["python"]["prelude"]')" = "$P/fast.py" ]
    [[ "$(j 'j["python"]["python"]')" == 3.* ]]
    [ "$(j 'isinstance(j["python"]["total_ms"], int) and j["python"]["total_ms"] > 0')" = True ]
    [ "$(j 'all(isinstance(j["python"][k], (int, float)) for k in ("boot_ms", "prelude_ms", "selftest_ms"))')" = True ]
    # Whatever the machine's load: the parts never exceed the whole by much.
    [ "$(j 'j["python"]["prelude_ms"] <= j["python"]["total_ms"] + 1')" = True ]
    [ "$(j '"error" in j["python"]')" = False ]
    run -0 "$FITRUN" detect --profile "$P/fast.ini"
    [[ "$output" == *"python start-up"*"  interpreter /usr/bin/python3"*"  version     3."*"  total       "*" ms (interpreter "*" ms, prelude "*" ms, sandbox self-test "*" ms)"* ]]
    # Nothing of the interpreter is left behind.
    run pgrep -f "$P/fast.py"
    [ "$status" -eq 1 ]
}

@test "a slow python start-up (> 1 s) is warned about, with the usual cause" {
    python_profile slow 'import time; time.sleep(1.2)'
    run -0 --separate-stderr "$FITRUN" detect --json --profile "$P/slow.ini"
    [ "$(j 'j["python"]["total_ms"] >= 1200')" = True ]
    [ "$(j 'j["python"]["prelude_ms"] >= 1000')" = True ]
    [[ "$(j 'j["python"]["warning"]')" == "python start-up took "*" s, most of it importing the prelude's modules: "*"local disk"* ]]
    [[ "$stderr" == *"fitrun: python start-up took "* ]]
    run -0 "$FITRUN" detect --profile "$P/slow.ini"
    [[ "$output" == *"  warning     python start-up took "* ]]
}

@test "a python runtime that cannot start: the report says why, exit 125" {
    python_profile broken 'import fitrun_no_such_module'
    run --separate-stderr "$FITRUN" detect --json --profile "$P/broken.ini"
    [ "$status" -eq 125 ]
    [[ "$(j 'j["python"]["error"]')" == *"ModuleNotFoundError"*"fitrun_no_such_module"* ]]
    [[ "$stderr" == *"fitrun: detect: $P/broken.ini: the python runtime cannot start: "*"ModuleNotFoundError"* ]]
    [ "$(j 'j["plan"]["workers"] >= 1')" = True ]   # the rest of the report is there
    sed -i 's|^interpreter = .*|interpreter = /nonexistent/python3|' "$P/broken.ini"
    run --separate-stderr "$FITRUN" detect --profile "$P/broken.ini"
    [ "$status" -eq 125 ]
    [[ "$output" == *"  error       python interpreter /nonexistent/python3: No such file or directory"* ]]
}
