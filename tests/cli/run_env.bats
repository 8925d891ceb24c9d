#!/usr/bin/env bats
# The environment of `fitrun run` jobs, both runtimes: scrubbed to the
# allow-list (PATH, locale, TZ, FITRUN_*, fitrun's thread and count
# variables) plus the profile's [env] and pass_env. A secret in fitrun's own
# environment must reach neither an exec job nor a Python prediction
# (os.environ and /proc/self/environ). Threads per Python prediction are a
# plan input: detect, --explain and the prediction say the same number; a
# user's own value is kept and [env] wins. The wrapper (`fitrun -- CMD`)
# keeps env(1) semantics.

load run_common

SECRET=AKIA-fitrun-test-secret

setup() {
    run_setup
    cat > py.ini <<EOF
[resources]
workers = 1
cpus = 2
[runtime]
kind = python
interpreter = /usr/bin/python3
EOF
}
teardown() { run_teardown; }

# lacks ARGS...: grep ARGS finds nothing (a bare `! grep` would not fail a
# bats test: errexit ignores negated commands).
lacks() { ! grep "$@"; }

# pyjob ID CODE: one prediction line (inputs [[[1]]]).
pyjob() { jq -cn --arg id "$1" --arg code "$2" '{id: $id, code: $code, inputs: [[[1]]]}'; }

# The prediction's environment, both views, as "os:NAME=VALUE" and "proc:NAME=VALUE" lines.
ENV_CODE='import os
def transform(g):
    proc = open("/proc/self/environ", "rb").read().decode().split("\0")
    return ["os:%s=%s" % kv for kv in sorted(os.environ.items())] + ["proc:" + e for e in proc if e]'

# py_env [fitrun run options...]: run ENV_CODE, its lines into env.txt.
# /proc is outside what a prediction may read (Landlock), and a slot's uid
# cannot open its own /proc/self/environ (a non-dumpable process's files
# there belong to root): these runs let it, as fitrun's own uid.
py_env() {
    pyjob e "$ENV_CODE" > jobs.jsonl
    run -0 "$FITRUN" run --profile py.ini --jobs jobs.jsonl --out out.jsonl --quiet \
        --set sandbox.read=/proc --set sandbox.user=root "$@"
    [ "$(field out.jsonl e status)" = ok ]
    jq -r '.outputs[0][]' out.jsonl > env.txt
}

@test "a secret in fitrun's environment does not reach an exec job" {
    job e cat /proc/self/environ > jobs.jsonl
    # /proc is outside what exec jobs may read (Landlock): this job needs it.
    run -0 env AWS_SECRET_ACCESS_KEY=$SECRET HOME=/root LC_ALL=C TZ=UTC HF_TOKEN=hf MY_A=1 \
        "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --set sandbox.pass_env='HF_TOKEN, MY_*' \
        --set sandbox.read=/proc
    field out.jsonl e stdout | tr '\0' '\n' > env.txt
    lacks -q "$SECRET" env.txt
    grep -qx 'HOME=/nonexistent' env.txt # not the caller's: a neutral one
    grep -qx 'LC_ALL=C' env.txt
    grep -qx 'TZ=UTC' env.txt
    grep -q '^PATH=' env.txt
    grep -qx 'HF_TOKEN=hf' env.txt   # pass_env NAME
    grep -qx 'MY_A=1' env.txt        # pass_env PREFIX*
    grep -qx 'FITRUN_JOB_ID=e' env.txt
    grep -qx 'FITRUN_WORKER=0' env.txt
    grep -q '^OMP_NUM_THREADS=' env.txt
    # nothing but the allow-list, fitrun's variables and pass_env
    grep -v '^$' env.txt | lacks -vE '^(PATH|HOME|LANG|LANGUAGE|LC_[A-Z_]*|TZ|FITRUN_[A-Z_]*|HF_TOKEN|MY_A|OMP_NUM_THREADS|OPENBLAS_NUM_THREADS|MKL_NUM_THREADS|NUMEXPR_NUM_THREADS|VECLIB_MAXIMUM_THREADS|BLIS_NUM_THREADS|RAYON_NUM_THREADS|GOMAXPROCS|JULIA_NUM_THREADS|LOKY_MAX_CPU_COUNT|PYTHON_CPU_COUNT|JOBLIB_TEMP_FOLDER)='
}

