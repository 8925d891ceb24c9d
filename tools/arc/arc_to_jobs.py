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
and the exit status is 1. A command line over fitrun.arc (standard library only).
"""
import argparse
import os
import sys

# The checkout's package first (python/ next to tools/), else an installed one.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from fitrun.arc import InputError, load_tasks, make_jobs, write_jobs  # noqa: E402


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
