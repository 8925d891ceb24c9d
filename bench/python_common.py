"""python_common.py — shared by the bench/ Python benchmarks and tools: the
generic ARC workload (python_*.py), the in-process runner every peer uses
(InProcess: exec the code, call the entry on every input, a timer raising in
the code), reading a fitrun profile, and helpers to run fitrun. Standard
library + numpy; run with /usr/bin/python3.
"""
import io
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
import types

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
#
# What a researcher's own loop does, made as faithful to fitrun's rules as an
# in-process runner can be (docs/python-runtime.md): the prelude runs once
# per process; each prediction is exec'd in a fresh copy of its globals with
# __name__ = "__prediction__"; the entry is called on every input, even
# after one raised, but not after a MemoryError; one CPU budget for the whole
# prediction (ITIMER_PROF, raising in the code); outputs turned into plain
# JSON values (numpy -> lists and scalars, tuples -> lists); `passed` is
# Python's own `==` of each output against its expected value. It is written
# independently of fitrun's runtime on purpose: it is the reference fitrun's
# results are compared with (bench/arc_compare.py).

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
INT64 = (-2**63, 2**63 - 1)


def single_threaded_env():
    """One BLAS/OpenMP thread per process, as fitrun's zygote sets before its
    prelude; call before numpy is imported (workers inherit it)."""
    for v in THREAD_VARS:
        os.environ[v] = "1"


class CPUTimeout(BaseException):
    """Raised in the prediction when its CPU budget is spent (not an
    Exception, so that `except Exception` in the code does not swallow it)."""


class Unserializable(Exception):
    pass


def to_plain(value, depth=0):
    """An output as plain JSON values: numpy arrays and scalars through
    tolist()/item(), tuples and lists to lists, subclasses of the plain types
    to the plain types; sets, objects, NaN/inf, integers beyond 64 bits and
    non-string dict keys raise Unserializable (a JSON result cannot hold them)."""
    if depth > 2000:
        raise Unserializable("nested too deep")
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(value, np.ndarray):
            return to_plain(value.tolist(), depth)
        if isinstance(value, np.generic):
            return to_plain(value.item(), depth)
    if value is None or isinstance(value, str):
        return None if value is None else str(value)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        if not INT64[0] <= value <= INT64[1]:
            raise Unserializable("integer beyond 64 bits")
        return int(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise Unserializable(f"float {value!r}")
        return float(value)
    if isinstance(value, (list, tuple)):
        return [to_plain(v, depth + 1) for v in value]
    if isinstance(value, dict):
        if any(not isinstance(k, str) for k in value):
            raise Unserializable("dict with a non-string key")
        return {str(k): to_plain(v, depth + 1) for k, v in value.items()}
    raise Unserializable(f"output of type {type(value).__name__}")


def _raise_timeout(signum, frame):
    raise CPUTimeout()


class InProcess:
    """Runs predictions in this process: `prelude` (a file, run once, as
    fitrun does: its own directory on sys.path) or `base_globals`; `cpu_s`
    per prediction on ITIMER_PROF (CPU time; `timer=signal.ITIMER_REAL` for
    the usual wall-clock SIGALRM); `memory` bytes of address space
    (RLIMIT_AS of this process, like fitrun's child; None = no limit)."""

    def __init__(self, prelude=None, base_globals=None, cpu_s=1.0, memory=None,
                 entry="transform", timer=signal.ITIMER_PROF):
        import types
        mod = types.ModuleType("fitrun_prelude")
        if prelude:
            mod.__file__ = os.path.abspath(prelude)
            sys.path.insert(0, os.path.dirname(mod.__file__))
            with open(prelude, "rb") as f:
                exec(compile(f.read(), mod.__file__, "exec"), mod.__dict__)
        mod.__dict__.update(base_globals or {})
        self.globals = mod.__dict__
        self.cpu_s, self.entry, self.timer = cpu_s, entry, timer
        signal.signal(signal.SIGPROF if timer == signal.ITIMER_PROF else signal.SIGALRM,
                      _raise_timeout)
        if memory:
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (memory, hard))

    def run(self, job):
        """{"id", "status": ok|error|timeout|memory, "passed": [bool|None]|None,
        "error_type"}: the outcome fields fitrun's result has."""
        outs, first_error, status = [], None, "ok"
        expected = job.get("expected")
        sink = io.StringIO()  # what the code prints is captured (and dropped), as fitrun captures it
        saved = sys.stdout, sys.stderr
        try:
            signal.setitimer(self.timer, self.cpu_s)
            try:
                sys.stdout, sys.stderr = sink, sink
                module = types.ModuleType("__prediction__")  # as fitrun: found in sys.modules
                g = module.__dict__
                g.update(self.globals)
                g["__name__"] = "__prediction__"
                sys.modules["__prediction__"] = module
                try:
                    exec(compile(job["code"], "<prediction>", "exec"), g)
                    fn = g.get(job.get("entry") or self.entry)
                    if not callable(fn):
                        raise NameError("the code does not define the entry function")
                except (CPUTimeout, MemoryError):
                    raise
                except BaseException as e:  # noqa: BLE001 (any failure of the code is its error)
                    first_error, fn = e, None
                for x in (job["inputs"] if fn is not None else []):
                    try:
                        outs.append(to_plain(fn(x)))
                    except (CPUTimeout, MemoryError):
                        raise
                    except BaseException as e:  # noqa: BLE001
                        outs.append(None)
                        if first_error is None:
                            first_error = e
            finally:
                signal.setitimer(self.timer, 0)
                sys.stdout, sys.stderr = saved
        except CPUTimeout:
            return {"id": job["id"], "status": "timeout", "passed": None, "error_type": "CPUTimeout"}
        except MemoryError:
            return {"id": job["id"], "status": "memory", "passed": None, "error_type": "MemoryError"}
        if first_error is not None:
            status = "error"
        passed = None
        if expected is not None:
            passed = [None if e is None else (i < len(outs) and outs[i] is not None and outs[i] == e)
                      for i, e in enumerate(expected)]
        etype = None
        if first_error is not None:
            etype = ("UnserializableOutput" if isinstance(first_error, Unserializable)
                     else type(first_error).__name__)
        return {"id": job["id"], "status": status, "passed": passed, "error_type": etype}


