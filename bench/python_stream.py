#!/usr/bin/python3
"""python_stream.py — benchmark 3: 1,250 consecutive batches of 8 tiny
tasks (10,000 coefficients), each batch waited for before the next is sent,
as a caller computing one batch from the previous one does.

  fitrun stream        one long-lived `fitrun run --jobs - --out -`, jobs and
                       results over pipes (each task a sandboxed fork)
  Pool.map             one multiprocessing.Pool(2), pool.map per batch
  Pool per batch       a new multiprocessing.Pool(2) per batch (what the
                       user did: start-up paid 1,250 times)

Per batch: mean time, overhead (mean minus the in-process time of the same
8 tasks), and drift (mean of the last 125 batches / mean of the first 125;
goal for fitrun: <= 1.05). Goal: fitrun's overhead <= Pool's.

    FITRUN=build/fitrun /usr/bin/python3 bench/python_stream.py [--batches 1250]
"""
import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_common as pc  # noqa: E402

# A "coefficient": a small numeric function of its index.
CODE = "def transform(k):\n    return sum(1.0 / (i * i + k) for i in range(1, 50))\n"


def coefficient(k):
    return sum(1.0 / (i * i + k) for i in range(1, 50))


def stats(times, n_edge):
    mean = sum(times) / len(times)
    first = sum(times[:n_edge]) / n_edge
    last = sum(times[-n_edge:]) / n_edge
    return mean, last / first


def run_fitrun(fitrun, tmp, batches, size, workers):
    prof = os.path.join(tmp, "p.ini")
    prelude = os.path.join(tmp, "prelude.py")
    with open(prelude, "w") as f:
        f.write("import math\n")
    pc.write_profile(prof, workers, 2.0, prelude=prelude)
    p = subprocess.Popen([fitrun, "run", "--profile", prof, "--jobs", "-", "--out", "-", "--progress", "none"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    out = p.stdout
    # Wait for the runtime to be up before timing: one warm-up batch.
    times = []
    for b in range(-1, batches):
        t0 = time.monotonic()
        lines = "".join(json.dumps({"id": f"{b}.{i}", "code": CODE, "inputs": [(b + 1) * size + i]}) + "\n"
                        for i in range(size))
        p.stdin.write(lines.encode())
        got = 0
        while got < size:
            line = out.readline()
            if not line:
                sys.exit(f"fitrun stopped: {p.stderr.read().decode()}")
            r = json.loads(line)
            if r["status"] != "ok":
                sys.exit(f"job {r['id']}: {r['status']} {r.get('error_message')}")
            got += 1
        if b >= 0:
            times.append(time.monotonic() - t0)
    p.stdin.close()
    p.wait()
    return times


def run_pool(batches, size, workers):
    times = []
    with mp.get_context("fork").Pool(workers) as pool:
        for b in range(batches):
            t0 = time.monotonic()
            pool.map(coefficient, range((b + 1) * size, (b + 2) * size))
            times.append(time.monotonic() - t0)
    return times


def run_pool_per_batch(batches, size, workers):
    times = []
    for b in range(batches):
        t0 = time.monotonic()
        with mp.get_context("spawn").Pool(workers) as pool:
            pool.map(coefficient, range((b + 1) * size, (b + 2) * size))
        times.append(time.monotonic() - t0)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=1250)
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--per-batch-pools", type=int, default=50,
                    help="batches for the Pool-per-batch peer (it is slow; default 50)")
    a = ap.parse_args()
    fitrun = pc.find_fitrun()
    edge = max(1, a.batches // 10)
    t0 = time.monotonic()
    for k in range(a.size * 200):
        coefficient(k)
    compute = (time.monotonic() - t0) / 200  # one batch, sequential, in-process
    print(f"# {pc.machine()}")
    print(f"# {a.batches} batches of {a.size} tasks, {a.workers} workers; in-process compute per batch "
          f"{compute * 1e6:.0f} us")
    rows = []
    with pc.tmpdir() as tmp:
        rows.append(("fitrun stream (sandboxed fork/task)", run_fitrun(fitrun, tmp, a.batches, a.size, a.workers)))
    rows.append(("multiprocessing.Pool.map", run_pool(a.batches, a.size, a.workers)))
    if a.per_batch_pools:
        rows.append((f"Pool per batch (spawn, {a.per_batch_pools} batches)",
                     run_pool_per_batch(a.per_batch_pools, a.size, a.workers)))
    print(f"{'runner':42} {'batches':>7} {'ms/batch':>9} {'overhead ms':>12} {'drift':>6}")
    for name, times in rows:
        mean, drift = stats(times, min(edge, max(1, len(times) // 10)))
        print(f"{name:42} {len(times):7d} {mean * 1e3:9.2f} {(mean - compute) * 1e3:12.2f} {drift:6.2f}")
    fit = stats(rows[0][1], edge)[0] - compute
    pool = stats(rows[1][1], edge)[0] - compute
    print(f"# fitrun overhead / Pool.map overhead: {fit / pool:.1f}x; drift = last {edge} / first {edge} batches")


if __name__ == "__main__":
    main()
