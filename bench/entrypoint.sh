#!/usr/bin/env bash
# bench/entrypoint.sh — start-up cost of fitrun as an entrypoint/wrapper,
# side by side with tini and dumb-init (Debian packages), in one run.
#
#   bench/entrypoint.sh [N]        N runs of each command (default 500)
#
# Every command runs `/bin/true`; fitrun's numbers include its detection
# (cgroups, affinity, /dev/shm) and the environment export, which tini and
# dumb-init do not do. The runs are interleaved (one of each command per
# round, in rotating order) so that load from other processes on a shared
# machine hits every command alike. Reported per command: median and p90
# wall time per run, mean CPU time per run (user+sys of the whole process
# tree, from getrusage: far less sensitive to load than wall time), the
# overhead over a bare /bin/true, and ratios against tini.
#
# Rows:
#   /bin/true                  the floor: fork+exec of the benchmark itself
#   fitrun -- true             plain wrapper: detect, export, exec (no fork)
#   fitrun --init -- true      supervised: + fork, signal loop, reaping
#   tini -s -- true            tini as a child subreaper (same duties as --init)
#   dumb-init true             dumb-init, not PID 1 (it forks and forwards)
#   fitrun --version           breakdown: fitrun's start-up alone (loader, libraries)
#   fitrun --explain           breakdown: start-up + detection + export list, no exec
#   ... as PID 1               each init as PID 1 of a fresh PID namespace
#                              (unshare --pid --fork; N/5 runs, the namespace
#                              creation is the same for all)
#
# Environment: FITRUN (default build/fitrun), PYTHON (default /usr/bin/python3),
# FITRUN_BASELINE (optional: another fitrun binary, e.g. one built from an
# older commit; its rows run interleaved with the others and a last table
# gives fitrun's ratio to it, for before/after comparisons).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-500}
FITRUN=${FITRUN:-$PWD/build/fitrun}
PYTHON=${PYTHON:-/usr/bin/python3}

for tool in "$FITRUN" tini dumb-init unshare; do
    command -v "$tool" >/dev/null || { echo "bench/entrypoint.sh: $tool not found (scripts/dev setup installs tini and dumb-init)" >&2; exit 1; }
done
TRUE=$(command -v true)
[ "$TRUE" != true ] || TRUE=/bin/true # `command -v` names the builtin

echo "fitrun: $("$FITRUN" --version 2>&1) ($FITRUN)"
echo "tini: $(tini --version 2>&1 | head -1)"
echo "dumb-init: $(dumb-init --version 2>&1 | head -1)"
echo "machine: $(nproc) CPUs online, load $(cut -d' ' -f1-3 /proc/loadavg), N=$N"
echo

[ -z "${FITRUN_BASELINE:-}" ] || echo "baseline: $("$FITRUN_BASELINE" --version 2>&1) ($FITRUN_BASELINE)"

exec "$PYTHON" - "$N" "$FITRUN" "$TRUE" "${FITRUN_BASELINE:-}" <<'PY'
import os, resource, statistics, sys, time

n, fitrun, true, baseline = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ns = ["unshare", "--pid", "--fork"]
cases = [
    ("/bin/true", [true], n),
    ("fitrun -- true", [fitrun, "-q", "--", true], n),
    ("fitrun --init -- true", [fitrun, "-q", "--init", "--", true], n),
    ("tini -s -- true", ["tini", "-s", "--", true], n),
    ("dumb-init true", ["dumb-init", true], n),
    ("fitrun --version", [fitrun, "--version"], n // 5),
    ("fitrun --explain", [fitrun, "-q", "--explain"], n // 5),
    ("PID 1: unshare true", ns + [true], n // 5),
    ("PID 1: fitrun -- true", ns + [fitrun, "-q", "--", true], n // 5),
    ("PID 1: tini -- true", ns + ["tini", "--", true], n // 5),
    ("PID 1: dumb-init true", ns + ["dumb-init", true], n // 5),
]
# The baseline runs the same fitrun rows under its own name.
compared = []
if baseline:
    for name, argv, count in list(cases):
        if "fitrun" in name:
            bname = name.replace("fitrun", "baseline")
            cases.append((bname, [baseline if a == fitrun else a for a in argv], count))
            compared.append((name, bname))
devnull = os.open(os.devnull, os.O_RDWR)
paths = {}

def resolve(argv):
    if "/" in argv[0]:
        return argv[0]
    if argv[0] not in paths:
        for d in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
            p = os.path.join(d, argv[0])
            if os.access(p, os.X_OK):
                paths[argv[0]] = p
                break
    return paths[argv[0]]

def cpu_children():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime

def once(argv):
    path = resolve(argv)
    c0, t0 = cpu_children(), time.perf_counter_ns()
    pid = os.posix_spawn(path, argv, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, st = os.waitpid(pid, 0)
    t1, c1 = time.perf_counter_ns(), cpu_children()
    if os.waitstatus_to_exitcode(st) != 0:
        sys.exit(f"bench: {' '.join(argv)} exited with {os.waitstatus_to_exitcode(st)}")
    return (t1 - t0) / 1e3, (c1 - c0) * 1e6

wall = {c[0]: [] for c in cases}
cpu = {c[0]: [] for c in cases}
for argv in (c[1] for c in cases):  # warm the page cache
    once(argv)
rounds = max(c[2] for c in cases)
for r in range(rounds):
    active = [c for c in cases if r < c[2]]
    k = r % len(active)
    for name, argv, _ in active[k:] + active[:k]:
        w, c = once(argv)
        wall[name].append(w)
        cpu[name].append(c)

def stats(name):
    w = sorted(wall[name])
    return statistics.median(w), w[int(len(w) * 0.9) - 1], statistics.mean(cpu[name])

base = stats("/bin/true")
print(f"{'command':24} {'runs':>5} {'median us':>10} {'p90 us':>9} {'cpu us':>8} {'+wall us':>9} {'vs tini':>8} {'cpu vs tini':>12}")
for name, _, count in cases:
    med, p90, c = stats(name)
    ref_name = "PID 1: tini -- true" if name.startswith("PID 1") else "tini -s -- true"
    floor = stats("PID 1: unshare true") if name.startswith("PID 1") else base
    rmed, _, rc = stats(ref_name)
    print(f"{name:24} {count:5d} {med:10.0f} {p90:9.0f} {c:8.0f} {med - floor[0]:9.0f} {med / rmed:8.2f} {c / rc:12.2f}")
print()
print("vs tini: ratio of median wall time (and of mean CPU time) to tini doing the same job;")
print("< 1.00 = faster than tini. +wall: median over the bare /bin/true (or bare unshare) floor.")
if compared:
    print()
    print(f"{'fitrun vs baseline':24} {'median':>8} {'p90':>8} {'cpu':>8}")
    for name, bname in compared:
        med, p90, c = stats(name)
        bmed, bp90, bc = stats(bname)
        print(f"{name:24} {med / bmed:8.2f} {p90 / bp90:8.2f} {c / bc:8.2f}")
    print("ratios of fitrun's median and p90 wall time and mean CPU time to the baseline's (< 1.00 = faster)")
PY