_USUAL = None


def run_in_process(job, timeout_s):
    """The usual approach of the python_*.py benchmarks: numpy in the globals,
    a wall-clock SIGALRM timeout. Returns (id, status, passed_all)."""
    global _USUAL
    if _USUAL is None or _USUAL.cpu_s != timeout_s:
        import numpy as np
        _USUAL = InProcess(base_globals={"np": np}, cpu_s=timeout_s, timer=signal.ITIMER_REAL)
    # make_jobs shares one task's grids between its predictions: each call
    # gets its own copy, as every fitrun child decodes its own.
    r = _USUAL.run(dict(job, inputs=[[row[:] for row in x] for x in job["inputs"]]))
    passed = r["passed"] is not None and all(p is not False for p in r["passed"])
    return r["id"], r["status"], passed


def fresh_interpreter_runner():
    """Source of a script that runs one job from stdin (fresh interpreter per prediction)."""
    return (f"import json, sys\nsys.path.insert(0, {HERE!r})\nimport python_common as pc\n"
            "job = json.load(sys.stdin)\nprint(json.dumps(pc.run_in_process(job, float(sys.argv[1]))))\n")


# --------------------------------------------------------------------------
# fitrun

def parse_duration(text):
    """A profile duration ('500ms', '1s', '1.5m', '2h', '250us', bare = s) in seconds; None = none."""
    t = text.strip().lower()
    if t in ("none", "unlimited", "0"):
        return None
    for unit, mult in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if t.endswith(unit):
            return float(t[:-len(unit)]) * mult
    return float(t)


def parse_size(text):
    """A profile size ('512M', '1.5GiB', '4096') in bytes; None = none."""
    t = text.strip()
    if t.lower() in ("none", "unlimited", "0"):
        return None
    num = t.rstrip("BbIi")
    unit = num[-1:].upper() if num[-1:].isalpha() else ""
    if unit:
        num = num[:-1]
    return int(float(num) * 1024 ** " KMGT".index(unit or " "))


def read_profile(path):
    """What an in-process peer needs from a fitrun profile: prelude (absolute),
    entry, cpu_s, memory (bytes or None), interpreter."""
    import configparser
    cp = configparser.ConfigParser(inline_comment_prefixes=(";",), comment_prefixes=(";", "#"))
    with open(path) as f:
        cp.read_file(f)
    sb, rt = cp["sandbox"] if cp.has_section("sandbox") else {}, cp["runtime"]
    prelude = rt.get("prelude")
    if prelude:
        prelude = os.path.join(os.path.dirname(os.path.abspath(path)), prelude)
    return {"prelude": prelude, "entry": rt.get("entry", "transform"),
            "cpu_s": parse_duration(sb.get("cpu_time", "none")),
            "memory": parse_size(sb.get("memory", "none")),
            "interpreter": rt.get("interpreter", PYTHON)}


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
