#!/usr/bin/python3
"""arc_dsl_corpus.py — a real solver corpus for fitrun: the 400 hand-written
arc-dsl solvers of the ARC-AGI-1 training tasks, each with deterministic
mutations, as fitrun python jobs.

arc-dsl (Michael Hodel, MIT licence) is not part of this repository and
nothing generated from it is ever committed: get your own checkout with

    git clone https://github.com/michaelhodel/arc-dsl

then

    /usr/bin/python3 bench/arc_dsl_corpus.py --arc-dsl ../arc-dsl \\
        --tasks ../shared/data/arc-agi-1/training --out /tmp/arc-dsl-corpus

writes into --out:

  jobs.jsonl    one job per prediction: {"id", "code", "entry", "inputs",
                "expected", "mutation"}; inputs are the task's train and test
                inputs, expected their outputs (both count);
  profile.ini   [runtime] kind = python, interpreter /usr/bin/python3, the
                python preset, cpu_time 1s, memory 512M;
  prelude.py    imports the DSL once (`from dsl import *`,
                `from constants import *`) and numpy;
  corpus.json   how it was made: seed, sources, counts per mutation.

With --copy-dsl the DSL's three modules (dsl.py, constants.py,
arc_types.py) are copied beside the prelude, which then imports them from
its own directory: the directory is self-contained and can be moved to
another machine (bench/scale.py --corpus DIR).

Each solver gives --per-solver predictions (default 8, so 3,200 for the 400
tasks): the solver itself, then mutations drawn from MUTATIONS with a
random.Random seeded by (--seed, task, index), so the same arguments always
give the same corpus. A prediction's code is the solver's source plus a
`transform(grid)` entry that turns the list grid into arc-dsl's tuple of
tuples and calls it; the mutations change one or the other the way
LLM-written code goes wrong (wrong constants, swapped calls, exceptions,
loops, memory hogs, numpy/tuple/bool outputs, prints...).
"""
import argparse
import ast
import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys

DSL_MODULES = ("dsl.py", "constants.py", "arc_types.py")

INT_CONSTANTS = ["ZERO", "ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT",
                 "NINE", "TEN", "NEG_ONE", "NEG_TWO"]
BOOL_CONSTANTS = ["F", "T"]

# DSL functions an LLM confuses with each other (same arity, the "other"
# direction, end or extreme).
SWAPS = [("vmirror", "hmirror"), ("dmirror", "cmirror"), ("rot90", "rot270"), ("rot180", "rot90"),
         ("first", "last"), ("argmax", "argmin"), ("valmax", "valmin"), ("maximum", "minimum"),
         ("mostcolor", "leastcolor"), ("mostcommon", "leastcommon"), ("increment", "decrement"),
         ("double", "halve"), ("hconcat", "vconcat"), ("tophalf", "bottomhalf"),
         ("lefthalf", "righthalf"), ("height", "width"), ("uppermost", "lowermost"),
         ("leftmost", "rightmost"), ("ulcorner", "lrcorner"), ("urcorner", "llcorner"),
         ("add", "subtract"), ("both", "either"), ("hsplit", "vsplit"), ("hfrontier", "vfrontier"),
         ("hline", "vline"), ("hmatching", "vmatching"), ("fill", "underfill"),
         ("paint", "underpaint"), ("hupscale", "vupscale"), ("inbox", "outbox"),
         ("dneighbors", "ineighbors"), ("toindices", "backdrop"), ("sfilter", "mfilter")]
SWAP = {a: b for a, b in SWAPS}
SWAP.update({b: a for a, b in SWAPS if b not in SWAP})

