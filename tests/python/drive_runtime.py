#!/usr/bin/python3
"""drive_runtime.py — start fitrun's Python runtime (the zygote) without
fitrun and play fitrun's side of its protocol (docs/python-runtime.md):
per prediction, four pipes whose child ends go to a worker with a RUN
message; the job written on one, the report, stdout and stderr read from
the others under their caps; STARTED (the child's pidfd, used to kill it at
the wall deadline or a cap) and EXITED (wait status, rusage) from the worker.

Used by tests/python/test_runtime.py (unittest) and by hand:

    /usr/bin/python3 tests/python/drive_runtime.py --workers 2 \\
        --prelude profiles/arc_prelude.py --jobs samples/arc/jobs.jsonl

prints one line of facts per job. Predictions run in the sandbox of the
built libfitrun_sandbox.so (build*/lib, $FITRUN_BUILD/lib or
$FITRUN_SANDBOX_LIB); without one the driver refuses to run, unless
--no-sandbox asks for exactly that (tests of the protocol only: a hostile
prediction is then free to do anything the user running it can).

Test-only helpers live here: classify() and passed() state what fitrun
computes (launcher/verdict/verdict.c) in the simplest Python, for the tests.
"""
import argparse
import glob
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))  # a checkout's, also through a link to tests/
SRC = os.environ.get("FITRUN_SRC") or os.path.dirname(os.path.dirname(HERE))
RUNTIME = os.path.join(SRC, "launcher", "runtime", "python", "fitrun_runtime.py")
PYTHON = "/usr/bin/python3"

MSG_RUN = struct.Struct("=cBxxI")  # b"R", flags, seq
RUN_FRESH = 1  # reuse: end the process of the previous job first
JOB_FRAME = struct.Struct("=I")  # the job's length, before it
MSG_STARTED = struct.Struct("=cxxxIiq")  # b"S", seq, pid, cpu_base_ns: on the status socket
MSG_EXITED = struct.Struct("=cBxxIiiqqqqq")  # b"E", flags, seq, wstatus, violation_nr, rusage, times
EXITED_APPLIED = 1  # the child applied the sandbox (a sandbox_error it reports is its own words)
REPORT_SLACK = 16 << 10
SIGPROF, SIGXCPU, SIGKILL, SIGSYS = 27, 24, 9, 31


def find_sandbox_lib():
    """The built libfitrun_sandbox.so if it builds a python policy (packed
    by the same build's policy_pack helper), else None."""
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


