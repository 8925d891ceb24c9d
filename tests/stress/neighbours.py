#!/usr/bin/python3
"""Several `fitrun run`s beside each other in one cgroup never hurt each other.

The standard checked: runs that share a cgroup (several launchers on one
node, SLURM job steps, CI runners; docs/scale-out.md) may start, be
interrupted and start again at any moment beside a live run, and the live
run finishes with every result right and is never killed; runs in another
pid namespace that share the cgroup included (docs/cgroups.md).

Two long runs live through the whole test: a python-preset run of ARC
predictions (../shared/data/arc-agi-1) in this pid namespace, and a run of
exec jobs in its own pid namespace (`unshare --pid --fork --mount-proc`).
Beside them, churners start short runs one after another (python or exec,
one in three in its own pid namespace), interrupt each at a random moment
with SIGINT, SIGTERM or SIGKILL, or leave it to finish, and start it again
with --resume until it has finished. Every run's results file must then
hold exactly one right result per job: exec jobs `ok` with their id
echoed, predictions with `passed` as this script computes it (some are
meant to fail), no job killed. The long runs must exit 0. Afterwards one
more run removes what the SIGKILLed runs left, and nothing may be left: no
fitrun-<pid> cgroup, no process in the test's cgroup but this script, no
file in the runs' TMPDIR.

Everything runs in a cgroup of its own (nbstress-<pid>, below the one this
script starts in, in each v1 hierarchy fitrun uses), so no run of the test
sees a run outside it, and the leftovers counted are the test's. Needs
root and delegated v1 cgroups: exits 77 (skip) otherwise. Every signal is
sent through a pidfd: never to a pid that died and was reused.

  tests/stress/neighbours.py [--seconds T] [--churners K] [--seed S]

FITRUN names the binary (default build/fitrun), FITRUN_SHARED the shared
data (default ../shared beside the source tree). Exits 1 at the first
broken promise, printing it and the directory it kept.
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

from procfs import children, ppid
from results import Broken, result_lines

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
FITRUN = os.environ.get("FITRUN") or os.path.join(SRC, "build", "fitrun")
SHARED = os.environ.get("FITRUN_SHARED") or os.path.join(SRC, "..", "shared")
TASKS = os.path.join(SHARED, "data", "arc-agi-1", "training")
NS = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
SIGS = {"INT": signal.SIGINT, "TERM": signal.SIGTERM, "KILL": signal.SIGKILL}


class Skip(Exception):
    pass


# ---- the test's own cgroup -------------------------------------------------

def own_dirs():
    """{controller: this process's cgroup directory} for fitrun's v1 controllers."""
    d = json.loads(subprocess.run([FITRUN, "detect", "--json"], capture_output=True, text=True, check=True).stdout)
    cg = d["cgroup"]
    if os.geteuid() != 0:
        raise Skip("needs root to create cgroups")
    if not cg.get("delegated"):
        raise Skip(f"cgroups not delegated: {cg.get('delegated_reason')}")
    if cg.get("version") != 1:
        raise Skip("cgroup v1 only (a v2 cgroup that holds this script is not delegated to fitrun)")
    ctls = cg["delegated_reason"].split(" (")[0].split(", ")
    mounts, paths = {}, {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            sep = parts.index("-")
            if parts[sep + 1] == "cgroup":
                for c in parts[sep + 3].split(","):
                    mounts.setdefault(c, parts[4])
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            for c in names.split(","):
                paths[c] = path
    return {c: mounts[c] + paths[c].rstrip("/") for c in ctls}


def procs(d):
    with open(os.path.join(d, "cgroup.procs")) as f:
        return [int(p) for p in f.read().split()]


def procs_below(d):
    """The processes in d and in every cgroup below it (v1 lists each apart)."""
    return [p for r, _, _ in os.walk(d) for p in procs(r)]


def fitrun_trees(dirs):
    return sorted(os.path.join(d, e) for d in dirs for e in os.listdir(d)
                  if e.startswith("fitrun-") and os.path.isdir(os.path.join(d, e)))


def remove_cgroup(d):
    """rmdir d and what is below it, deepest first (the test's own only)."""
    for sub in sorted((os.path.join(r, n) for r, ns, _ in os.walk(d) for n in ns), key=len, reverse=True):
        rmdir_retry(sub)
    rmdir_retry(d)


def rmdir_retry(d):
    for _ in range(200):
        try:
            os.rmdir(d)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)  # a killed process is leaving
    print(f"neighbours: cannot remove cgroup {d}: still busy", file=sys.stderr)


# ---- processes, through pidfds ---------------------------------------------

def signal_pidfd(fd, sig):
    try:
        signal.pidfd_send_signal(fd, sig)
    except ProcessLookupError:
        pass


def ns_fitrun_pidfd(p):
    """A pidfd of the fitrun that unshare (our child p, so its pid is p's)
    forked, or None: opened, then checked to still be p's child."""
    for k in children(p.pid):
        try:
            fd = os.pidfd_open(k)
        except OSError:
            continue
        if ppid(k) == p.pid:
            return fd
        os.close(fd)
    return None


def interrupt(p, ns, sig):
    """sig to the fitrun of run p (ours, or unshare's child in its own pid
    namespace: SIGINT and SIGTERM must reach fitrun itself)."""
    fd = ns_fitrun_pidfd(p) if ns else os.pidfd_open(p.pid)
    if fd is None:
        return
    try:
        signal_pidfd(fd, sig)
    finally:
        os.close(fd)


# ---- jobs and what their results must be -----------------------------------

def arc_tasks(n, rng):
    names = sorted(f for f in os.listdir(TASKS) if f.endswith(".json"))
    out = []
    for name in rng.sample(names, n):
        with open(os.path.join(TASKS, name)) as f:
            out.append((name[:-5], json.load(f)))
    return out


PREDICTIONS = {
    # name: (code, what it returns for grid g)
    "same": ("def transform(g):\n    return [row[:] for row in g]\n", lambda g: [row[:] for row in g]),
    "flip": ("def transform(g):\n    return g[::-1]\n", lambda g: g[::-1]),
    "mirror": ("def transform(g):\n    return [row[::-1] for row in g]\n", lambda g: [row[::-1] for row in g]),
}


def python_jobs(tasks, rng, seconds):
    """Predictions on ARC tasks' train inputs, each taking about `seconds`:
    the expected outputs are the task's own (a prediction rarely solves
    them: passed false) or what the prediction returns (passed true).
    {id: passed list} is returned too."""
    lines, want = [], {}
    for tname, task in tasks:
        pairs = task["train"]
        kind = rng.choice(sorted(PREDICTIONS))
        code, fn = PREDICTIONS[kind]
        delay = round(seconds / len(pairs), 4)  # transform runs once per input
        code = f"import time\n{code}".replace("def transform(g):\n", f"def transform(g):\n    time.sleep({delay})\n")
        inputs = [p["input"] for p in pairs]
        own = rng.random() < 0.5
        expected = [p["output"] for p in pairs] if own else [fn(g) for g in inputs]
        ident = f"{tname}-{kind}-{len(lines)}"
        lines.append(json.dumps({"id": ident, "code": code, "inputs": inputs, "expected": expected}))
        want[ident] = ("python", [fn(g) == e for g, e in zip(inputs, expected)])
    return lines, want


def exec_jobs(n, prefix, sleep):
    lines, want = [], {}
    for i in range(n):
        ident = f"{prefix}{i}"
        lines.append(json.dumps({"id": ident, "argv": ["sh", "-c", f"sleep {sleep}; echo {ident}"]}))
        want[ident] = ("exec", ident + "\n")
    return lines, want


def check(path, want):
    """Exactly one right result per job in path."""
    got = {}
    for k, raw in result_lines(path):
        r = json.loads(raw)
        if r["id"] in got:
            raise Broken(f"{path}:{k}: a second result for {r['id']}")
        got[r["id"]] = r
    for ident, (kind, good) in want.items():
        r = got.pop(ident, None)
        if r is None:
            raise Broken(f"{path}: {ident} has no result")
        if r["status"] != "ok":
            raise Broken(f"{path}: {ident}: {r['status']} {r.get('error_type')}: {r.get('error_message')}")
        if kind == "python" and r.get("passed") != good:
            raise Broken(f"{path}: {ident}: passed {r.get('passed')}, want {good}")
        if kind == "exec" and r["stdout"] != good:
            raise Broken(f"{path}: {ident}: stdout {r['stdout']!r}, want {good!r}")
    if got:
        raise Broken(f"{path}: results for no job: {sorted(got)[:5]}")
    return len(want)


# ---- runs --------------------------------------------------------------------

PROFILE = ("[resources]\nworkers = {workers}\n[sandbox]\npreset = python\ncpu_time = 5s\nwall_time = 30s\n"
           "memory = 512M\n[runtime]\nkind = python\ninterpreter = /usr/bin/python3\nentry = transform\n")


class Run:
    """One fitrun run's directory, jobs, results file and process."""

    def __init__(self, d, name, lines, want, python, ns, workers, env):
        self.dir = os.path.join(d, name)
        os.makedirs(self.dir)
        self.name, self.want, self.python, self.ns, self.env = name, want, python, ns, env
        self.jobs = os.path.join(self.dir, "jobs.jsonl")
        self.out = os.path.join(self.dir, "out.jsonl")
        with open(self.jobs, "w") as f:
            f.write("".join(t + "\n" for t in lines))
        self.argv = [FITRUN, "run", "--quiet", "--progress", "none"]
        if python:
            prof = os.path.join(self.dir, "p.ini")
            with open(prof, "w") as f:
                f.write(PROFILE.format(workers=workers))
            self.argv += ["--profile", prof]
        else:
            self.argv += ["--preset", "none", "--set", "sandbox.processes=none", "--workers", str(workers)]
        self.argv += ["--jobs", self.jobs, "--out", self.out, "--resume"]
        self.p = None

    def start(self):
        with open(os.path.join(self.dir, "err.txt"), "ab") as err:
            self.p = subprocess.Popen((NS if self.ns else []) + self.argv, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=err, cwd=self.dir, env=self.env)
        return self.p

    def stderr(self):
        try:
            with open(os.path.join(self.dir, "err.txt"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""


class Test:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.d = tempfile.mkdtemp(prefix="fitrun-neighbours.")
        self.tmp = os.path.join(self.d, "tmp")
        os.mkdir(self.tmp)
        self.env = dict(os.environ, TMPDIR=self.tmp)
        self.lock = threading.Lock()
        self.runs = []  # every Run, for the cleanup
        self.failure = None
        self.counts = {"started": 0, "finished": 0, "INT": 0, "TERM": 0, "KILL": 0, "ns": 0}

    def log(self, msg):
        print(f"{time.monotonic() - self.t0:6.2f} {msg}", flush=True)

    def new_run(self, name, lines, want, python, ns, workers):
        r = Run(self.d, name, lines, want, python, ns, workers, self.env)
        with self.lock:
            self.runs.append(r)
        return r

    def churn(self, k, deadline):
        rng = random.Random(self.rng.random())
        n = 0
        try:
            while time.monotonic() < deadline and not self.failure:
                python = rng.random() < 0.5
                ns = rng.random() < 1 / 3
                if python:
                    lines, want = python_jobs(arc_tasks(8, rng), rng, 0.15)
                else:
                    lines, want = exec_jobs(12, f"c{k}.{n}.", f"0.{rng.randrange(1, 4)}")
                r = self.new_run(f"churn{k}.{n}", lines, want, python, ns, 2)
                n += 1
                self.one(r, rng, deadline)
        except Broken as e:
            self.failure = self.failure or str(e)
        except Exception as e:  # a bug of the test: stop it all, say so
            self.failure = self.failure or f"churner {k}: {type(e).__name__}: {e}"

    def one(self, r, rng, deadline):
        """Start, interrupt, restart with --resume until the run has finished.
        A run SIGKILLed that the test did not SIGKILL is a broken promise:
        a neighbour killed it."""
        for rnd in range(8):
            seen = len(r.stderr())
            p = r.start()
            with self.lock:
                self.counts["started"] += 1
                self.counts["ns"] += r.ns
            last = rnd == 7 or time.monotonic() >= deadline
            sent = None
            if not last:
                try:
                    p.wait(timeout=rng.uniform(0.05, 1.0))
                except subprocess.TimeoutExpired:
                    sent = rng.choice(sorted(SIGS))
                    interrupt(p, r.ns, SIGS[sent])
                    with self.lock:
                        self.counts[sent] += 1
            rc = p.wait(timeout=120)
            err = r.stderr()[seen:]
            # unshare exits 1 saying so when its child was killed by a signal
            # it cannot raise itself (SIGKILL).
            killed = rc == -9 or (r.ns and rc == 1 and "sigprocmask unblock failed" in err)
            if killed and sent != "KILL":
                raise Broken(f"{r.name}: SIGKILLed, and not by the test (exit {rc}): {err[-600:]}")
            if not killed and rc in (0, 1):
                with self.lock:
                    self.counts["finished"] += 1
                check(r.out, r.want)
                return
            if last:
                raise Broken(f"{r.name}: the last run, left to finish, exited {rc}: {err[-600:]}")
            if not killed and not (sent in ("INT", "TERM") and rc in (130, 143, -2, -15)):
                raise Broken(f"{r.name}: exited {rc} after {sent or 'no signal'}: {err[-600:]}")

    def main(self):
        self.t0 = time.monotonic()
        secs = self.args.seconds
        # The long runs: work for secs + 4 s at one job at a time per worker.
        py_lines, py_want = python_jobs(arc_tasks(40, self.rng), self.rng, (secs + 4) / 20)
        long_py = self.new_run("long-python", py_lines, py_want, True, False, 2)
        ex_lines, ex_want = exec_jobs(int((secs + 4) / 0.1), "long.", "0.1")
        long_ns = self.new_run("long-exec-pidns", ex_lines, ex_want, False, True, 1)
        for r in (long_py, long_ns):
            r.start()
        self.log(f"long runs: {long_py.name} ({len(py_lines)} ARC predictions, pid {long_py.p.pid}), "
                 f"{long_ns.name} ({len(ex_lines)} exec jobs, its own pid namespace)")
        time.sleep(1.0)  # both have made their trees
        deadline = time.monotonic() + secs
        threads = [threading.Thread(target=self.churn, args=(k, deadline)) for k in range(self.args.churners)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in (long_py, long_ns):
            rc = r.p.wait(timeout=300)
            if rc != 0:
                raise Broken(f"{r.name} exited {rc}: {r.stderr()[-800:]}")
            check(r.out, r.want)
            self.log(f"{r.name}: exit 0, {len(r.want)} results, every one right")
        if self.failure:
            raise Broken(self.failure)
        self.log("churners: " + ", ".join(f"{k} {v}" for k, v in self.counts.items()))

    def leftovers(self, dirs):
        """The SIGKILLed runs' trees go with the next run; then nothing may be left."""
        first = next(iter(dirs.values()))
        for _ in range(100):  # a SIGKILLed run's zygote is leaving: its tree is kept while it is there
            if not any(procs(os.path.join(t, "launcher")) for t in fitrun_trees([first])
                       if os.path.isdir(os.path.join(t, "launcher"))):
                break
            time.sleep(0.05)
        r = self.new_run("cleanup", *exec_jobs(1, "cleanup.", "0"), False, False, 1)
        if r.start().wait(timeout=60) != 0:
            raise Broken(f"the cleanup run failed: {r.stderr()}")
        trees = fitrun_trees(dirs.values())
        if trees:
            raise Broken(f"cgroups left: {trees}")
        for d in dirs.values():
            others = [p for p in procs_below(d) if p != os.getpid()]
            if others:
                raise Broken(f"processes left below {d}: {others}")
        if os.listdir(self.tmp):
            raise Broken(f"files left in the runs' TMPDIR {self.tmp}: {os.listdir(self.tmp)}")
        self.log("nothing left: no fitrun cgroup, no process, no file")

    def stop_all(self):
        for r in self.runs:
            if r.p and r.p.poll() is None:
                interrupt(r.p, False, signal.SIGKILL)
                r.p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60, help="how long the churners go on")
    ap.add_argument("--churners", type=int, default=2)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 31)
    print(f"neighbours: seed {args.seed} (rerun with --seed {args.seed}), fitrun {FITRUN}", flush=True)
    try:
        dirs = own_dirs()
    except Skip as e:
        print(f"neighbours: skipped: {e}")
        return 77
    home = dict(dirs)
    mine = {c: os.path.join(d, f"nbstress-{os.getpid()}") for c, d in dirs.items()}
    made = []
    t = Test(args)
    rc = 0
    try:
        for c, d in mine.items():
            os.mkdir(d)
            made.append(c)
            with open(os.path.join(d, "cgroup.procs"), "w") as f:
                f.write("0")
        t.main()
        t.leftovers(mine)
    except Broken as e:
        print(f"neighbours: BROKEN: {e}\nneighbours: kept {t.d}", flush=True)
        rc = 1
    finally:
        t.stop_all()
        for c in made:
            with open(os.path.join(home[c], "cgroup.procs"), "w") as f:
                f.write("0")
        for c in made:
            for p in procs(mine[c]):  # only what the test started is in its cgroup
                try:
                    fd = os.pidfd_open(p)
                except OSError:
                    continue
                signal_pidfd(fd, signal.SIGKILL)
                os.close(fd)
            remove_cgroup(mine[c])
    if rc == 0:
        shutil.rmtree(t.d)
    return rc


if __name__ == "__main__":
    sys.exit(main())
