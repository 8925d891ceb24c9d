#!/usr/bin/python3
"""Interrupt `fitrun run` at random points, resume it, and check the result.

The standard checked: an interrupted run resumes without losing or
duplicating a result. One round starts `fitrun run --resume` on the same
results file, waits a random time, then does one of: SIGINT, SIGTERM,
SIGHUP, SIGKILL, SIGKILL and cut the file inside its last line (a power
cut), SIGKILL and append a garbage line, append lines to the jobs file, or
change a line that already has a result (fitrun must refuse: 125, file
untouched, then the line is put back), or give a line without a result a
new id (allowed, unless a kept DuplicateId result depended on it: 125). Rounds go on until a run ends by
itself; the last is always left to finish. Then every non-blank input line
of the shard must have exactly one result, for that line's id, with the
status the line deserves (exec: `ok` and the id echoed; python: `passed`
all true; invalid JSON, no id, duplicate id: `invalid`, with its type), and
the file holds nothing else but the garbage lines written into it.

  tests/stress/resume.py [--jobs N] [--rounds R] [--seed S] [--mode M]...

Modes (each one full scenario, run in turn): file (--jobs FILE --out FILE),
stdin (--jobs -, the jobs file on stdin), pipe (--jobs - from a pipe that a
writer feeds slowly), stdout (the first run writes --out - into the file,
the rest resume it), shard (--shard 1/3 and --shard 0/3 into two files),
python (python predictions; a python worker or the interpreter is also
SIGKILLed now and then: the job is retried, and still has one result), big (exec jobs that print 200 KB each: a
SIGKILL often lands while results are being written). FITRUN names the binary (default
build/fitrun). Exits 1 at the first broken invariant, printing it and the
directory it kept.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from procfs import children, comm, ppid
from results import Broken, result_lines

FITRUN = os.environ.get("FITRUN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "fitrun")
SIGS = {"INT": (signal.SIGINT, 130), "TERM": (signal.SIGTERM, 143), "HUP": (signal.SIGHUP, 129)}
GARBAGE = ['{"id": "garbage", "status"', "not a result at all", "[1, 2, 3]", '{"line": "x"}', "\x00\x01junk"]


def kill_python_worker(rng, fitrun_pid):
    """SIGKILL the interpreter (fitrun's python child) or one of its workers,
    never a prediction's own process: the pool retries the job, which must
    still get exactly one result. Returns what it killed, or None."""
    # Only once the interpreter is ready (both workers its children): before,
    # its one child may be its start-up self-test's, and an interpreter
    # killed while it starts stops the run (125, docs/python-runtime.md).
    zygotes = [c for c in children(fitrun_pid) if comm(c).startswith("python") and len(children(c)) >= 2]
    parent = {w: z for z in zygotes for w in children(z)}
    parent.update({z: fitrun_pid for z in zygotes})
    workers = [w for z in zygotes for w in children(z)]
    victims = workers + zygotes if rng.random() < 0.2 else workers
    if not victims:
        return None
    v = rng.choice(victims)
    # A worker that died since it was listed may have left its pid to
    # another process (not ours: its parent reaps it): signal through a
    # pidfd, opened and then checked to still be the same parent's child.
    try:
        fd = os.pidfd_open(v)
    except OSError:
        return None
    try:
        if ppid(v) != parent[v]:
            return None
        signal.pidfd_send_signal(fd, signal.SIGKILL)
    except ProcessLookupError:
        return None
    finally:
        os.close(fd)
    return "interpreter" if v in zygotes else "worker"


def block_stop_signals():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


BIG = 200000  # bytes of output before the id in mode big: results take many writes


def exec_line(rng, i, big=False):
    ident = f"e{i}"
    pad = f"printf %0{BIG}d 0; " if big else ""
    return json.dumps({"id": ident, "argv": ["sh", "-c", f"sleep 0.0{rng.randrange(100)}; {pad}echo {ident}"]})


def python_line(rng, i):
    ident = f"p{i}"
    code = f"import time\ndef transform(g):\n    time.sleep(0.0{rng.randrange(60)})\n    return [[g[0][0] + 1]]\n"
    return json.dumps({"id": ident, "code": code, "inputs": [[[i]]], "expected": [[[i + 1]]]})


def make_jobs(rng, n, python, big):
    """Job lines with a few invalid, id-less, duplicate and blank lines."""
    gen = python_line if python else (lambda rng, i: exec_line(rng, i, big))
    lines = []
    for i in range(n):
        r = rng.random()
        if r < 0.02:
            lines.append("not json {")
        elif r < 0.03:
            lines.append('{"argv": ["true"]}')
        elif r < 0.05 and i > 0:
            dup = rng.randrange(i)
            lines.append(gen(rng, dup))
        elif r < 0.06:
            lines.append("")
        elif r < 0.07:
            lines.append(gen(rng, i) + "\r")  # CRLF
        else:
            lines.append(gen(rng, i))
    return lines


def expected(lines, shard):
    """{line: (id, status, error_type)} for every line the shard selects."""
    want, seen = {}, set()
    for n, text in enumerate(lines, 1):
        if shard and (n - 1) % shard[1] != shard[0]:
            continue
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError:
            want[n] = (None, "invalid", "InvalidJSON")
            continue
        ident = obj.get("id") if isinstance(obj, dict) else None
        if not isinstance(ident, str) or not ident:
            want[n] = (None, "invalid", "MissingId")
        elif ident in seen:
            want[n] = (ident, "invalid", "DuplicateId")
        else:
            seen.add(ident)
            want[n] = (ident, "ok", None)
    return want


def check(path, lines, shard, garbage, pad=""):
    want = expected(lines, shard)
    got = {}
    for k, raw in result_lines(path):
        text = raw.decode("utf-8", "surrogateescape")
        if text in garbage:
            continue
        try:
            r = json.loads(text)
        except ValueError:
            raise Broken(f"{path}:{k}: not JSON: {text[:80]!r}")
        if r["line"] in got:
            raise Broken(f"{path}:{k}: a second result for line {r['line']} (first at {got[r['line']][0]})")
        got[r["line"]] = (k, r)
    for n, (ident, status, etype) in want.items():
        if n not in got:
            raise Broken(f"{path}: line {n} ({ident}) has no result")
        k, r = got.pop(n)
        if r["id"] != ident:
            raise Broken(f"{path}:{k}: line {n} holds id {ident!r}, the result says {r['id']!r}")
        if status == "invalid":
            if r["status"] != "invalid" or r["error_type"] != etype:
                raise Broken(f"{path}:{k}: line {n}: {r['status']}/{r['error_type']}, want invalid/{etype}")
        elif "passed" in r:
            if r["status"] != "ok" or r["passed"] != [True]:
                raise Broken(f"{path}:{k}: line {n}: {r['status']} passed={r['passed']}: {r['error_message']}")
        elif r["status"] != "ok" or r["stdout"] != pad + ident + "\n":
            raise Broken(f"{path}:{k}: line {n}: {r['status']} stdout={r['stdout'][-80:]!r}: {r['error_message']}")
    if got:
        raise Broken(f"{path}: results for lines that should have none: {sorted(got)[:10]}")
    return len(want)


def write_jobs(path, lines):
    with open(path, "w", newline="") as f:
        f.write("".join(t + "\n" for t in lines))


class Scenario:
    def __init__(self, mode, d, rng, n, rounds, log):
        self.mode, self.d, self.rng, self.rounds, self.log = mode, d, rng, rounds, log
        self.python = mode == "python"
        self.big = mode == "big"
        self.lines = make_jobs(rng, n, self.python, self.big)
        self.jobs = os.path.join(d, "jobs.jsonl")
        write_jobs(self.jobs, self.lines)
        self.shards = [(1, 3), (0, 3)] if mode == "shard" else [None]
        self.garbage = set()
        self.next_id = n
        self.procs = []  # every fitrun started, killed if the scenario stops early
        if self.python:
            with open(os.path.join(d, "prelude.py"), "w") as f:
                f.write("import json\n")
            with open(os.path.join(d, "p.ini"), "w") as f:
                f.write("[resources]\nworkers = 2\n[sandbox]\npreset = python\ncpu_time = 2s\nwall_time = 20s\n"
                        "memory = 1G\n[runtime]\nkind = python\ninterpreter = /usr/bin/python3\n"
                        "prelude = prelude.py\nentry = transform\n")

    def out(self, shard):
        return os.path.join(self.d, f"out{shard[0] if shard else ''}.jsonl")

    def argv(self, shard, first):
        a = [FITRUN, "run", "--progress", "none", "--quiet"]
        a += ["--profile", os.path.join(self.d, "p.ini")] if self.python else \
             ["--preset", "none", "--set", "sandbox.processes=none", "--workers", "2"]
        if shard:
            a += ["--shard", f"{shard[0]}/{shard[1]}"]
        a += ["--jobs", "-" if self.mode in ("stdin", "pipe") else self.jobs]
        if self.mode == "stdout" and first:
            a += ["--out", "-"]
        else:
            a += ["--out", self.out(shard), "--resume"]
        return a

    def start(self, shard, first):
        stdin = subprocess.DEVNULL
        stdout = subprocess.DEVNULL
        if self.mode == "stdin":
            stdin = open(self.jobs, "rb")
        elif self.mode == "pipe":
            stdin = subprocess.PIPE
        if self.mode == "stdout" and first:
            stdout = open(self.out(shard), "ab")
        with open(os.path.join(self.d, "err.txt"), "ab") as err:
            # started with the three stop signals blocked, as docs/run.md
            # advises a caller that may signal fitrun right after starting it
            p = subprocess.Popen(self.argv(shard, first), stdin=stdin, stdout=stdout, stderr=err, cwd=self.d,
                                 preexec_fn=block_stop_signals)
        self.procs.append(p)
        for f in (stdin, stdout):
            if hasattr(f, "close"):
                f.close()
        if self.mode == "pipe":
            self.feed(p)
        return p

    def feed(self, p):
        """Write the jobs in bursts from a thread, as a slow producer would."""

        def run():
            try:
                with open(self.jobs, "rb") as f:
                    for line in f:
                        p.stdin.write(line)
                        if self.rng.random() < 0.05:
                            p.stdin.flush()
                            time.sleep(0.01)
                p.stdin.close()
            except (BrokenPipeError, ValueError):
                pass

        threading.Thread(target=run, daemon=True).start()

    def cut(self, path):
        """A power cut: the file ends inside its last line."""
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < 2:
            return
        start = data.rfind(b"\n", 0, len(data) - 1) + 1
        keep = self.rng.randrange(start + 1, len(data))  # at least one byte of the last line
        with open(path, "r+b") as f:
            f.truncate(keep)

    def edit_done_line(self, shard):
        """Change the id of a line that has a result: resume must refuse, untouched."""
        out = self.out(shard)
        if self.mode in ("stdin", "pipe", "stdout") or not os.path.exists(out):
            return
        done = [json.loads(t) for t in open(out) if t.strip() and t.strip() not in self.garbage]
        done = [r for r in done if r.get("id") and r.get("error_type") != "DuplicateId"]
        if not done:
            return
        r = self.rng.choice(done)
        n = r["line"]
        saved = self.lines[n - 1]
        obj = json.loads(saved)
        obj["id"] = obj["id"] + "-changed"
        self.lines[n - 1] = json.dumps(obj)
        write_jobs(self.jobs, self.lines)
        before = open(out, "rb").read()
        p = subprocess.run(self.argv(shard, False), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, cwd=self.d)
        err = p.stderr.decode()
        if p.returncode != 125 or f"line {n} of" not in err or open(out, "rb").read() != before:
            raise Broken(f"changed line {n}: rc {p.returncode}, stderr {err!r}, file changed: "
                         f"{open(out, 'rb').read() != before}")
        self.lines[n - 1] = saved
        write_jobs(self.jobs, self.lines)
        self.log(f"    changed line {n}: refused (125), file untouched")

    def edit_open_line(self, shard):
        """Give a line that has no result yet a new id: allowed, unless a kept
        DuplicateId result depended on it (then 125, and it is put back)."""
        out = self.out(shard)
        if self.mode in ("stdin", "pipe", "stdout") or not os.path.exists(out):
            return
        done, dup_ids = set(), set()
        for t in open(out, "rb"):
            try:
                r = json.loads(t)
                done.add(r["line"])
                if r.get("error_type") == "DuplicateId":
                    dup_ids.add((r["id"], r["line"]))
            except (ValueError, KeyError, TypeError, AttributeError):
                pass
        want = expected(self.lines, shard)
        open_lines = [n for n in want if n not in done and want[n][1] == "ok"]
        # the first line of an id whose DuplicateId result is kept: 125 expected
        first_of_dup = [n for n in open_lines if any(want[n][0] == x for x, _ in dup_ids)]
        if not open_lines:
            return
        n = self.rng.choice(first_of_dup if first_of_dup and self.rng.random() < 0.7 else open_lines)
        saved = self.lines[n - 1]
        obj = json.loads(saved)
        obj["id"] = f"{obj['id']}-renamed{self.next_id}"
        self.next_id += 1
        if "argv" in obj:
            pad = f"printf %0{BIG}d 0; " if self.big else ""
            obj["argv"] = ["sh", "-c", f"sleep 0.01; {pad}echo {obj['id']}"]
        self.lines[n - 1] = json.dumps(obj)
        write_jobs(self.jobs, self.lines)
        p = self.start(shard, False)
        time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=60)
        err = open(os.path.join(self.d, "err.txt")).read()
        # 125 exactly when a kept DuplicateId result no longer has its id on an earlier line
        ids_at = {k: want_id for k, (want_id, _, _) in expected(self.lines, shard).items()}
        stale = any(not any(ids_at.get(k) == x for k in range(1, line)) for x, line in dup_ids)
        if (rc == 125) != stale:
            raise Broken(f"renamed line {n} (a kept DuplicateId left without its id: {stale}): exit {rc}")
        if rc == 125:
            if "is the DuplicateId result of id" not in err.splitlines()[-1]:
                raise Broken(f"renamed line {n}: 125: {err.splitlines()[-1]}")
            self.lines[n - 1] = saved
            write_jobs(self.jobs, self.lines)
            self.log(f"    renamed line {n} (no result): refused, a DuplicateId depended on it; put back")
        elif rc not in (143, 0, 1):
            raise Broken(f"renamed line {n}: exit {rc}")
        else:
            self.log(f"    renamed line {n} (no result): rc {rc}")

    def append_jobs(self):
        if self.mode in ("pipe",):
            return
        k = self.rng.randrange(1, 6)
        for _ in range(k):
            self.lines.append(python_line(self.rng, self.next_id) if self.python else
                              exec_line(self.rng, self.next_id, self.big))
            self.next_id += 1
        write_jobs(self.jobs, self.lines)
        self.log(f"    appended {k} jobs (now {len(self.lines)} lines)")

    def one_shard(self, shard):
        out = self.out(shard)
        if os.path.exists(out):
            os.unlink(out)
        first = True
        for rnd in range(self.rounds + 1):
            last = rnd == self.rounds
            p = self.start(shard, first)
            first = False
            if last:
                rc = p.wait(timeout=600)
                self.log(f"  round {rnd}: left to finish: rc {rc}")
                if rc not in (0, 1):
                    raise Broken(f"the last run exited {rc}")
                break
            time.sleep(self.rng.uniform(0.05, 1.0))
            if self.python and self.rng.random() < 0.5:
                what = kill_python_worker(self.rng, p.pid)
                if what:
                    self.log(f"    SIGKILL to a python {what} (its job is retried)")
                time.sleep(self.rng.uniform(0.05, 0.5))
            action = self.rng.choice(["INT", "TERM", "HUP", "KILL", "KILL", "CUT", "GARBAGE", "APPEND", "EDIT", "RENAME"])
            if action in SIGS:
                p.send_signal(SIGS[action][0])
                rc = p.wait(timeout=60)
                if rc not in (SIGS[action][1], 0, 1):
                    raise Broken(f"SIG{action}: exit {rc}, want {SIGS[action][1]}")
            else:
                p.kill()
                rc = p.wait(timeout=60)
                if rc not in (-signal.SIGKILL, 0, 1):
                    raise Broken(f"SIGKILL ({action}): exit {rc}")
                if os.path.exists(out) and os.path.getsize(out):
                    with open(out, "rb") as f:
                        f.seek(-1, os.SEEK_END)
                        if f.read(1) != b"\n":
                            self.log("    SIGKILL tore the last line (mid-write)")
                if action == "CUT":
                    self.cut(out)
                elif action == "GARBAGE":
                    g = self.rng.choice(GARBAGE)
                    with open(out, "ab") as f:
                        f.write(g.encode() + b"\n")
                    self.garbage.add(g)
                elif action == "APPEND":
                    self.append_jobs()
                elif action == "EDIT":
                    self.edit_done_line(shard)
                elif action == "RENAME":
                    self.edit_open_line(shard)
            n = sum(1 for _ in open(out, "rb"))
            self.log(f"  round {rnd}: {action}: rc {rc}, {n} lines")
            if rc in (0, 1) and action in ("INT", "TERM", "HUP", "KILL"):
                break  # finished before the signal: nothing left to interrupt
        # a resume of a complete file adds nothing
        before = open(out, "rb").read()
        p = self.start(shard, False)
        rc = p.wait(timeout=600)
        if rc != 0 or open(out, "rb").read() != before:
            raise Broken(f"a resume of the complete {out} exited {rc} (want 0) or changed it")
        return check(out, self.lines, shard, self.garbage, "0" * BIG if self.big else "")

    def run(self):
        try:
            return sum(self.one_shard(s) for s in self.shards)
        finally:
            for p in self.procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--mode", action="append", choices=["file", "stdin", "pipe", "stdout", "shard", "python", "big"])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    modes = a.mode or ["file", "stdin", "pipe", "stdout", "shard", "python", "big"]
    for rep in range(a.repeat):
        for mode in modes:
            s = seed + rep
            rng = random.Random(f"{s}-{mode}")
            d = tempfile.mkdtemp(prefix=f"fitrun-stress-{mode}.")
            print(f"{mode}: seed {s}, {a.jobs} jobs, {a.rounds} rounds, in {d}", flush=True)
            try:
                n = Scenario(mode, d, rng, a.jobs, a.rounds, lambda m: print(m, flush=True)).run()
            except (Broken, subprocess.TimeoutExpired) as e:
                print(f"BROKEN ({mode}, seed {s}): {e}\nkept {d}", flush=True)
                return 1
            print(f"{mode}: ok: {n} input lines, one result each", flush=True)
            if not a.keep:
                shutil.rmtree(d)
    return 0


if __name__ == "__main__":
    sys.exit(main())
