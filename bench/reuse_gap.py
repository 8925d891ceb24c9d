#!/usr/bin/python3
"""reuse_gap.py — where a reused process (`isolation = reuse`) spends its
time per prediction, inside a real `fitrun run`: waiting for its next job
after answering "done" (the wake-ups from its "done" through its worker,
fitrun and back), taking the job's pipes, running the prediction, writing
its report, and each part of the state check after it.

    /usr/bin/python3 bench/reuse_gap.py --fitrun build/fitrun --profile P.ini --jobs J.jsonl [--workers 2]

It runs fitrun with a copy of the runtime script (fitrun_runtime.py next
to the binary, or --runtime) into which timers are written at fixed
places; it stops with a message when one of those places is not found.
Each process writes the figures of one prediction into the stderr of its
next one, so the results of such a run are not a run's results. It prints
the median and mean of each part in µs, and any process replacements (an
instrumented run must have none that a plain run has not).
"""
import argparse
import collections
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

# (anchor, replacement): the timers, each at one place of the script.
PATCHES = [
    ("""        while True:
            try:
                msg, fds, _, _ = recv_fds(chan, 64, RUN_FDS, socket.MSG_CMSG_CLOEXEC)""",
     """        _pc, _prev = time.perf_counter_ns, None
        while True:
            _t0 = _pc()
            try:
                msg, fds, _, _ = recv_fds(chan, 64, RUN_FDS, socket.MSG_CMSG_CLOEXEC)"""),
    ("""            def start():
                job = self.read_job()
                self.arm_backstop(job, worker)
                return job, apply_rc
            # In a copy of the zygote's context: a context variable the
            # prediction sets (a ContextVar of its own, decimal.setcontext)
            # is gone with it, as in a fork child.
            rep = new_context().run(self.run_job, start, allow)
            self.write_report(rep)""",
     """            _t1 = _pc()
            if _prev is not None:
                try:
                    os.write(2, ("GAP wait=%d %s\\n" % ((_t1 - _t0) // 1000, _prev)).encode())
                except OSError:
                    pass

            def start():
                job = self.read_job()
                self.arm_backstop(job, worker)
                return job, apply_rc
            _t2 = _pc()
            rep = new_context().run(self.run_job, start, allow)
            _t3 = _pc()
            self.write_report(rep)
            _t4 = _pc()"""),
    ("""            try:
                write(REUSE_CHAN_FD, b"D" + nonce + why.encode(errors="replace")[:300])""",
     """            _t5 = _pc()
            _prev = "pipes=%d run=%d report=%d check=%d %s" % (
                (_t2 - _t1) // 1000, (_t3 - _t2) // 1000, (_t4 - _t3) // 1000, (_t5 - _t4) // 1000,
                baseline.gap_parts)
            try:
                write(REUSE_CHAN_FD, b"D" + nonce + why.encode(errors="replace")[:300])"""),
    ("""        self.drop_modules()
        if not self.gc_collect():  # finalizers of the prediction's cycles run now, not in a later prediction
            return _ENDLESS_GARBAGE
        # First, by what was bound before any prediction: everything below
        # calls through the runtime's own classes and module.
        if not self.own_intact():""",
     """        _pc = time.perf_counter_ns
        a = _pc()
        self.drop_modules()
        if not self.gc_collect():  # finalizers of the prediction's cycles run now, not in a later prediction
            return _ENDLESS_GARBAGE
        b = _pc()
        self.gap_gc = (b - a) // 1000
        if not self.own_intact():"""),
    # The last pass of the check (a second one runs after anything was put back).
    ("""        self.acted = self.modules_added()
        why = self.check_namespaces()
        if why:
            return why
        why = self._restore_process()
        if why:
            return why""",
     """        self.acted = self.modules_added()
        _pc = time.perf_counter_ns
        b = _pc()
        why = self.check_namespaces()
        c = _pc()
        if why:
            return why
        why = self._restore_process()
        d = _pc()
        self.gap_parts = "gc=%d namespaces=%d restore=%d %s" % (
            self.gap_gc, (c - b) // 1000, (d - c) // 1000, getattr(self.ns, "gap_parts", ""))
        if why:
            return why"""),
    ("""        self.gc_collect, self.check_namespaces = _collect_all(gc.collect), namespaces.check""",
     """        self.gc_collect, self.check_namespaces = _collect_all(gc.collect), namespaces.check
        self.gap_parts, self.gap_gc = \"\", 0"""),
    ("""        versions, loose = self.versions, self.loose
        now = versions.read() if versions is not None else None
""",
     """        versions, loose = self.versions, self.loose
        _pc = time.perf_counter_ns
        _a = _pc()
        now = versions.read() if versions is not None else None
        _b = _pc()
"""),
    ("""        # From here on, module attributes and builtins are the ones they were.
        for name, value, snap in self.data:
            if not _same_data(value, snap):
                return f"poisoned: {name} was changed in place"
        return \"\"""",
     """        _c = _pc()
        # From here on, module attributes and builtins are the ones they were.
        for name, value, snap in self.data:
            if not _same_data(value, snap):
                return f"poisoned: {name} was changed in place"
        _d = _pc()
        self.gap_parts = "ns_tags=%d ns_compare=%d ns_data=%d" % (
            (_b - _a) // 1000, (_c - _b) // 1000, (_d - _c) // 1000)
        return \"\""""),
]


def patched(src):
    text = open(src).read()
    for anchor, new in PATCHES:
        if text.count(anchor) != 1:
            sys.exit(f"reuse_gap: {src}: the place for a timer was not found (the runtime changed):\n{anchor}")
        text = text.replace(anchor, new)
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fitrun", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--jobs", required=True)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runtime", help="fitrun_runtime.py to instrument (default: the one next to --fitrun)")
    a = ap.parse_args()
    fitrun = os.path.abspath(a.fitrun)
    src = a.runtime or os.path.join(os.path.dirname(fitrun), "share", "fitrun", "python", "fitrun_runtime.py")
    tmp = tempfile.mkdtemp(prefix="fitrun-reuse-gap.")
    try:
        with open(os.path.join(tmp, "fitrun_runtime.py"), "w") as f:
            f.write(patched(src))
        out = os.path.join(tmp, "out.jsonl")
        env = dict(os.environ, FITRUN_PYTHON_DIR=tmp)
        subprocess.run([fitrun, "run", "--profile", a.profile, "--jobs", a.jobs, "--out", out, "--quiet",
                        "--workers", str(a.workers), "--set", "runtime.isolation=reuse"], env=env, check=True)
        parts, replaced, n = collections.defaultdict(list), collections.Counter(), 0
        with open(out) as f:
            for line in f:
                r = json.loads(line)
                n += 1
                if r.get("worker_replaced"):
                    replaced[r["worker_replaced"].split(":")[0]] += 1
                for g in re.findall(r"^GAP (.*)$", r.get("stderr") or "", re.M):
                    for k, v in re.findall(r"(\w+)=(\d+)", g):
                        parts[k].append(int(v))
    finally:
        shutil.rmtree(tmp)
    print(f"{n} predictions, {len(parts['wait'])} with the figures of the one before; "
          f"replacements: {dict(replaced) or 'none'}")
    print(f"{'part':12} {'median µs':>10} {'mean µs':>10}")
    for k, v in parts.items():
        print(f"{k:12} {statistics.median(v):10.0f} {statistics.mean(v):10.0f}")


if __name__ == "__main__":
    main()
