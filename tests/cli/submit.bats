#!/usr/bin/env bats
# fitrun submit slurm|condor: the printed job scripts (absolute paths,
# resources from the profile), option errors, and --submit's handling of
# sbatch. The real SLURM round trip is tests/slurm/run-slurm.sh.

bats_require_minimum_version 1.5.0

setup() {
    FITRUN=${FITRUN:-$BATS_TEST_DIRNAME/../../build/fitrun}
    EXE=$(readlink -f "$FITRUN")
    D=$(mktemp -d /tmp/fitrun-test-shard-bats.XXXXXX)
    cd "$D"
    mkdir out
    printf '{"id":"j1","argv":["true"]}\n' > jobs.jsonl
    printf '[resources]\nmemory_per_worker = 256M\n' > p.ini
    printf '[resources]\nmemory_per_worker = 256M\nworkers = 3\n' > fixed.ini
}

teardown() {
    cd /
    rm -rf "$D"
}

@test "slurm: a ready array script with absolute paths and the profile's memory x CPUs" {
    run --separate-stderr "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl --shards 4 \
        --cpus-per-task 2 --out-dir out
    [ "$status" -eq 0 ]
    [ -z "$stderr" ]
    [[ $output == "#!/bin/bash"* ]]
    grep -qx '#SBATCH --array=0-3' <<<"$output"
    grep -qx '#SBATCH --cpus-per-task=2' <<<"$output"
    grep -qx '#SBATCH --mem=512M' <<<"$output"
    grep -qx '# memory: profile memory_per_worker 256.0 MiB x 2 worker(s) (one per CPU)' <<<"$output"
    grep -qx "#SBATCH --chdir=$D" <<<"$output"
    grep -qx "#SBATCH --output=$D/out/fitrun-%A_%a.out" <<<"$output"
    grep -qx "#SBATCH --error=$D/out/fitrun-%A_%a.err" <<<"$output"
    grep -qx 'export FITRUN_SHARD_COUNT=4' <<<"$output"
    grep -qx "exec $EXE run --profile $D/p.ini --jobs $D/jobs.jsonl --shard auto --out '$D/out/results.{shard}.jsonl' --resume" <<<"$output"
    ! grep -q -- '--time\|--partition' <<<"$(grep '^#SBATCH' <<<"$output")" || false # a bare '! cmd' never fails a bats test
    bash -n <(printf '%s\n' "$output")
}

@test "slurm: a profile with a fixed worker count sizes memory by it; --mem, --time, --partition" {
    run --separate-stderr "$FITRUN" submit slurm --profile fixed.ini --jobs jobs.jsonl --shards 2 --cpus-per-task 1
    [ "$status" -eq 0 ]
    grep -qx '#SBATCH --mem=768M' <<<"$output"
    grep -qx "#SBATCH --output=$D/fitrun-%A_%a.out" <<<"$output"   # default out dir: here
    run --separate-stderr "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl --shards 2 --cpus-per-task 8 \
        --mem 30G --time 2h --partition short --job-name arc
    [ "$status" -eq 0 ]
    grep -qx '#SBATCH --mem=30G' <<<"$output"
    grep -qx '# memory: --mem 30G' <<<"$output"
    grep -qx '#SBATCH --time=2:00:00' <<<"$output"
    grep -qx '#SBATCH --partition=short' <<<"$output"
    grep -qx '#SBATCH --job-name=arc' <<<"$output"
    grep -qx "#SBATCH --output=$D/arc-%A_%a.out" <<<"$output"
}

@test "condor: submit description with --shard \$(Process)/N and queue N" {
    run --separate-stderr "$FITRUN" submit condor --profile p.ini --jobs jobs.jsonl --shards 5 \
        --cpus-per-task 8 --out-dir out --time 1-0
    [ "$status" -eq 0 ]
    grep -qx "executable     = $EXE" <<<"$output"
    grep -qx "arguments      = \"run --profile $D/p.ini --jobs $D/jobs.jsonl --shard \$(Process)/5 --out $D/out/results.{shard}.jsonl --resume\"" <<<"$output"
    grep -qx 'request_cpus   = 8' <<<"$output"
    grep -qx 'request_memory = 2048' <<<"$output"
    grep -qx 'allowed_execute_duration = 86400' <<<"$output"
    grep -qx "output         = $D/out/fitrun-\$(Cluster)_\$(Process).out" <<<"$output"
    grep -qx "error          = $D/out/fitrun-\$(Cluster)_\$(Process).err" <<<"$output"
    grep -qx "log            = $D/out/fitrun-\$(Cluster).log" <<<"$output"
    [ "$(printf '%s\n' "$output" | tail -n 1)" = "queue 5" ]
}

@test "a missing output directory is reported, not created, when only printing" {
    run --separate-stderr "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl --shards 2 --cpus-per-task 1 \
        --out-dir later/run1
    [ "$status" -eq 0 ]
    [[ $stderr == *"$D/later/run1 does not exist yet: create it before submitting"* ]]
    grep -qx "#SBATCH --output=$D/later/run1/fitrun-%A_%a.out" <<<"$output"
    [ ! -e later ]
}