@test "a secret in fitrun's environment reaches neither a prediction's os.environ nor its /proc/self/environ" {
    export AWS_SECRET_ACCESS_KEY=$SECRET PYTHONPATH=/nonexistent HF_TOKEN=hf
    py_env --set sandbox.pass_env=HF_TOKEN
    lacks -q "$SECRET" env.txt
    lacks -q 'AWS_SECRET_ACCESS_KEY' env.txt
    lacks -q 'PYTHONPATH' env.txt
    grep -qx 'os:HF_TOKEN=hf' env.txt
    grep -qx 'proc:HF_TOKEN=hf' env.txt
    grep -q '^proc:PATH=' env.txt
}

@test "the wrapper keeps env(1) semantics: nothing is scrubbed" {
    run -0 env AWS_SECRET_ACCESS_KEY=$SECRET "$FITRUN" -q -- sh -c 'echo "$AWS_SECRET_ACCESS_KEY"'
    [ "$output" = "$SECRET" ]
}

@test "detect and --explain name what is scrubbed (names, never values)" {
    run -0 env AWS_SECRET_ACCESS_KEY=$SECRET "$FITRUN" detect --json --profile py.ini
    [ "$(jq -r '.env.scrubbed | index("AWS_SECRET_ACCESS_KEY") != null' <<< "$output")" = true ]
    [ "$(jq -c .env.allowed <<< "$output")" = '["PATH","LANG","LANGUAGE","LC_*","TZ","FITRUN_*"]' ]
    [[ $output != *"$SECRET"* ]]
    run -0 env AWS_SECRET_ACCESS_KEY=$SECRET HF_TOKEN=x "$FITRUN" detect --profile py.ini
    [[ $output == *"scrubbed    "*"AWS_SECRET_ACCESS_KEY"* ]]
    [[ $output != *"$SECRET"* ]]
    run -0 env AWS_SECRET_ACCESS_KEY=$SECRET "$FITRUN" --explain --profile py.ini
    [[ $output == *"# scrubbed for fitrun run jobs:"*"AWS_SECRET_ACCESS_KEY"* ]]
    [[ $output != *"$SECRET"* ]]
}

@test "threads per Python prediction: detect, --explain and the prediction agree (1 under the python preset)" {
    unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS
    run -0 "$FITRUN" detect --json --profile py.ini
    [ "$(jq .plan.threads_per_worker <<< "$output")" = 2 ]
    [ "$(jq .plan.threads_per_job <<< "$output")" = 1 ]
    [ "$(jq -r .env.threads.OMP_NUM_THREADS <<< "$output")" = 1 ]
    [[ $(jq -r '.plan.reasons[]' <<< "$output") == *"1 thread per job, not 2: the python preset refuses thread creation"* ]]
    run -0 "$FITRUN" --explain --profile py.ini
    [[ $output == *"# fitrun run jobs with this profile: 1 thread each"* ]]
    py_env
    grep -qx 'os:OMP_NUM_THREADS=1' env.txt
    grep -qx 'proc:OPENBLAS_NUM_THREADS=1' env.txt

    # thread creation given back: the worker's share, everywhere
    printf '[sandbox]\nallow = clone, clone3\nprocesses = none\n' >> py.ini
    run -0 "$FITRUN" detect --json --profile py.ini
    [ "$(jq .plan.threads_per_job <<< "$output")" = 2 ]
    run -0 "$FITRUN" --explain --profile py.ini
    [[ $output == *"# fitrun run jobs with this profile: 2 threads each"* ]]
    py_env
    grep -qx 'os:OMP_NUM_THREADS=2' env.txt
    grep -qx 'proc:OPENBLAS_NUM_THREADS=2' env.txt
}

@test "a user's own OMP_NUM_THREADS is kept in a prediction, and [env] wins over it" {
    OMP_NUM_THREADS=3 py_env
    grep -qx 'os:OMP_NUM_THREADS=3' env.txt
    grep -qx 'proc:OMP_NUM_THREADS=3' env.txt
    grep -qx 'os:OPENBLAS_NUM_THREADS=1' env.txt
    OMP_NUM_THREADS=3 py_env --set env.OMP_NUM_THREADS=4
    grep -qx 'os:OMP_NUM_THREADS=4' env.txt
    grep -qx 'proc:OMP_NUM_THREADS=4' env.txt
}

@test "[env] cannot override FITRUN_JOB_ID or FITRUN_WORKER: the runtime sets them per job" {
    job real sh -c 'echo "$FITRUN_JOB_ID $FITRUN_WORKER"' > jobs.jsonl
    run -0 "$FITRUN" run --jobs jobs.jsonl --out out.jsonl --quiet --set env.FITRUN_JOB_ID=forged \
        --set env.FITRUN_WORKER=99
    [ "$(field out.jsonl real stdout)" = "real 0" ]
}
