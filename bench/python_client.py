#!/usr/bin/python3
"""python_client.py — the Sage-style test through the Python client: 1,250
batches of 8 tasks (each sleeps 1 ms), 2 workers, every batch waited for
before the next, through

  Runner      one fitrun.Runner (one `fitrun run`, one warm interpreter)
              for every batch: r.map(batch)
  Pool.map    one persistent multiprocessing.Pool(2): pool.map(f, batch)

run alternately in chunks (ABBA order), so the load of a shared machine
falls on both alike. Per runner: mean batch time, overhead beyond the sleep
(8 tasks x 1 ms / 2 workers = 4 ms), drift (mean of the last 200 batches /
mean of the first 200), and CPU per batch of the client process, of fitrun
itself and of fitrun's runtime (interpreter, workers, their children).
Goals with isolation = reuse: batch time <= 1.2x Pool.map's, drift <= 1.05.

    FITRUN=build/fitrun /usr/bin/python3 bench/python_client.py [--batches 1250] [--isolation reuse]
    ... --cprofile     cProfiles of the client's calling thread (the Runner's chunks)
                       and of its I/O thread (the whole run)
    ... --client-only  the client alone: the Runner drives a stand-in for fitrun that
                       answers each job at once, against Pool.map of a task that
                       does nothing (both round trips, no work)
"""
import argparse
import cProfile
import io
import multiprocessing as mp
import os
import pstats
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))
import python_common as pc  # noqa: E402

import fitrun  # noqa: E402

CODE = "import time\ndef transform(x):\n    time.sleep(0.001)\n    return x\n"
TICK = os.sysconf("SC_CLK_TCK")


def task(x):
    time.sleep(0.001)
    return x


def nothing(x):
    return x


# A stand-in for `fitrun run --jobs - --out -` that answers each job line at
# once with a result of fitrun's shape: what is left is the client's cost.
# It is ready at once (the ready record on --ready-fd, as fitrun writes it).
STAND_IN = r"""#!/usr/bin/python3
import json, os, sys
fd = int(sys.argv[sys.argv.index("--ready-fd") + 1])
os.write(fd, b'{"ready":true,"pid":%d,"workers":1,"runtime":"python"}\n' % os.getpid())
os.close(fd)
out = sys.stdout.buffer
for n, raw in enumerate(sys.stdin.buffer, 1):
    job = json.loads(raw)
    res = {"id": job.get("id"), "status": "ok", "exit_code": 0, "signal": None, "syscall": None,
           "error_type": None, "error_message": None, "stdout": "", "stderr": "", "cpu_ms": 1,
           "wall_ms": 1, "max_rss_kb": 12000, "worker": 0, "line": n, "outputs": job["inputs"]}
    out.write(json.dumps(res).encode() + b"\n")
    out.flush()
"""


