#!/usr/bin/python3
"""python_least.py — what least privilege costs a Python prediction in a
whole `fitrun run`: variants (fitrun builds, or one build with and without
least privilege) run the same jobs file, in rotating order (interleaved:
background load hits all alike), and for each the time per prediction of

  wall       the run's wall time (start-up included, the same in both)
  fitrun     fitrun's own CPU (the pool, pipes, scoring, results)
  runtime    the zygote's and the workers' own CPU (forks, supervision)
  child      the prediction's process, and whatever it forked (a relay and
             its job in a relay protocol), as its worker reaped it

read from /proc/<pid>/stat (utime, stime; the workers' cutime, cstime) of
each process, sampled every few ms and taken at its last sample before the
end (a clock-tick resolution of 10 ms over thousands of predictions).

    /usr/bin/python3 bench/python_least.py [--n 2000] [--rounds 5] [--workers 1] \\
        --variant 'no LP=build/tests/helpers/no_landlock build/fitrun {run} --set sandbox.user=root' \\
        --variant 'LP=build/fitrun {run}' [--variant 'before=OLD/fitrun {run}']

A variant is LABEL=COMMAND, {run} standing for `run --profile ... --jobs ...
--out ...`; the command must exec fitrun in its own process (no_landlock
does: the kernel then answers Landlock's calls with ENOSYS, so the run has
no Landlock, and user = root keeps fitrun's uid). The prediction is the
generic workload's cheapest (flip a grid, on a task's grids), so that the
runtime's own cost is what is measured. Prints medians over rounds and each
variant's difference to the first.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_common as pc  # noqa: E402

CODE = "def transform(grid):\n    return [row[::-1] for row in grid]\n"
TICK = os.sysconf("SC_CLK_TCK")


def stat(pid):
    """(ppid, self CPU s, reaped children's CPU s) of pid, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ppid, ut, st, cut, cst = int(rest[1]), int(rest[11]), int(rest[12]), int(rest[13]), int(rest[14])
    return ppid, (ut + st) / TICK, (cut + cst) / TICK


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def run_once(command, profile, jobs, out, n):
    """One `fitrun run`; per prediction: wall, fitrun, runtime, child (µs)."""
    run = ["run", "--profile", profile, "--jobs", jobs, "--out", out, "--progress", "none", "--quiet"]
    argv = []
    for word in shlex.split(command):
        argv += run if word == "{run}" else [word]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stderr=subprocess.DEVNULL)
    last, role = {}, {}  # pid -> (self, children); pid -> its role, fixed when first seen
    # (at the end fitrun kills the zygote first: its workers are then
    # briefly fitrun's children, fitrun being a subreaper)
    while p.poll() is None:
        tree = [(p.pid, "fitrun")] + [(z, "zygote") for z in children(p.pid)]
        tree += [(w, "worker") for z, _ in tree[1:] for w in children(z)]
        for pid, r in tree:
            s = stat(pid)
            if s:
                role.setdefault(pid, r)
                last[pid] = (s[1], s[2])
        time.sleep(0.003)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(f"{command}: exit {p.returncode}")
    tot = {"fitrun": 0.0, "runtime": 0.0, "child": 0.0}
    for pid, (own, reaped) in last.items():
        tot["fitrun" if role[pid] == "fitrun" else "runtime"] += own
        if role[pid] == "worker":
            tot["child"] += reaped
    with open(out) as f:
        statuses = {json.loads(line)["status"] for line in f}
    if statuses != {"ok"}:
        raise SystemExit(f"{command}: statuses {statuses}")
    return {"wall": wall / n * 1e6, **{k: v / n * 1e6 for k, v in tot.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variant", action="append", required=True, help="LABEL=COMMAND with {run}")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=1)
    a = ap.parse_args()
    variants = [v.split("=", 1) for v in a.variant]
    task = next(iter(pc.load_tasks(1).values()))
    grids = [pair["input"] for pair in task["train"]]
    with tempfile.TemporaryDirectory(prefix="fitrun-bench-least-") as tmp:
        os.chmod(tmp, 0o755)
        jobs = os.path.join(tmp, "jobs.jsonl")
        with open(jobs, "w") as f:
            for i in range(a.n):
                f.write(json.dumps({"id": str(i), "code": CODE, "inputs": grids}) + "\n")
        profile = os.path.join(tmp, "p.ini")
        with open(profile, "w") as f:
            f.write(f"[resources]\nworkers = {a.workers}\n[sandbox]\npreset = python\ncpu_time = 2s\n"
                    f"wall_time = 10s\nmemory = 1G\n[runtime]\nkind = python\n"
                    f"interpreter = {pc.PYTHON}\nprelude = {pc.PRELUDE}\n")
        res = {label: [] for label, _ in variants}
        for r in range(a.rounds):
            for k in range(len(variants)):
                label, command = variants[(k + r) % len(variants)]
                res[label].append(run_once(command, profile, jobs, os.path.join(tmp, "out.jsonl"), a.n))
    print(f"per prediction, µs: median of {a.rounds} interleaved runs of {a.n} predictions, "
          f"{a.workers} worker(s); {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    keys = ("wall", "fitrun", "runtime", "child", "sum")
    print(f"{'':24} " + " ".join(f"{k:>8}" for k in keys))
    med = {}
    for label, _ in variants:
        m = {k: statistics.median(x[k] for x in res[label]) for k in keys[:4]}
        m["sum"] = m["fitrun"] + m["runtime"] + m["child"]
        med[label] = m
        print(f"{label:24} " + " ".join(f"{m[k]:8.0f}" for k in keys))
    first = variants[0][0]
    for label, _ in variants[1:]:
        print(f"{label + ' - ' + first:24} " + " ".join(f"{med[label][k] - med[first][k]:+8.0f}" for k in keys))


if __name__ == "__main__":
    main()