def packer(lib):
    """The policy_pack helper of the build that made lib."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(lib))), "tests", "helpers", "policy_pack")


def pack(lib, text):
    """Sandbox text ("preset=python;memory=1G") packed as fitrun hands it
    to the interpreter (fr_policy_spec_pack)."""
    r = subprocess.run([packer(lib), text], capture_output=True)
    if r.returncode != 0:
        raise ValueError(f"policy {text!r}: {r.stderr.decode(errors='replace').strip()}")
    return r.stdout


def _policy_builds(path):
    try:
        spec = pack(path, "preset=python")
    except (OSError, ValueError):
        return False
    code = ("import ctypes,sys; l=ctypes.CDLL(sys.argv[1]); p=ctypes.c_void_p(); "
            "e=ctypes.create_string_buffer(256); s=open(sys.argv[2],'rb').read(); "
            "l.fr_policy_build_packed.argtypes=[ctypes.c_char_p,ctypes.c_size_t,ctypes.c_void_p,"
            "ctypes.c_void_p,ctypes.c_char_p,ctypes.c_size_t]; "
            "sys.exit(l.fr_policy_build_packed(s, len(s), None, ctypes.byref(p), e, 256) != 0)")
    fd = os.memfd_create("spec")
    os.write(fd, spec)
    try:
        return subprocess.run([PYTHON, "-c", code, path, f"/proc/self/fd/{fd}"], capture_output=True,
                              pass_fds=[fd]).returncode == 0
    finally:
        os.close(fd)


class Prediction:
    """One job in flight in a worker: the pipes fitrun would hold."""

    def __init__(self, rt, slot, job, flags=0):
        self.rt, self.slot, self.job = rt, slot, job
        self.t0 = time.monotonic()
        pipes = [os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK) for _ in range(4)]
        (job_r, self.job_w), (self.rep_r, rep_w), (self.out_r, out_w), (self.err_r, err_w) = pipes
        rt.seq += 1
        self.seq = rt.seq
        try:
            socket.send_fds(rt.chans[slot], [MSG_RUN.pack(b"R", flags, self.seq)], [job_r, rep_w, out_w, err_w])
        finally:
            for fd in (job_r, rep_w, out_w, err_w):
                os.close(fd)
        forward = {k: job[k] for k in ("id", "code", "inputs", "entry") if k in job}  # never "expected"
        data = json.dumps(forward).encode()
        self.pending = JOB_FRAME.pack(len(data)) + data  # framed, as fitrun sends it
        self.bufs = {self.out_r: bytearray(), self.err_r: bytearray(), self.rep_r: bytearray()}
        self.caps = {self.out_r: rt.output_cap, self.err_r: rt.output_cap,
                     self.rep_r: rt.result_cap + REPORT_SLACK}
        self.names = {self.out_r: "stdout", self.err_r: "stderr", self.rep_r: "result"}
        self.pidfd = self.pid = None
        self.exceeded = None
        self.wall_expired = False
        self.exit = None
        self._send()  # as fitrun does: the child may start reading at once

    def kill(self):
        if self.pidfd is not None:
            try:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            except ProcessLookupError:
                pass  # it exited before its cap was seen: nothing to kill

    def _send(self):
        if self.job_w is None:
            return
        try:
            n = os.write(self.job_w, self.pending[:1 << 16])
            self.pending = self.pending[n:]
        except BlockingIOError:
            return
        except BrokenPipeError:
            self.pending = b""
        if not self.pending:
            os.close(self.job_w)
            self.job_w = None

    def _read(self, fd):
        """Read what is there; True at EOF or over the cap."""
        buf = self.bufs[fd]
        while True:
            try:
                data = os.read(fd, 1 << 16)
            except BlockingIOError:
                return False
            if not data:
                return True
            buf += data
            if len(buf) > self.caps[fd]:
                del buf[self.caps[fd]:]
                if not self.exceeded:
                    self.exceeded = self.names[fd]
                    self.kill()
                return True

    def _status(self):
        """STARTED from the worker's status socket; False when it is gone."""
        msg, fds, _, _ = socket.recv_fds(self.rt.status[self.slot], 1 << 16, 1)
        if msg[:1] != b"S" or not fds:
            for fd in fds:
                os.close(fd)
            return False
        _, seq, self.pid, _ = MSG_STARTED.unpack(msg)
        self.pidfd = fds[0]
        if self.exceeded or self.wall_expired:
            self.kill()
        return True

    def _channel(self):
        """One message from the worker; False when the worker is gone."""
        chan = self.rt.chans[self.slot]
        msg, fds, _, _ = socket.recv_fds(chan, 1 << 16, 1)
        for fd in fds:
            os.close(fd)
        if not msg:
            return False
        if msg[:1] == b"E":
            self.exit = MSG_EXITED.unpack(msg[:MSG_EXITED.size])
        elif msg[:1] == b"F":
            raise RuntimeError(f"worker {self.slot} could not start the prediction: {msg[8:]!r}")
        return True

    def wait(self):
        """Facts of the finished prediction, or None when its worker died."""
        open_fds = [self.out_r, self.err_r, self.rep_r]
        chan = self.rt.chans[self.slot]
        status = self.rt.status[self.slot]
        deadline = self.t0 + self.rt.wall_ms / 1000.0 if self.rt.wall_ms else None
        try:
            while self.exit is None:
                self._send()
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                watched = [chan] + ([status] if self.pidfd is None else []) + open_fds
                r, w, _ = select.select(watched, [self.job_w] if self.job_w is not None else [], [], timeout)
                if not r and not w and deadline is not None and time.monotonic() >= deadline:
                    self.wall_expired = True
                    self.kill()
                    deadline = None
                for fd in list(r):
                    if fd is chan:
                        if not self._channel():
                            return None
                    elif fd is status:
                        self._status()
                    elif self._read(fd):
                        open_fds.remove(fd)
            for fd in open_fds:  # the child is gone: what it wrote is there
                self._read(fd)
            return self._facts()
        finally:
            for fd in (self.out_r, self.err_r, self.rep_r, self.job_w, self.pidfd):
                if fd is not None:
                    os.close(fd)

    def _facts(self):
        _, flags, _, status, violation, utime, stime, rss, wall_us, fork_us = self.exit
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        f = {"id": self.job.get("id"), "worker": self.slot, "pid": self.pid, "wstatus": status,
             "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None, "signal": sig,
             "cpu_ms": (utime + stime) / 1000.0, "utime_ms": utime / 1000.0, "stime_ms": stime / 1000.0,
             "max_rss_kb": rss, "wall_ms": (time.monotonic() - self.t0) * 1000.0,
             "child_wall_ms": wall_us / 1000.0, "fork_ms": fork_us / 1000.0,
             "cpu_limit_ms": self.rt.cpu_ms, "wall_expired": self.wall_expired,
             "output_exceeded": self.exceeded,
             "violation_nr": violation,
             "stdout": self.bufs[self.out_r].decode("utf-8", "replace"),
             "stderr": self.bufs[self.err_r].decode("utf-8", "replace"),
             "reported": False, "outputs": None}
        rep = None
        if f["exit_code"] == 0 and not self.exceeded:
            try:
                rep = json.loads(bytes(self.bufs[self.rep_r]))
            except ValueError:
                rep = None
        if isinstance(rep, dict):
            f["reported"] = True
            if "sandbox_error" in rep and flags & EXITED_APPLIED:
                f["reported"] = False  # the prediction's own words: its process applied the sandbox
            elif "sandbox_error" in rep:
                f["sandbox_error"] = rep["sandbox_error"]
            else:
                f["outputs"] = rep.get("outputs")
                for key in ("error_type", "error_message", "error_line"):
                    f[key] = rep.get(key)
                f["memory"] = rep.get("memory") is True
        f["status"] = classify(f)
        if "expected" in self.job:
            f["passed"] = passed(f["outputs"], self.job["expected"], f["status"])
        return f


