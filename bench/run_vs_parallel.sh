#!/usr/bin/env bash
# bench/run_vs_parallel.sh — the same exec jobs through `fitrun run` and
# through the usual shell tools with a per-job `timeout`: GNU parallel and
# xargs -P. Prints wall time per tool and the ratio tool/fitrun (> 1 means
# fitrun is faster). Not a test: numbers depend on the machine and its load.
#
#   bench/run_vs_parallel.sh [FITRUN] [N_TINY] [N_CPU] [WORKERS] [REPEAT]
#
# Each tool runs REPEAT times (default 3), interleaved with the others, and
# the best time counts: on a shared machine the minimum is the measurement
# least disturbed by other load.
#
# Workloads (each job is one argv, identical for every tool):
#   tiny  N_TINY x `echo i`                    start-up and bookkeeping cost
#   cpu   N_CPU  x a ~20 ms shell arithmetic loop  real work, 2 workers busy
# fitrun runs twice: with the default exec sandbox (seccomp + rlimits +
# relay per job, output captured into JSON results) and with preset none
# (rlimits only), so the sandbox's own cost is visible. Peers get the same
# per-job timeout (10 s) and worker count; parallel also captures output
# (--group), xargs does not.
set -euo pipefail
FITRUN=${1:-$(dirname "$0")/../build/fitrun}
N_TINY=${2:-2000}
N_CPU=${3:-200}
W=${4:-2}
R=${5:-3}
command -v parallel > /dev/null || { echo "GNU parallel is not installed (apt-get install parallel)" >&2; exit 1; }
[ -x "$FITRUN" ] || { echo "no fitrun binary at $FITRUN" >&2; exit 1; }
T=$(mktemp -d /tmp/fitrun-bench-run.XXXXXX)
trap 'rm -rf "$T"' EXIT

LOOP='i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo $i'

# jobs for fitrun (JSONL) and for the shell tools (one command per line,
# already quoted for sh) — the same argv either way.
# xargs takes `timeout 10` as its command and the line as arguments;
# parallel runs each line as a whole command (given a command, it would
# quote the line into one word).
for i in $(seq 1 "$N_TINY"); do
    printf '{"id":"t%d","argv":["echo","%d"]}\n' "$i" "$i"
    printf 'echo %d\n' "$i" >&3
done > "$T/tiny.jsonl" 3> "$T/tiny.cmds"
for i in $(seq 1 "$N_CPU"); do
    printf '{"id":"c%d","argv":["sh","-c","%s"]}\n' "$i" "$LOOP"
    printf "sh -c '%s'\n" "$LOOP" >&3
done > "$T/cpu.jsonl" 3> "$T/cpu.cmds"
for w in tiny cpu; do sed 's/^/timeout 10 /' "$T/$w.cmds" > "$T/$w.pcmds"; done

# secs CMD...: wall seconds of CMD (stdout to $T/stdout, stderr discarded)
secs() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" > "$T/stdout" 2> /dev/null || true
    t1=$(date +%s%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}

fitrun_sandbox() { "$FITRUN" run --jobs "$1" --out "$T/out.jsonl" --workers "$W" --quiet --wall-time 10s --cpu-time 10s; }
fitrun_none() {
    "$FITRUN" run --jobs "$1" --out "$T/out.jsonl" --workers "$W" --quiet --wall-time 10s --cpu-time 10s \
        --preset none --set sandbox.processes=none
}
gnu_parallel() { parallel -j "$W" --group < "${1%.cmds}.pcmds"; }
xargs_p() { xargs -P "$W" -L 1 timeout 10 < "$1"; }

row() { # row NAME SECS BASE
    printf '  %-34s %8.3f s   %6.2fx\n' "$1" "$2" "$(awk -v a="$2" -v b="$3" 'BEGIN { print a / b }')"
}

TOOLS=(fitrun_sandbox fitrun_none gnu_parallel xargs_p)
declare -A NAME=([fitrun_sandbox]="fitrun run (exec sandbox)" [fitrun_none]="fitrun run (preset none)"
                 [gnu_parallel]="GNU parallel -j$W + timeout" [xargs_p]="xargs -P$W + timeout")

echo "machine: $(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "workers: $W; per-job timeout 10 s; best of $R; ratio = tool time / fitrun (exec sandbox) time"
for w in tiny cpu; do
    n=$([ $w = tiny ] && echo "$N_TINY" || echo "$N_CPU")
    echo "workload $w ($n jobs):"
    declare -A best=()
    for ((r = 0; r < R; r++)); do
        for t in "${TOOLS[@]}"; do
            input=$T/$w.cmds
            [[ $t == fitrun_* ]] && input=$T/$w.jsonl
            s=$(secs "$t" "$input")
            # every tool must really have run every job (one line each)
            got=$(wc -l < "$T/stdout")
            [[ $t == fitrun_* ]] && got=$(jq -r 'select(.status == "ok") | .id' "$T/out.jsonl" | wc -l)
            if [ "$got" -ne "$n" ]; then
                echo "$t: $got jobs done, not $n" >&2
                exit 1
            fi
            if [ -z "${best[$t]:-}" ] || awk -v a="$s" -v b="${best[$t]}" 'BEGIN { exit !(a < b) }'; then
                best[$t]=$s
            fi
        done
    done
    for t in "${TOOLS[@]}"; do row "${NAME[$t]}" "${best[$t]}" "${best[fitrun_sandbox]}"; done
    unset best
done
