#!/usr/bin/env bats
# detect.bats — `fitrun detect` as a command: options, exit statuses,
# the table, the documented JSON keys, overrides and planning options.
# (Fixture-by-fixture results: detect_fixtures.bats; real cgroups:
# detect_cgroups.bats.)

bats_require_minimum_version 1.5.0

FIXTURES=$FITRUN_SRC/tests/fixtures
PY=/usr/bin/python3

j() {
    "$PY" -c 'import json,sys; j=json.loads(sys.stdin.read()); print(eval(sys.argv[1]))' "$1" <<<"$output"
}

# fx NAME [options...]: detect --json on a fixture with only its env file.
fx() {
    local name=$1 vars=()
    shift
    [ -f "$FIXTURES/$name/env" ] && mapfile -t vars < "$FIXTURES/$name/env"
    env -i "${vars[@]}" "$FITRUN" detect --json --sysroot "$FIXTURES/$name" "$@"
}

@test "--help prints usage and exits 0" {
    run "$FITRUN" detect --help
    [ "$status" -eq 0 ]
    [[ "$output" == usage:\ fitrun\ detect* ]]
    [[ "$output" == *--memory-per-worker* ]]
}

@test "bad options exit 125 with a message naming the option" {
    for args in "--cpus" "--sysroot /nonexistent-fitrun" "--bogus" "extra" "-x"; do
        run "$FITRUN" detect $args
        [ "$status" -eq 125 ] || { echo "status $status for: $args"; false; }
        opt=${args%% *}
        [[ "$output" == "fitrun: detect: "*"$opt"* ]] || { echo "message for '$args': $output"; false; }
    done
    # The profile's options: the message every command gives (run_limits.bats).
    for args in "--cpus x" "--cpus 0" "--cpus -1" "--rounding up" "--workers 0" "--workers 1.5" \
                "--memory-per-worker 5Q" "--memory-per-worker 0.5"; do
        run "$FITRUN" detect $args
        [ "$status" -eq 125 ] || { echo "status $status for: $args"; false; }
        [[ "$output" == "fitrun: $args: bad "* ]] || { echo "message for '$args': $output"; false; }
    done
}

@test "--sysroot on a file is refused" {
    run "$FITRUN" detect --sysroot "$FIXTURES/v1-host/README"
    [ "$status" -eq 125 ]
    [[ "$output" == *"not a directory"* ]]
}

@test "live --json has every documented key with the right type" {
    run "$FITRUN" detect --json
    [ "$status" -eq 0 ]
    JSON=$output "$PY" -c '
import json, os
j = json.loads(os.environ["JSON"])
num, i, s, b, n = (int, float), int, str, bool, type(None)
spec = {
    "cgroup": {"version": (i,), "hybrid": (b,)},
    "cpu": {"online": (i,), "affinity": (i,), "quota": num + (n,), "quota_source": (s, n), "scheduler": num + (n,),
            "scheduler_source": (s, n), "override": num + (n,), "effective": num},
    "memory": {"total": (i,), "limit": (i, n), "limit_source": (s, n)},
    "pids": {"limit": (i, n), "current": (i, n)},
    "shm": {"path": (s,), "size": (i, n), "free": (i, n)},
    "plan": {"workers": (i,), "rounding": (s,), "reasons": (list,)},
}
for sec, keys in spec.items():
    for k, types in keys.items():
        v = j[sec][k]
        assert isinstance(v, types) and not (isinstance(v, bool) and bool not in types), f"{sec}.{k} = {v!r}"
assert j["cgroup"]["version"] in (0, 1, 2)
assert j["shm"]["path"] == "/dev/shm"
assert j["plan"]["rounding"] == "floor"
assert j["plan"]["workers"] >= 1 and all(isinstance(r, str) and r for r in j["plan"]["reasons"])
assert 1 <= j["cpu"]["affinity"] <= j["cpu"]["online"]
assert 0 < j["cpu"]["effective"] <= j["cpu"]["affinity"]
assert j["memory"]["total"] > 0
assert j["shm"]["size"] > 0 and j["shm"]["free"] is not None  # live: statvfs
assert isinstance(j["notes"], list)
'
}

@test "live affinity matches nproc and the machine" {
    run "$FITRUN" detect --json
    [ "$(j 'j["cpu"]["affinity"]')" = "$(nproc)" ]
    [ "$(j 'j["cpu"]["affinity_source"]')" = sched_getaffinity ]
    # taskset narrows sched_getaffinity: detection must see it.
    command -v taskset >/dev/null || skip "no taskset"
    run taskset -c 0 "$FITRUN" detect --json
    [ "$(j 'j["cpu"]["affinity"]')" = 1 ]
    [ "$(j 'j["cpu"]["affinity_list"]')" = 0 ]
    [ "$(j 'j["plan"]["workers"]')" = 1 ]
}

