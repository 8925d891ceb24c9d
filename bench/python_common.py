"""python_common.py — shared by the bench/python_*.py benchmarks: the ARC
workload, the in-process runner the peers use (the usual approach today:
exec the code, call transform on every input, a SIGALRM-style timeout), and
helpers to run fitrun. Standard library + numpy; run with /usr/bin/python3.
"""
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
SHARED = os.environ.get("FITRUN_SHARED") or os.path.join(SRC, "..", "shared")
ARC_DIR = os.path.join(SHARED, "data", "arc-agi-1", "training")
PRELUDE = os.path.join(SRC, "profiles", "arc_prelude.py")
PYTHON = "/usr/bin/python3"

# A mix of generic ARC predictions, as an LLM produces them for any task:
# right for some tasks, wrong for most, buggy, a few heavier (BFS), and a
# rare infinite loop. Weights are per 200 predictions. No hostile code: the
# in-process peers cannot survive it (that is fitrun's point, measured by
# the tests, not here).
PREDICTIONS = [
    (40, "flip", """
def transform(grid):
    return [row[::-1] for row in grid]
"""),
    (30, "numpy-rotate", """
import numpy as np
def transform(grid):
    return np.rot90(np.array(grid)).tolist()
"""),
    (30, "transpose", """
def transform(grid):
    return [list(r) for r in zip(*grid)]
"""),
    (25, "recolor", """
from collections import Counter
def transform(grid):
    counts = Counter(c for row in grid for c in row)
    common = counts.most_common()
    if len(common) < 2:
        return grid
    a, b = common[0][0], common[1][0]
    return [[b if c == a else a if c == b else c for c in row] for row in grid]
"""),
    (25, "flood-fill", """
from collections import deque
def transform(grid):
    h, w = len(grid), len(grid[0])
    out = [row[:] for row in grid]
    seen = [[False] * w for _ in range(h)]
    for si in range(h):
        for sj in range(w):
            if seen[si][sj] or grid[si][sj] != 0:
                continue
            comp, q, border = [], deque([(si, sj)]), False
            seen[si][sj] = True
            while q:
                i, j = q.popleft()
                comp.append((i, j))
                if i in (0, h - 1) or j in (0, w - 1):
                    border = True
                for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    a, b = i + di, j + dj
                    if 0 <= a < h and 0 <= b < w and not seen[a][b] and grid[a][b] == 0:
                        seen[a][b] = True
                        q.append((a, b))
            if not border:
                for i, j in comp:
                    out[i][j] = 4
    return out
"""),
    (20, "numpy-crop", """
import numpy as np
def transform(grid):
    g = np.array(grid)
    rows, cols = np.nonzero(g)
    return g[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
"""),
    (15, "index-error", """
def transform(grid):
    return [grid[i + 1] for i in range(len(grid))]
"""),
    (14, "type-error", """
def transform(grid):
    return sorted(grid, key=lambda r: r + None)
"""),
    (1, "infinite-loop", """
def transform(grid):
    n = 0
    while n >= 0:
        n += 1
"""),
]


def load_tasks(limit=None):
    names = sorted(n for n in os.listdir(ARC_DIR) if n.endswith(".json"))[:limit]
    tasks = {}
    for n in names:
        with open(os.path.join(ARC_DIR, n)) as f:
            tasks[n[:-5]] = json.load(f)
    return tasks


def make_jobs(n, tasks=None):
    """n jobs: the prediction mix, round-robin over the ARC training tasks."""
    tasks = tasks or load_tasks()
    pool = [(name, code.lstrip()) for w, name, code in PREDICTIONS for _ in range(w)]
    # Interleave so that slow ones are spread out, deterministically.
    pool = [pool[(i * 37) % len(pool)] for i in range(len(pool))]
    ids = sorted(tasks)
    jobs = []
    for k in range(n):
        tid = ids[k % len(ids)]
        name, code = pool[k % len(pool)]
        t = tasks[tid]
        pairs = t["train"] + t["test"]
        jobs.append({"id": f"{tid}#{k}", "code": code, "inputs": [p["input"] for p in pairs],
                     "expected": [p.get("output") for p in pairs], "kind": name})
    return jobs


def write_jobs(path, jobs):
    with open(path, "w") as f:
        for j in jobs:
            f.write(json.dumps({k: j[k] for k in ("id", "code", "inputs", "expected")}) + "\n")


# --------------------------------------------------------------------------
# The in-process runner of the peers

class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def run_in_process(job, timeout_s):
    """exec + call on each input under an interval timer (the usual
    approach: a SIGALRM handler raising in the code; setitimer so that
    sub-second timeouts are the same as fitrun's). Returns (id, status, passed_all)."""
    import numpy as np
    g = {"__name__": "__prediction__", "np": np}
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        exec(compile(job["code"], "<prediction>", "exec"), g)
        fn = g["transform"]
        outs = []
        for x in job["inputs"]:
            y = fn([row[:] for row in x])
            outs.append(np.asarray(y).tolist() if not isinstance(y, list) else y)
        status = "ok"
    except Timeout:
        status, outs = "timeout", None
    except BaseException as e:  # noqa: BLE001 (the researchers' code does this)
        status, outs = type(e).__name__, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    passed = outs is not None and all(o == e for o, e in zip(outs, job["expected"]) if e is not None)
    return job["id"], status, passed


def fresh_interpreter_runner():
    """Source of a script that runs one job from stdin (fresh interpreter per prediction)."""
    return (f"import json, sys\nsys.path.insert(0, {HERE!r})\nimport python_common as pc\n"
            "job = json.load(sys.stdin)\nprint(json.dumps(pc.run_in_process(job, float(sys.argv[1]))))\n")


# --------------------------------------------------------------------------
# fitrun

def find_fitrun():
    for cand in (os.environ.get("FITRUN"), os.path.join(SRC, "build", "fitrun")):
        if cand and os.access(cand, os.X_OK):
            return cand
    sys.exit("set FITRUN to the fitrun binary (e.g. build/fitrun)")


def write_profile(path, workers, cpu_s, prelude=PRELUDE, wall_s=None, memory="512M"):
    with open(path, "w") as f:
        f.write(f"""[resources]
workers = {workers}
[sandbox]
preset = python
cpu_time = {int(cpu_s * 1000)}ms
wall_time = {int((wall_s or max(10 * cpu_s, 5)) * 1000)}ms
memory = {memory}
output = 1M
[runtime]
kind = python
interpreter = {PYTHON}
prelude = {prelude}
entry = transform
""")


def run_fitrun(fitrun, profile, jobs_path, out_path):
    t0 = time.monotonic()
    p = subprocess.run([fitrun, "run", "--profile", profile, "--jobs", jobs_path, "--out", out_path,
                        "--progress", "none"], capture_output=True, text=True)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"fitrun run failed ({p.returncode}):\n{p.stderr}")
    results = {}
    with open(out_path) as f:
        for line in f:
            r = json.loads(line)
            passed = r.get("passed")
            results[r["id"]] = (r["status"], bool(passed) and all(x is not False for x in passed)
                                and r["status"] == "ok")
    return dt, results, p.stderr


def machine():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{platform.node()}: {os.cpu_count()} CPUs ({cpu}), {mem:.0f} GiB, Linux {platform.release()}, "
            f"Python {platform.python_version()}, load {os.getloadavg()[0]:.2f}")


def tmpdir():
    return tempfile.TemporaryDirectory(prefix="fitrun-bench-python-")


def cpu_seconds_children():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime
