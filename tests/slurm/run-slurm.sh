#!/usr/bin/env bash
# run-slurm.sh — fitrun scaled out on a real SLURM cluster (single node,
# ../shared/tools/slurm-single-node: slurmctld + slurmd + munge, cpuset
# cgroups). Label: system.
#
#   1. `fitrun submit slurm --shards 3 --cpus-per-task 1 --submit` on the
#      job set; wait; `fitrun merge` -> complete, and the merged outcomes
#      (id, status, passed) equal one local `fitrun run` of the same jobs
#      and profile;
#   2. every task ran 1 worker (its allocation is 1 CPU): the worker slots
#      in its results and the plan logged in its stderr file;
#   3. shard 1's results deleted -> merge lists its ids as missing, shard 1,
#      exit 1 -> `sbatch --array=1 SCRIPT` -> merge complete and equal;
#   4. shard 2's last result torn (a killed writer) -> merge reports it and
#      the job missing -> `sbatch --array=2` (--resume) completes it without
#      running anything twice;
#   5. --cpus-per-task 2: each task plans 2 workers.
#
# Jobs: the bundled ARC sample with the python runtime when it is in the
# tree (samples/arc/jobs.jsonl, profiles/arc-python.ini), else exec jobs
# with tests/slurm/exec.ini. FITRUN_SLURM_SAMPLE=exec|arc forces one.
set -euo pipefail

