#!/usr/bin/python3
"""build_sample.py — regenerate the bundled ARC sample from its sources.

    /usr/bin/python3 samples/arc/build_sample.py [ARC_TRAINING_DIR]

Writes, next to this file:
  challenges.json        {task_id: {"train": [...], "test": [{"input"}]}}
  solutions.json         {task_id: [test output grid, ...]}
  predictions.json       {task_id: [code, ...]}            (the PREDICTIONS below)
  predictions_text.json  {task_id: {"text_predictions": [...]}} (LLM-style answers)
  jobs.jsonl             both prediction files converted by tools/arc/arc_to_jobs.py
  expected.json          {job id: what fitrun must report} (used by the tests)

The tasks are copied from ARC-AGI-1 training (default
../shared/data/arc-agi-1/training; Apache-2.0, see LICENSE-ARC). The
predictions are ours: correct, wrong, buggy, slow and hostile ones. Every
prediction tagged "ok" is also run here, in-process, to check that it really
solves its task (the hostile ones are never run here).
"""
import contextlib
import io
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
TASKS = ["007bbfb7", "0d3d703e", "25ff71a9", "3c9b0459",
         "67a3c6ac", "74dd1130", "a416b8f3", "d511f180"]

# (expectation, code). Expectation: "ok" (solves the task), "wrong" (runs,
# wrong answer), or a dict {"status": [accepted statuses], ...} checked by
# tests/cli/python_sample.bats. Hostile predictions list every status a
# correct sandbox may give (e.g. a denied write-open is a violation when the
# preset traps it, a PermissionError when it returns EPERM).
PREDICTIONS = {
    "007bbfb7": [
        ("ok", '''\
def transform(grid):
    n = len(grid)
    out = [[0] * (n * n) for _ in range(n * n)]
    for i in range(n):
        for j in range(n):
            if grid[i][j]:
                for a in range(n):
                    for b in range(n):
                        out[i * n + a][j * n + b] = grid[a][b]
    return out
'''),
        ("ok", '''\
import numpy as np

def transform(grid):
    g = np.array(grid)
    # each non-zero cell becomes a copy of the whole grid: a Kronecker product
    return np.kron((g != 0).astype(int), g)
'''),
        ("wrong", '''\
import numpy as np

def transform(grid):
    return np.tile(np.array(grid), (3, 3))
'''),
        ({"status": ["violation", "error"], "why": "network: socket/connect denied"}, '''\
import socket

def transform(grid):
    s = socket.create_connection(("example.com", 80), timeout=1)
    s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
    return grid
'''),
    ],
    "0d3d703e": [
        ("ok", '''\
def transform(grid):
    mapping = {3: 4, 4: 3, 1: 5, 5: 1, 2: 6, 6: 2, 8: 9, 9: 8}
    return [[mapping.get(c, c) for c in row] for row in grid]
'''),
        ("ok", '''\
def transform(grid):
    print("input grid:", grid)          # debugging prints are captured, not mixed into results
    mapping = {3: 4, 4: 3, 1: 5, 5: 1, 2: 6, 6: 2, 8: 9, 9: 8}
    out = [[mapping[c] for c in row] for row in grid]
    print("output grid:", out)
    return out
'''),
        ({"status": ["error"], "error_type": "KeyError"}, '''\
def transform(grid):
    mapping = {3: 4, 1: 5, 2: 6, 8: 9}   # only learnt half of the colour swaps
    return [[mapping[c] for c in row] for row in grid]
'''),
        ({"status": ["violation", "error"], "why": "file write denied",
          "must_not_exist": "/tmp/fitrun-sample-pwned"}, '''\
def transform(grid):
    with open("/tmp/fitrun-sample-pwned", "w") as f:
        f.write("the sandbox let me write a file\\n")
    return grid
'''),
    ],
    "25ff71a9": [
        ("ok", '''\
def transform(grid):
    width = len(grid[0])
    return [[0] * width] + [row[:] for row in grid[:-1]]
'''),
        ("wrong", '''\
def transform(grid):
    width = len(grid[0])
    return [row[:] for row in grid[1:]] + [[0] * width]   # moves up instead of down
'''),
        ({"status": ["timeout"], "why": "infinite loop: CPU time limit"}, '''\
def transform(grid):
    moved = False
    while not moved:          # never becomes True
        grid = grid[::-1]
    return grid
'''),
        ({"status": ["violation", "error"], "why": "fork denied"}, '''\
import os

def transform(grid):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return grid
'''),
    ],
    "3c9b0459": [
        ("ok", '''\
import numpy as np

def transform(grid):
    return np.rot90(np.array(grid), 2)
'''),
        ({"status": ["error"], "error_type": "SyntaxError"}, '''\
def transform(grid)
    return [row[::-1] for row in grid[::-1]]
'''),
        # 8 TB at once: over the 512 MiB address-space limit, and over what
        # the kernel's default overcommit grants in a memory cgroup, before
        # anything is touched, so the outcome does not depend on how fast
        # the machine takes page faults (on a paravirtualised guest, 15-20
        # µs each: filling 512 MiB took the whole 2 s CPU budget). Where
        # overcommit is unlimited (vm.overcommit_memory = 1) it fills its
        # cgroup: an OOM kill, or the CPU budget first.
        ({"status": ["memory", "timeout"], "why": "memory bomb: an allocation beyond the memory limit (where "
          "overcommit is unlimited, it fills its cgroup: an OOM kill, or the CPU budget first)"}, '''\
def transform(grid):
    hoard = []
    while True:
        hoard.append([0] * 10 ** 12)
'''),
        ({"status": ["crash"], "why": "os._exit without a result"}, '''\
import os

def transform(grid):
    os._exit(0)
'''),
    ],
    "67a3c6ac": [
        ("ok", '''\
def transform(grid):
    return [list(reversed(row)) for row in grid]
'''),
        ({"status": ["error"], "error_type": "IndexError"}, '''\
def transform(grid):
    h, w = len(grid), len(grid[0])
    return [[grid[i][w - j] for j in range(w)] for i in range(h)]   # off by one
'''),
        ({"status": ["output_limit"], "why": "print flood"}, '''\
def transform(grid):
    while True:
        print("still thinking about", grid)
'''),
        ({"status": ["signal"], "signal": "SIGSEGV", "why": "segfault in C code"}, '''\
import ctypes

def transform(grid):
    return ctypes.string_at(0)   # read address 0
'''),
    ],
    "74dd1130": [
        ("ok", '''\
def transform(grid):
    return list(zip(*grid))    # tuples: normalised to lists
'''),
        ("wrong", '''\
import numpy as np

def transform(grid):
    return np.rot90(np.array(grid))
'''),
        ({"status": ["violation"], "why": "installs its own SIGSYS handler"}, '''\
import signal

def transform(grid):
    signal.signal(signal.SIGSYS, lambda *args: None)
    import socket
    socket.socket()
    return grid
'''),
        ({"status": ["error"], "error_type": "UnserializableOutput"}, '''\
def transform(grid):
    return {c for row in grid for c in row}
'''),
    ],
    "a416b8f3": [
        ("ok", '''\
def transform(grid):
    return [row + row for row in grid]
'''),
        ({"status": ["error"], "error_type": "NameError"}, '''\
def solve(grid):              # the entry function is called transform
    return [row + row for row in grid]
'''),
        ({"status": ["violation", "error"], "why": "subprocess denied"}, '''\
import os

def transform(grid):
    os.system("echo pwned > /tmp/fitrun-sample-pwned-2")
    return grid
'''),
        ({"status": ["violation", "error"], "why": "kill of the parent denied"}, '''\
import os, signal

def transform(grid):
    os.kill(os.getppid(), signal.SIGKILL)
    return grid
'''),
    ],
    "d511f180": [
        ("ok", '''\
import numpy as np

def transform(grid):
    g = np.array(grid)
    return np.where(g == 5, 8, np.where(g == 8, 5, g))
'''),
        ({"status": ["error"], "error_type": "ZeroDivisionError"}, '''\
def transform(grid):
    fives = sum(row.count(5) for row in grid)
    eights = sum(row.count(8) for row in grid)
    ratio = fives / (eights - eights)
    return grid
'''),
        ({"status": ["error"], "error_type": "RecursionError"}, '''\
def transform(grid):
    return transform([row[:] for row in grid])
'''),
        ({"status": ["violation", "error"], "why": "thread creation denied"}, '''\
import threading

def transform(grid):
    out = []
    t = threading.Thread(target=lambda: out.append(grid))
    t.start()
    t.join()
    return out[0]
'''),
    ],
}

