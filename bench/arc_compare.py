#!/usr/bin/python3
"""arc_compare.py — compare fitrun's verdicts with other runners' on the same
jobs: (id, status, passed) must be equal, prediction by prediction.

    /usr/bin/python3 bench/arc_compare.py --jobs jobs.jsonl fitrun.jsonl \\
        sequential.jsonl joblib.jsonl pool.jsonl fork.jsonl

The first results file is the one under test (usually fitrun's); every other
one (bench/arc_peers.py output, or another fitrun run) is compared with it.
Every difference is printed with the job's mutation (bench/arc_dsl_corpus.py
writes one) and, where it can be told, why: when the statuses agree but
`passed` does not and the first file has `outputs` (fitrun's results do),
the outputs are scored again here with Python's own `==`; if that gives the
other runner's verdict, the first runner's scorer is what differs (and
whether the outputs hold bools or floats where the answer has ints is said).
A summary per runner follows.

Exit status: 0 no difference, 1 some difference, 2 unreadable input.
"""
import argparse
import collections
import json
import os
import sys


def load(path, what):
    """{id: record} of a JSONL file; exits 2 naming file:line on bad input."""
    out = {}
    try:
        f = open(path)
    except OSError as e:
        sys.exit(f"arc_compare: {path}: {e.strerror}")
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                rid = rec["id"]
            except (ValueError, KeyError, TypeError) as e:
                print(f"arc_compare: {path}:{n}: not a {what} line ({e})", file=sys.stderr)
                sys.exit(2)
            if rid in out:
                print(f"arc_compare: {path}:{n}: duplicate id {rid!r}", file=sys.stderr)
                sys.exit(2)
            out[rid] = rec
    return out


def kinds_in(value):
    """The scalar types in a (nested) value: {'bool', 'int', 'float', ...}."""
    if isinstance(value, list):
        return set().union(*(kinds_in(v) for v in value)) if value else set()
    return {type(value).__name__}


def why(rec, other, job, base="fitrun"):
    """A short reason for a difference, or '' when none can be told."""
    if rec.get("status") != other.get("status"):
        hint = ""
        if "timeout" in (rec.get("status"), other.get("status")) and rec.get("cpu_ms") is not None:
            hint = f" ({base} cpu_ms {rec['cpu_ms']}: near the budget, the verdict can flip with load)"
        return "status differs" + hint
    outs, exp = rec.get("outputs"), (job or {}).get("expected")
    if outs is None or exp is None or len(outs) != len(exp):
        return "passed differs"
    py = [None if e is None else (o is not None and o == e) for o, e in zip(outs, exp)]
    if py != other.get("passed"):
        return f"passed differs (Python's == on {base}'s outputs does not give the other verdict either)"
    differing = [i for i, (a, b) in enumerate(zip(rec.get("passed") or [], py)) if a != b]
    extra = set()
    for i in differing:
        extra |= kinds_in(outs[i]) - kinds_in(exp[i])
    detail = (f": its outputs hold {', '.join(sorted(extra))} where the answer has "
              f"{', '.join(sorted(set().union(*(kinds_in(exp[i]) for i in differing))))}"
              if extra else "")
    return (f"scorer: Python's == on {base}'s own outputs gives the other verdict on inputs "
            f"{differing}{detail}")


def fmt(rec):
    if rec is None:
        return "(missing)"
    s = f"{rec.get('status')} passed={json.dumps(rec.get('passed'))}"
    return s + (f" {rec['error_type']}" if rec.get("error_type") else "")


def compare(base, other, jobs, base_name="fitrun"):
    """[(id, kind, reason)] for every id where they differ; kind is 'status',
    'passed', 'missing' (not in other) or 'extra' (only in other)."""
    diffs = []
    for rid in sorted(set(base) | set(other), key=lambda r: (r not in jobs, r)):
        a, b = base.get(rid), other.get(rid)
        if a is None or b is None:
            diffs.append((rid, "missing" if b is None else "extra", ""))
        elif a.get("status") != b.get("status"):
            diffs.append((rid, "status", why(a, b, jobs.get(rid), base_name)))
        elif a.get("passed") != b.get("passed"):
            diffs.append((rid, "passed", why(a, b, jobs.get(rid), base_name)))
    return diffs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--jobs", help="the jobs file (for `expected` and each job's mutation)")
    ap.add_argument("--names", help="comma-separated names of the results files (default: file names)")
    ap.add_argument("base", help="results under test (fitrun's)")
    ap.add_argument("others", nargs="+", help="results to compare with")
    a = ap.parse_args()
    files = [a.base] + a.others
    names = a.names.split(",") if a.names else [os.path.splitext(os.path.basename(f))[0] for f in files]
    if len(names) != len(files):
        sys.exit("arc_compare: --names must name every results file")
    jobs = load(a.jobs, "job") if a.jobs else {}
    base = load(a.base, "result")
    others = [(name, load(path, "result")) for name, path in zip(names[1:], a.others)]
    diffs = {name: compare(base, other, jobs, names[0]) for name, other in others}
    # One line per differing id and verdict: peers that agree are named together.
    by_id = collections.defaultdict(list)
    for name, other in others:
        for rid, kind, reason in diffs[name]:
            by_id[rid].append((name, other.get(rid), reason))
    for rid in sorted(by_id, key=lambda r: (r not in jobs, r)):
        groups = collections.OrderedDict()
        for name, rec, reason in by_id[rid]:
            groups.setdefault((fmt(rec), reason), []).append(name)
        mut = (jobs.get(rid) or {}).get("mutation", "")
        for (verdict, reason), who in groups.items():
            print(f"{rid}" + (f" [{mut}]" if mut else "") + f": {names[0]} {fmt(base.get(rid))}"
                  f" | {', '.join(who)}: {verdict}" + (f" — {reason}" if reason else ""))
    summary = []
    for name, other in others:
        kinds = collections.Counter(k for _, k, _ in diffs[name])
        same = len(set(base) & set(other)) - kinds["status"] - kinds["passed"]
        summary.append((name, len(set(base) | set(other)), same, kinds))
    print(f"\n{'compared with ' + names[0]:28} {'ids':>6} {'same':>6} {'status':>7} {'passed':>7} "
          f"{'missing':>8} {'extra':>6}")
    for name, n, same, k in summary:
        print(f"{name:28} {n:6d} {same:6d} {k['status']:7d} {k['passed']:7d} {k['missing']:8d} "
              f"{k['extra']:6d}")
    sys.exit(1 if any(sum(k.values()) for _, _, _, k in summary) else 0)


if __name__ == "__main__":
    main()
