#!/usr/bin/python3
"""arc_to_jobs.py — turn ARC predictions into fitrun python jobs (JSON Lines).

    arc_to_jobs.py --challenges challenges.json [--solutions solutions.json] \
                   --predictions predictions.json [--predictions more.json] \
                   [--entry transform] [--out jobs.jsonl]
    arc_to_jobs.py --task-dir arc-agi-1/training --predictions predictions.json

Inputs (the formats ARC researchers already have):
  challenges   {task_id: {"train": [{"input", "output"}], "test": [{"input"}]}}
  solutions    {task_id: [test_output_grid, ...]}                 (optional)
  --task-dir   one {task_id}.json per task with "train" and "test" pairs
               whose "output" is known (the ARC-AGI repository layout)
  predictions  {task_id: [code, ...]}  or  {task_id: {"text_predictions": [text, ...]}}
               (text: the code is the first ```python block of each answer)

One job per (task, prediction), id "<task_id>#<k>" (k counts from 0 over
every --predictions file in the order given):
  {"id", "code", ["entry"], "inputs": train inputs + test inputs,
   "expected": train outputs + test outputs (null where unknown),
   "arc": {"task", "n_train", "n_test", "code_found"}}
A text answer without a python block becomes a job with empty code and
code_found false (it fails with NameError and counts as invalid code).

Problems (unknown task, bad JSON, malformed entries) are reported as
"file: task: why", the entry is skipped, everything else is still written,
and the exit status is 1. Standard library only.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from arc_common import InputError, extract_code, load_json  # noqa: E402


def load_tasks(challenges=None, solutions=None, task_dir=None):
    """{task_id: {"train": [(in, out)], "test": [(in, out_or_None)]}}"""
    tasks = {}
    if task_dir:
        try:
            names = sorted(n for n in os.listdir(task_dir) if n.endswith(".json"))
        except OSError as e:
            raise InputError(f"{task_dir}: {e.strerror}") from None
        for name in names:
            path = os.path.join(task_dir, name)
            tasks[name[:-5]] = _task(load_json(path), None, path, name[:-5])
    if challenges:
        chal = load_json(challenges)
        sol = load_json(solutions) if solutions else {}
        if not isinstance(chal, dict):
            raise InputError(f"{challenges}: expected an object {{task_id: task}}")
        if not isinstance(sol, dict):
            raise InputError(f"{solutions}: expected an object {{task_id: [grid, ...]}}")
        for tid, task in chal.items():
            tasks[tid] = _task(task, sol.get(tid), challenges, tid)
    return tasks


def _task(task, test_outputs, path, tid):
    if not isinstance(task, dict) or not isinstance(task.get("train"), list) \
            or not isinstance(task.get("test"), list):
        raise InputError(f"{path}: task {tid}: expected {{\"train\": [...], \"test\": [...]}}")
    try:
        train = [(p["input"], p["output"]) for p in task["train"]]
        test = []
        for i, p in enumerate(task["test"]):
            out = p.get("output")
            if test_outputs is not None:
                out = test_outputs[i] if i < len(test_outputs) else None
            test.append((p["input"], out))
    except (KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{path}: task {tid}: malformed pair ({type(e).__name__}: {e})") from None
    return {"train": train, "test": test}


def predictions_of(entry):
    """[(code, code_found)] from one task's entry in either format, or None."""
    if isinstance(entry, dict) and isinstance(entry.get("text_predictions"), list):
        out = []
        for text in entry["text_predictions"]:
            if not isinstance(text, str):
                return None
            code = extract_code(text)
            out.append((code or "", code is not None))
        return out
    if isinstance(entry, list) and all(isinstance(c, str) for c in entry):
        return [(c, True) for c in entry]
    return None


def make_jobs(tasks, prediction_files, entry=None):
    """Returns (jobs, problems)."""
    jobs, problems = [], []
    counters = {}
    for path in prediction_files:
        try:
            preds = load_json(path)
        except InputError as e:
            problems.append(str(e))
            continue
        if not isinstance(preds, dict):
            problems.append(f"{path}: expected an object {{task_id: [code, ...]}}")
            continue
        for tid, value in preds.items():
            if tid not in tasks:
                problems.append(f"{path}: task {tid}: not in the challenges")
                continue
            codes = predictions_of(value)
            if codes is None:
                problems.append(f"{path}: task {tid}: expected a list of code strings or "
                                f"{{\"text_predictions\": [text, ...]}}")
                continue
            task = tasks[tid]
            pairs = task["train"] + task["test"]
            for code, found in codes:
                k = counters.get(tid, 0)
                counters[tid] = k + 1
                job = {"id": f"{tid}#{k}", "code": code}
                if entry:
                    job["entry"] = entry
                job["inputs"] = [p[0] for p in pairs]
                job["expected"] = [p[1] for p in pairs]
                job["arc"] = {"task": tid, "n_train": len(task["train"]),
                              "n_test": len(task["test"]), "code_found": found}
                jobs.append(job)
    return jobs, problems


def write_jobs(f, jobs):
    for job in jobs:
        f.write(json.dumps(job, separators=(",", ":")) + "\n")
    f.flush()


def main(argv=None):
    ap = argparse.ArgumentParser(description="ARC predictions -> fitrun python jobs (JSON Lines)")
    ap.add_argument("--challenges", help="challenges JSON {task_id: {train, test}}")
    ap.add_argument("--solutions", help="solutions JSON {task_id: [grid, ...]}")
    ap.add_argument("--task-dir", help="directory of {task_id}.json files with test outputs")
    ap.add_argument("--predictions", action="append", required=True,
                    help="predictions JSON (repeatable)")
    ap.add_argument("--entry", help="entry function written into every job (default: the profile's)")
    ap.add_argument("--out", "-o", default="-", help="jobs file (default: stdout)")
    a = ap.parse_args(argv)
    if not a.challenges and not a.task_dir:
        ap.error("give --challenges or --task-dir")
    if a.solutions and not a.challenges:
        ap.error("--solutions goes with --challenges")
    try:
        tasks = load_tasks(a.challenges, a.solutions, a.task_dir)
    except InputError as e:
        print(f"arc_to_jobs: {e}", file=sys.stderr)
        return 1
    jobs, problems = make_jobs(tasks, a.predictions, a.entry)
    try:
        if a.out == "-":
            write_jobs(sys.stdout, jobs)
        else:
            with open(a.out, "w", encoding="utf-8") as f:
                write_jobs(f, jobs)
    except OSError as e:
        print(f"arc_to_jobs: {a.out}: {e.strerror}", file=sys.stderr)
        return 1
    for p in problems:
        print(f"arc_to_jobs: {p}", file=sys.stderr)
    print(f"arc_to_jobs: {len(jobs)} jobs from {len({j['arc']['task'] for j in jobs})} tasks"
          + (f", {len(problems)} problems" if problems else ""), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
