#!/usr/bin/python3
"""check.py — host-side assertions for the container matrix and the v2 VM test.

Stdlib only (runs with Debian's /usr/bin/python3). Every subcommand prints
one line per failed check ("name: what was expected, what was seen") and
exits 1 when any check failed, 0 otherwise; 2 for bad usage or unreadable
input (the message names the file and line).

  check.py detect FILE.json EXPR...
        EXPR is KEY=VALUE (numbers compared with a small tolerance, `null`
        for JSON null, anything else as a string), KEY~TEXT (string value
        contains TEXT, ignoring case) or KEY>=N / KEY<=N. KEY is a dotted path such as
        cpu.quota or plan.workers.
  check.py env ENV.txt DETECT.json [threshold=BYTES] [workers=N]
        the wrapper's exports (output of `fitrun -- env`) against detection:
        FITRUN_CPUS = cpu.effective, FITRUN_MEMORY_LIMIT = memory.limit,
        FITRUN_WORKERS in 1..plan.workers (or exactly N), OMP_NUM_THREADS
        fits the effective CPUs, JOBLIB_TEMP_FOLDER is set exactly when
        /dev/shm is smaller than the threshold (default 2 GiB).
  check.py results JOBS.jsonl RESULTS.jsonl [--partial]
        every job id has exactly one result and no result is extra; with
        --partial (an interrupted run) at most one result per job id;
        `passed` is null unless the status is ok or error (it is only
        reported for predictions that ran to their end).
  check.py expect RESULTS.jsonl EXPECT.txt
        each line of EXPECT.txt is `ID STATUS [KEY=VALUE...]` (# comments);
        the result for ID must have that status and those fields.
  check.py outcomes RESULTS.jsonl
        print the per-prediction outcomes "id status passed" sorted by id
        (the fidelity key; what the compare subcommand compares).
  check.py compare NAME_A A.jsonl NAME_B B.jsonl
        the outcomes (id, status, passed) of two runs are equal; differences
        are listed with the fields that explain them (exit code, signal,
        timeout kind, error type).
  check.py field RESULTS.jsonl ID KEY
        print one field of one result (for shell assertions).
"""
import json
import sys

SHM_THRESHOLD = 2 << 30