def proc_cpu(pid, children=False):
    """CPU seconds of a process (utime + stime, + its reaped children's)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK


def descendants(root):
    kids = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


class Meter:
    """CPU of the client, of fitrun, and of fitrun's runtime processes over
    the chunks that ran through the Runner."""

    def __init__(self, pid):
        self.pid = pid
        self.client = self.fitrun = self.runtime = 0.0

    def snapshot(self):
        runtime = sum(proc_cpu(p, children=True) for p in descendants(self.pid))
        return time.process_time(), proc_cpu(self.pid), runtime

    def add(self, before, after):
        self.client += after[0] - before[0]
        self.fitrun += after[1] - before[1]
        self.runtime += after[2] - before[2]


def run_runner(r, batches, size, first, times, meter, profiler):
    jobs = [[{"id": i, "code": CODE, "inputs": [b * size + i]} for i in range(size)]
            for b in range(first, first + batches)]
    before = meter.snapshot()
    if profiler:
        profiler.enable()
    for batch in jobs:
        t0 = time.perf_counter()
        results = r.map(batch)
        times.append(time.perf_counter() - t0)
        if results[-1]["status"] != "ok":
            sys.exit(f"job {results[-1]['id']}: {results[-1]['status']} {results[-1]['error_message']}")
    if profiler:
        profiler.disable()
    meter.add(before, meter.snapshot())


def run_pool(pool, fn, batches, size, first, times, cpu):
    c0 = time.process_time()
    for b in range(first, first + batches):
        t0 = time.perf_counter()
        pool.map(fn, range(b * size, (b + 1) * size))
        times.append(time.perf_counter() - t0)
    cpu[0] += time.process_time() - c0


def stats(times, edge):
    mean = sum(times) / len(times)
    return mean, (sum(times[-edge:]) / edge) / (sum(times[:edge]) / edge)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", type=int, default=1250)
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=50, help="batches per turn (default 50)")
    ap.add_argument("--edge", type=int, default=200, help="batches at each end for the drift (default 200)")
    ap.add_argument("--isolation", help="the Runner's isolation= (default: the profile's)")
    ap.add_argument("--cprofile", action="store_true", help="print a cProfile of the client's Runner chunks")
    ap.add_argument("--client-only", action="store_true", help="a stand-in that answers at once instead of fitrun")
    a = ap.parse_args()
    edge = min(a.edge, a.batches // 2)
    ideal = 0.0 if a.client_only else a.size / a.workers * 0.001
    fn = nothing if a.client_only else task
    print(f"# {pc.machine()}")
    print(f"# {a.batches} batches x {a.size} tasks ({'no work: client only' if a.client_only else 'sleep 1 ms'}), "
          f"{a.workers} workers, interleaved in chunks of {a.chunk}; ideal {ideal * 1e3:.1f} ms/batch")
    profiler = cProfile.Profile() if a.cprofile else None
    io_profiler = cProfile.Profile() if a.cprofile else None
    fit_times, pool_times, pool_cpu = [], [], [0.0]
    with pc.tmpdir() as tmp:
        prelude = os.path.join(tmp, "prelude.py")
        with open(prelude, "w") as f:
            f.write("import time\n")
        profile = os.path.join(tmp, "p.ini")
        pc.write_profile(profile, a.workers, 2.0, prelude=prelude)
        binary = None
        if a.client_only:
            binary = os.path.join(tmp, "stand-in-fitrun")
            with open(binary, "w") as f:
                f.write(STAND_IN)
            os.chmod(binary, 0o755)
        with mp.get_context("fork").Pool(a.workers) as pool:
            if io_profiler:
                # The Runner's I/O thread starts with this hook, which hands
                # the thread to cProfile at its first event.
                threading.setprofile(lambda *_: io_profiler.enable())
            try:
                r = fitrun.Runner(profile=profile, workers=a.workers, isolation=a.isolation, fitrun=binary)
                threading.setprofile(None)
                r.map([{"code": CODE, "inputs": [0]}])  # warm: the runtime is up
            except fitrun.RunnerError as e:
                sys.exit(f"Runner(isolation={a.isolation!r}): {e}")
            pool.map(fn, range(a.size))
            meter = Meter(r.pid)
            done, turn = 0, 0
            while done < a.batches:
                n = min(a.chunk, a.batches - done)
                order = (0, 1) if turn % 4 in (0, 3) else (1, 0)  # ABBA
                for which in order:
                    if which == 0:
                        run_runner(r, n, a.size, done, fit_times, meter, profiler)
                    else:
                        run_pool(pool, fn, n, a.size, done, pool_times, pool_cpu)
                done += n
                turn += 1
            r.close()
    fit_mean, fit_drift = stats(fit_times, edge)
    pool_mean, pool_drift = stats(pool_times, edge)
    n = a.batches
    label = "Runner + stand-in fitrun" if a.client_only else \
        f"Runner (isolation={a.isolation or 'profile default'})"
    print(f"{'runner':36} {'ms/batch':>9} {'overhead ms':>12} {'drift':>6} {'vs Pool':>8} "
          f"{'client CPU ms':>14} {'fitrun CPU ms':>14} {'runtime CPU ms':>15}")
    print(f"{label:36} {fit_mean * 1e3:9.2f} {(fit_mean - ideal) * 1e3:12.2f} {fit_drift:6.3f} "
          f"{fit_mean / pool_mean:7.2f}x {meter.client / n * 1e3:14.3f} {meter.fitrun / n * 1e3:14.3f} "
          f"{meter.runtime / n * 1e3:15.3f}")
    print(f"{'multiprocessing.Pool.map':36} {pool_mean * 1e3:9.2f} {(pool_mean - ideal) * 1e3:12.2f} "
          f"{pool_drift:6.3f} {1:7.2f}x {pool_cpu[0] / n * 1e3:14.3f} {'-':>14} {'-':>15}")
    print(f"# drift = mean of the last {edge} batches / mean of the first {edge} (Runner's / Pool's: "
          f"{fit_drift / pool_drift:.3f}); CPU per batch; overhead = ms/batch - {ideal * 1e3:.1f} ms of sleep")
    for name, prof in (("calling thread", profiler), ("I/O thread", io_profiler)):
        if prof:
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
            print(f"# cProfile of the client's {name}\n{out.getvalue()}")


if __name__ == "__main__":
    main()
