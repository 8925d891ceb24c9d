#!/usr/bin/env bats
# detect_fixtures.bats — `fitrun detect --json --sysroot tests/fixtures/<case>`
# must print exactly tests/fixtures/<case>/expected.json (compared as JSON,
# every key and value, notes and plan reasons included). The environment is
# the fixture's `env` file and nothing else (env -i), so a scheduler
# variable of the machine running the tests cannot leak in.
# Each fixture's README says what it models and which values are expected.

FIXTURES=$FITRUN_SRC/tests/fixtures

# detect_fixture NAME [extra fitrun options...]
detect_fixture() {
    local name=$1 vars=()
    shift
    [ -f "$FIXTURES/$name/env" ] && mapfile -t vars < "$FIXTURES/$name/env"
    env -i "${vars[@]}" "$FITRUN" detect --json --sysroot "$FIXTURES/$name" "$@"
}

# same_json FILE: compare $output to FILE, printing the differing keys.
same_json() {
    JSON=$output /usr/bin/python3 -c '
import json, os, sys
got, want = json.loads(os.environ["JSON"]), json.load(open(sys.argv[1]))
def diff(a, b, path):
    if type(a) != type(b) or (not isinstance(a, (dict, list)) and a != b):
        print("%s: got %r, want %r" % (path or ".", a, b))
        return 1
    if isinstance(a, dict):
        return sum(diff(a.get(k), b.get(k), f"{path}.{k}") for k in sorted(set(a) | set(b)))
    if isinstance(a, list):
        return sum(diff(a[i] if i < len(a) else None, b[i] if i < len(b) else None, f"{path}[{i}]")
                   for i in range(max(len(a), len(b))))
    return 0
sys.exit(1 if diff(got, want, "") else 0)
' "$1"
}

check_fixture() {
    run detect_fixture "$1"
    [ "$status" -eq 0 ]
    same_json "$FIXTURES/$1/expected.json"
}

@test "fixture v1-host" { check_fixture v1-host; }
@test "fixture hybrid-host" { check_fixture hybrid-host; }
@test "fixture v2-host" { check_fixture v2-host; }
@test "fixture docker-v1-cpus-1.5" { check_fixture docker-v1-cpus-1.5; }
@test "fixture docker-v2-cgroupns-cpus-0.5" { check_fixture docker-v2-cgroupns-cpus-0.5; }
@test "fixture k8s-nested-v2" { check_fixture k8s-nested-v2; }
@test "fixture systemd-slice" { check_fixture systemd-slice; }
@test "fixture slurm-cpuset" { check_fixture slurm-cpuset; }
@test "fixture htcondor" { check_fixture htcondor; }
@test "fixture escaped-paths" { check_fixture escaped-paths; }
@test "fixture missing" { check_fixture missing; }
@test "fixture garbage" { check_fixture garbage; }
@test "fixture host-256" { check_fixture host-256; }
@test "fixture cgroupns-dotdot" { check_fixture cgroupns-dotdot; }
@test "fixture bind-leaf-hidden" { check_fixture bind-leaf-hidden; }

@test "every fixture directory is listed in this file" {
    for d in "$FIXTURES"/*/; do
        name=$(basename "$d")
        grep -q "check_fixture $name;" "$BATS_TEST_FILENAME" || { echo "fixture $name not tested here"; false; }
        [ -f "$d/README" ] || { echo "fixture $name has no README"; false; }
    done
}

@test "the comparison fails on a changed value" {
    run detect_fixture k8s-nested-v2
    output=${output/\"quota\": 1.0/\"quota\": 2.0}
    run same_json "$FIXTURES/k8s-nested-v2/expected.json"
    [ "$status" -eq 1 ]
    [[ "$output" == *".cpu.quota: got 2.0, want 1.0"* ]]
}
