#!/usr/bin/python3
"""arc_peers.py — score a fitrun python jobs file the way researchers do it
without fitrun, in-process, as the reference for fitrun's verdicts
(bench/arc_compare.py) and as the peers of bench/scale.py:

  sequential  one loop in one process
  joblib      joblib.Parallel, loky backend (batch_size auto)
  pool        a persistent multiprocessing.Pool (fork), imap_unordered
  fork        a fork of the warm process per prediction, no exec (the naive
              isolating loop), W at a time
  shared      W copies of the sequential loop at once, each taking the next
              line by one counter in shared memory: no dispatcher, no
              isolation, no copy of a job; what W processes on this
              machine do with these jobs in this order (the in-process
              bound, measured rather than multiplied)

Every peer loads the profile's prelude once per worker process and runs each
prediction with python_common.InProcess: fresh globals, the profile's
cpu_time as one ITIMER_PROF budget for the prediction (-> timeout), its
memory as RLIMIT_AS of the worker (fork: of the child) (-> memory), outputs
normalised (numpy -> lists, tuples -> lists) and `passed` computed with
Python's own `==` against `expected`. Threads: one BLAS/OpenMP thread per
process, as fitrun sets.

    /usr/bin/python3 bench/arc_peers.py --profile DIR/profile.ini --jobs DIR/jobs.jsonl \\
        --peer pool --workers 2 --out pool.jsonl

Output: one line per prediction, {"id", "status", "passed", "error_type"};
on stderr one line `arc_peers: PEER W workers: N predictions in S s (R/s)`.
The peers run the code unsandboxed: use them on code you would run
yourself (a prediction that calls os._exit or kills its process takes a
joblib or Pool worker down with it).
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_common as pc  # noqa: E402

PEERS = ("sequential", "joblib", "pool", "fork", "shared")

_RUNNER = None  # this worker process's InProcess, made on its first job


def _worker_init(cfg):
    global _RUNNER
    _RUNNER = pc.InProcess(prelude=cfg["prelude"], cpu_s=cfg["cpu_s"], memory=cfg["memory"],
                           entry=cfg["entry"])


def _run(job):
    return _RUNNER.run(job)


def _run_lazy(job, cfg):
    """joblib (1.2 has no worker initializer): the prelude on a worker's first job."""
    if _RUNNER is None:
        _worker_init(cfg)
    return _RUNNER.run(job)


