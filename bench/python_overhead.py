#!/usr/bin/python3
"""python_overhead.py — benchmark 4: what one prediction costs in fitrun
beyond running its code, against the floor of any fork-per-prediction
design: a bare fork + exit + wait of the warm interpreter.

One small ARC prediction (flip a grid, on a task's 4-6 grids), N times, one
worker, measured as wall time and as CPU time (all processes, children
included: less sensitive to a busy machine):

  in-process        exec + call in a warm interpreter (no isolation at all)
  bare fork+exit    os.fork(); child os._exit(0); wait4  (warm, numpy loaded)
  fork + run        the child runs the prediction, no pipes, no sandbox
  runtime alone     fitrun's Python side (zygote/worker/child with the sandbox,
                    pipes, report) driven directly (tests/python/drive_runtime.py)
  fitrun run        the whole thing, through fitrun's pool (start-up excluded)

    FITRUN=build/fitrun /usr/bin/python3 bench/python_overhead.py [--n 1000]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_common as pc  # noqa: E402

sys.path.insert(0, os.path.join(pc.SRC, "tests", "python"))

CODE = "def transform(grid):\n    return [row[::-1] for row in grid]\n"


def cpu_self_children():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure(fn, n):
    c0, t0 = cpu_self_children(), time.monotonic()
    fn(n)
    return (time.monotonic() - t0) / n * 1e6, (cpu_self_children() - c0) / n * 1e6


def in_process(job):
    def run(n):
        for _ in range(n):
            g = dict(PRELUDE)
            exec(compile(job["code"], "<prediction>", "exec"), g)
            outs = [g["transform"](x) for x in job["inputs"]]
            json.dumps(outs)
    return run


def bare_fork(n):
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.wait4(pid, 0)


def fork_run(job):
    def run(n):
        for _ in range(n):
            pid = os.fork()
            if pid == 0:
                g = dict(PRELUDE)
                exec(compile(job["code"], "<prediction>", "exec"), g)
                json.dumps([g["transform"](x) for x in job["inputs"]])
                os._exit(0)
            os.wait4(pid, 0)
    return run


def runtime_alone(job, lib):
    import drive_runtime as dr

    def run(n):
        with dr.Runtime(pc.PRELUDE, workers=1, sandbox_lib=lib,
                        policy="preset=python;cpu_time=2s;memory=512M") as rt:
            for i in range(n):
                rt.run_one(dict(job, id=str(i)))
    return run


def fitrun_run(fitrun, job, tmp):
    def run(n):
        jpath, prof = os.path.join(tmp, "j.jsonl"), os.path.join(tmp, "p.ini")
        pc.write_jobs(jpath, [dict(job, id=str(i)) for i in range(n)])
        pc.write_profile(prof, 1, 2.0)
        p = subprocess.run([fitrun, "run", "--profile", prof, "--jobs", jpath, "--out", os.devnull,
                            "--progress", "none"], capture_output=True, text=True)
        m = re.search(r"started once with \d+ workers? in ([0-9.]+) s", p.stderr)
        if p.returncode != 0 or not m:
            sys.exit(f"fitrun run failed:\n{p.stderr}")
        run.startup = float(m.group(1))
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    a = ap.parse_args()
    fitrun = pc.find_fitrun()
    import drive_runtime as dr
    lib = dr.find_sandbox_lib()
    job = pc.make_jobs(1)[0]
    job["code"] = CODE
    global PRELUDE
    PRELUDE = {"__builtins__": __builtins__}
    exec(open(pc.PRELUDE).read(), PRELUDE)
    import gc
    gc.collect()
    gc.freeze()
    print(f"# {pc.machine()}")
    print(f"# {a.n} predictions of a grid flip on task {job['id'].split('#')[0]} "
          f"({len(job['inputs'])} grids), 1 worker; sandbox library: {lib or 'none'}")
    rows = [("in-process exec (no isolation)", *measure(in_process(job), a.n))]
    rows.append(("bare fork+exit+wait (warm, numpy)", *measure(bare_fork, a.n)))
    rows.append(("fork + run in child", *measure(fork_run(job), a.n)))
    if lib:
        # (its CPU is not counted: the driver kills the interpreter, whose
        # workers' and children's CPU is then never added to ours)
        wall, _ = measure(runtime_alone(job, lib), a.n)
        rows.append(("runtime alone (sandbox, pipes)", wall, None))
    with pc.tmpdir() as tmp:
        f = fitrun_run(fitrun, job, tmp)
        wall, cpu = measure(f, a.n)
        # start-up (interpreter + prelude, paid once) is not per prediction
        rows.append(("fitrun run (1 worker)", wall - f.startup * 1e6 / a.n, cpu))
    base_wall, fork_wall = rows[0][1], rows[1][1]
    print(f"{'':36} {'wall us':>9} {'cpu us':>9} {'overhead wall':>14} {'overhead/fork':>14}")
    for name, wall, cpu in rows:
        over = wall - base_wall
        cpu_text = f"{cpu:9.0f}" if cpu is not None else f"{'-':>9}"
        print(f"{name:36} {wall:9.0f} {cpu_text} {over:14.0f} {over / fork_wall:13.2f}x")
    print("# overhead = per-prediction time minus in-process exec; overhead/fork = that, "
          "in units of a bare fork+exit+wait")


if __name__ == "__main__":
    main()