class Runtime:
    """One zygote and its workers, driven over the documented protocol.
    sandbox_lib: the library's path, or "none" to run without a sandbox."""

    def __init__(self, prelude="", entry="transform", workers=2, *, sandbox_lib,
                 policy="preset=python;memory=1G", cpu_ms=2000, wall_ms=10000,
                 output_cap=1 << 20, result_cap=1 << 20, python=PYTHON, env=None, isolation="fork"):
        if not sandbox_lib:
            raise ValueError("sandbox_lib: a library path, or 'none' by name")
        self.cpu_ms, self.wall_ms = cpu_ms, wall_ms
        self.output_cap, self.result_cap = output_cap, result_cap
        self.seq = 0
        self.ctrl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # The policy as fitrun hands it over: packed, on an inherited memfd.
        policy_fd = -1
        if sandbox_lib != "none":
            policy_fd = os.memfd_create("fitrun-policy")
            os.write(policy_fd, pack(sandbox_lib, policy) if os.path.exists(sandbox_lib) else b"")
        argv = [python, RUNTIME, "--control-fd", str(theirs.fileno()),
                "--prelude", prelude, "--entry", entry,
                "--sandbox-lib", sandbox_lib, "--policy-fd", str(policy_fd),
                "--cpu-backstop-ms", str(cpu_ms),
                "--report-cap", str(result_cap + REPORT_SLACK), "--max-nesting", "100",
                "--isolation", isolation]
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, pass_fds=[theirs.fileno()] + ([policy_fd] if policy_fd >= 0 else []),
                                     stdin=subprocess.DEVNULL, stdout=sys.stderr, env=env, start_new_session=True)
        theirs.close()
        if policy_fd >= 0:
            os.close(policy_fd)
        self.ready = self.event()
        self.startup_ms = (time.monotonic() - self.t0) * 1000.0
        self.chans = {}
        self.status = {}  # each worker's status socket (STARTED)
        self.pids = {}
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
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        st_ours, st_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        socket.send_fds(self.ctrl, [json.dumps({"op": "spawn", "slot": slot, "worker": slot}).encode()],
                        [theirs.fileno(), st_theirs.fileno()])
        theirs.close()
        st_theirs.close()
        ev = self.event()
        while ev.get("event") == "worker_exit":  # a death notice that raced the reply
            ev = self.event()
        assert ev.get("event") == "spawned" and ev["slot"] == slot, ev
        if slot in self.chans:  # replacing a dead worker
            self.chans[slot].close()
            self.status[slot].close()
        self.chans[slot] = ours
        self.status[slot] = st_ours
        self.pids[slot] = ev["pid"]
        return ev["pid"]

    def start(self, job, slot=0, flags=0):
        return Prediction(self, slot, job, flags)

    def run_one(self, job, slot=0):
        """Run one job in a worker; its facts, or None if the worker died."""
        return self.start(job, slot).wait()

    def run_many(self, jobs):
        """One job per worker at a time, in order (the runtime is what is
        tested here, not scheduling)."""
        results = []
        for i, job in enumerate(jobs):
            f = self.run_one(job, i % len(self.chans))
            results.append(f if f is not None else {"id": job.get("id"), "worker_died": True})
        return results

    def close(self):
        for chan in list(self.chans.values()) + list(self.status.values()):
            chan.close()
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