class Usage(Exception):
    pass


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise Usage(f"{path}: cannot read: {e.strerror}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        head = text.strip().splitlines()[:1]
        raise Usage(f"{path}:{e.lineno}: not JSON ({e.msg}); starts with {head!r}")


def load_jsonl(path):
    rows = []
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise Usage(f"{path}: cannot read: {e.strerror}")
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise Usage(f"{path}:{n}: not JSON ({e.msg})")
    return rows


def dig(obj, key):
    """cpu.quota -> obj["cpu"]["quota"]; KeyError names the missing part."""
    cur = obj
    for part in key.split("."):
        if not isinstance(cur, dict) or part not in cur:
            raise KeyError(part)
        cur = cur[part]
    return cur


def parse_scalar(text):
    if text == "null":
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        return float(text)
    except ValueError:
        return text


def same(want, got):
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return abs(want - got) <= 1e-6 * max(1.0, abs(want))
    return want == got


def check_expr(doc, expr):
    """Return None when EXPR holds, else a message."""
    for op in (">=", "<=", "~", "="):
        if op in expr:
            key, text = expr.split(op, 1)
            break
    else:
        raise Usage(f"bad expression {expr!r} (KEY=VALUE, KEY~TEXT, KEY>=N, KEY<=N)")
    try:
        got = dig(doc, key)
    except KeyError as e:
        return f"{key}: missing (no key {e.args[0]!r})"
    if op == "=":
        want = parse_scalar(text)
        ok = same(want, got)
    elif op == "~":
        ok = isinstance(got, str) and text.lower() in got.lower()
    else:
        want = float(text)
        ok = isinstance(got, (int, float)) and not isinstance(got, bool) and (
            got >= want if op == ">=" else got <= want)
    return None if ok else f"{key}: expected {op}{text}, got {json.dumps(got)}"


def cmd_detect(args):
    if len(args) < 2:
        raise Usage("detect FILE.json EXPR...")
    doc = load_json(args[0])
    fails = [m for m in (check_expr(doc, e) for e in args[1:]) if m]
    for m in fails:
        print(f"detect: {m}")
    return 1 if fails else 0


def load_env(path):
    env = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                name, sep, value = line.rstrip("\n").partition("=")
                if sep:
                    env[name] = value
    except OSError as e:
        raise Usage(f"{path}: cannot read: {e.strerror}")
    return env


def cmd_env(args):
    if len(args) < 2:
        raise Usage("env ENV.txt DETECT.json [threshold=BYTES] [workers=N]")
    env = load_env(args[0])
    doc = load_json(args[1])
    opts = dict(a.split("=", 1) for a in args[2:])
    threshold = int(opts.get("threshold", SHM_THRESHOLD))
    fails = []
    # The wrapper plans with the default profile (512M per worker) while
    # `fitrun detect` without --profile has no memory per worker: its
    # workers may be lower than detect's, never higher.
    plan_workers = dig(doc, "plan.workers")
    got = env.get("FITRUN_WORKERS", "")
    if "workers" in opts:
        if got != opts["workers"]:
            fails.append(f"FITRUN_WORKERS: expected {opts['workers']}, got {got!r}")
    elif not got.isdigit() or not 1 <= int(got) <= plan_workers:
        fails.append(f"FITRUN_WORKERS: expected 1..{plan_workers} (plan.workers), got {got!r}")
    eff = dig(doc, "cpu.effective")
    cpus = env.get("FITRUN_CPUS")
    try:
        cpus_ok = cpus is not None and same(float(eff), float(cpus))
    except ValueError:
        cpus_ok = False
    if not cpus_ok:
        fails.append(f"FITRUN_CPUS: expected {eff} (cpu.effective), got {cpus!r}")
    omp = env.get("OMP_NUM_THREADS", "")
    # Thread counts must fit the container: at least 1, at most the
    # effective CPUs rounded up (a 1.5-CPU container may get 1 or 2).
    if not omp.isdigit() or not 1 <= int(omp) <= max(1, -(-eff // 1)):
        fails.append(f"OMP_NUM_THREADS: expected 1..ceil({eff}), got {omp!r}")
    limit = dig(doc, "memory.limit")
    if env.get("FITRUN_MEMORY_LIMIT") != (None if limit is None else str(limit)):
        fails.append(f"FITRUN_MEMORY_LIMIT: expected {limit} (memory.limit), "
                     f"got {env.get('FITRUN_MEMORY_LIMIT')!r}")
    shm = dig(doc, "shm.size")
    want_joblib = shm is not None and shm < threshold
    if want_joblib != ("JOBLIB_TEMP_FOLDER" in env):
        fails.append(f"JOBLIB_TEMP_FOLDER: /dev/shm is {shm} bytes (threshold {threshold}), "
                     f"expected {'set' if want_joblib else 'unset'}, got {env.get('JOBLIB_TEMP_FOLDER')!r}")
    for m in fails:
        print(f"env: {m}")
    return 1 if fails else 0


def by_id(rows, path):
    out = {}
    for r in rows:
        rid = r.get("id")
        if rid in out:
            raise Usage(f"{path}: two results for id {rid!r}")
        out[rid] = r
    return out


def cmd_results(args):
    partial = "--partial" in args
    args = [a for a in args if a != "--partial"]
    if len(args) != 2:
        raise Usage("results JOBS.jsonl RESULTS.jsonl [--partial]")
    jobs = [j.get("id") for j in load_jsonl(args[0])]
    rows = load_jsonl(args[1])
    fails = []
    seen = {}
    for r in rows:
        seen[r.get("id")] = seen.get(r.get("id"), 0) + 1
    for jid in jobs:
        n = seen.get(jid, 0)
        if n > 1 or (n == 0 and not partial):
            fails.append(f"{jid}: {n} results (expected {'at most' if partial else 'exactly'} 1)")
    for rid in seen:
        if rid not in jobs:
            fails.append(f"{rid}: result for an id that is not a job")
    for r in rows:
        if r.get("status") not in ("ok", "error") and r.get("passed") is not None:
            fails.append(f"{r.get('id')}: passed {json.dumps(r['passed'])} for a {r.get('status')} result "
                         "(only ok and error report it)")
    for m in fails:
        print(f"results: {m}")
    return 1 if fails else 0


def cmd_expect(args):
    if len(args) != 2:
        raise Usage("expect RESULTS.jsonl EXPECT.txt")
    res = by_id(load_jsonl(args[0]), args[0])
    fails = []
    with open(args[1], encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) < 2:
                raise Usage(f"{args[1]}:{n}: expected `ID STATUS [KEY=VALUE...]`")
            rid, status = words[0], words[1]
            r = res.get(rid)
            if r is None:
                fails.append(f"{rid}: no result")
                continue
            if r.get("status") != status:
                fails.append(f"{rid}: status {r.get('status')!r}, expected {status!r} ({explain(r)})")
            for kv in words[2:]:
                m = check_expr(r, kv)
                if m:
                    fails.append(f"{rid}: {m}")
    for m in fails:
        print(f"expect: {m}")
    return 1 if fails else 0


def outcome(r):
    """The fidelity key of one result: (status, passed)."""
    return (r.get("status"), json.dumps(r.get("passed")))


def explain(r):
    keys = ("exit_code", "signal", "timeout", "syscall", "error_type", "error_message", "worker")
    return ", ".join(f"{k}={json.dumps(r[k])[:80]}" for k in keys if r.get(k) not in (None, ""))


def cmd_outcomes(args):
    if len(args) != 1:
        raise Usage("outcomes RESULTS.jsonl")
    res = by_id(load_jsonl(args[0]), args[0])
    for rid in sorted(res, key=str):
        st, passed = outcome(res[rid])
        print(f"{rid} {st} {passed}")
    return 0


def cmd_compare(args):
    if len(args) != 4:
        raise Usage("compare NAME_A A.jsonl NAME_B B.jsonl")
    na, a, nb, b = args[0], by_id(load_jsonl(args[1]), args[1]), args[2], by_id(load_jsonl(args[3]), args[3])
    fails = []
    for rid in sorted(set(a) | set(b), key=str):
        if rid not in a or rid not in b:
            fails.append(f"{rid}: only in {na if rid in a else nb}")
        elif outcome(a[rid]) != outcome(b[rid]):
            sa, pa = outcome(a[rid])
            sb, pb = outcome(b[rid])
            fails.append(f"{rid}: {na} {sa} passed={pa} ({explain(a[rid])}) "
                         f"vs {nb} {sb} passed={pb} ({explain(b[rid])})")
    for m in fails:
        print(f"fidelity: {m}")
    return 1 if fails else 0


def cmd_field(args):
    if len(args) != 3:
        raise Usage("field RESULTS.jsonl ID KEY")
    r = by_id(load_jsonl(args[0]), args[0]).get(args[1])
    if r is None:
        raise Usage(f"{args[0]}: no result for id {args[1]!r}")
    try:
        v = dig(r, args[2])
    except KeyError:
        v = None
    print(v if isinstance(v, str) else json.dumps(v))
    return 0


COMMANDS = {"detect": cmd_detect, "env": cmd_env, "results": cmd_results, "expect": cmd_expect,
            "outcomes": cmd_outcomes, "compare": cmd_compare, "field": cmd_field}


def main(argv):
    if len(argv) < 2 or argv[1] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        return COMMANDS[argv[1]](argv[2:])
    except Usage as e:
        print(f"check.py {argv[1]}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
