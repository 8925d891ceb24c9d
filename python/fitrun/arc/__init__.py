"""ARC with fitrun: the converter (ARC tasks + LLM predictions -> python
jobs) and the scorer (results -> the usual metrics table), as functions.
tools/arc/arc_to_jobs.py and tools/arc/arc_score.py are command lines over
them; docs/arc.md describes formats and metrics.

    from fitrun import arc
    tasks = arc.load_tasks("challenges.json", "solutions.json")
    jobs, problems = arc.jobs_from_predictions(tasks, {"007bbfb7": [code, ...]})
    results = runner.map(jobs)
    table, errors, missing = arc.score(jobs, results)
    print(arc.format_errors(errors)); print(arc.format_table(table, per_task=True))
"""
from ._common import InputError, extract_code, is_grid, load_json, read_jsonl
from ._convert import (jobs_from_predictions, load_tasks, make_jobs, make_task, predictions_of,
                       tasks_from_challenges, write_jobs)
from ._score import (COLUMNS, error_key, format_errors, format_table, load, pixel_score, score,
                     score_prediction)

__all__ = ["COLUMNS", "InputError", "error_key", "extract_code", "format_errors", "format_table",
           "is_grid", "jobs_from_predictions", "load", "load_json", "load_tasks", "make_jobs",
           "make_task", "pixel_score", "predictions_of", "read_jsonl", "score", "score_prediction",
           "tasks_from_challenges", "write_jobs"]