# (name, weight): how often each mutation is drawn for the predictions after
# the first (the unchanged solver). Weights are relative; about 2,800 draws
# for the default corpus, so 1 ≈ 3 predictions.
MUTATIONS = [
    ("wrong-constant", 170), ("swap-call", 160), ("return-intermediate", 70),
    ("bool-for-int", 60), ("bool-mask", 25),
    ("list", 50), ("numpy", 50), ("numpy-float", 20), ("list-of-tuples", 20),
    ("print", 70), ("slow", 30), ("none-return", 15), ("identity", 15),
    ("index-error", 35), ("attribute-error", 35), ("name-error", 35), ("type-error", 30),
    ("zero-division", 15), ("partial-error", 40), ("syntax-error", 20), ("missing-entry", 10),
    ("recursion", 8), ("memory", 4), ("loop", 1),
]
# Drawn only when named with --mutations: a prediction that changes state
# shared with later predictions of the same process (a DSL module's
# attribute, a builtin). Under fork isolation it cannot affect anything;
# in-process runners carry it over to later predictions.
OPT_IN = {"poison": 10}

CALL_LINE = re.compile(r"^    (\w+) = (\w+)\((.*)\)$")


class Solver:
    """One arc-dsl solver: its name and body lines (without `def` and `return O`)."""

    def __init__(self, name, source):
        self.name = name
        lines = source.rstrip("\n").split("\n")
        if lines[-1].strip() != "return O":
            raise ValueError(f"{name}: does not end with 'return O'")
        self.body = lines[1:-1]

    def calls(self):
        """(line index, variable, function, args) for each `x = f(args)` line."""
        out = []
        for i, line in enumerate(self.body):
            m = CALL_LINE.match(line)
            if m:
                out.append((i, m.group(1), m.group(2), m.group(3)))
        return out


def load_solvers(arc_dsl):
    path = os.path.join(arc_dsl, "solvers.py")
    with open(path) as f:
        text = f.read()
    solvers = {}
    for node in ast.parse(text, path).body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("solve_"):
            solvers[node.name[len("solve_"):]] = Solver(node.name,
                                                        ast.get_source_segment(text, node))
    return solvers


def source(name, body, ret="    return O"):
    return "\n".join([f"def {name}(I):"] + body + ([ret] if ret else [])) + "\n"


def wrapper(name, lines=None, entry="transform"):
    """The entry: list grid -> arc-dsl grid -> solver; `lines` replace the call."""
    lines = lines or ["    return {name}(I)"]
    return "\n\ndef {entry}(grid):\n    I = tuple(tuple(row) for row in grid)\n".format(
        entry=entry) + "\n".join(line.format(name=name) for line in lines) + "\n"


def replace_word(line, old, new, nth=None):
    """Replace the whole-word occurrences of `old` (only the nth, if given)."""
    k = [-1]

    def sub(m):
        k[0] += 1
        return new if nth is None or k[0] == nth else m.group(0)
    return re.sub(rf"\b{re.escape(old)}\b", sub, line)


# --------------------------------------------------------------------------
# Mutations: (solver, rng, task) -> code, or None when it does not apply.

def m_original(s, rng, task):
    return source(s.name, s.body) + wrapper(s.name)


def m_wrong_constant(s, rng, task):
    sites = [(i, c, n) for i, line in enumerate(s.body) for c in INT_CONSTANTS + BOOL_CONSTANTS
             for n in range(len(re.findall(rf"\b{c}\b", line.split(" = ", 1)[-1])))]
    if not sites:
        return None
    i, c, n = rng.choice(sites)
    if c in BOOL_CONSTANTS:
        new = "T" if c == "F" else "F"
    else:
        new = rng.choice([x for x in INT_CONSTANTS if x != c])
    body = list(s.body)
    lhs, rhs = body[i].split(" = ", 1)
    body[i] = lhs + " = " + replace_word(rhs, c, new, n)
    return source(s.name, body) + wrapper(s.name)


def replace_call(s, rng, calls, rename):
    """One call `x = f(...)` of the solver, chosen among those whose
    function `calls` accepts, made a call of rename(f); None when none."""
    sites = [(i, f) for i, _, f, _ in s.calls() if calls(f)]
    if not sites:
        return None
    i, f = rng.choice(sites)
    body = list(s.body)
    body[i] = body[i].replace(f" = {f}(", f" = {rename(f)}(", 1)
    return source(s.name, body) + wrapper(s.name)


def m_swap_call(s, rng, task):
    return replace_call(s, rng, lambda f: f in SWAP, lambda f: SWAP[f])


