"""Unit tests of tools/arc/ (arc_to_jobs.py, arc_score.py) and the fitrun.arc
helpers they are built on.

    /usr/bin/python3 -m unittest discover -s tests/python -p 'test_arc_tools.py'
"""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("FITRUN_SRC") or os.path.dirname(os.path.dirname(HERE))
TOOLS = os.path.join(SRC, "tools", "arc")
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.join(SRC, "python"))

import arc_score  # noqa: E402
import arc_to_jobs  # noqa: E402
from fitrun import arc  # noqa: E402

G1 = [[1, 2], [3, 4]]
G2 = [[4, 3], [2, 1]]
CHALLENGES = {
    "t1": {"train": [{"input": G1, "output": G2}, {"input": G2, "output": G1}],
           "test": [{"input": [[5]]}]},
    "t2": {"train": [{"input": [[0]], "output": [[1]]}], "test": [{"input": [[1]]}, {"input": [[2]]}]},
}
SOLUTIONS = {"t1": [[[5]]], "t2": [[[2]], [[3]]]}


class Tmp(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="fitrun-test-arc-")
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, obj):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        return path


class ExtractCode(unittest.TestCase):
    def test_first_python_block(self):
        text = "Idea.\n```python\ndef transform(g):\n    return g\n```\nmore\n```python\nx = 1\n```"
        self.assertEqual(arc.extract_code(text), "def transform(g):\n    return g\n")

    def test_py_tag_and_case(self):
        self.assertEqual(arc.extract_code("```Py\nx=1\n```"), "x=1\n")

    def test_untagged_or_other_language_is_not_code(self):
        self.assertIsNone(arc.extract_code("```\nx=1\n```"))
        self.assertIsNone(arc.extract_code("```json\n{}\n```"))
        self.assertIsNone(arc.extract_code("no code at all"))

    def test_is_grid(self):
        self.assertTrue(arc.is_grid([[0, 9]]))
        for bad in ([], [[]], [[1, 2], [3]], [[10]], [[-1]], [[1.0]], [[True]], [[0] * 31],
                    [[0]] * 31, "x", [1, 2]):
            self.assertFalse(arc.is_grid(bad), bad)


