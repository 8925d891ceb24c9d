"""ARC predictions -> fitrun python jobs (the converter; docs/arc.md).

Tasks: {task_id: {"train": [(input, output)], "test": [(input, output or None)]}},
from the Kaggle layout (challenges + optional solutions) or the ARC-AGI
repository layout (a directory of {task_id}.json with test outputs).

Predictions, per task: [code, ...] or {"text_predictions": [answer, ...]}
(the code is the first ```python block of each answer).

One job per (task, prediction), id "<task_id>#<k>" (k counts from 0 per task
over everything converted in one call):
  {"id", "code", ["entry"], "inputs": train inputs + test inputs,
   "expected": train outputs + test outputs (null where unknown),
   "arc": {"task", "n_train", "n_test", "code_found"}}
"""
import json
import os

from ._common import InputError, extract_code, load_json


def load_tasks(challenges=None, solutions=None, task_dir=None):
    """Tasks from files: a challenges JSON with an optional solutions JSON
    (Kaggle layout), and/or a directory of {task_id}.json files."""
    tasks = {}
    if task_dir:
        try:
            names = sorted(n for n in os.listdir(task_dir) if n.endswith(".json"))
        except OSError as e:
            raise InputError(f"{task_dir}: {e.strerror}") from None
        for name in names:
            path = os.path.join(task_dir, name)
            tasks[name[:-5]] = make_task(load_json(path), None, path, name[:-5])
    if challenges:
        chal = load_json(challenges)
        sol = load_json(solutions) if solutions else {}
        if not isinstance(sol, dict):
            raise InputError(f"{solutions}: expected an object {{task_id: [grid, ...]}}")
        tasks.update(tasks_from_challenges(chal, sol, challenges))
    return tasks


def tasks_from_challenges(challenges, solutions=None, source="challenges"):
    """Tasks from already loaded objects: challenges {task_id: {"train",
    "test"}} and solutions {task_id: [test output grid, ...]}."""
    if not isinstance(challenges, dict):
        raise InputError(f"{source}: expected an object {{task_id: task}}")
    solutions = solutions or {}
    return {tid: make_task(task, solutions.get(tid), source, tid) for tid, task in challenges.items()}


def make_task(task, test_outputs=None, source="task", tid="?"):
    """One task {"train": [(in, out)], "test": [(in, out or None)]} from its
    JSON; test_outputs (the solutions' list) win over the test pairs' own."""
    if not isinstance(task, dict) or not isinstance(task.get("train"), list) \
            or not isinstance(task.get("test"), list):
        raise InputError(f"{source}: task {tid}: expected {{\"train\": [...], \"test\": [...]}}")
    try:
        train = [(p["input"], p["output"]) for p in task["train"]]
        test = []
        for i, p in enumerate(task["test"]):
            out = p.get("output")
            if test_outputs is not None:
                out = test_outputs[i] if i < len(test_outputs) else None
            test.append((p["input"], out))
    except (KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{source}: task {tid}: malformed pair ({type(e).__name__}: {e})") from None
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


def jobs_from_predictions(tasks, predictions, entry=None, source="predictions", counters=None):
    """Jobs for already loaded predictions {task_id: [code, ...] or
    {"text_predictions": [...]}}. Returns (jobs, problems); a problem is
    "source: task T: why" and its entry is skipped. counters ({task: next k})
    continues the numbering across calls."""
    jobs, problems = [], []
    counters = {} if counters is None else counters
    if not isinstance(predictions, dict):
        return jobs, [f"{source}: expected an object {{task_id: [code, ...]}}"]
    for tid, value in predictions.items():
        if tid not in tasks:
            problems.append(f"{source}: task {tid}: not in the challenges")
            continue
        codes = predictions_of(value)
        if codes is None:
            problems.append(f"{source}: task {tid}: expected a list of code strings or "
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


def make_jobs(tasks, prediction_files, entry=None):
    """Jobs for prediction files, numbered per task across the files in the
    order given. Returns (jobs, problems)."""
    jobs, problems = [], []
    counters = {}
    for path in prediction_files:
        try:
            preds = load_json(path)
        except InputError as e:
            problems.append(str(e))
            continue
        more, trouble = jobs_from_predictions(tasks, preds, entry, path, counters)
        jobs += more
        problems += trouble
    return jobs, problems


def write_jobs(f, jobs):
    """Jobs as JSON Lines to an open text file."""
    for job in jobs:
        f.write(json.dumps(job, separators=(",", ":")) + "\n")
    f.flush()
