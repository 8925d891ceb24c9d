# run_common.bash — shared by tests/cli/run*.bats (load run_common).
# Every test gets a fresh directory $D (removed afterwards) and runs real
# commands through `fitrun run`.

bats_require_minimum_version 1.5.0 # run -N, --separate-stderr

FITRUN=${FITRUN:-$BATS_TEST_DIRNAME/../../build/fitrun}
FITRUN_BUILD=${FITRUN_BUILD:-$(dirname "$FITRUN")}
FITRUN_SRC=${FITRUN_SRC:-$BATS_TEST_DIRNAME/../..}
HELPERS=$FITRUN_BUILD/tests/helpers

run_setup() {
    D=$(mktemp -d /tmp/fitrun-test-pool-bats.XXXXXX)
    cd "$D"
}

run_teardown() {
    cd /
    rm -rf "$D"
}

# job ID ARG... — one exec job line on stdout (arguments JSON-quoted by jq;
# none may contain a newline).
job() {
    local id=$1
    shift
    printf '%s\n' "$@" | jq -cRn --arg id "$id" '{id: $id, argv: [inputs]}'
}

# field FILE ID KEY — KEY of the result for ID (jq -r; "null" when null).
field() {
    jq -r --arg id "$2" "select(.id == \$id) | .$3" "$1"
}

# count FILE ID — how many results FILE has for ID.
count() {
    jq -r --arg id "$2" 'select(.id == $id) | .id' "$1" | wc -l
}

# alive PID... — succeed if any of the pids is a live (non-zombie) process.
alive() {
    local p st
    for p in "$@"; do
        st=$(ps -o stat= -p "$p" 2>/dev/null) || continue
        [[ $st == Z* ]] || return 0
    done
    return 1
}

# wait_for: see poll_common.bash
load poll_common
load proc_common