def m_return_intermediate(s, rng, task):
    names = [v for _, v, _, _ in s.calls() if v != "O"]
    if not names:
        return None
    return source(s.name, s.body, f"    return {rng.choice(names)}") + wrapper(s.name)


def m_bool_for_int(s, rng, task):
    """ZERO and ONE written as F and T: equal in Python (False == 0), so a
    right solver stays right, but its grid may hold False/True."""
    body = [line.split(" = ", 1)[0] + " = " + replace_word(replace_word(
        line.split(" = ", 1)[1], "ZERO", "F"), "ONE", "T") if " = " in line else line
        for line in s.body]
    if body == s.body:
        return None
    return source(s.name, body) + wrapper(s.name)


def m_bool_mask(s, rng, task):
    return source(s.name, s.body) + wrapper(s.name, [
        "    O = {name}(I)", "    return [[bool(c) for c in row] for row in O]"])


def m_list(s, rng, task):
    return source(s.name, s.body) + wrapper(s.name, [
        "    return [list(row) for row in {name}(I)]"])


def m_numpy(s, rng, task):
    dtype = rng.choice(["", ", dtype=np.int64", ", dtype=np.int8", ", dtype=np.uint8"])
    return "import numpy as np\n\n" + source(s.name, s.body) + wrapper(s.name, [
        f"    return np.array({{name}}(I){dtype})"])


def m_numpy_float(s, rng, task):
    return "import numpy as np\n\n" + source(s.name, s.body) + wrapper(s.name, [
        "    return np.array({name}(I), dtype=float)"])


def m_list_of_tuples(s, rng, task):
    return source(s.name, s.body) + wrapper(s.name, ["    return list({name}(I))"])


def m_print(s, rng, task):
    body = list(s.body)
    for i, v, _, _ in sorted(rng.sample(s.calls(), min(2, len(s.calls()))), reverse=True):
        body.insert(i + 1, f"    print('{v}', type({v}).__name__)")
    return source(s.name, body) + wrapper(s.name, [
        "    print('input', len(grid), 'x', len(grid[0]))", "    O = {name}(I)",
        "    print(O)", "    return O"])


def m_slow(s, rng, task):
    n = rng.choice([50000, 100000, 200000])
    return source(s.name, [f"    x0 = sum(i * i for i in range({n}))"] + s.body) + wrapper(s.name)


def m_none_return(s, rng, task):
    return source(s.name, s.body, None) + wrapper(s.name)


def m_identity(s, rng, task):
    return source(s.name, s.body) + wrapper(s.name, ["    return grid"])


def m_index_error(s, rng, task):
    return source(s.name, ["    x0 = I[len(I)]"] + s.body) + wrapper(s.name)


def m_attribute_error(s, rng, task):
    return source(s.name, s.body) + wrapper(s.name, [
        "    h, w = grid.shape", "    return {name}(I)"])


def m_name_error(s, rng, task):
    return replace_call(s, rng, lambda f: not f.startswith("x"), lambda f: f + "_grid")


def m_type_error(s, rng, task):
    sites = [(i, a) for i, _, _, a in s.calls() if ", " in a]
    if not sites:
        return None
    i, args = rng.choice(sites)
    body = list(s.body)
    body[i] = body[i].replace(f"({args})", "(" + args.rsplit(", ", 1)[0] + ")", 1)
    return source(s.name, body) + wrapper(s.name)


def m_zero_division(s, rng, task):
    return source(s.name, ["    x0 = len(I) // (len(I[0]) - len(I[0]))"]
                  + s.body) + wrapper(s.name)


def m_partial_error(s, rng, task):
    """Fails on the larger inputs only: some inputs pass, the others raise."""
    heights = sorted({len(p["input"]) for p in task["train"] + task["test"]})
    if len(heights) < 2:
        return None
    k = rng.choice(heights[:-1])
    return source(s.name, [f"    if len(I) > {k}:",
                           "        raise ValueError('grid too large')"] + s.body) + wrapper(s.name)