def read_jobs(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def peer_sequential(jobs_path, cfg, workers):
    """One loop, streaming the file: nothing but the current job in memory.
    Each result also says how long its job took ("run_us": parsing its
    line and running it), from which bench/scale.py schedules the job
    times onto W workers."""
    _worker_init(cfg)
    with open(jobs_path) as f:
        for line in f:
            if line.strip():
                t0 = time.perf_counter_ns()
                r = _RUNNER.run(json.loads(line))
                r["run_us"] = (time.perf_counter_ns() - t0) // 1000
                yield r


def peer_joblib(jobs_path, cfg, workers):
    from joblib import Parallel, delayed
    jobs = read_jobs(jobs_path)
    yield from Parallel(n_jobs=workers, backend="loky", batch_size="auto")(
        delayed(_run_lazy)(j, cfg) for j in jobs)


def peer_pool(jobs_path, cfg, workers):
    import multiprocessing as mp
    jobs = read_jobs(jobs_path)
    with mp.get_context("fork").Pool(workers, initializer=_worker_init, initargs=(cfg,)) as pool:
        yield from pool.imap_unordered(_run, jobs, chunksize=8)


def peer_fork(jobs_path, cfg, workers):
    """The prelude once in this process; per job a fork that sets its memory
    limit, runs the prediction, writes its outcome to a pipe and _exits."""
    runner = pc.InProcess(prelude=cfg["prelude"], cpu_s=cfg["cpu_s"], entry=cfg["entry"])
    import resource
    running = {}  # pid -> (job id, read fd)
    jobs = iter(read_jobs(jobs_path))
    while True:
        while len(running) < workers:
            job = next(jobs, None)
            if job is None:
                break
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                code = 0
                try:
                    os.close(r)
                    if cfg["memory"]:
                        resource.setrlimit(resource.RLIMIT_AS,
                                           (cfg["memory"], resource.getrlimit(resource.RLIMIT_AS)[1]))
                    data = json.dumps(runner.run(job)).encode()
                    while data:
                        data = data[os.write(w, data):]
                except BaseException:  # noqa: BLE001 (reported as a crash by the parent)
                    code = 1
                os._exit(code)
            os.close(w)
            running[pid] = (job["id"], r)
        if not running:
            return
        pid, _ = os.wait()
        jid, r = running.pop(pid)
        chunks = []
        while True:
            b = os.read(r, 65536)
            if not b:
                break
            chunks.append(b)
        os.close(r)
        yield (json.loads(b"".join(chunks)) if chunks else
               {"id": jid, "status": "crash", "passed": None, "error_type": "NoResult"})


def _shared_loop(lines, counter, cfg, path):
    """One of peer_shared's processes: the next line until none is left."""
    _worker_init(cfg)
    with open(path, "w") as out:
        while True:
            with counter.get_lock():
                i = counter.value
                counter.value = i + 1
            if i >= len(lines):
                return
            out.write(json.dumps(_RUNNER.run(json.loads(lines[i])), separators=(",", ":")) + "\n")


def peer_shared(jobs_path, cfg, workers):
    """The lines are read before the fork (each process parses its own, as
    the sequential loop does); results go to one file per process, read
    once every process has exited. A process that died is a crash of the
    run, not of a prediction: there is nothing to compare such a run with."""
    import multiprocessing as mp
    import tempfile
    with open(jobs_path) as f:
        lines = [line for line in f if line.strip()]
    ctx = mp.get_context("fork")
    counter = ctx.Value("q", 0)
    with tempfile.TemporaryDirectory(prefix="arc-peers-shared.") as tmp:
        paths = [os.path.join(tmp, f"{k}.jsonl") for k in range(workers)]
        procs = [ctx.Process(target=_shared_loop, args=(lines, counter, cfg, p)) for p in paths]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
            if p.exitcode != 0:
                sys.exit(f"arc_peers: shared: a process exited with {p.exitcode}")
        for path in paths:
            with open(path) as f:
                for line in f:
                    yield json.loads(line)


def run_peer(name, jobs_path, cfg, workers, out):
    """Runs one peer, writes its JSONL to the open file `out`; returns (n, seconds)."""
    fn = globals()["peer_" + name]
    t0 = time.monotonic()
    n = 0
    for res in fn(jobs_path, cfg, workers):
        out.write(json.dumps(res, separators=(",", ":")) + "\n")
        n += 1
    return n, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--profile", required=True, help="the fitrun profile: prelude, cpu_time, memory, entry")
    ap.add_argument("--jobs", required=True, help="fitrun python jobs (JSONL)")
    ap.add_argument("--peer", choices=PEERS, required=True)
    ap.add_argument("--workers", type=int, default=os.cpu_count(), help="processes (sequential: 1)")
    ap.add_argument("--out", default="-", help="results (JSONL; default - = stdout)")
    a = ap.parse_args()
    pc.single_threaded_env()
    cfg = pc.read_profile(a.profile)
    workers = 1 if a.peer == "sequential" else a.workers
    out = sys.stdout if a.out == "-" else open(a.out, "w")
    try:
        n, dt = run_peer(a.peer, a.jobs, cfg, workers, out)
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"arc_peers: {a.peer} {workers} workers: {n} predictions in {dt:.2f} s "
          f"({n / dt if dt > 0 else 0:.1f}/s)", file=sys.stderr)


if __name__ == "__main__":
    main()
