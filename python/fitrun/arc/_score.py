"""fitrun results -> the usual ARC metrics table (the scorer; docs/arc.md).

The jobs (from the converter) give each prediction's task, the train/test
split and the expected grids; the results give its status and outputs.
Metrics per task, then their MEAN over tasks:

  n_preds            predictions of the task
  valid code         the code was found and compiled (no SyntaxError family)
  valid outputs      status ok and every output is an ARC grid
  unique outputs     distinct output sets among valid ones / n_preds
  train_pixel_score  mean fraction of matching cells over train pairs
                     (0 for a missing, invalid or differently shaped grid)
  train_correct_grids  mean fraction of train grids exactly right
  train_pass_rate    fraction of predictions right on every train pair
  train_is_correct   1 if some prediction is right on every train pair
  test_* (same on the test pairs whose output is known)
  is_correct         1 if some prediction is right on every train and test pair

Outputs count only for predictions that ran to their end (status ok or
error), like fitrun's own `passed`: the partial outputs of a prediction that
was stopped (memory, timeout, violation, signal, output_limit, crash) score
nothing, so a MemoryError and an OOM kill of the same prediction score the
same wherever it ran.

"Most common errors" counts error types (status error) and the other
non-ok statuses (timeout:cpu, memory, violation:<syscall>, signal:<name>...).
"""
import json
import signal
from collections import Counter
from collections.abc import Mapping

from ._common import is_grid, read_jsonl

COLUMNS = ["n_preds", "valid code", "valid outputs", "unique outputs",
           "train_pixel_score", "train_correct_grids", "train_pass_rate", "train_is_correct",
           "test_pixel_score", "test_correct_grids", "test_pass_rate", "test_is_correct",
           "is_correct"]
SYNTAX_ERRORS = {"SyntaxError", "IndentationError", "TabError"}


def pixel_score(out, exp):
    """Fraction of equal cells; 0 unless both are grids of the same shape."""
    if not is_grid(out) or not is_grid(exp) or len(out) != len(exp) or len(out[0]) != len(exp[0]):
        return 0.0
    cells = len(exp) * len(exp[0])
    same = sum(a == b for ro, re_ in zip(out, exp) for a, b in zip(ro, re_))
    return same / cells


def error_key(res):
    """The label a result gets in the error table, or None when ok."""
    status = res.get("status")
    if status == "ok":
        return None
    if status == "error":
        return res.get("error_type") or "error"
    if status == "violation" and res.get("syscall"):
        return f"violation:{res['syscall']}"
    if status == "signal" and res.get("signal"):
        sig = res["signal"]
        if isinstance(sig, int):  # a number: name it as fitrun would
            try:
                sig = signal.Signals(sig).name
            except ValueError:
                pass
        return f"signal:{sig}"
    if status == "timeout" and res.get("timeout"):
        return f"timeout:{res['timeout']}"
    return status or "unknown"


# Statuses of predictions that ran to their end (fitrun reports `passed` for
# these only); anything else was stopped, and its partial outputs do not count.
RAN_TO_END = ("ok", "error")