def classify(f):
    """What fitrun's verdict says of these facts, in short."""
    if f.get("output_exceeded"):
        return "output_limit"
    if f.get("wall_expired"):
        return "timeout"
    if f.get("violation_nr", -1) >= 0:  # the worker read a denied call from the sandbox
        return "violation"
    sig = f.get("signal")
    if sig in (SIGPROF, SIGXCPU):  # the driver's only CPU limit is the child's own timer
        return "timeout"
    if sig:
        return "signal"
    if not f.get("reported") or f.get("sandbox_error") is not None:
        return "crash"
    if f.get("memory"):
        return "memory"
    return "error" if f.get("error_type") else "ok"


def passed(outputs, expected, status):
    """Python's == per input, for a prediction that ran to its end."""
    if status not in ("ok", "error") or outputs is None:
        return None
    return [None if e is None else (i < len(outputs) and outputs[i] == e) for i, e in enumerate(expected)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", required=True, help="JSON Lines file of python jobs")
    ap.add_argument("--prelude", default="")
    ap.add_argument("--entry", default="transform")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--policy", default="preset=python;cpu_time=2s;memory=1G")
    ap.add_argument("--cpu-ms", type=int, default=2000)
    ap.add_argument("--wall-ms", type=int, default=10000)
    ap.add_argument("--isolation", choices=("fork", "reuse"), default="fork")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="run predictions WITHOUT the sandbox (only for code you trust; reuse "
                         "isolation: fork isolation's worker is the sandbox library's)")
    a = ap.parse_args()
    if a.no_sandbox:
        lib = "none"
        a.isolation = "reuse"
    else:
        lib = find_sandbox_lib()
        if lib is None:
            print("drive_runtime.py: no usable libfitrun_sandbox.so (build fitrun first, or set "
                  "FITRUN_SANDBOX_LIB); refusing to run predictions without the sandbox "
                  "(--no-sandbox asks for that by name)", file=sys.stderr)
            return 2
    with open(a.jobs) as f:
        jobs = [json.loads(line) for line in f if line.strip()]
    with Runtime(a.prelude, a.entry, a.workers, sandbox_lib=lib, policy=a.policy,
                 cpu_ms=a.cpu_ms, wall_ms=a.wall_ms, isolation=a.isolation) as rt:
        print(json.dumps(rt.ready), file=sys.stderr)
        if rt.ready.get("event") != "ready":
            return 125
        for facts in rt.run_many(jobs):
            print(json.dumps(facts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