TEXT_PREDICTIONS = {
    "3c9b0459": [
        ("ok", '''Looking at the examples, the output is the input rotated by 180 degrees.

```python
def transform(grid):
    return [row[::-1] for row in grid[::-1]]
```

This reverses the rows and then each row.'''),
        ({"status": ["error"], "error_type": "NameError"},
         "The grid is rotated by 180 degrees: reverse the rows, then reverse each row."),
    ],
    "a416b8f3": [
        ("wrong", '''The output doubles the grid vertically.

```python
def transform(grid):
    return grid + grid
```'''),
    ],
    "d511f180": [
        ("ok", '''Colours 5 and 8 swap places; everything else stays.

```python
def transform(grid):
    swap = {5: 8, 8: 5}
    return [[swap.get(c, c) for c in row] for row in grid]
```'''),
    ],
}


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(SRC, "..", "shared", "data",
                                                            "arc-agi-1", "training")
    challenges, solutions = {}, {}
    for tid in TASKS:
        with open(os.path.join(src, tid + ".json")) as f:
            task = json.load(f)
        challenges[tid] = {"train": task["train"],
                           "test": [{"input": p["input"]} for p in task["test"]]}
        solutions[tid] = [p["output"] for p in task["test"]]
    sys.path.insert(0, os.path.join(SRC, "python"))
    from fitrun.arc import extract_code

    expected = {}
    for name, preds in (("predictions.json", PREDICTIONS), ("predictions_text.json", TEXT_PREDICTIONS)):
        for tid, items in preds.items():
            # ids count on across both files, as arc_to_jobs.py numbers them
            base = len(PREDICTIONS.get(tid, [])) if preds is TEXT_PREDICTIONS else 0
            for k, (expect, text) in enumerate(items):
                jid = f"{tid}#{base + k}"
                if expect in ("ok", "wrong"):
                    code = extract_code(text) if preds is TEXT_PREDICTIONS else text
                    solved = _solves(code, challenges[tid], solutions[tid])
                    if solved != (expect == "ok"):
                        sys.exit(f"build_sample: {jid} is tagged {expect} but solved={solved}")
                    expected[jid] = {"status": ["ok"], "solves": expect == "ok"}
                else:
                    expected[jid] = expect
    _write("challenges.json", challenges)
    _write("solutions.json", solutions)
    _write("predictions.json", {t: [c for _, c in v] for t, v in PREDICTIONS.items()})
    _write("predictions_text.json",
           {t: {"text_predictions": [c for _, c in v]} for t, v in TEXT_PREDICTIONS.items()})
    _write("expected.json", expected)
    subprocess.run([sys.executable, os.path.join(SRC, "tools", "arc", "arc_to_jobs.py"),
                    "--challenges", os.path.join(HERE, "challenges.json"),
                    "--solutions", os.path.join(HERE, "solutions.json"),
                    "--predictions", os.path.join(HERE, "predictions.json"),
                    "--predictions", os.path.join(HERE, "predictions_text.json"),
                    "--out", os.path.join(HERE, "jobs.jsonl")], check=True)


def _solves(code, task, test_outputs):
    """Run a trusted (tagged ok/wrong) prediction in-process."""
    import numpy as np  # noqa: F401  (the prelude provides it to predictions)
    g = {"np": np}
    exec(code, g)
    pairs = [(p["input"], p["output"]) for p in task["train"]]
    pairs += [(p["input"], out) for p, out in zip(task["test"], test_outputs)]
    for x, y in pairs:
        with contextlib.redirect_stdout(io.StringIO()):  # the debugging prints
            out = g["transform"]([row[:] for row in x])
        out = np.asarray(out).tolist()
        if out != y:
            return False
    return True


def _write(name, obj):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(obj, f, indent=1 if name == "expected.json" else None)
        f.write("\n")


if __name__ == "__main__":
    main()