def score_prediction(job, res):
    """Per-prediction facts: dict of booleans and scores."""
    arc = job["arc"]
    n_train, n_test = arc["n_train"], arc["n_test"]
    expected = job.get("expected") or [None] * (n_train + n_test)
    status = res.get("status") if res else "missing"
    outputs = res.get("outputs") if res and status in RAN_TO_END else None
    if not isinstance(outputs, list):
        outputs = []
    outputs = outputs + [None] * (n_train + n_test - len(outputs))
    code_ok = arc.get("code_found", True) and not (
        status == "error" and res.get("error_type") in SYNTAX_ERRORS)
    valid_out = status == "ok" and all(is_grid(o) for o in outputs[:n_train + n_test])
    facts = {"valid code": code_ok, "valid outputs": valid_out,
             "fingerprint": json.dumps(outputs[:n_train + n_test]) if valid_out else None}
    for part, lo, hi in (("train", 0, n_train), ("test", n_train, n_train + n_test)):
        pairs = [(outputs[i], expected[i]) for i in range(lo, hi) if expected[i] is not None]
        if not pairs:
            facts[part] = None  # unknown (test outputs without solutions)
            continue
        right = [o == e and is_grid(o) for o, e in pairs]
        facts[part] = {"pixel": sum(pixel_score(o, e) for o, e in pairs) / len(pairs),
                       "grids": sum(right) / len(pairs), "pass": all(right)}
    return facts


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def score(jobs, results):
    """Returns ({task: {column: value}}, Counter of error labels, n_missing).
    results: {id: result}, or a sequence of results (e.g. Runner.map's),
    matched to the jobs by id (the first result of an id counts)."""
    if not isinstance(results, Mapping):
        by_id = {}
        for res in results:
            by_id.setdefault(res.get("id"), res)
        results = by_id
    by_task = {}
    errors = Counter()
    missing = 0
    for job in jobs:
        res = results.get(job["id"])
        if res is None:
            missing += 1
            errors["missing"] += 1
        else:
            key = error_key(res)
            if key:
                errors[key] += 1
        by_task.setdefault(job["arc"]["task"], []).append(score_prediction(job, res))
    table = {}
    for task, preds in by_task.items():
        row = {"n_preds": len(preds),
               "valid code": _mean(float(p["valid code"]) for p in preds),
               "valid outputs": _mean(float(p["valid outputs"]) for p in preds),
               "unique outputs": len({p["fingerprint"] for p in preds if p["fingerprint"]}) / len(preds)}
        for part in ("train", "test"):
            known = [p[part] for p in preds if p[part] is not None]
            if not known:
                for m in ("pixel_score", "correct_grids", "pass_rate", "is_correct"):
                    row[f"{part}_{m}"] = None
                continue
            row[f"{part}_pixel_score"] = _mean(k["pixel"] for k in known)
            row[f"{part}_correct_grids"] = _mean(k["grids"] for k in known)
            row[f"{part}_pass_rate"] = _mean(float(k["pass"]) for k in known)
            row[f"{part}_is_correct"] = float(any(k["pass"] for k in known))
        both = [p for p in preds if p["train"] is not None and p["test"] is not None]
        row["is_correct"] = float(any(p["train"]["pass"] and p["test"]["pass"] for p in both)) \
            if both else None
        table[task] = row
    if table:
        table["MEAN"] = {c: _mean(r[c] for r in table.values()) for c in COLUMNS}
    return table, errors, missing


def load(jobs_path, results_path):
    """(jobs, {id: result}, problems) from a jobs file and a results file;
    a problem is "file:line: why" and its line is skipped."""
    problems = []
    jobs = []
    for n, job in read_jsonl(jobs_path, problems):
        arc = job.get("arc")
        if not isinstance(job.get("id"), str) or not isinstance(arc, dict) \
                or not isinstance(arc.get("n_train"), int) or not isinstance(arc.get("n_test"), int):
            problems.append(f"{jobs_path}:{n}: not an ARC job (needs id and "
                            f"arc.task/n_train/n_test: make it with arc_to_jobs.py)")
            continue
        arc.setdefault("task", job["id"].split("#")[0])
        jobs.append(job)
    ids = {j["id"] for j in jobs}
    results = {}
    for n, res in read_jsonl(results_path, problems):
        rid = res.get("id")
        if rid not in ids:
            problems.append(f"{results_path}:{n}: id {rid!r} is not in {jobs_path}")
            continue
        if rid in results:
            # fitrun runs the first line of an id and answers a later one
            # at once (invalid, DuplicateId), often before the first's
            # result: the result kept is the one of the line that ran.
            ran = results[rid].get("error_type") == "DuplicateId" and res.get("error_type") != "DuplicateId"
            problems.append(f"{results_path}:{n}: duplicate id {rid!r} "
                            f"({'this line kept: the earlier one is DuplicateId' if ran else 'an earlier line kept'})")
            if ran:
                results[rid] = res
            continue
        results[rid] = res
    return jobs, results, problems


def format_table(table, per_task):
    """The table as text: one row per task (per_task) and the MEAN row."""
    def cell(v, c):
        if v is None:
            return "-"
        if c == "n_preds":
            return f"{v:.1f}" if v != int(v) else str(int(v))
        return f"{v:.3f}"
    rows = [(k, table[k]) for k in table if per_task and k != "MEAN"]
    if "MEAN" in table:
        rows.append(("MEAN", table["MEAN"]))
    name_w = max([len(k) for k, _ in rows] + [4])
    widths = [max(len(c), 5) for c in COLUMNS]
    lines = [" " * name_w + "  " + "  ".join(c.rjust(w) for c, w in zip(COLUMNS, widths))]
    for name, row in rows:
        lines.append(name.ljust(name_w) + "  " +
                     "  ".join(cell(row[c], c).rjust(w) for c, w in zip(COLUMNS, widths)))
    return "\n".join(lines)


def format_errors(errors, top=20):
    """The "Most common errors" table as text."""
    if not errors:
        return "Most common errors: none"
    w = max(len(k) for k in errors)
    lines = ["Most common errors:"]
    for key, n in errors.most_common(top):
        lines.append(f"{key.ljust(w)}  {n:6d}")
    return "\n".join(lines)
