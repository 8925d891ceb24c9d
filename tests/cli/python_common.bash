# python_common.bash — shared by tests/cli/python_{run,hostile,reuse}.bats
# (load python_common): a python profile, job lines, running $D/jobs.jsonl.
# Each file sets D (its test's directory) in setup.

bats_require_minimum_version 1.5.0 # run -N, --separate-stderr

# python_profile FILE WORKERS WALL_TIME MEMORY [EXTRA INI LINES for [runtime]]:
# the python preset, 1 s of CPU, 64K of output, /usr/bin/python3 with
# prelude.py (beside FILE) and transform as the entry.
python_profile() {
    local f=$1 workers=$2 wall=$3 memory=$4
    shift 4
    cat > "$f" <<INI
[resources]
workers = $workers
[sandbox]
preset = python
cpu_time = 1s
wall_time = $wall
memory = $memory
output = 64K
[runtime]
kind = python
interpreter = /usr/bin/python3
prelude = prelude.py
entry = transform
INI
    # FITRUN_TEST_ISOLATION=reuse: the same tests against a reused process
    # (tests/CMakeLists.txt runs python_hostile.bats so as well).
    [ -z "${FITRUN_TEST_ISOLATION:-}" ] || printf 'isolation = %s\n' "$FITRUN_TEST_ISOLATION" >> "$f"
    printf '%s\n' "$@" >> "$f"
}

# under_reuse: these tests run with FITRUN_TEST_ISOLATION=reuse
under_reuse() {
    [ "${FITRUN_TEST_ISOLATION:-}" = reuse ]
}

# job ID CODE [INPUTS_JSON [EXTRA_JSON_FIELDS]]: one job line; the inputs
# default to $JOB_INPUTS, else one 1x1 grid.
job() {
    jq -cn --arg id "$1" --arg code "$2" --argjson inputs "${3:-${JOB_INPUTS:-[[[1]]]}}" \
        "{id: \$id, code: \$code, inputs: \$inputs}${4:+ + $4}"
}

# run_jobs [fitrun run options...]: run $D/jobs.jsonl with $D/p.ini,
# results in $D/out.jsonl
run_jobs() {
    run --separate-stderr "$FITRUN" run --profile "$D/p.ini" --jobs "$D/jobs.jsonl" --out "$D/out.jsonl" --progress none "$@"
}
