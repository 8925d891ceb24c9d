#!/usr/bin/python3
"""python_startup.py — benchmark 2: start-up with a slow prelude, 1 vs 8
workers. fitrun starts the interpreter and runs the prelude once, then
forks its workers; loky (joblib's backend) starts one interpreter per
worker, each paying the prelude again.

Two preludes stand for a slow start:
  sleep 1 s   waiting on a slow (network) disk: waits overlap across workers
  CPU 1 s     import work that needs a CPU (unpacking, compiling): 8 workers
              on fewer CPUs queue up

For each: the time until every worker is ready and one trivial task has run
on each (8 tasks), with 1 and with 8 workers; the 8:1 ratio (goal for
fitrun: <= 1.2); and how many times the prelude ran.

    FITRUN=build/fitrun /usr/bin/python3 bench/python_startup.py
"""
import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_common as pc  # noqa: E402

PRELUDES = {
    "sleep 1 s": "import time\ntime.sleep(1.0)\n",
    "CPU 1 s": "import time\n_t = time.process_time()\nwhile time.process_time() - _t < 1.0:\n    pass\n",
}
TASK = "def transform(x):\n    return x + 1\n"


def fitrun_startup(fitrun, tmp, prelude_src, workers):
    prelude = os.path.join(tmp, "prelude.py")
    with open(prelude, "w") as f:
        f.write(prelude_src + "COUNT_FILE = None\n")
    prof, jobs = os.path.join(tmp, "p.ini"), os.path.join(tmp, "j.jsonl")
    pc.write_profile(prof, workers, 2.0, prelude=prelude)
    pc.write_jobs(jobs, [{"id": str(i), "code": TASK, "inputs": [i], "expected": [i + 1]} for i in range(8)])
    t0 = time.monotonic()
    p = subprocess.run([fitrun, "run", "--profile", prof, "--jobs", jobs, "--out", os.devnull,
                        "--progress", "none", "--workers", str(workers)], capture_output=True, text=True)
    total = time.monotonic() - t0
    m = re.search(r"started once with (\d+) workers? in ([0-9.]+) s", p.stderr)
    if p.returncode != 0 or not m or int(m.group(1)) != workers:
        sys.exit(f"fitrun run failed:\n{p.stderr}")
    return float(m.group(2)), total, 1


def _loky_task(x):
    return x + 1


def loky_startup(tmp, prelude_src, workers):
    """A fresh loky executor whose workers each run the prelude (initializer),
    then 8 trivial tasks; timed to the last result."""
    from joblib.externals.loky import get_reusable_executor
    marker = os.path.join(tmp, "loky-prelude-runs")
    open(marker, "w").close()
    src = prelude_src + f"open({marker!r}, 'a').write('x')\n"
    t0 = time.monotonic()
    ex = get_reusable_executor(max_workers=workers, initializer=exec, initargs=(src, {}), reuse=False)
    list(ex.map(_loky_task, range(8)))
    total = time.monotonic() - t0
    ex.shutdown(wait=True)
    with open(marker) as f:
        runs = len(f.read())
    return total, runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.parse_args()
    fitrun = pc.find_fitrun()
    print(f"# {pc.machine()}")
    print(f"{'prelude':10} {'runner':8} {'1 worker s':>11} {'8 workers s':>12} {'8:1':>6} {'prelude runs (8 w.)':>20}")
    with pc.tmpdir() as tmp:
        loky_startup(tmp, "", 2)  # warm-up: import joblib/loky in this process first
        for label, src in PRELUDES.items():
            s1, _, _ = fitrun_startup(fitrun, tmp, src, 1)
            s8, _, runs = fitrun_startup(fitrun, tmp, src, 8)
            print(f"{label:10} {'fitrun':8} {s1:11.2f} {s8:12.2f} {s8 / s1:6.2f} {runs:20d}")
            l1, _ = loky_startup(tmp, src, 1)
            l8, runs8 = loky_startup(tmp, src, 8)
            print(f"{label:10} {'loky':8} {l1:11.2f} {l8:12.2f} {l8 / l1:6.2f} {runs8:20d}")
    print("# fitrun: start-up as it reports it (interpreter + prelude + every worker forked);"
          " loky: executor creation to the 8th result")


if __name__ == "__main__":
    main()
