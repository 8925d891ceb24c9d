"""test_bench_tools.py — unit tests of the bench tools that need no arc-dsl
and no fitrun: the corpus generator on a stand-in DSL (mini-dsl/), the
in-process peers and the comparer on arc-mini/, the scale projection.
Run by tests/cli/bench_tools.bats with /usr/bin/python3 (numpy, joblib)."""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("FITRUN_SRC") or os.path.dirname(os.path.dirname(HERE))
BENCH = os.path.join(SRC, "bench")
SHARED = os.environ.get("FITRUN_SHARED") or os.path.join(SRC, "..", "shared")
TASKS = os.path.join(SHARED, "data", "arc-agi-1", "training")
MINI_DSL = os.path.join(HERE, "mini-dsl")
MINI = os.path.join(HERE, "arc-mini")
PY = sys.executable
sys.path.insert(0, BENCH)
import arc_compare  # noqa: E402
import python_common as pc  # noqa: E402
import scale  # noqa: E402


def jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def generate(out, *extra):
    return subprocess.run([PY, os.path.join(BENCH, "arc_dsl_corpus.py"), "--arc-dsl", MINI_DSL,
                           "--tasks", TASKS, "--out", out, *extra], capture_output=True, text=True)


def peer(name, profile, jobs, out, workers=2):
    p = subprocess.run([PY, os.path.join(BENCH, "arc_peers.py"), "--profile", profile, "--jobs", jobs,
                        "--peer", name, "--workers", str(workers), "--out", out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"arc_peers {name} failed: {p.stderr}")
    return {r["id"]: r for r in jsonl(out)}


class Corpus(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_jobs_profile_prelude_and_determinism(self):
        a, b = (os.path.join(self.tmp.name, x) for x in "ab")
        for d in (a, b):
            p = generate(d)
            self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(a, "jobs.jsonl"), "rb") as f, open(os.path.join(b, "jobs.jsonl"), "rb") as g:
            self.assertEqual(f.read(), g.read(), "same arguments, different corpus")
        jobs = jsonl(os.path.join(a, "jobs.jsonl"))
        self.assertEqual(len(jobs), 3 * 8)
        self.assertEqual([j["id"] for j in jobs[:8]], [f"67a3c6ac#{k}" for k in range(8)])
        with open(os.path.join(TASKS, "67a3c6ac.json")) as f:
            task = json.load(f)
        pairs = task["train"] + task["test"]
        for j in jobs:
            self.assertEqual(set(j), {"id", "code", "entry", "inputs", "expected", "mutation"})
            self.assertEqual(j["entry"], "transform")
        self.assertEqual(jobs[0]["inputs"], [p["input"] for p in pairs])
        self.assertEqual(jobs[0]["expected"], [p["output"] for p in pairs])
        self.assertEqual(jobs[0]["mutation"], "original")
        self.assertIn("def solve_67a3c6ac(I):\n    x1 = hmirror(I)\n    x2 = vmirror(x1)\n"
                      "    O = hmirror(x2)\n    return O\n", jobs[0]["code"])
        cfg = pc.read_profile(os.path.join(a, "profile.ini"))
        self.assertEqual((cfg["cpu_s"], cfg["memory"], cfg["interpreter"]),
                         (1.0, 512 * 2**20, "/usr/bin/python3"))
        with open(os.path.join(a, "profile.ini")) as f:
            self.assertIn("preset = python", f.read())
        with open(os.path.join(a, "prelude.py")) as f:
            prelude = f.read()
        self.assertIn(repr(os.path.abspath(MINI_DSL)), prelude)
        with open(os.path.join(a, "corpus.json")) as f:
            manifest = json.load(f)
        self.assertEqual((manifest["predictions"], manifest["solvers"]), (24, 3))
        self.assertEqual(sum(manifest["counts"].values()), 24)

    def test_copy_dsl_makes_it_self_contained(self):
        d = os.path.join(self.tmp.name, "c")
        self.assertEqual(generate(d, "--copy-dsl", "--per-solver", "1").returncode, 0)
        for m in ("dsl.py", "constants.py", "arc_types.py"):
            self.assertTrue(os.path.isfile(os.path.join(d, m)), m)
        moved = os.path.join(self.tmp.name, "moved")
        os.rename(d, moved)
        res = peer("sequential", os.path.join(moved, "profile.ini"), os.path.join(moved, "jobs.jsonl"),
                   os.path.join(self.tmp.name, "r.jsonl"))
        self.assertEqual({r["status"] for r in res.values()}, {"ok"})
        self.assertTrue(all(all(r["passed"]) for r in res.values()))

    def test_unknown_mutation_is_refused(self):
        p = generate(os.path.join(self.tmp.name, "x"), "--mutations", "nope")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("unknown mutation 'nope'", p.stderr)

    def test_each_failure_mutation_fails_as_it_says(self):
        """Every prediction #1 is the one mutation asked for (where it applies
        to the solver); run in-process they end as designed."""
        want = {"index-error": ("error", "IndexError"), "attribute-error": ("error", "AttributeError"),
                "name-error": ("error", "NameError"), "zero-division": ("error", "ZeroDivisionError"),
                "syntax-error": ("error", "SyntaxError"), "missing-entry": ("error", "NameError"),
                "recursion": ("error", "RecursionError"), "memory": ("memory", "MemoryError"),
                "loop": ("timeout", "CPUTimeout"), "none-return": ("ok", None),
                "identity": ("ok", None), "type-error": ("error", "TypeError")}
        jobs = []
        for kind in want:
            d = os.path.join(self.tmp.name, kind)
            self.assertEqual(generate(d, "--mutations", kind, "--per-solver", "2").returncode, 0)
            mutated = [j for j in jsonl(os.path.join(d, "jobs.jsonl")) if j["id"].endswith("#1")]
            applied = [j for j in mutated if j["mutation"] == kind]
            self.assertTrue(applied, f"{kind} applies to no solver of mini-dsl")
            jobs += [dict(j, id=f"{kind}/{j['id']}") for j in applied]
        # The loops with a shorter CPU budget; the memory hogs with a longer
        # one (filling 512M takes about 2 s of CPU on a paravirtualised
        # guest, 15-20 µs a page fault: bench/README.md); the rest with the
        # corpus's own 1 s.
        d = os.path.join(self.tmp.name, "index-error")
        with open(os.path.join(d, "profile.ini")) as f:
            text = f.read()
        for name, budget in (("short.ini", "200ms"), ("long.ini", "30s")):
            with open(os.path.join(d, name), "w") as f:
                f.write(text.replace("cpu_time = 1s", f"cpu_time = {budget}"))
        res = {}
        for prof, sel in (("short.ini", lambda j: j["mutation"] == "loop"),
                          ("long.ini", lambda j: j["mutation"] == "memory"),
                          ("profile.ini", lambda j: j["mutation"] not in ("loop", "memory"))):
            path = os.path.join(self.tmp.name, prof + ".jsonl")
            with open(path, "w") as f:
                f.writelines(json.dumps(j) + "\n" for j in jobs if sel(j))
            res.update(peer("sequential", os.path.join(d, prof), path, path + ".out"))
        self.assertEqual(len(res), len(jobs))
        for rid, r in res.items():
            kind = rid.split("/")[0]
            self.assertEqual((r["status"], r["error_type"]), want[kind], rid)
            if r["status"] in ("ok", "error"):
                self.assertNotIn(True, r["passed"], rid)

    def test_output_type_mutations_keep_the_answer(self):
        for kind in ("list", "numpy", "numpy-float", "list-of-tuples", "print", "slow"):
            d = os.path.join(self.tmp.name, kind)
            self.assertEqual(generate(d, "--mutations", kind, "--per-solver", "2").returncode, 0)
            res = peer("sequential", os.path.join(d, "profile.ini"), os.path.join(d, "jobs.jsonl"),
                       os.path.join(d, "r.jsonl"))
            for rid, r in res.items():
                self.assertEqual(r["status"], "ok", (kind, rid))
                self.assertTrue(all(r["passed"]), (kind, rid))


class Peers(unittest.TestCase):
    def test_every_peer_gives_the_known_outcomes(self):
        with tempfile.TemporaryDirectory() as tmp:
            for jobs, outcomes in (("jobs.jsonl", "outcomes.jsonl"),
                                   ("scoring.jsonl", "scoring-outcomes.jsonl")):
                known = {r["id"]: r for r in jsonl(os.path.join(MINI, outcomes))}
                for name in ("sequential", "joblib", "pool", "fork", "shared"):
                    got = peer(name, os.path.join(MINI, "profile.ini"), os.path.join(MINI, jobs),
                               os.path.join(tmp, f"{name}.jsonl"))
                    self.assertEqual(arc_compare.compare(known, got, {}), [], (name, jobs))

    def test_to_plain(self):
        import numpy as np
        self.assertEqual(pc.to_plain(((1, 2), (3, np.int64(4)))), [[1, 2], [3, 4]])
        self.assertEqual(pc.to_plain(np.array([[1.5, 2]])), [[1.5, 2.0]])
        self.assertIs(pc.to_plain(np.bool_(True)), True)
        self.assertEqual(pc.to_plain({"a": (1,)}), {"a": [1]})
        for bad in ({1, 2}, frozenset(), float("nan"), 2**64, {1: 2}, object(), print):
            with self.assertRaises(pc.Unserializable, msg=repr(bad)):
                pc.to_plain(bad)

    def test_passed_is_pythons_equality(self):
        r = pc.InProcess(base_globals={}, cpu_s=5).run(
            {"id": "x", "code": "def transform(g):\n    return [[c == 1 for c in r] for r in g]\n",
             "inputs": [[[0, 1]], [[2]]], "expected": [[[0, 1]], [[2]]]})
        self.assertEqual((r["status"], r["passed"]), ("ok", [True, False]))


class Compare(unittest.TestCase):
    def run_main(self, *args):
        out = io.StringIO()
        with redirect_stdout(out):
            try:
                sys.argv = ["arc_compare.py", *args]
                arc_compare.main()
                code = 0
            except SystemExit as e:
                code = e.code
        return code, out.getvalue()

    def write(self, tmp, name, rows):
        path = os.path.join(tmp, name)
        with open(path, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        return path

    def test_identical_files_exit_0(self):
        p = os.path.join(MINI, "outcomes.jsonl")
        code, out = self.run_main(p, p)
        self.assertEqual(code, 0)
        self.assertRegex(out, r"outcomes +14 +14 +0 +0 +0 +0")

    def test_every_difference_is_named_and_explained(self):
        with tempfile.TemporaryDirectory() as tmp:
            jobs = self.write(tmp, "jobs.jsonl", [
                {"id": "a", "expected": [[[0, 1]]], "mutation": "bool-mask"},
                {"id": "b", "expected": [[[1]]]}, {"id": "c", "expected": [[[1]]]}])
            fit = self.write(tmp, "fit.jsonl", [
                {"id": "a", "status": "ok", "passed": [False], "outputs": [[[False, True]]]},
                {"id": "b", "status": "timeout", "passed": None, "cpu_ms": 990},
                {"id": "c", "status": "ok", "passed": [True]}])
            peer_ = self.write(tmp, "peer.jsonl", [
                {"id": "a", "status": "ok", "passed": [True]},
                {"id": "b", "status": "ok", "passed": [True]}, {"id": "d", "status": "ok"}])
            code, out = self.run_main("--jobs", jobs, "--names", "fitrun,pool", fit, peer_)
        self.assertEqual(code, 1)
        self.assertIn("a [bool-mask]: fitrun ok passed=[false] | pool: ok passed=[true] — scorer: "
                      "Python's == on fitrun's own outputs gives the other verdict on inputs [0]: "
                      "its outputs hold bool where the answer has int", out)
        self.assertIn("b: fitrun timeout passed=null | pool: ok passed=[true] — status differs "
                      "(fitrun cpu_ms 990", out)
        self.assertIn("c: fitrun ok passed=[true] | pool: (missing)", out)
        self.assertIn("d: fitrun (missing) | pool: ok passed=null", out)
        self.assertRegex(out, r"pool +4 +0 +1 +1 +1 +1")

    def test_bad_line_exits_2_with_file_and_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.jsonl")
            with open(bad, "w") as f:
                f.write('{"id": "a", "status": "ok"}\n{"status": "ok"}\n')
            p = subprocess.run([PY, os.path.join(BENCH, "arc_compare.py"), bad, bad],
                               capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad.jsonl:2: not a result line", p.stderr)


class Projection(unittest.TestCase):
    def test_ceiling_binding_point_and_launchers(self):
        text = " ".join(scale.projection(500, 100, 256))
        self.assertIn("tops out at 2,000 predictions/s", text)
        self.assertIn("binds at about 20 workers", text)
        self.assertIn("needs 25,500/s: 13 launchers at least", text)
        self.assertIn("or 12.8× less launcher CPU per prediction (≤ 39 µs) for one", text)
        self.assertIn("one launcher suffices", " ".join(scale.projection(30, 100, 256)))


class Runners(unittest.TestCase):
    def test_each_fitrun_runner_runs_its_binary_with_its_isolation(self):
        import argparse
        a = argparse.Namespace(fitrun="/new/fitrun", baseline="/base/fitrun", profile="p.ini", jobs="j.jsonl",
                               python="/usr/bin/python3", profile_interpreter="/usr/bin/python3")
        for name, binary, reuse in (("fitrun", "/new/fitrun", False), ("fitrun-reuse", "/new/fitrun", True),
                                    ("fitrun-base", "/base/fitrun", False),
                                    ("fitrun-base-reuse", "/base/fitrun", True)):
            with self.subTest(name):
                argv = scale.runner_argv(name, a, 2, "out.jsonl")
                self.assertEqual(argv[0], binary)
                self.assertEqual("runtime.isolation=reuse" in argv, reuse)
                self.assertEqual(argv[argv.index("--workers") + 1], "2")


if __name__ == "__main__":
    unittest.main()
