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

# json_string S — S as a JSON string literal, in $JSON_STRING (no
# subshell). Printable ASCII is quoted here; anything else (control
# characters, bytes above 127) by jq, which costs ~25 ms a call on a
# slow machine: suites make hundreds of job lines.
json_string() {
    local LC_ALL=C s=$1
    if [[ $s == *[^\ -~]* ]]; then
        JSON_STRING=$(jq -Rn --arg s "$s" '$s')
        return
    fi
    s=${s//\\/\\\\}
    JSON_STRING="\"${s//\"/\\\"}\""
}

# job ID ARG... — one exec job line on stdout, as jq -c writes it
# (none of the arguments may contain a newline).
job() {
    local line sep=
    json_string "$1"
    line="{\"id\":$JSON_STRING,\"argv\":["
    shift
    for a in "$@"; do
        json_string "$a"
        line+="$sep$JSON_STRING"
        sep=,
    done
    printf '%s]}\n' "$line"
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
