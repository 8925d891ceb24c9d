#!/usr/bin/python3
"""python_throughput.py — benchmark 1: ARC predictions per second, fitrun
(full sandbox, a fresh child per prediction) against the ways researchers
run them today, same workload, same number of workers, same timeout:

  fitrun             fitrun run, kind = python, preset python, cpu_time = T
  joblib/loky        Parallel(n_jobs=W, backend="loky") of exec-in-process
                     with a SIGALRM (setitimer) timeout T — the usual approach
  mp.Pool            multiprocessing.Pool(W).imap_unordered, same function
  Process/pred       one multiprocessing.Process (fork) per prediction, W at a time
  fresh interpreter  one `python3` per prediction, W at a time (on a subset:
                     it is slow; its rate is extrapolated)

    FITRUN=build/fitrun /usr/bin/python3 bench/python_throughput.py [--n 3200] [--workers 2]

Prints one table: seconds, predictions/s, and fitrun's speed-up over each
peer (goal: >= 1.2x joblib). Then a second, smaller one: the same mix plus
ONE prediction that kills its process (os._exit) — what researchers meet in
practice. joblib then raises TerminatedWorkerError and the usual recovery
(e.g. the public arc25 pipeline) re-runs the whole batch with one fresh
interpreter per prediction; fitrun reports that one prediction `crash`.
Not a test: timings on a shared machine vary.
"""
import argparse
import importlib
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_common as pc  # noqa: E402


def peer_joblib(jobs, workers, timeout):
    from joblib import Parallel, delayed
    t0 = time.monotonic()
    out = Parallel(n_jobs=workers, backend="loky", batch_size="auto")(
        delayed(pc.run_in_process)(j, timeout) for j in jobs)
    return time.monotonic() - t0, out


def _pool_init():
    importlib.import_module("numpy")  # what a researcher's worker imports


def _pool_run(args):
    return pc.run_in_process(*args)


def peer_pool(jobs, workers, timeout):
    t0 = time.monotonic()
    with mp.get_context("fork").Pool(workers, initializer=_pool_init) as pool:
        out = list(pool.imap_unordered(_pool_run, [(j, timeout) for j in jobs], chunksize=8))
    return time.monotonic() - t0, out


def _one_process(job, timeout, conn):
    conn.send(pc.run_in_process(job, timeout))
    conn.close()


def _at_most(jobs, workers, start, finish):
    """Run jobs with at most `workers` at once, finishing them in start order:
    start(job) -> handle, finish(handle, job) -> the result tuple."""
    t0 = time.monotonic()
    out, running, it = [], [], iter(jobs)
    while True:
        while len(running) < workers:
            j = next(it, None)
            if j is None:
                break
            running.append((start(j), j))
        if not running:
            break
        handle, j = running.pop(0)
        out.append(finish(handle, j))
    return time.monotonic() - t0, out


def peer_process(jobs, workers, timeout):
    importlib.import_module("numpy")  # the parent has it loaded; children are forked
    ctx = mp.get_context("fork")

    def start(j):
        r, w = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_one_process, args=(j, timeout, w))
        p.start()
        w.close()
        return p, r

    def finish(handle, j):
        p, r = handle
        try:
            return r.recv()
        except EOFError:
            return (j["id"], "crash", False)
        finally:
            p.join()
            r.close()

    return _at_most(jobs, workers, start, finish)


