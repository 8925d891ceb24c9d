#!/usr/bin/python3
"""python_builds.py — two fitrun builds and joblib on the same ARC
predictions, interleaved: what a change to the Python runtime costs or saves.

    /usr/bin/python3 bench/python_builds.py OLD/fitrun NEW/fitrun [--n 1200] [--rounds 3] [--workers 2]

Each round runs OLD, NEW and joblib/loky (the in-process peer of
python_throughput.py), in a rotating order, so that the load of a shared
machine falls on all three alike. Prints, per runner, predictions/s (median
and every round), the ratio to joblib (best round against best round),
fitrun's own CPU per prediction (perf stat --no-inherit: the launcher, not
its workers), and how many pass verdicts agree with joblib's. Needs `perf`.
Not a test: timings on a shared machine vary.
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_common as pc  # noqa: E402
import python_throughput as pt  # noqa: E402


def run_fitrun(binary, prof, jobs_path, out, perf_out):
    t0 = time.monotonic()
    subprocess.run(["perf", "stat", "--no-inherit", "-e", "task-clock", "-x,", "-o", perf_out,
                    binary, "run", "--profile", prof, "--jobs", jobs_path, "--out", out,
                    "--progress", "none", "-q"], check=True)
    dt = time.monotonic() - t0
    with open(perf_out) as f:
        cpu_ms = float([line for line in f if "task-clock" in line][0].split(",")[0])
    verdicts = {}
    with open(out) as f:
        for line in f:
            r = json.loads(line)
            passed = r.get("passed")
            verdicts[r["id"]] = bool(passed) and all(x is not False for x in passed) and r["status"] == "ok"
    return dt, cpu_ms, verdicts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--n", type=int, default=1200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=0.5)
    a = ap.parse_args()
    jobs = pc.make_jobs(a.n)
    names = ["old", "new", "joblib"]
    rows = {k: [] for k in names}
    verdicts = {}
    with pc.tmpdir() as tmp:
        jobs_path, prof = os.path.join(tmp, "jobs.jsonl"), os.path.join(tmp, "p.ini")
        pc.write_jobs(jobs_path, jobs)
        pc.write_profile(prof, a.workers, a.timeout)
        for rnd in range(a.rounds):
            for name in names[rnd % 3:] + names[:rnd % 3]:
                if name == "joblib":
                    dt, out = pt.peer_joblib(jobs, a.workers, a.timeout)
                    rows[name].append((dt, None))
                    verdicts[name] = {i: p for i, _, p in out}
                else:
                    dt, cpu, verdicts[name] = run_fitrun(getattr(a, name), prof, jobs_path,
                                                         os.path.join(tmp, f"out-{name}.jsonl"),
                                                         os.path.join(tmp, f"perf-{name}"))
                    rows[name].append((dt, cpu))
                print(f"# round {rnd + 1} {name}: {a.n / dt:.1f} predictions/s", flush=True)
    print(f"# {pc.machine()}")
    print(f"# {a.n} ARC predictions, {a.workers} workers, timeout {a.timeout} s, {a.rounds} interleaved rounds;"
          f" old = {a.old}, new = {a.new}")
    best_joblib = min(d for d, _ in rows["joblib"])
    for name in names:
        rates = sorted(a.n / d for d, _ in rows[name])
        cpu = [c for _, c in rows[name] if c is not None]
        line = (f"{name:7} {rates[len(rates) // 2]:7.1f} predictions/s (rounds: "
                f"{', '.join(f'{a.n / d:.1f}' for d, _ in rows[name])}); vs joblib "
                f"{best_joblib / min(d for d, _ in rows[name]):.2f}x")
        if cpu:
            line += f"; fitrun's own CPU {min(cpu) * 1000 / a.n:.0f}-{max(cpu) * 1000 / a.n:.0f} us/prediction"
        if name != "joblib":
            same = sum(verdicts[name].get(i) == v for i, v in verdicts["joblib"].items())
            line += f"; pass verdicts as joblib's {same}/{len(verdicts['joblib'])}"
        print(line)


if __name__ == "__main__":
    main()