def m_syntax_error(s, rng, task):
    calls = s.calls()
    if not calls:
        return None
    i = rng.choice(calls)[0]
    body = list(s.body)
    body[i] = body[i][:-1]  # drop the closing parenthesis
    return source(s.name, body) + wrapper(s.name)


def m_missing_entry(s, rng, task):
    return source(s.name, s.body) + wrapper(s.name, entry="solve")


def m_recursion(s, rng, task):
    return source(s.name, s.body) + wrapper(s.name, [
        "    if len(grid) > 0:", "        return transform([row[:] for row in grid])",
        "    return {name}(I)"])


def m_memory(s, rng, task):
    if rng.random() < 0.5:
        hog = ["    x0 = [I]", "    while True:", "        x0 = x0 + x0"]
    else:
        hog = ["    import numpy as np", "    x0 = np.zeros((1000000, 1000000))"]
    return source(s.name, hog + s.body) + wrapper(s.name)


def m_loop(s, rng, task):
    return source(s.name, ["    x0 = 0", "    while x0 >= 0:", "        x0 = x0 + 1"]
                  + s.body) + wrapper(s.name)


def m_poison(s, rng, task):
    if rng.random() < 0.5:
        patch = ["import dsl", "dsl.mostcolor = dsl.leastcolor"]
    else:
        patch = ["import builtins", "builtins.max = builtins.min"]
    return "\n".join(patch) + "\n\n" + source(s.name, s.body) + wrapper(s.name)


MUTATORS = {name: globals()["m_" + name.replace("-", "_")]
            for name, _ in MUTATIONS + list(OPT_IN.items())}


def load_tasks(tasks_dir):
    tasks = {}
    for n in sorted(os.listdir(tasks_dir)):
        if n.endswith(".json"):
            with open(os.path.join(tasks_dir, n)) as f:
                tasks[n[:-5]] = json.load(f)
    return tasks


def draw(s, rng, task, names, ws):
    """A mutation drawn by weight; one that does not apply to this solver is
    set aside and the draw repeated among the others. (kind, code), or
    (None, None) when none applies."""
    names, ws = list(names), list(ws)
    while names:
        i = rng.choices(range(len(names)), ws)[0]
        code = MUTATORS[names[i]](s, rng, task)
        if code is not None:
            return names[i], code
        del names[i], ws[i]
    return None, None


def make_jobs(solvers, tasks, per_solver, seed, weights):
    """The corpus, in task order; deterministic in (solvers, tasks, per_solver, seed, weights)."""
    names = [n for n, _ in weights]
    ws = [w for _, w in weights]
    jobs = []
    for tid in sorted(set(solvers) & set(tasks)):
        s, task = solvers[tid], tasks[tid]
        pairs = task["train"] + task["test"]
        for k in range(per_solver):
            rng = random.Random(f"{seed}/{tid}/{k}")
            kind, code = "original", None
            if k > 0:
                kind, code = draw(s, rng, task, names, ws)
            if code is None:  # the solver itself, or no mutation applies to it
                kind, code = "original", m_original(s, rng, task)
            jobs.append({"id": f"{tid}#{k}", "code": code, "entry": "transform",
                         "inputs": [p["input"] for p in pairs],
                         "expected": [p.get("output") for p in pairs], "mutation": kind})
    return jobs


PROFILE = """\
; profile.ini — the arc-dsl corpus (bench/arc_dsl_corpus.py): arc-dsl solvers
; and their mutations, scored by the warm Python runtime.
[resources]
workers = auto
memory_per_worker = 512M

[sandbox]
preset = python
cpu_time = 1s
wall_time = 10s
memory = 512M
output = 1M

[runtime]
kind = python
interpreter = /usr/bin/python3
prelude = prelude.py
entry = transform
"""

PRELUDE = '''\
"""prelude.py — the arc-dsl corpus's prelude (bench/arc_dsl_corpus.py): imports
the DSL once; every prediction starts from these globals."""
import os as _os
import sys as _sys

_sys.path.insert(0, _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), {dsl_dir!r}))

import numpy  # noqa: E402,F401
import numpy as np  # noqa: E402,F401

from dsl import *  # noqa: E402,F401,F403
from constants import *  # noqa: E402,F401,F403
'''


