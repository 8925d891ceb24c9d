#!/usr/bin/python3
"""drive_runtime.py — start fitrun's Python runtime (the zygote) without
fitrun, the way launcher/runtime/python.c does, and feed it jobs.

Used by tests/python/test_runtime.py (unittest) and by hand:

    /usr/bin/python3 tests/python/drive_runtime.py --workers 2 \
        --prelude profiles/arc_prelude.py --jobs samples/arc/jobs.jsonl

prints one raw-facts line per job (docs/python-runtime.md, "result line").
The sandbox library is used when it is built and working
(build*/lib/libfitrun_sandbox.so or $FITRUN_SANDBOX_LIB); otherwise the
runtime runs with --sandbox-lib none and `sandbox_available()` says so.
"""
import argparse
import glob
import json
import os
import select
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("FITRUN_SRC") or os.path.dirname(os.path.dirname(HERE))
RUNTIME = os.path.join(SRC, "launcher", "runtime", "python", "fitrun_runtime.py")
PYTHON = "/usr/bin/python3"


def find_sandbox_lib():
    """The built libfitrun_sandbox.so if it builds a python policy (the
    placeholder library does not), else None."""
    cands = []
    if os.environ.get("FITRUN_SANDBOX_LIB"):
        cands.append(os.environ["FITRUN_SANDBOX_LIB"])
    if os.environ.get("FITRUN_BUILD"):
        cands.append(os.path.join(os.environ["FITRUN_BUILD"], "lib", "libfitrun_sandbox.so"))
    if os.environ.get("FITRUN"):  # the library next to the binary under test
        cands.append(os.path.join(os.path.dirname(os.environ["FITRUN"]), "lib", "libfitrun_sandbox.so"))
    cands += sorted(glob.glob(os.path.join(SRC, "build*", "lib", "libfitrun_sandbox.so")))
    for path in cands:
        if os.path.exists(path) and _policy_builds(path):
            return path
    return None


def _policy_builds(path):
    code = ("import ctypes,sys; l=ctypes.CDLL(sys.argv[1]); p=ctypes.c_void_p(); "
            "e=ctypes.create_string_buffer(256); "
            "sys.exit(l.fr_policy_build_kv(b'preset=python', ctypes.byref(p), e, 256) != 0)")
    return subprocess.run([PYTHON, "-c", code, path], capture_output=True).returncode == 0


class Runtime:
    """One zygote and its workers, driven over the documented protocol."""

    def __init__(self, prelude="", entry="transform", workers=2, sandbox_lib=None,
                 policy="preset=python;memory=1G", cpu_ms=2000, wall_ms=10000,
                 output_cap=1 << 20, result_cap=64 << 20, python=PYTHON, env=None):
        self.ctrl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [python, RUNTIME, "--control-fd", str(theirs.fileno()),
                "--prelude", prelude, "--entry", entry,
                "--sandbox-lib", sandbox_lib or "none", "--policy", policy,
                "--cpu-ms", str(cpu_ms), "--wall-ms", str(wall_ms),
                "--output-cap", str(output_cap), "--result-cap", str(result_cap)]
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL,
                                     stdout=sys.stderr, env=env, start_new_session=True)
        theirs.close()
        self.ready = self.event()
        self.startup_ms = (time.monotonic() - self.t0) * 1000.0
        self.chans = {}
        self.pids = {}
        self.readers = {}
        if self.ready.get("event") != "ready":
            return
        for slot in range(workers):
            self.spawn(slot)

    def event(self, timeout=60):
        r, _, _ = select.select([self.ctrl], [], [], timeout)
        if not r:
            raise TimeoutError("no event from the runtime")
        msg = self.ctrl.recv(65536)
        return json.loads(msg) if msg else {"event": "eof"}

    def spawn(self, slot):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        socket.send_fds(self.ctrl, [json.dumps({"op": "spawn", "slot": slot}).encode()],
                        [theirs.fileno()])
        theirs.close()
        ev = self.event()
        while ev.get("event") == "worker_exit":  # a death notice that raced the reply
            ev = self.event()
        assert ev.get("event") == "spawned" and ev["slot"] == slot, ev
        if slot in self.chans:  # replacing a dead worker
            self.readers[slot].close()
            self.chans[slot].close()
        self.chans[slot] = ours
        self.pids[slot] = ev["pid"]
        self.readers[slot] = ours.makefile("rb")
        return ev["pid"]

    def run_one(self, job, slot=0):
        """Send one job to a worker and wait for its line (None if the worker died)."""
        self.chans[slot].sendall(json.dumps(job).encode() + b"\n")
        line = self.readers[slot].readline()
        return json.loads(line) if line else None

    def run_many(self, jobs):
        """Round-robin over the workers, one job in flight per worker."""
        jobs = list(jobs)
        results = []
        busy = {}
        i = 0
        while i < len(jobs) or busy:
            for slot in self.chans:
                if slot not in busy and i < len(jobs):
                    self.chans[slot].sendall(json.dumps(jobs[i]).encode() + b"\n")
                    busy[slot] = jobs[i]
                    i += 1
            ready, _, _ = select.select([self.chans[s] for s in busy], [], [])
            for slot, chan in list(self.chans.items()):
                if chan in ready:
                    line = self.readers[slot].readline()
                    results.append(json.loads(line) if line else {"id": busy[slot].get("id"),
                                                                  "worker_died": True})
                    del busy[slot]
        return results

    def close(self):
        for chan in self.chans.values():
            chan.close()
        for reader in self.readers.values():
            reader.close()
        try:
            self.ctrl.send(json.dumps({"op": "exit"}).encode())
        except OSError:
            pass
        self.ctrl.close()
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        try:  # what fitrun does at the end of a run: nothing of the group survives
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        return code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


SIGPROF, SIGXCPU, SIGKILL, SIGSYS = 27, 24, 9, 31


def classify(f):
    """Reference classification of raw facts (what python.c computes with
    fr_classify); used by the tests to state expectations simply."""
    if f.get("worker_error"):
        return "invalid"
    if f.get("output_exceeded"):
        return "output_limit"
    if f.get("wall_expired"):
        return "timeout"
    if f.get("violation_nr", -1) >= 0 or f.get("signal") == SIGSYS:
        return "violation"
    sig = f.get("signal")
    if sig in (SIGPROF, SIGXCPU) or (sig == SIGKILL and f["cpu_limit_ms"]
                                     and f["cpu_ms"] >= f["cpu_limit_ms"]):
        return "timeout"
    if sig:
        return "signal"
    if f.get("memory"):
        return "memory"
    if not f.get("reported") or f.get("sandbox_error") is not None:
        return "crash"
    return "error" if f.get("error_type") else "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", required=True, help="JSON Lines file of python jobs")
    ap.add_argument("--prelude", default="")
    ap.add_argument("--entry", default="transform")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--policy", default="preset=python;cpu_time=2s;memory=1G")
    ap.add_argument("--cpu-ms", type=int, default=2000)
    ap.add_argument("--wall-ms", type=int, default=10000)
    ap.add_argument("--no-sandbox", action="store_true")
    a = ap.parse_args()
    lib = None if a.no_sandbox else find_sandbox_lib()
    with open(a.jobs) as f:
        jobs = [json.loads(line) for line in f if line.strip()]
    with Runtime(a.prelude, a.entry, a.workers, lib, a.policy, a.cpu_ms, a.wall_ms) as rt:
        print(json.dumps(rt.ready), file=sys.stderr)
        if rt.ready.get("event") != "ready":
            return 125
        for facts in rt.run_many(jobs):
            facts["status"] = classify(facts)
            print(json.dumps(facts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
