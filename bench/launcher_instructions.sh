#!/usr/bin/env bash
# bench/launcher_instructions.sh — the launcher's own instructions per
# prediction, counted by valgrind's callgrind: the same count for the same
# binary and jobs whatever else the machine does, so two builds compare
# exactly where CPU time (bench/launcher_ab.sh) is noise. Only fitrun's
# process is counted (--trace-children=no); its Python processes run
# natively, sandbox included. Each build runs the jobs file and its first
# SMALL lines; the difference over the difference in jobs is the cost per
# prediction without start-up. Prints both, the ratio B/A, and each
# build's functions with the most instructions of their own.
#
#   bench/launcher_instructions.sh --profile P.ini --jobs J.jsonl [--small 20] A=BUILD B=BUILD
#
# BUILD is a build directory configured with -DFITRUN_STATIC=OFF (the
# probes library below is preloaded, which a static binary ignores), e.g.
#   cmake -S . -B /tmp/dyn -DFITRUN_STATIC=OFF && cmake --build /tmp/dyn -j2
# Valgrind 3.19 lacks seccomp(2) and landlock(2): bench/valgrind_probes.c
# answers the launcher's probes of them (Landlock then counts as absent:
# its ruleset is not built, the one difference from a real run). The
# results of both builds are compared (id, status, passed, outputs).
set -euo pipefail
small=20 profile= jobs=
usage() { sed -n 2,20p "$0" >&2; exit 2; }
while [[ ${1:-} == --* ]]; do
    [[ $1 =~ ^--(profile|jobs|small)$ && $# -ge 2 ]] || usage
    printf -v "${1#--}" %s "$2"
    shift 2
done
[ -n "$profile" ] && [ -n "$jobs" ] && [ $# -eq 2 ] || usage
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
    { echo "launcher_instructions: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/fitrun-instructions.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# The project's warnings (CMakeLists.txt), as an error: this is its only build.
gcc -std=c17 -O2 -Wall -Wextra -Wshadow -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes -Werror \
    -shared -fPIC -o "$tmp/probes.so" "$here/valgrind_probes.c" -ldl
n=$(grep -c . "$jobs")
head -n "$small" "$jobs" > "$tmp/small.jsonl"
for spec in "$@"; do
    name=${spec%%=*} dir=${spec#*=}
    if ! ldd "$dir/fitrun" 2>/dev/null | grep -q 'libc\.so'; then
        echo "launcher_instructions: $dir/fitrun is linked statically: configure $dir with -DFITRUN_STATIC=OFF" >&2
        exit 2
    fi
    for which in small big; do
        j=$jobs
        [ $which = small ] && j=$tmp/small.jsonl
        LD_PRELOAD=$tmp/probes.so valgrind --tool=callgrind --trace-children=no --log-file="$tmp/vg.log" \
            --callgrind-out-file="$tmp/cg.$name.$which" \
            "$dir/fitrun" run --profile "$profile" --jobs "$j" --out "$tmp/out.$name.$which" --quiet || true
    done
done
/usr/bin/python3 - "$tmp" "$n" "$small" "$1" "$2" <<'PY'
import re, subprocess, sys
tmp, n, small, a, b = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split("=")[0], sys.argv[5].split("=")[0]
def total(path):
    for line in open(path):
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    raise SystemExit(f"launcher_instructions: no total in {path}")
per = {}
for name in (a, b):
    big, sm = total(f"{tmp}/cg.{name}.big"), total(f"{tmp}/cg.{name}.small")
    per[name] = (big - sm) / (n - small)
    print(f"{name}: {big:,} instructions for {n} jobs, {sm:,} for {small}: {per[name]:,.0f} per prediction")
print(f"per prediction {b}/{a}: {per[b] / per[a]:.2f}")
for name in (a, b):
    out = subprocess.run(["callgrind_annotate", "--inclusive=no", f"{tmp}/cg.{name}.big"],
                         capture_output=True, text=True).stdout
    rows = [l for l in out.splitlines() if re.match(r"^\s*[\d,]+ \(", l)][1:13]
    print(f"\n{name}: own instructions per prediction, top functions")
    for l in rows:
        count, rest = l.split(" (", 1)
        fn = rest.split(")", 1)[1].strip().split(" [")[0]
        print(f"  {int(count.replace(',', '')) / n:10,.0f}  {fn}")
print()
PY
/usr/bin/python3 "$here/same_results.py" "$tmp/out.${1%%=*}.big" "$tmp/out.${2%%=*}.big" || true
