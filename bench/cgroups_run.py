#!/usr/bin/python3
"""cgroups_run.py — what fitrun's own cgroups (docs/cgroups.md) cost per
prediction in a whole `fitrun run`, against the same run without them
(`[resources] cgroups = off`: RLIMIT_AS, the shared OOM counter).

Small ARC-like predictions (flip a grid), one worker, python runtime.
Each round runs, in rotating order, both modes with N and with N/10
predictions; the per-prediction time of a mode is the slope
(T(N) - T(N/10)) / (N - N/10), so start-up (the interpreter, the tree's
creation and removal) is left out. Wall time, median over the rounds.

    FITRUN=build/fitrun /usr/bin/python3 bench/cgroups_run.py [--n 1000] [--rounds 5]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FITRUN = os.environ.get("FITRUN") or os.path.join(SRC, "build", "fitrun")
CODE = "def transform(grid):\n    return [row[::-1] for row in grid]\n"
PROFILE = """[resources]
workers = 1
cgroups = {mode}
[sandbox]
preset = python
memory = 256M
[runtime]
kind = python
interpreter = /usr/bin/python3
entry = transform
"""


def jobs_file(d, n):
    path = os.path.join(d, f"jobs{n}.jsonl")
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": str(i), "code": CODE, "inputs": [[[1, 2], [3, 4]]],
                                "expected": [[[2, 1], [4, 3]]]}) + "\n")
    return path


def run(profile, jobs, out):
    t0 = time.monotonic()
    r = subprocess.run([FITRUN, "run", "--quiet", "--profile", profile, "--jobs", jobs, "--out", out],
                       stderr=subprocess.PIPE, text=True)
    dt = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"fitrun run failed ({r.returncode}): {r.stderr}")
    with open(out) as f:
        bad = [line for line in f if '"status":"ok"' not in line]
    if bad:
        sys.exit(f"not every prediction was ok: {bad[0]}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    small = max(a.n // 10, 1)
    with tempfile.TemporaryDirectory(prefix="fitrun-bench-cgroups.") as d:
        profiles = {}
        for mode in ("auto", "off"):
            profiles[mode] = os.path.join(d, f"{mode}.ini")
            with open(profiles[mode], "w") as f:
                f.write(PROFILE.format(mode=mode))
        det = subprocess.run([FITRUN, "detect", "--json", "--profile", profiles["auto"]],
                             capture_output=True, text=True)
        cg = json.loads(det.stdout)["cgroup"]
        if not cg["delegated"]:
            sys.exit(f"cgroups are not delegated here: {cg['delegated_reason']}")
        print(f"cgroups: {cg['delegated_reason']}")
        big_jobs, small_jobs = jobs_file(d, a.n), jobs_file(d, small)
        out = os.path.join(d, "out.jsonl")
        per = {"auto": [], "off": []}
        modes = ["auto", "off"]
        for r in range(a.rounds):
            for mode in modes[r % 2:] + modes[:r % 2]:
                t_big = run(profiles[mode], big_jobs, out)
                t_small = run(profiles[mode], small_jobs, out)
                per[mode].append((t_big - t_small) / (a.n - small) * 1e6)
        print(f"{'mode':<22} {'median us/prediction':>22} {'min':>8} {'max':>8}")
        for mode, label in (("off", "cgroups = off (peer)"), ("auto", "cgroups = auto")):
            v = per[mode]
            print(f"{label:<22} {statistics.median(v):>22.1f} {min(v):>8.1f} {max(v):>8.1f}")
        extra = statistics.median(per["auto"]) - statistics.median(per["off"])
        ratio = statistics.median(per["auto"]) / statistics.median(per["off"])
        print(f"extra per prediction: {extra:.1f} us (ratio {ratio:.3f}; {a.rounds} rounds of {a.n} and {small})")


if __name__ == "__main__":
    main()