def peer_fresh(jobs, workers, timeout):
    src = pc.fresh_interpreter_runner()

    def start(j):
        return subprocess.Popen([pc.PYTHON, "-c", src, str(timeout)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)

    def finish(p, j):
        stdout, _ = p.communicate(json.dumps(j))
        return tuple(json.loads(stdout)) if stdout.strip() else ("?", "crash", False)

    return _at_most(jobs, workers, start, finish)


KILLER = "import os\ndef transform(grid):\n    os._exit(1)\n"


def peer_joblib_with_recovery(jobs, workers, timeout):
    """The usual approach, including its recovery from a dead worker."""
    from joblib.externals.loky.process_executor import TerminatedWorkerError
    saved = os.dup(2)  # loky prints the dead worker's traceback on stderr
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    t0 = time.monotonic()
    try:
        _, out = peer_joblib(jobs, workers, timeout)
    except TerminatedWorkerError:
        _, out = peer_fresh(jobs, workers, timeout)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    return time.monotonic() - t0, out


def crash_table(fitrun, a, tmp):
    jobs = pc.make_jobs(a.crash_n)
    k = len(jobs) // 2
    jobs[k] = dict(jobs[k], code=KILLER, kind="os._exit")
    jpath, opath, prof = (os.path.join(tmp, n) for n in ("cjobs.jsonl", "cout.jsonl", "p.ini"))
    pc.write_jobs(jpath, jobs)
    fdt, res, _ = pc.run_fitrun(fitrun, prof, jpath, opath)
    jdt, _ = peer_joblib_with_recovery(jobs, a.workers, a.timeout)
    print(f"# the same mix, {len(jobs)} predictions, one of which calls os._exit(1):")
    print(f"{'runner':34} {'preds':>6} {'seconds':>8} {'preds/s':>8} {'fitrun speed-up':>16}")
    print(f"{'fitrun':34} {len(jobs):6d} {fdt:8.2f} {len(jobs) / fdt:8.1f} {'1.00x':>16}   "
          f"(that one: {res[jobs[k]['id']][0]})")
    print(f"{'joblib + rerun batch per process':34} {len(jobs):6d} {jdt:8.2f} {len(jobs) / jdt:8.1f} "
          f"{jdt / fdt:15.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=3200, help="predictions (default 3200)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=0.5, help="seconds per prediction (default 0.5)")
    ap.add_argument("--fresh-n", type=int, default=200, help="predictions for the fresh-interpreter peer")
    ap.add_argument("--peers", default="fitrun,joblib,pool,process,fresh")
    ap.add_argument("--crash-n", type=int, default=400,
                    help="predictions of the one-crash comparison (0 = skip it)")
    a = ap.parse_args()
    peers = a.peers.split(",")
    fitrun = pc.find_fitrun()
    jobs = pc.make_jobs(a.n)
    kinds = {}
    for j in jobs:
        kinds[j["kind"]] = kinds.get(j["kind"], 0) + 1
    print(f"# {pc.machine()}")
    print(f"# {len(jobs)} ARC predictions over {len({j['id'].split('#')[0] for j in jobs})} tasks, "
          f"{a.workers} workers, timeout {a.timeout} s; mix: "
          + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    rows = []
    ref = None
    with pc.tmpdir() as tmp:
        jpath, opath, prof = (os.path.join(tmp, n) for n in ("jobs.jsonl", "out.jsonl", "p.ini"))
        pc.write_jobs(jpath, jobs)
        pc.write_profile(prof, a.workers, a.timeout)
        if "fitrun" in peers:
            dt, res, _ = pc.run_fitrun(fitrun, prof, jpath, opath)
            ref = {k: v[1] for k, v in res.items()}
            rows.append(("fitrun (sandbox, fork/prediction)", len(jobs), dt, ref))
        for name, fn, sub in (("joblib/loky + SIGALRM", peer_joblib, None),
                              ("multiprocessing.Pool", peer_pool, None),
                              ("Process per prediction", peer_process, None),
                              ("fresh interpreter/prediction", peer_fresh, a.fresh_n)):
            key = {"joblib/loky + SIGALRM": "joblib", "multiprocessing.Pool": "pool",
                   "Process per prediction": "process", "fresh interpreter/prediction": "fresh"}[name]
            if key not in peers:
                continue
            part = jobs[:sub] if sub else jobs
            dt, out = fn(part, a.workers, a.timeout)
            rows.append((name, len(part), dt, {i: p for i, _, p in out}))
    fit_rate = rows[0][1] / rows[0][2] if ref is not None else None
    print(f"{'runner':34} {'preds':>6} {'seconds':>8} {'preds/s':>8} {'fitrun speed-up':>16} {'same verdicts':>14}")
    for name, n, dt, verdicts in rows:
        rate = n / dt
        speed = f"{fit_rate / rate:.2f}x" if fit_rate else "-"
        same = "-"
        if ref is not None:
            same = f"{sum(ref.get(i) == v for i, v in verdicts.items())}/{len(verdicts)}"
        print(f"{name:34} {n:6d} {dt:8.2f} {rate:8.1f} {speed:>16} {same:>14}")
    if a.crash_n and "fitrun" in peers and "joblib" in peers:
        print()
        with pc.tmpdir() as tmp:
            pc.write_profile(os.path.join(tmp, "p.ini"), a.workers, a.timeout)
            crash_table(fitrun, a, tmp)


if __name__ == "__main__":
    main()