@test "the table shows each value with its source" {
    run env -i "$FITRUN" detect --sysroot "$FIXTURES/docker-v1-cpus-1.5"
    [ "$status" -eq 0 ]
    [[ "$output" == *"quota       1.5                          /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us"* ]]
    [[ "$output" == *"affinity    4 [0-3]                      /proc/self/status"* ]]
    [[ "$output" == *"size        64.0 MiB (67108864)          /proc/self/mountinfo (/dev/shm size=65536k)"* ]]
    [[ "$output" == *"plan        1 worker x 1 thread (rounding floor)"* ]]
    [[ "$output" == *"  - floor(1.5) = 1 -> 1 worker"* ]]
}

@test "the table lists the notes on what was ignored" {
    run env -i "$FITRUN" detect --sysroot "$FIXTURES/garbage"
    [ "$status" -eq 0 ]
    [[ "$output" == *"notes (what was ignored, and why)"* ]]
    [[ "$output" == *"/sys/fs/cgroup/batch/job/cpu.max: quota is neither 'max' nor a positive whole number: ignored"* ]]
}

@test "--cpus lowers the effective CPUs and is reported" {
    run fx host-256 --cpus 3.5
    [ "$(j 'j["cpu"]["override"]')" = 3.5 ]
    [ "$(j 'j["cpu"]["override_source"]')" = --cpus ]
    [ "$(j 'j["cpu"]["detected"]')" = 256.0 ]
    [ "$(j 'j["cpu"]["effective"]')" = 3.5 ]
    [ "$(j 'j["plan"]["workers"]')" = 3 ]
}

@test "FITRUN_CPUS works like --cpus, and --cpus wins over it" {
    run env -i FITRUN_CPUS=2 "$FITRUN" detect --json --sysroot "$FIXTURES/host-256"
    [ "$(j 'j["cpu"]["override_source"]')" = FITRUN_CPUS=2 ]
    [ "$(j 'j["cpu"]["effective"]')" = 2.0 ]
    run env -i FITRUN_CPUS=2 "$FITRUN" detect --json --cpus 5 --sysroot "$FIXTURES/host-256"
    [ "$(j 'j["cpu"]["override_source"]')" = --cpus ]
    [ "$(j 'j["cpu"]["effective"]')" = 5.0 ]
    [ "$(j 'any("FITRUN_CPUS=2 ignored: --cpus given" in x for x in j["notes"])')" = True ]
}

@test "an override above what was detected wins, and the note says so" {
    run fx docker-v2-cgroupns-cpus-0.5 --cpus 4
    [ "$(j 'j["cpu"]["detected"]')" = 0.5 ]
    [ "$(j 'j["cpu"]["effective"]')" = 4.0 ]
    [ "$(j 'j["cpu"]["override_source"]')" = --cpus ]
    [ "$(j 'j["plan"]["workers"]')" = 4 ]
    [ "$(j '"--cpus 4 exceeds the 0.5 CPUs detected (quota); using 4 as asked" in j["notes"]')" = True ]
    [ "$(j 'j["plan"]["reasons"][0].startswith("effective 4 CPUs: override from --cpus, replacing the detected 0.5")')" = True ]
    # FITRUN_CPUS too (the user's: no outer fitrun recorded it).
    run env -i FITRUN_CPUS=3 "$FITRUN" detect --json --sysroot "$FIXTURES/docker-v2-cgroupns-cpus-0.5"
    [ "$(j 'j["cpu"]["effective"]')" = 3.0 ]
    [ "$(j '"FITRUN_CPUS=3 exceeds the 0.5 CPUs detected (quota); using 3 as asked" in j["notes"]')" = True ]
    # Below what was detected: no note, the override is simply the answer.
    run fx host-256 --cpus 2
    [ "$(j 'j["cpu"]["effective"]')" = 2.0 ]
    [ "$(j 'any("exceeds" in x for x in j["notes"])')" = False ]
}

@test "FITRUN_CPUS exported by an outer fitrun is not an override: detection runs again" {
    # What `fitrun -- fitrun run` (the Docker image) hands the inner fitrun.
    run env -i FITRUN_CPUS=1.5 "FITRUN_EXPORTED=OMP_NUM_THREADS=1 FITRUN_CPUS=1.5 FITRUN_WORKERS=1" \
        "$FITRUN" detect --json --sysroot "$FIXTURES/docker-v1-cpus-1.5"
    [ "$(j 'j["cpu"]["override"]')" = None ]
    [ "$(j 'j["cpu"]["effective"]')" = 1.5 ]
    [ "$(j 'j["cpu"]["outer"]')" = 1.5 ]
    # The real source is named, not the outer fitrun's copy of it.
    [ "$(j 'j["plan"]["reasons"][0].endswith("quota from /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us")')" = True ]
    [ "$(j 'any(x.startswith("FITRUN_CPUS=1.5 was exported by an outer fitrun: detecting again") for x in j["notes"])')" = True ]
    # An outer value above the detected one does not raise it...
    run env -i FITRUN_CPUS=8 FITRUN_EXPORTED=FITRUN_CPUS=8 "$FITRUN" detect --json --sysroot "$FIXTURES/docker-v1-cpus-1.5"
    [ "$(j 'j["cpu"]["effective"]')" = 1.5 ]
    # ...and one below it (a pool job's share) stays a bound for a nested fitrun.
    run env -i FITRUN_CPUS=1 FITRUN_EXPORTED=FITRUN_CPUS=1 "$FITRUN" detect --json --sysroot "$FIXTURES/host-256"
    [ "$(j 'j["cpu"]["effective"]')" = 1.0 ]
    [ "$(j 'j["cpu"]["override"]')" = None ]
    [ "$(j 'j["cpu"]["outer_source"]')" = "FITRUN_CPUS=1 (exported by an outer fitrun)" ]
    # A value the user changed after the outer fitrun exported it is the user's.
    run env -i FITRUN_CPUS=4 FITRUN_EXPORTED=FITRUN_CPUS=1 "$FITRUN" detect --json --sysroot "$FIXTURES/host-256"
    [ "$(j 'j["cpu"]["override_source"]')" = FITRUN_CPUS=4 ]
    [ "$(j 'j["cpu"]["effective"]')" = 4.0 ]
}

