#!/usr/bin/python3
"""arc_score.py — the usual ARC metrics table from `fitrun run` results.

    arc_score.py --jobs jobs.jsonl results.jsonl [--per-task] [--json]

The jobs file (from arc_to_jobs.py) gives each prediction's task, the
train/test split and the expected grids; the results file gives its
status and outputs. The table has the metrics per task, then their MEAN
over tasks, and the most common errors: their definitions are in
docs/arc.md and in fitrun.arc's scorer (python/fitrun/arc/_score.py),
which this tool runs.
A command line over fitrun.arc (standard library only).
"""
import argparse
import json
import os
import sys

# The checkout's package first (python/ next to tools/), else an installed one.
# COLUMNS and score_prediction are not used here: they stay importable from
# this module for code written against the tool before fitrun.arc existed.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from fitrun.arc import (COLUMNS, InputError, format_errors, format_table, load,  # noqa: E402,F401
                        score, score_prediction)


def main(argv=None):
    ap = argparse.ArgumentParser(description="ARC metrics from fitrun results")
    ap.add_argument("results", help="results JSON Lines from `fitrun run`")
    ap.add_argument("--jobs", required=True, help="the jobs file the results came from (it holds each prediction's task, "
                         "train/test split and expected grids, which results do not)")
    ap.add_argument("--per-task", action="store_true", help="one row per task before MEAN")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    a = ap.parse_args(argv)
    try:
        jobs, results, problems = load(a.jobs, a.results)
    except InputError as e:
        print(f"arc_score: {e}", file=sys.stderr)
        return 1
    for p in problems:
        print(f"arc_score: {p}", file=sys.stderr)
    table, errors, missing = score(jobs, results)
    if a.json:
        print(json.dumps({"metrics": table, "errors": dict(errors.most_common()),
                          "missing": missing}, indent=1))
    else:
        print(format_errors(errors))
        print()
        print(format_table(table, a.per_task))
        if missing:
            print(f"\n{missing} jobs have no result", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
