#!/usr/bin/env bash
# bench/launcher_ab.sh — two fitrun binaries on the same jobs file,
# interleaved: the launcher's own CPU per prediction (perf stat
# --no-inherit: fitrun's process alone) and, in a second run of each, the
# page faults and CPU of the whole process tree per prediction. Prints
# every run and the medians with the ratio B/A.
#
#   bench/launcher_ab.sh --profile P.ini --jobs J.jsonl [--rounds 3] A=FITRUN B=FITRUN
#
# e.g. A = a build of main, B = build/fitrun. The results of both are
# compared (id, status, passed, outputs): they must be identical.
set -euo pipefail
rounds=3 profile= jobs=
while [ $# -gt 0 ]; do
    case $1 in
    --profile) profile=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *=*) break ;;
    *) echo "launcher_ab: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$profile" ] && [ -n "$jobs" ] && [ $# -eq 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
command -v perf >/dev/null || { echo "launcher_ab: needs perf" >&2; exit 2; }
n=$(grep -c . "$jobs")
tmp=$(mktemp -d /tmp/fitrun-launcher-ab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
    for spec in "$@"; do
        name=${spec%%=*} bin=${spec#*=}
        perf stat --no-inherit -x, -e task-clock -o "$tmp/l" \
            "$bin" run --profile "$profile" --jobs "$jobs" --out "$tmp/out.$name" --quiet || true
        perf stat -x, -e task-clock,page-faults -o "$tmp/t" \
            "$bin" run --profile "$profile" --jobs "$jobs" --out "$tmp/out.$name" --quiet || true
        l=$(grep task-clock "$tmp/l" | cut -d, -f1)
        t=$(grep task-clock "$tmp/t" | cut -d, -f1)
        f=$(grep page-faults "$tmp/t" | cut -d, -f1)
        awk -v r="$r" -v name="$name" -v l="$l" -v t="$t" -v f="$f" -v n="$n" 'BEGIN {
            printf "round %s %-6s launcher %7.1f us/pred   tree %6.2f ms/pred  %6.0f faults/pred\n",
                r, name, l * 1000 / n, t / n, f / n }' | tee -a "$tmp/runs"
    done
done
/usr/bin/python3 - "$tmp" "$1" "$2" <<'PY'
import statistics, sys
tmp, a, b = sys.argv[1], sys.argv[2].split("=")[0], sys.argv[3].split("=")[0]
runs = {}
for line in open(f"{tmp}/runs"):
    w = line.split()
    runs.setdefault(w[2], []).append((float(w[4]), float(w[7]), float(w[9])))
def med(name, i):
    return statistics.median(x[i] for x in runs[name])
for i, what in ((0, "launcher us/pred"), (1, "tree CPU ms/pred"), (2, "faults/pred")):
    print(f"median {what:17} {a} {med(a, i):8.2f}  {b} {med(b, i):8.2f}  {b}/{a} {med(b, i) / med(a, i):.2f}")
PY
/usr/bin/python3 "$(dirname "$0")/same_results.py" "$tmp/out.${1%%=*}" "$tmp/out.${2%%=*}" || true
