#!/usr/bin/python3
"""fork_floor.py — what fork isolation costs on this machine before any
prediction runs: a copy-on-write fault, and the fork and exit of a warm
process, measured here, beside what fitrun's fork and reuse isolation
spend on a prediction that does nothing.

    /usr/bin/python3 bench/fork_floor.py [--heap-mib 24] [--reps 200]
    /usr/bin/python3 bench/fork_floor.py --fitrun build/fitrun --profile DIR/profile.ini [--n 600]

Part 1 (no fitrun): a parent holding HEAP MiB of touched memory (about
a warm interpreter with numpy) forks REPS children that each write to 0,
500 and 2,000 of its pages and exit. From the children's CPU (wait4) and
minor faults: µs per copy-on-write fault, and the fork + exit of a child
that writes nothing. On a machine where a fault is cheap this floor is
small; where page-table updates are trapped by the hypervisor it is
what fork isolation cannot go below.

Part 2 (with --fitrun): N predictions `def transform(g): return g`
through `fitrun run` with that profile, 2 workers, isolation fork and
then reuse, interleaved over 3 rounds: CPU of the whole process tree and
its minor faults per prediction (start-up included, spread over N).
Prints one table; nothing is written.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time


def cow(heap_mib, reps):
    buf = bytearray(heap_mib << 20)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    rows = []
    for pages in (0, 500, 2000):
        pages = min(pages, len(buf) // 4096)
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        for _ in range(reps):
            pid = os.fork()
            if pid == 0:
                for i in range(pages):
                    buf[i * 4096] = 2
                os._exit(0)
            os.waitpid(pid, 0)
        wall = (time.perf_counter() - t) / reps
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ((ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)) / reps
        rows.append((pages, wall * 1e6, cpu * 1e6, (ru1.ru_minflt - ru0.ru_minflt) / reps))
    return rows


def fitrun_trivial(fitrun, profile, n, rounds):
    tmp = tempfile.mkdtemp(prefix="fitrun-fork-floor-")
    jobs = os.path.join(tmp, "jobs.jsonl")
    with open(jobs, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"t{i}", "code": "def transform(g):\n    return g\n",
                                "inputs": [[[1, 2], [3, 4]]], "expected": [[[1, 2], [3, 4]]]}) + "\n")
    out = {}
    for rnd in range(rounds):
        for iso in ("fork", "reuse"):
            res = os.path.join(tmp, f"{iso}.jsonl")
            argv = [fitrun, "run", "--profile", profile, "--jobs", jobs, "--out", res, "--workers", "2",
                    "--quiet", "--progress", "none", "--set", f"runtime.isolation={iso}"]
            t = time.perf_counter()
            p = subprocess.Popen(argv)
            _, status, ru = os.wait4(p.pid, 0)
            wall = time.perf_counter() - t
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"fork_floor: {' '.join(argv)} exited {os.waitstatus_to_exitcode(status)}")
            os.unlink(res)
            out.setdefault(iso, []).append(((ru.ru_utime + ru.ru_stime) / n * 1e6, ru.ru_minflt / n, n / wall))
    os.unlink(jobs)
    os.rmdir(tmp)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heap-mib", type=int, default=24, help="touched memory of the forking parent")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--fitrun", help="also run trivial predictions through this fitrun")
    ap.add_argument("--profile", help="the profile for --fitrun (a python runtime)")
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if a.fitrun and not a.profile:
        ap.error("--fitrun needs --profile")
    print(f"# {os.uname().release}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    rows = cow(a.heap_mib, a.reps)
    print(f"| parent touched | pages written by the child | wall µs per fork | child CPU µs | child faults |")
    print("|---|---|---|---|---|")
    for pages, wall, cpu, flt in rows:
        print(f"| {a.heap_mib} MiB | {pages} | {wall:.0f} | {cpu:.0f} | {flt:.0f} |")
    (_, _, c0, f0), _, (_, _, c2, f2) = rows
    per_fault = (c2 - c0) / (f2 - f0) if f2 > f0 else float("nan")
    print(f"\ncopy-on-write fault: {per_fault:.2f} µs; fork + exit of a child that writes nothing: "
          f"{c0:.0f} µs of its CPU ({rows[0][1]:.0f} µs wall, the parent's fork included)")
    if a.fitrun:
        res = fitrun_trivial(a.fitrun, a.profile, a.n, a.rounds)
        print(f"\n`def transform(g): return g` × {a.n} through fitrun, 2 workers, {a.rounds} rounds "
              f"(medians; the whole tree, start-up spread over {a.n}):\n")
        print("| isolation | tree CPU µs/prediction | minor faults/prediction | predictions/s |")
        print("|---|---|---|---|")
        for iso, runs in res.items():
            runs.sort()
            cpu, flt, rate = runs[len(runs) // 2]
            print(f"| {iso} | {cpu:.0f} | {flt:.0f} | {rate:.0f} |")


if __name__ == "__main__":
    main()