FITRUN=${FITRUN:?FITRUN must point at the fitrun binary}
FITRUN=$(readlink -f "$FITRUN")
SRC=${FITRUN_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
SHARED=${FITRUN_SHARED:-$SRC/../shared}
TOOL=$SHARED/tools/slurm-single-node
HERE=$(cd "$(dirname "$0")" && pwd)

say() { printf '== %s\n' "$*" >&2; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

if [ "$(id -u)" != 0 ]; then say "SKIP: needs root (SLURM daemons, cgroups)"; exit 0; fi
[ -x "$TOOL" ] || fail "$TOOL not found"
command -v jq >/dev/null || fail "jq is needed (scripts/dev installs it)"

W=$(mktemp -d /tmp/fitrun-test-shard-slurm.XXXXXX)
chmod 755 "$W"
# A cluster of our own (base dir, ports), so that nothing else using the
# tool at the same time is disturbed, nor disturbs us.
export SLURM_TEST_BASE=$W/cluster
free_port() {
    local p
    for p in $(seq "$1" "$(($1 + 200))"); do
        ss -ltnH "sport = :$p" | grep -q . || { echo "$p"; return; }
    done
    fail "no free TCP port from $1"
}
export SLURM_TEST_CTLD_PORT=$(free_port 16817)
export SLURM_TEST_SLURMD_PORT=$(free_port $((SLURM_TEST_CTLD_PORT + 1)))

cleanup() {
    local rc=$?
    "$TOOL" stop >&2 || rc=1
    if [ $rc != 0 ] && [ -d "$W/out" ]; then
        say "task logs:"
        tail -n 30 "$W"/out*/*.err >&2 2>/dev/null || true
    fi
    rm -rf "$W"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting the single-node SLURM cluster in $SLURM_TEST_BASE"
"$TOOL" start >&2
eval "$("$TOOL" env)"

# The job set ---------------------------------------------------------------
SAMPLE=${FITRUN_SLURM_SAMPLE:-auto}
if [ "$SAMPLE" = auto ]; then
    if [ -f "$SRC/samples/arc/jobs.jsonl" ] && [ -f "$SRC/profiles/arc-python.ini" ]; then SAMPLE=arc; else SAMPLE=exec; fi
fi
if [ "$SAMPLE" = arc ]; then
    JOBS=$SRC/samples/arc/jobs.jsonl
    PROFILE=$SRC/profiles/arc-python.ini
else
    JOBS=$W/jobs.jsonl
    PROFILE=$HERE/exec.ini
    # 21 exec jobs, a few of each outcome; sleeps make workers overlap.
    for i in $(seq 1 21); do
        case $((i % 7)) in
        0) printf '{"id":"ok-%d","argv":["/bin/sh","-c","sleep 0.1; echo %d"]}\n' "$i" "$i" ;;
        1) printf '{"id":"err-%d","argv":["/bin/sh","-c","exit 3"]}\n' "$i" ;;
        2) printf '{"id":"spin-%d","argv":["/bin/sh","-c","while :; do :; done"]}\n' "$i" ;;
        3) printf '{"id":"segv-%d","argv":["/bin/sh","-c","kill -SEGV $$"]}\n' "$i" ;;
        4) printf '{"id":"flood-%d","argv":["/bin/head","-c","1000000","/dev/zero"]}\n' "$i" ;;
        5) printf '{"id":"stdin-%d","argv":["/bin/cat"],"stdin":"hello %d"}\n' "$i" "$i" ;;
        6) printf 'not a job, line %d\n' "$i" ;;
        esac
    done > "$JOBS"
fi
say "sample: $SAMPLE ($(wc -l < "$JOBS") lines of $JOBS, profile $PROFILE)"

# outcomes FILE: one {id,status,passed} per line, by input line
outcomes() { jq -c '{line, id, status, passed}' "$1" | jq -sc 'sort_by(.line)[]'; }

say "reference: one local fitrun run"
rc=0
"$FITRUN" run --profile "$PROFILE" --jobs "$JOBS" --out "$W/local.jsonl" --progress none 2> "$W/local.err" || rc=$?
[ $rc = 0 ] || [ $rc = 1 ] || { cat "$W/local.err" >&2; fail "local fitrun run exited $rc"; }
outcomes "$W/local.jsonl" > "$W/local.outcomes"
[ -s "$W/local.outcomes" ] || fail "the local run wrote no results"
# `passed` only for predictions that ran to their end (ok, error): the
# outcomes compared below mean the same thing in every shard.
bad=$(jq -r 'select(.status != "ok" and .status != "error" and .passed != null) | .id' "$W/local.jsonl")
[ -z "$bad" ] || fail "passed reported for results that did not run to their end: $bad"

# merge_to OUT_DIR SHARDS DEST: merged results; returns merge's status
merge_to() {
    local rc=0
    "$FITRUN" merge --jobs "$JOBS" --shards "$2" "$1"/results.*.jsonl > "$3" 2> "$3.err" || rc=$?
    return $rc
}

# wait_job ID: until every task left the queue; each must have exited 0, or
# 1 (`fitrun run` says so when its shard holds invalid input lines, which
# SLURM shows as FAILED exit=1:0); never a signal, time limit or other code.
wait_job() {
    local out rc=0
    out=$("$TOOL" wait "$1" 300) || rc=$?
    printf '%s\n' "$out" >&2
    [ -n "$out" ] || fail "no state for job $1"
    if grep -Ev ' (COMPLETED exit=0:0|FAILED exit=1:0)$' <<<"$out" | grep -q .; then
        fail "job $1: a task ended otherwise than fitrun run's exit 0 or 1"
    fi
    [ $rc = 0 ] || grep -q 'exit=1:0' <<<"$out" || fail "waiting for job $1 failed"
}

# run_array OUT_DIR SHARDS CPUS: submit with fitrun, wait; prints the job id
run_array() {
    local out=$1 shards=$2 cpus=$3 id
    mkdir -p "$out"
    id=$("$FITRUN" submit slurm --profile "$PROFILE" --jobs "$JOBS" --shards "$shards" --cpus-per-task "$cpus" \
        --time 10 --out-dir "$out" --submit) || fail "fitrun submit slurm --submit failed"
    [[ $id =~ ^[0-9]+$ ]] || fail "fitrun submit printed '$id', not a job id"
    wait_job "$id"
    echo "$id"
}

# 1. three shards, one CPU each ---------------------------------------------------
OUT=$W/out
say "fitrun submit slurm: 3 shards, --cpus-per-task 1"
# The printed script is what --submit writes and runs.
"$FITRUN" submit slurm --profile "$PROFILE" --jobs "$JOBS" --shards 3 --cpus-per-task 1 --time 10 \
    --out-dir "$W" > "$W/printed.sbatch"
grep -qx '#SBATCH --array=0-2' "$W/printed.sbatch" || fail "no --array=0-2 in the script"
grep -qx '#SBATCH --cpus-per-task=1' "$W/printed.sbatch" || fail "no --cpus-per-task=1 in the script"
JOB=$(run_array "$OUT" 3 1)
SCRIPT=$OUT/fitrun.sbatch
for k in 0 1 2; do [ -f "$OUT/results.$k.jsonl" ] || fail "shard $k wrote no results.$k.jsonl"; done
merge_to "$OUT" 3 "$W/merged.jsonl" || { cat "$W/merged.jsonl.err" >&2; fail "merge of a complete run exited non-zero"; }
outcomes "$W/merged.jsonl" > "$W/merged.outcomes"
diff -u "$W/local.outcomes" "$W/merged.outcomes" >&2 || fail "merged outcomes differ from the local run"
say "merged = local: $(wc -l < "$W/merged.outcomes") results ($(jq -r .status "$W/merged.jsonl" | sort | uniq -c | tr -s ' \n' ' '))"

# 2. each task: 1 worker ------------------------------------------------------------
for k in 0 1 2; do
    slots=$(jq -r 'select(.worker != null) | .worker' "$OUT/results.$k.jsonl" | sort -u | tr '\n' ' ')
    [ "$slots" = "0 " ] || fail "shard $k used worker slots '$slots' on a 1-CPU allocation"
    err=$OUT/fitrun-${JOB}_$k.err
    [ -f "$err" ] || fail "no stderr file $err for task $k"
    grep -Eq 'plan: 1 worker([^s0-9]|$)' "$err" || { cat "$err" >&2; fail "task $k did not plan 1 worker"; }
    n=$(jq -s length "$OUT/results.$k.jsonl")
    want=$(awk -v k=$k 'NF && (NR - 1) % 3 == k' "$JOBS" | wc -l)
    [ "$n" = "$want" ] || fail "shard $k has $n results for its $want non-blank input lines"
done
say "each task ran 1 worker (slots and the logged plan)"

# 3. a lost shard: reported by shard, rerun alone -----------------------------------
rm "$OUT/results.1.jsonl"
rc=0
merge_to "$OUT" 3 "$W/partial.jsonl" || rc=$?
[ $rc = 1 ] || fail "merge with shard 1 deleted exited $rc, not 1"
lost=$(jq -r 'select(.status != "invalid" and (.line - 1) % 3 == 1) | .id' "$W/local.jsonl" | sort)
for id in $lost; do
    grep -qF "missing id $(jq -cn --arg i "$id" '$i') (" "$W/partial.jsonl.err" ||
        fail "merge did not list $id as missing"
done
grep -q 'shard 1 of 3)' "$W/partial.jsonl.err" || fail "missing ids not attributed to shard 1 of 3"
grep -q 'shard [02] of 3)' "$W/partial.jsonl.err" && fail "merge blamed another shard"
grep -q 'rerun shard(s) 1 with --resume' "$W/partial.jsonl.err" || fail "no rerun hint for shard 1"
say "merge reported $(echo $lost | wc -w) missing ids in shard 1; rerunning array index 1"
id=$(sbatch --parsable --array=1 "$SCRIPT")
wait_job "${id%%;*}"
merge_to "$OUT" 3 "$W/merged2.jsonl" || { cat "$W/merged2.jsonl.err" >&2; fail "merge after the rerun is incomplete"; }
outcomes "$W/merged2.jsonl" | diff -u "$W/local.outcomes" - >&2 || fail "outcomes after the rerun differ"
say "after sbatch --array=1: complete and equal to the local run"

# 4. a torn last line: --resume of that one shard completes it -----------------------------
f=$OUT/results.2.jsonl
before=$(wc -l < "$f")
torn=$(tail -n 1 "$f" | jq -r .id)
head -c -20 "$f" > "$f.tmp" && mv "$f.tmp" "$f"     # the writer killed mid-line
rc=0
merge_to "$OUT" 3 "$W/torn.jsonl" || rc=$?
[ $rc = 1 ] || fail "merge with a torn line exited $rc, not 1"
grep -q "results.2.jsonl:$before: torn last line" "$W/torn.jsonl.err" || fail "torn line not reported with file:line"
id=$(sbatch --parsable --array=2 "$SCRIPT")
wait_job "${id%%;*}"
[ "$(wc -l < "$f")" = "$before" ] || fail "after --resume shard 2 has $(wc -l < "$f") lines, not $before"
[ "$(jq -r .id "$f" | grep -cxF "$torn")" = 1 ] || fail "$torn is not in results.2.jsonl exactly once"
merge_to "$OUT" 3 "$W/merged3.jsonl" || { cat "$W/merged3.jsonl.err" >&2; fail "merge after resuming shard 2 is incomplete"; }
outcomes "$W/merged3.jsonl" | diff -u "$W/local.outcomes" - >&2 || fail "outcomes after resuming shard 2 differ"
say "torn line in shard 2: reported, then completed by sbatch --array=2 (--resume), nothing run twice"

# 5. two CPUs per task: two workers ----------------------------------------------------------
OUT2=$W/out2
JOB2=$(run_array "$OUT2" 2 2)
for k in 0 1; do
    err=$OUT2/fitrun-${JOB2}_$k.err
    grep -Eq 'plan: 2 workers' "$err" || { cat "$err" >&2; fail "task $k with -c 2 did not plan 2 workers"; }
done
merge_to "$OUT2" 2 "$W/merged-c2.jsonl" || fail "merge of the -c 2 run is incomplete"
outcomes "$W/merged-c2.jsonl" | diff -u "$W/local.outcomes" - >&2 || fail "-c 2 outcomes differ"
say "with --cpus-per-task 2 each task planned 2 workers; outcomes equal"
say "PASS"
