#!/usr/bin/python3
"""An LLM evaluation loop on one warm fitrun: generate -> r.map -> score,
round after round, each round retrying only the tasks not solved yet.

    PYTHONPATH=build/python /usr/bin/python3 examples/llm_eval_loop.py [--rounds 3] [--samples 3]

The "LLM" is a stub that answers with programs drawn from the bundled
sample's predictions (samples/arc/: correct, wrong, buggy, slow and hostile
ones), so the loop runs without a model; put your model's call in
generate(). One Runner serves every round: fitrun and its Python
interpreter start once, and each round's predictions are forked from it.
"""
import argparse
import json
import os
import random
from collections import Counter

import fitrun
from fitrun import arc

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(SRC, "samples", "arc")


def stub_llm():
    """generate(task_id, n) -> n answers, drawn from the sample's predictions."""
    with open(os.path.join(SAMPLE, "predictions.json")) as f:
        answers = json.load(f)
    with open(os.path.join(SAMPLE, "predictions_text.json")) as f:
        for tid, entry in json.load(f).items():
            answers.setdefault(tid, []).extend(entry["text_predictions"])
    rng = random.Random(0)

    def generate(task_id, n):
        return [rng.choice(answers[task_id]) for _ in range(n)]
    return generate


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=3, help="answers per task and round")
    ap.add_argument("--profile", default=os.path.join(SRC, "profiles", "arc-python.ini"))
    ap.add_argument("--progress", action="store_true", help="a progress bar on stderr")
    a = ap.parse_args()

    tasks = arc.load_tasks(os.path.join(SAMPLE, "challenges.json"), os.path.join(SAMPLE, "solutions.json"))
    generate = stub_llm()
    all_jobs, all_results = [], []
    unsolved = sorted(tasks)
    # cpu_time overrides the profile's 2 s, as `fitrun run --cpu-time 1s` would.
    with fitrun.Runner(profile=a.profile, cpu_time="1s", progress=a.progress) as r:
        for rnd in range(1, a.rounds + 1):
            if not unsolved:
                break
            # Answers may be code or LLM text with a ```python block.
            answers = {tid: [arc.extract_code(t) or t for t in generate(tid, a.samples)]
                       for tid in unsolved}
            jobs, problems = arc.jobs_from_predictions(tasks, answers)  # ids "task#k": reused each round
            results = r.map(jobs)  # in the jobs' order; statuses, never exceptions
            table, errors, _ = arc.score(jobs, results)
            solved = [t for t in unsolved if table[t]["is_correct"]]
            unsolved = [t for t in unsolved if t not in solved]
            print(f"round {rnd}: {len(jobs)} predictions, {len(solved)} tasks solved "
                  f"({', '.join(solved) or 'none'}), {len(unsolved)} left; "
                  f"statuses {dict(Counter(res['status'] for res in results))}")
            all_jobs += [dict(j, id=f"r{rnd}:{j['id']}") for j in jobs]
            all_results += [dict(res, id=f"r{rnd}:{res['id']}") for res in results]
    table, errors, _ = arc.score(all_jobs, all_results)
    print()
    print(arc.format_errors(errors))
    print()
    print(arc.format_table(table, per_task=True))


if __name__ == "__main__":
    main()
