# proc_common.bash — signalling a test's processes by pid without ever
# hitting another process. A pid names a process only until that process
# is reaped; then the kernel hands it out again (pid_max is 32768 on many
# machines, and a fork-heavy run wraps it within minutes), possibly to a
# neighbour in the same cgroup: another test's fitrun run. So a pid kept
# for teardown is kept with its process's start time and signalled only
# while it still names that process.

# proc_start PID: the start time of process PID (field 22 of
# /proc/PID/stat, clock ticks after boot); nothing when there is none.
proc_start() {
    local stat
    stat=$(cat /proc/"$1"/stat 2> /dev/null) || return 0
    stat=${stat##*) } # the command name may hold spaces and ')'
    # shellcheck disable=SC2086 # the fields, split on purpose
    set -- $stat
    echo "${20}"
}

# proc_id PID: "PID:START", what proc_is and proc_kill check.
proc_id() {
    echo "$1:$(proc_start "$1")"
}

# proc_is ID: does ID's pid still name the process ID was taken of?
proc_is() {
    local pid=${1%%:*} start=${1#*:}
    [ -n "$start" ] && [ "$(proc_start "$pid")" = "$start" ]
}

# proc_kill SIG ID...: send SIG to each process an ID still names.
proc_kill() {
    local sig=$1 id
    shift
    for id in "$@"; do
        proc_is "$id" && kill -"$sig" "${id%%:*}" 2> /dev/null
    done
    return 0
}

# proc_runs PID CMD...: is PID a process whose command line is exactly
# CMD... (for pids a test's jobs wrote down, whose start time is unknown)?
proc_runs() {
    local pid=$1 want got
    shift
    want=$(printf '%s\n' "$@")
    got=$(tr '\0' '\n' < /proc/"$pid"/cmdline 2> /dev/null) || return 1
    [ "$got" = "$want" ]
}