class ToJobs(Tmp):
    def convert(self, preds, solutions=True, extra=()):
        args = ["--challenges", self.write("c.json", CHALLENGES)]
        if solutions:
            args += ["--solutions", self.write("s.json", SOLUTIONS)]
        for i, p in enumerate(preds):
            args += ["--predictions", self.write(f"p{i}.json", p)]
        out = os.path.join(self.tmp.name, "jobs.jsonl")
        err = io.StringIO()
        with redirect_stderr(err):
            rc = arc_to_jobs.main(args + ["--out", out] + list(extra))
        with open(out) as f:
            jobs = [json.loads(line) for line in f]
        return rc, jobs, err.getvalue()

    def test_code_lists(self):
        rc, jobs, _ = self.convert([{"t1": ["A", "B"], "t2": ["C"]}])
        self.assertEqual(rc, 0)
        self.assertEqual([j["id"] for j in jobs], ["t1#0", "t1#1", "t2#0"])
        j = jobs[0]
        self.assertEqual(j["code"], "A")
        self.assertEqual(j["inputs"], [G1, G2, [[5]]])
        self.assertEqual(j["expected"], [G2, G1, [[5]]])
        self.assertEqual(j["arc"], {"task": "t1", "n_train": 2, "n_test": 1, "code_found": True})
        self.assertNotIn("entry", j)
        self.assertEqual(jobs[2]["inputs"], [[[0]], [[1]], [[2]]])

    def test_text_predictions_and_numbering_across_files(self):
        text = {"t1": {"text_predictions": ["```python\ndef transform(g):\n    return g\n```", "no code"]}}
        rc, jobs, _ = self.convert([{"t1": ["A"]}, text], extra=["--entry", "solve"])
        self.assertEqual(rc, 0)
        self.assertEqual([j["id"] for j in jobs], ["t1#0", "t1#1", "t1#2"])
        self.assertEqual(jobs[1]["code"], "def transform(g):\n    return g\n")
        self.assertEqual((jobs[2]["code"], jobs[2]["arc"]["code_found"]), ("", False))
        self.assertEqual(jobs[0]["entry"], "solve")

    def test_without_solutions_test_outputs_are_null(self):
        _, jobs, _ = self.convert([{"t2": ["C"]}], solutions=False)
        self.assertEqual(jobs[0]["expected"], [[[1]], None, None])

    def test_problems_are_named_and_the_rest_is_kept(self):
        rc, jobs, err = self.convert([{"t1": ["A"], "nope": ["B"], "t2": [3]}])
        self.assertEqual(rc, 1)
        self.assertEqual([j["id"] for j in jobs], ["t1#0"])
        self.assertIn("p0.json: task nope: not in the challenges", err)
        self.assertIn("p0.json: task t2: expected a list of code strings", err)

    def test_invalid_json_names_file_line_column(self):
        bad = self.write("bad.json", '{"t1": ["A",\n  oops]}')
        err = io.StringIO()
        with redirect_stderr(err):
            rc = arc_to_jobs.main(["--challenges", self.write("c.json", CHALLENGES),
                                   "--predictions", bad, "--out", os.path.join(self.tmp.name, "o")])
        self.assertEqual(rc, 1)
        self.assertIn("bad.json:2:3: invalid JSON", err.getvalue())

    def test_task_dir_layout(self):
        d = os.path.join(self.tmp.name, "tasks")
        os.mkdir(d)
        with open(os.path.join(d, "t9.json"), "w") as f:
            json.dump({"train": [{"input": [[1]], "output": [[2]]}],
                       "test": [{"input": [[3]], "output": [[4]]}]}, f)
        out = os.path.join(self.tmp.name, "j")
        with redirect_stderr(io.StringIO()):
            rc = arc_to_jobs.main(["--task-dir", d, "--predictions", self.write("p.json", {"t9": ["X"]}),
                                   "--out", out])
        self.assertEqual(rc, 0)
        with open(out) as f:
            job = json.loads(f.readline())
        self.assertEqual((job["inputs"], job["expected"]), ([[[1]], [[3]]], [[[2]], [[4]]]))

    def test_runs_as_a_script_with_stdout(self):
        p = subprocess.run(["/usr/bin/python3", os.path.join(TOOLS, "arc_to_jobs.py"),
                            "--challenges", self.write("c.json", CHALLENGES),
                            "--predictions", self.write("p.json", {"t2": ["C"]})],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["id"], "t2#0")
        self.assertIn("1 jobs from 1 tasks", p.stderr)


def result(jid, status="ok", outputs=None, **kw):
    return dict({"id": jid, "status": status, "outputs": outputs}, **kw)