def git_commit(path):
    try:
        p = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        return p.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def parse_weights(spec):
    """--mutations: 'all' (the default mix), or NAME[=WEIGHT],... (names from
    MUTATIONS and OPT_IN; a bare name keeps its default weight), '+NAME,...'
    adds to the default mix."""
    defaults = dict(MUTATIONS, **OPT_IN)
    if spec in (None, "", "all"):
        return list(MUTATIONS)
    out = dict(MUTATIONS) if spec.startswith("+") else {}
    for item in spec.lstrip("+").split(","):
        name, _, w = item.partition("=")
        if name not in defaults:
            sys.exit(f"arc_dsl_corpus: unknown mutation '{name}' (known: {', '.join(defaults)})")
        out[name] = float(w) if w else defaults[name]
    return [(n, w) for n, w in out.items() if w > 0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--arc-dsl", required=True, help="a checkout of github.com/michaelhodel/arc-dsl")
    ap.add_argument("--tasks", required=True, help="ARC-AGI-1 training tasks, one TASK.json each")
    ap.add_argument("--out", required=True, help="output directory (created)")
    ap.add_argument("--per-solver", type=int, default=8, help="predictions per solver (default 8)")
    ap.add_argument("--seed", default="0", help="mutation seed (default 0)")
    ap.add_argument("--mutations", default="all",
                    help="'all' (default mix), NAME[=W],... or +NAME,... (opt-in: poison)")
    ap.add_argument("--copy-dsl", action="store_true",
                    help="copy dsl.py, constants.py, arc_types.py into --out (self-contained)")
    a = ap.parse_args()

    arc_dsl = os.path.abspath(a.arc_dsl)
    for m in DSL_MODULES + ("solvers.py",):
        if not os.path.isfile(os.path.join(arc_dsl, m)):
            sys.exit(f"arc_dsl_corpus: {arc_dsl}: no {m} (git clone "
                     "https://github.com/michaelhodel/arc-dsl)")
    weights = parse_weights(a.mutations)
    solvers = load_solvers(arc_dsl)
    tasks = load_tasks(a.tasks)
    jobs = make_jobs(solvers, tasks, a.per_solver, a.seed, weights)

    os.makedirs(a.out, exist_ok=True)
    if a.copy_dsl:
        for m in DSL_MODULES:
            shutil.copyfile(os.path.join(arc_dsl, m), os.path.join(a.out, m))
        dsl_dir = "."
    else:
        dsl_dir = arc_dsl
    with open(os.path.join(a.out, "jobs.jsonl"), "w") as f:
        for j in jobs:
            f.write(json.dumps(j, separators=(",", ":")) + "\n")
    with open(os.path.join(a.out, "profile.ini"), "w") as f:
        f.write(PROFILE)
    with open(os.path.join(a.out, "prelude.py"), "w") as f:
        f.write(PRELUDE.format(dsl_dir=dsl_dir))
    counts = collections.Counter(j["mutation"] for j in jobs)
    manifest = {"predictions": len(jobs), "solvers": len({j["id"].split("#")[0] for j in jobs}),
                "per_solver": a.per_solver, "seed": a.seed, "mutations": dict(weights),
                "arc_dsl": arc_dsl, "arc_dsl_commit": git_commit(arc_dsl),
                "tasks": os.path.abspath(a.tasks), "dsl_copied": a.copy_dsl,
                "counts": dict(sorted(counts.items(), key=lambda kv: -kv[1]))}
    with open(os.path.join(a.out, "corpus.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    missing = sorted(set(tasks) - set(solvers))
    print(f"arc_dsl_corpus: {len(jobs)} predictions from {manifest['solvers']} solvers in {a.out}"
          + (f" ({len(missing)} tasks without a solver)" if missing else ""), file=sys.stderr)
    print("  " + ", ".join(f"{k} {v}" for k, v in manifest["counts"].items()), file=sys.stderr)


if __name__ == "__main__":
    main()