@test "the scheduler allocation wins over a big visible machine" {
    run fx htcondor
    [ "$(j 'j["cpu"]["affinity"]')" = 256 ]
    [ "$(j 'j["cpu"]["scheduler"]')" = 8.0 ]
    [ "$(j 'j["plan"]["workers"]')" = 8 ]
    # A relative ad path is read from the current directory, not the sysroot.
    cd "$FIXTURES/htcondor/var/lib/condor/execute/dir_31337"
    run env -i _CONDOR_MACHINE_AD=.machine.ad "$FITRUN" detect --json --sysroot "$FIXTURES/host-256"
    [ "$(j 'j["cpu"]["scheduler_source"]')" = "_CONDOR_MACHINE_AD=.machine.ad (Cpus)" ]
    [ "$(j 'j["cpu"]["effective"]')" = 8.0 ]
}

@test "scheduler variables: SLURM, SGE, PBS, LSF, first one wins" {
    for v in SLURM_CPUS_PER_TASK=6 NSLOTS=6 PBS_NP=6 NCPUS=6 LSB_DJOB_NUMPROC=6; do
        run env -i "$v" "$FITRUN" detect --json --sysroot "$FIXTURES/host-256"
        [ "$(j 'j["cpu"]["scheduler"]')" = 6.0 ] || { echo "$v: $output"; false; }
        [ "$(j 'j["cpu"]["scheduler_source"]')" = "$v" ]
    done
    run env -i SLURM_CPUS_PER_TASK=3 NSLOTS=7 "$FITRUN" detect --json --sysroot "$FIXTURES/host-256"
    [ "$(j 'j["cpu"]["scheduler"]')" = 3.0 ]
    [ "$(j 'any(x.startswith("NSLOTS=7 also set: ignored") for x in j["notes"])')" = True ]
}

@test "without --profile the plan uses the built-in profile (512M per worker), like run and the wrapper" {
    run fx garbage
    [ "$(j 'j["profile"]')" = "{'path': None, 'runtime': 'exec'}" ]
    [ "$(j 'j["plan"]["memory_per_worker"]')" = 536870912 ]
    [ "$(j 'j["cpu"]["effective"]')" = 2.0 ]
    [ "$(j 'j["plan"]["workers"]')" = 1 ]   # 256 MiB holds less than one 512 MiB worker
    [ "$(j 'any("holds less than one worker of 512.0 MiB" in r for r in j["plan"]["reasons"])')" = True ]
    run fx garbage --memory-per-worker 128M
    [ "$(j 'j["plan"]["workers"]')" = 2 ]
    # 0 and none mean what they mean in a profile: do not size by memory
    for v in 0 none; do
        run fx garbage --memory-per-worker $v
        [ "$(j 'j["plan"]["memory_per_worker"]')" = None ]
        [ "$(j 'j["plan"]["workers"]')" = 2 ]
    done
}

@test "--rounding, --memory-per-worker and --workers reach the plan" {
    run fx docker-v1-cpus-1.5 --rounding ceil
    [ "$(j 'j["plan"]["workers"]')" = 2 ]
    [ "$(j 'j["plan"]["rounding"]')" = ceil ]
    run fx systemd-slice --memory-per-worker 2G
    [ "$(j 'j["plan"]["workers"]')" = 1 ]   # 3 GiB / 2 GiB
    [ "$(j 'j["plan"]["threads_per_worker"]')" = 2 ]
    [ "$(j 'j["plan"]["memory_per_worker"]')" = 2147483648 ]
    run fx k8s-nested-v2 --workers 6
    [ "$(j 'j["plan"]["workers"]')" = 6 ]
    [ "$(j 'j["plan"]["workers_override"]')" = 6 ]
    [ "$(j 'any("--workers 6 overrides the computed 1" in r for r in j["plan"]["reasons"])')" = True ]
    [ "$(j 'any("oversubscribed" in r for r in j["plan"]["reasons"])')" = True ]
}

@test "stdout is only the JSON; nothing on stderr" {
    run --separate-stderr "$FITRUN" detect --json
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    "$PY" -c 'import json,sys; json.loads(sys.stdin.read())' <<<"$output"
}