@test "usage and input errors exit 125 with the reason" {
    run "$FITRUN" submit slurm --profile p.ini --shards 2 --cpus-per-task 1
    [ "$status" -eq 125 ]
    [[ $output == *"--jobs is required"* ]]
    run "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl --cpus-per-task 1
    [ "$status" -eq 125 ]
    [[ $output == *"--shards is required"* ]]
    run "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl --shards 2
    [ "$status" -eq 125 ]
    [[ $output == *"--cpus-per-task is required"* ]]
    run "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl --shards 0 --cpus-per-task 1
    [ "$status" -eq 125 ]
    [[ $output == *"--shards '0': expected a whole number from 1 to 1000000"* ]]
    run "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl --shards 1000001 --cpus-per-task 1
    [ "$status" -eq 125 ]
    [[ $output == *"--shards '1000001': expected a whole number from 1 to 1000000"* ]]
    run "$FITRUN" submit slurm --profile nope.ini --jobs jobs.jsonl --shards 2 --cpus-per-task 1
    [ "$status" -eq 125 ]
    [[ $output == *"--profile 'nope.ini': No such file or directory"* ]]
    printf '[resources]\nworkers = many\n' > bad.ini
    run "$FITRUN" submit slurm --profile bad.ini --jobs jobs.jsonl --shards 2 --cpus-per-task 1
    [ "$status" -eq 125 ]
    [[ $output == *"bad.ini:2: "*"workers"* ]]
    run "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl --shards 2 --cpus-per-task 1 --time 1.5
    [ "$status" -eq 125 ]
    [[ $output == *"--time '1.5'"* ]]
    run "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl --shards 2 --cpus-per-task 1 --mem lots
    [ "$status" -eq 125 ]
    [[ $output == *"--mem 'lots'"* ]]
    run "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl --shards 2 --cpus-per-task 1 --partition 'a b'
    [ "$status" -eq 125 ]
    [[ $output == *"partition 'a b' contains ' '"* ]]
    run "$FITRUN" submit condor --profile p.ini --jobs jobs.jsonl --shards 2 --cpus-per-task 1 --submit
    [ "$status" -eq 125 ]
    [[ $output == *"condor_submit FILE"* ]]
    run "$FITRUN" submit pbs --profile p.ini
    [ "$status" -eq 125 ]
    [[ $output == *"unknown batch system 'pbs'"* ]]
    run "$FITRUN" submit --help
    [ "$status" -eq 0 ]
    [[ $output == *"usage: fitrun submit slurm"* ]]
}

# sbatch stand-ins: the real one is exercised by tests/slurm/run-slurm.sh;
# these pin down what fitrun does with each kind of answer.
fake_sbatch() {
    mkdir -p bin
    printf '#!/bin/sh\n%s\n' "$1" > bin/sbatch
    chmod +x bin/sbatch
}

@test "--submit writes the script next to the results, runs sbatch --parsable, prints the job id" {
    fake_sbatch 'echo "$@" > '"$D"'/sbatch.args; echo "4242;cluster"'
    run --separate-stderr env PATH="$D/bin:$PATH" "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl \
        --shards 3 --cpus-per-task 1 --out-dir new/dir --submit
    [ "$status" -eq 0 ]
    [ "$output" = 4242 ]
    [ "$(cat sbatch.args)" = "--parsable $D/new/dir/fitrun.sbatch" ]
    grep -qx '#SBATCH --array=0-2' new/dir/fitrun.sbatch
    [[ $stderr == *"rerun shard K: sbatch --array=K $D/new/dir/fitrun.sbatch"* ]]
    [[ $stderr == *"merge --jobs $D/jobs.jsonl --shards 3 $D/new/dir/results.*.jsonl"* ]]
}

@test "--submit: sbatch failing or missing is an error, never a job id" {
    fake_sbatch 'echo "sbatch: error: invalid partition" >&2; exit 1'
    run --separate-stderr env PATH="$D/bin:$PATH" "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl \
        --shards 3 --cpus-per-task 1 --out-dir out --submit
    [ "$status" -eq 125 ]
    [ -z "$output" ]
    [[ $stderr == *"invalid partition"* ]]
    [[ $stderr == *"sbatch exited with status 1; nothing was submitted"* ]]
    fake_sbatch 'echo "Submitted batch job"'
    run --separate-stderr env PATH="$D/bin:$PATH" "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl \
        --shards 3 --cpus-per-task 1 --out-dir out --submit
    [ "$status" -eq 125 ]
    [[ $stderr == *"printed no job id"* ]]
    # a script that cannot be written leaves nothing behind and runs no sbatch
    fake_sbatch 'touch '"$D"'/sbatch.ran; echo 1'
    run --separate-stderr env PATH="$D/bin:$PATH" "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl \
        --shards 3 --cpus-per-task 1 --out-dir never --job-name 'my job' --submit
    [ "$status" -eq 125 ]
    [[ $stderr == *"job name 'my job' contains ' '"* ]]
    [ ! -e never ] && [ ! -e sbatch.ran ]
    run -127 --separate-stderr env PATH=/nonexistent "$FITRUN" submit slurm --profile p.ini --jobs jobs.jsonl \
        --shards 3 --cpus-per-task 1 --out-dir out --submit
    [ "$status" -eq 127 ]
    [[ $stderr == *"cannot run sbatch"*"not in PATH"* ]]
}