class Score(Tmp):
    def jobs(self, preds):
        with redirect_stderr(io.StringIO()):
            jobs, _ = arc_to_jobs.make_jobs(arc_to_jobs.load_tasks(
                self.write("c.json", CHALLENGES), self.write("s.json", SOLUTIONS)),
                [self.write("p.json", preds)])
        return jobs

    def test_metrics_of_one_task(self):
        jobs = self.jobs({"t1": ["right", "half", "boom", "dup-right"]})
        results = {
            "t1#0": result("t1#0", outputs=[G2, G1, [[5]]]),
            "t1#1": result("t1#1", outputs=[[[4, 3], [0, 0]], G1, [[6]]]),  # pixel 0.5, 1, 0
            "t1#2": result("t1#2", "error", [None, None, None], error_type="IndexError"),
            "t1#3": result("t1#3", outputs=[G2, G1, [[5]]]),
        }
        table, errors, missing = arc_score.score(jobs, results)
        row = table["t1"]
        self.assertEqual(row["n_preds"], 4)
        self.assertEqual(row["valid code"], 1.0)
        self.assertEqual(row["valid outputs"], 0.75)
        self.assertEqual(row["unique outputs"], 0.5)  # two distinct output sets of four
        self.assertAlmostEqual(row["train_pixel_score"], (1 + 0.75 + 0 + 1) / 4)
        self.assertAlmostEqual(row["train_correct_grids"], (1 + 0.5 + 0 + 1) / 4)
        self.assertEqual(row["train_pass_rate"], 0.5)
        self.assertEqual(row["train_is_correct"], 1.0)
        self.assertEqual(row["test_pixel_score"], 0.5)
        self.assertEqual(row["test_pass_rate"], 0.5)
        self.assertEqual(row["is_correct"], 1.0)
        self.assertEqual(errors, {"IndexError": 1})
        self.assertEqual(missing, 0)
        self.assertEqual(table["MEAN"]["train_pass_rate"], 0.5)

    def test_stopped_predictions_score_nothing_whatever_they_output(self):
        # A MemoryError after the first grid (partial outputs) scores like an
        # OOM kill of the same prediction (no outputs): both were stopped.
        jobs = self.jobs({"t1": ["mem-error", "oom-kill", "error"]})
        results = {"t1#0": result("t1#0", "memory", [G2, None, None], error_type="MemoryError"),
                   "t1#1": result("t1#1", "memory", None, error_type="OOMKill", signal="SIGKILL"),
                   "t1#2": result("t1#2", "error", [G2, None, None], error_type="IndexError")}
        table, errors, _ = arc_score.score(jobs, results)
        facts = [arc_score.score_prediction(j, results[j["id"]]) for j in jobs]
        self.assertEqual(facts[0], facts[1])
        self.assertEqual(facts[0]["train"]["pixel"], 0)
        self.assertEqual(facts[2]["train"]["grids"], 0.5)  # an error ran to its end: it counts
        self.assertEqual(errors, {"memory": 2, "IndexError": 1})

    def test_is_correct_needs_the_same_prediction_on_train_and_test(self):
        jobs = self.jobs({"t2": ["train-only", "test-only"]})
        results = {"t2#0": result("t2#0", outputs=[[[1]], [[0]], [[0]]]),
                   "t2#1": result("t2#1", outputs=[[[0]], [[2]], [[3]]])}
        row = arc_score.score(jobs, results)[0]["t2"]
        self.assertEqual((row["train_is_correct"], row["test_is_correct"], row["is_correct"]), (1.0, 1.0, 0.0))

    def test_error_labels_and_missing_results(self):
        jobs = self.jobs({"t1": ["a", "b", "c", "d", "e", "f"]})
        results = {"t1#0": result("t1#0", "timeout", timeout="cpu"),
                   "t1#1": result("t1#1", "violation", syscall="socket"),
                   "t1#2": result("t1#2", "signal", signal="SIGSEGV"),
                   "t1#3": result("t1#3", "error", error_type="SyntaxError"),
                   "t1#4": result("t1#4", "signal", signal=11)}
        table, errors, missing = arc_score.score(jobs, results)
        self.assertEqual(errors, {"timeout:cpu": 1, "violation:socket": 1, "signal:SIGSEGV": 2,
                                  "SyntaxError": 1, "missing": 1})
        self.assertEqual(missing, 1)
        self.assertAlmostEqual(table["t1"]["valid code"], 5 / 6)  # only the SyntaxError is invalid code
        self.assertEqual(table["t1"]["valid outputs"], 0.0)

    def test_unknown_test_outputs_give_no_test_metrics(self):
        with redirect_stderr(io.StringIO()):
            jobs, _ = arc_to_jobs.make_jobs(arc_to_jobs.load_tasks(self.write("c.json", CHALLENGES)),
                                            [self.write("p.json", {"t2": ["x"]})])
        table, _, _ = arc_score.score(jobs, {"t2#0": result("t2#0", outputs=[[[1]], [[2]], [[3]]])})
        self.assertIsNone(table["t2"]["test_pass_rate"])
        self.assertIsNone(table["t2"]["is_correct"])
        self.assertEqual(table["t2"]["train_pass_rate"], 1.0)

    def test_cli_table_and_bad_lines(self):
        jobs = self.jobs({"t1": ["a"]})
        jpath = self.write("jobs.jsonl", "".join(json.dumps(j) + "\n" for j in jobs))
        rpath = self.write("r.jsonl", json.dumps(result("t1#0", outputs=[G2, G1, [[5]]])) + "\n"
                           + "garbage\n" + json.dumps(result("zz#0")) + "\n")
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = arc_score.main(["--jobs", jpath, rpath, "--per-task"])
        self.assertEqual(rc, 1)
        self.assertIn("r.jsonl:2: invalid JSON", err.getvalue())
        self.assertIn("r.jsonl:3: id 'zz#0' is not in", err.getvalue())
        lines = out.getvalue().splitlines()
        self.assertIn("Most common errors: none", lines[0])
        header = [ln for ln in lines if "n_preds" in ln][0]
        for col in arc_score.COLUMNS:
            self.assertIn(col, header)
        mean = [ln for ln in lines if ln.startswith("MEAN")][0].split()
        self.assertEqual(mean[1:], ["1"] + ["1.000"] * 12)

    def test_duplicate_ids_keep_the_result_of_the_line_that_ran(self):
        # fitrun answers a repeated id at once (invalid, DuplicateId), often
        # before the result of the line that ran: that one is scored.
        jobs = self.jobs({"t1": ["a"]})
        jpath = self.write("jobs.jsonl", "".join(json.dumps(j) + "\n" for j in jobs + jobs))
        dup = result("t1#0", "invalid", error_type="DuplicateId")
        rpath = self.write("r.jsonl", json.dumps(dup) + "\n" + json.dumps(result("t1#0", outputs=[G2, G1, [[5]]]))
                           + "\n" + json.dumps(dup) + "\n")
        _, results, problems = arc_score.load(jpath, rpath)
        self.assertEqual(results["t1#0"]["status"], "ok")
        self.assertEqual(len(problems), 2)
        self.assertIn("r.jsonl:2: duplicate id 't1#0' (this line kept: the earlier one is DuplicateId)", problems[0])
        self.assertIn("r.jsonl:3: duplicate id 't1#0' (an earlier line kept)", problems[1])

    def test_json_output(self):
        jobs = self.jobs({"t1": ["a"]})
        jpath = self.write("jobs.jsonl", "".join(json.dumps(j) + "\n" for j in jobs))
        rpath = self.write("r.jsonl", json.dumps(result("t1#0", "timeout")) + "\n")
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(arc_score.main(["--jobs", jpath, rpath, "--json"]), 0)
        doc = json.loads(out.getvalue())
        self.assertEqual(doc["errors"], {"timeout": 1})
        self.assertEqual(doc["metrics"]["MEAN"]["train_pass_rate"], 0.0)


class Sample(unittest.TestCase):
    """The bundled sample is what build_sample.py makes of its sources."""

    def test_sample_jobs_are_up_to_date(self):
        d = os.path.join(SRC, "samples", "arc")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "jobs.jsonl")
            with redirect_stderr(io.StringIO()):
                rc = arc_to_jobs.main(["--challenges", os.path.join(d, "challenges.json"),
                                       "--solutions", os.path.join(d, "solutions.json"),
                                       "--predictions", os.path.join(d, "predictions.json"),
                                       "--predictions", os.path.join(d, "predictions_text.json"),
                                       "--out", out])
            self.assertEqual(rc, 0)
            with open(out) as a, open(os.path.join(d, "jobs.jsonl")) as b:
                self.assertEqual(a.read(), b.read())
        with open(os.path.join(d, "expected.json")) as f:
            expected = json.load(f)
        with open(os.path.join(d, "jobs.jsonl")) as f:
            ids = [json.loads(line)["id"] for line in f]
        self.assertEqual(sorted(expected), sorted(ids))


if __name__ == "__main__":
    unittest.main()
