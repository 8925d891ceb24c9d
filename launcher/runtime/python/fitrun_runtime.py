"""fitrun_runtime.py — the Python side of fitrun's warm runtime.

One interpreter per run (the "zygote") is started by fitrun, runs the
prelude once, builds the sandbox policy once, and then forks workers on
request. Each worker reads job lines from its channel and forks a fresh
child per prediction; the child applies the sandbox and runs the code; the
worker waits for it and sends back one line of raw facts (wait status,
rusage, captured output, outputs). fitrun's C side (launcher/runtime/python.c)
turns those facts into the result line. The wire protocol is documented in
docs/python-runtime.md; keep the two in step.

    python3 fitrun_runtime.py --control-fd 3 --prelude arc_prelude.py \
        --entry transform --sandbox-lib .../libfitrun_sandbox.so \
        --policy 'preset=python;cpu_time=2000ms;memory=512M' \
        --cpu-ms 2000 --wall-ms 10000 --output-cap 1048576

Standard library only (numpy is used when the prelude or a prediction has
imported it, never imported here), so any CPython >= 3.9 on Linux works.
"""
import os

# fitrun exports the thread variables to the interpreter (its plan's threads
# per job: 1 under the python preset, which refuses thread creation; a
# user's own value is kept and the profile's [env] wins), and they must be
# in place before the prelude imports numpy: a BLAS sizes its thread pool
# at import. Started without fitrun (tests, tools), a variable nobody set
# gets 1; one that is set is never overridden here.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# The job environment is scrubbed (no inherited PYTHONUNBUFFERED), so what
# the prelude prints may still sit in this process's stdio buffers: flush
# them before every fork, or each child would print them again as its own.
os.register_at_fork(before=lambda: [s.flush() for s in (sys.stdout, sys.stderr) if s is not None])

import argparse  # noqa: E402  (after the environment above, on purpose)
import builtins  # noqa: E402
import ctypes  # noqa: E402
import fcntl  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

PROTOCOL = 1

# File descriptors inside a prediction's child. Everything else is closed,
# so the code cannot reach the worker's channel and forge a result line.
CHILD_STDIN, CHILD_STDOUT, CHILD_STDERR, CHILD_RESULT_FD, CHILD_REPORT_FD = 0, 1, 2, 3, 4
CHILD_FIRST_FREE_FD = 5

MESSAGE_CAP = 1000          # characters kept of an exception's text
NESTING_CAP = 100           # deepest output structure accepted
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1  # jansson's json_int_t
PR_SET_PDEATHSIG = 1
READ_CHUNK = 1 << 16
SELFTEST_ALLOC = 16 << 20   # what the sandbox self-test allocates

# Exit statuses of a prediction's child when it cannot even run the code
# (it reports why on the result fd first, when it still can).
EXIT_CHILD_SETUP = 70       # fd setup / prctl failed
EXIT_ORPHANED = 71          # the worker died between fork and prctl


# --------------------------------------------------------------------------
# Command line

def parse_args(argv):
    p = argparse.ArgumentParser(prog="fitrun_runtime.py",
                                description="fitrun warm Python runtime (started by fitrun)")
    p.add_argument("--control-fd", type=int, required=True,
                   help="inherited SOCK_SEQPACKET socket to fitrun")
    p.add_argument("--prelude", default="", help="file run once before forking ('' = none)")
    p.add_argument("--entry", default="transform", help="default entry function")
    p.add_argument("--sandbox-lib", required=True,
                   help="path of libfitrun_sandbox.so, or 'none' (tests only: no sandbox)")
    p.add_argument("--policy", default="preset=python", help="fr_policy_build_kv() text")
    p.add_argument("--cpu-ms", type=int, default=0, help="CPU time per prediction (0 = none)")
    p.add_argument("--wall-ms", type=int, default=0, help="wall time per prediction (0 = none)")
    p.add_argument("--output-cap", type=int, default=1 << 20, help="cap on stdout and on stderr, bytes")
    p.add_argument("--result-cap", type=int, default=64 << 20, help="cap on the encoded outputs, bytes")
    return p.parse_args(argv)


# --------------------------------------------------------------------------
# Sandbox: libfitrun_sandbox.so through ctypes

class SetupError(Exception):
    """A start-up failure reported to fitrun as one 'fatal' event."""

    def __init__(self, stage, error_type, message, file=None, line=None):
        super().__init__(message)
        self.event = {"event": "fatal", "stage": stage, "error_type": error_type,
                      "message": message, "file": file, "line": line}


class Sandbox:
    """The policy is built (and its seccomp filter compiled) once, here in
    the zygote; the forked child only calls fr_policy_apply(), which makes a
    handful of syscalls and allocates nothing."""

    def __init__(self, lib_path, kv):
        self.enabled = lib_path != "none"
        self.policy = None
        if not self.enabled:
            return
        try:
            lib = ctypes.CDLL(lib_path)
        except OSError as e:
            raise SetupError("sandbox", "OSError", f"cannot load {lib_path}: {e}") from None
        lib.fr_policy_build_kv.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                                           ctypes.c_char_p, ctypes.c_size_t]
        lib.fr_policy_build_kv.restype = ctypes.c_int
        lib.fr_policy_apply.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.fr_policy_apply.restype = ctypes.c_int
        lib.fr_report_read.argtypes = [ctypes.c_int]
        lib.fr_report_read.restype = ctypes.c_int
        policy = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        if lib.fr_policy_build_kv(kv.encode(), ctypes.byref(policy), err, len(err)) != 0:
            msg = err.value.decode(errors="replace") or "unknown error"
            raise SetupError("sandbox", "PolicyError", f"sandbox policy '{kv}': {msg}")
        self.lib, self.policy = lib, policy

    def apply(self, report_fd):
        """In the child. Returns 0 or -errno of the first failing step."""
        if not self.enabled:
            return 0
        return self.lib.fr_policy_apply(self.policy, report_fd)

    def violation(self, report_fd):
        """In the worker, after the child exited: syscall number or -1."""
        if not self.enabled:
            return -1
        return self.lib.fr_report_read(report_fd)


# --------------------------------------------------------------------------
# Prelude

def _innermost_line(tb, filename):
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def load_prelude(path):
    """Run the prelude once; its module globals are the starting point of
    every prediction. Returns that dict. Raises SetupError naming file:line."""
    mod = types.ModuleType("fitrun_prelude")
    mod.__dict__["__builtins__"] = builtins
    if not path:
        return mod.__dict__
    mod.__file__ = path
    sys.modules["fitrun_prelude"] = mod
    # Let the prelude import modules that sit next to it.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as e:
        raise SetupError("prelude", type(e).__name__, f"cannot read {path}: {e.strerror}",
                         file=path) from None
    try:
        exec(compile(source, path, "exec"), mod.__dict__)
    except SyntaxError as e:
        raise SetupError("prelude", type(e).__name__, e.msg, file=path, line=e.lineno) from None
    except BaseException as e:  # SystemExit, KeyboardInterrupt too: the run cannot go on
        raise SetupError("prelude", type(e).__name__, _exc_text(e), file=path,
                         line=_innermost_line(e.__traceback__, path)) from None
    return mod.__dict__


# --------------------------------------------------------------------------
# Output normalisation (runs in the child)

class UnserializableOutput(Exception):
    pass


def normalise(value, depth=0):
    """Turn an output into plain JSON values: numpy arrays via tolist(),
    numpy scalars via item(), tuples to lists (recursively). Anything else
    that JSON (and jansson on the C side) cannot hold raises
    UnserializableOutput: sets, objects, NaN/inf, ints beyond 64 bits."""
    if depth > NESTING_CAP:
        raise UnserializableOutput(f"output nested deeper than {NESTING_CAP} levels")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        if INT64_MIN <= value <= INT64_MAX:
            return value
        raise UnserializableOutput("integer output does not fit in 64 bits")
    if t is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise UnserializableOutput(f"float output {value!r} is not valid JSON")
        return value
    if t is list or t is tuple:
        return [normalise(v, depth + 1) for v in value]
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise UnserializableOutput(f"dict output has a {type(k).__name__} key")
            out[k] = normalise(v, depth + 1)
        return out
    np = sys.modules.get("numpy")
    if np is not None:
        if isinstance(value, np.ndarray):
            return normalise(value.tolist(), depth)
        if isinstance(value, np.generic):
            return normalise(value.item(), depth)
    # Subclasses of the plain types (IntEnum, namedtuple, OrderedDict...).
    for base in (bool, int, float, str, list, tuple, dict):
        if isinstance(value, base):
            return normalise(base(value) if base not in (list, tuple) else list(value), depth)
    raise UnserializableOutput(f"output of type {t.__name__} cannot become JSON")


def _exc_text(e):
    try:
        text = str(e)
    except BaseException:  # a hostile __str__
        text = "<unprintable exception>"
    return text if len(text) <= MESSAGE_CAP else text[:MESSAGE_CAP] + "..."


# --------------------------------------------------------------------------
# The prediction's child

class Runner:
    """Everything a worker (and its children) needs, built in the zygote."""

    def __init__(self, cfg, sandbox, prelude_globals):
        self.cfg = cfg
        self.sandbox = sandbox
        self.globals = prelude_globals
        self.fin = prelude_globals.get("fitrun_input")
        self.fout = prelude_globals.get("fitrun_output")
        libc = ctypes.CDLL(None, use_errno=True)
        self.prctl = libc.prctl
        self.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong,
                               ctypes.c_ulong, ctypes.c_ulong]
        self.prctl.restype = ctypes.c_int

    def run_code(self, code, entry, inputs, hooks=True):
        """Execute `code` in a fresh copy of the prelude globals and call
        `entry` on every input (all of them, even after one fails, so that a
        partly working prediction still gets per-input outputs; but not after
        a MemoryError). Returns the report dict the child sends to the worker."""
        fin, fout = (self.fin, self.fout) if hooks else (None, None)
        rep = {"outputs": [], "error_type": None, "error_message": None,
               "error_line": None, "memory": False}

        def failed(e):
            if isinstance(e, MemoryError):
                rep["memory"] = True
            if rep["error_type"] is None:  # the first error is the one reported
                rep["error_type"] = ("UnserializableOutput" if isinstance(e, UnserializableOutput)
                                     else type(e).__name__)
                rep["error_message"] = _exc_text(e)
                if isinstance(e, SyntaxError) and e.filename == "<prediction>":
                    rep["error_line"] = e.lineno
                else:
                    rep["error_line"] = _innermost_line(e.__traceback__, "<prediction>")

        g = dict(self.globals)
        # Not "__main__": LLM code often ends with an `if __name__ == "__main__":`
        # self-test that must not run here.
        g["__name__"] = "__prediction__"
        try:
            exec(compile(code, "<prediction>", "exec"), g)
            fn = g.get(entry)
            if not callable(fn):
                raise NameError(f"the code does not define a function '{entry}'")
        except BaseException as e:
            failed(e)
            return rep
        for value in inputs:
            try:
                if fin is not None:
                    value = fin(value)
                out = fn(value)
                if fout is not None:
                    out = fout(out)
                rep["outputs"].append(normalise(out))
            except BaseException as e:
                rep["outputs"].append(None)
                failed(e)
                if isinstance(e, MemoryError):
                    # The next call would most likely exhaust memory again,
                    # each time at full cost: the prediction is a memory failure.
                    break
        return rep

    def child(self, job, fds, worker_pid):
        """Never returns: runs in the forked child of a worker."""
        try:
            signal.signal(signal.SIGUSR1, signal.SIG_DFL)  # the worker's, not the child's
            os.setpgid(0, 0)  # so that the worker can kill anything it leaves behind
            self.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != worker_pid:
                os._exit(EXIT_ORPHANED)
            # Move the pipes above the target range first, so that dup2 never
            # clobbers a source, then close everything else.
            moved = [(fcntl.fcntl(src, fcntl.F_DUPFD, CHILD_FIRST_FREE_FD), dst)
                     for src, dst in ((fds["null"], CHILD_STDIN), (fds["out_w"], CHILD_STDOUT),
                                      (fds["err_w"], CHILD_STDERR), (fds["res_w"], CHILD_RESULT_FD),
                                      (fds["rep_w"], CHILD_REPORT_FD))]
            for src, dst in moved:
                os.dup2(src, dst)
            os.closerange(CHILD_FIRST_FREE_FD, 1 << 20)
        except BaseException:
            os._exit(EXIT_CHILD_SETUP)
        try:
            # Millisecond CPU limit: SIGPROF's default action kills the process
            # when it has used cpu_ms of CPU time; RLIMIT_CPU (whole seconds,
            # set by the sandbox) backs it up if the code resets the timer.
            if self.cfg.cpu_ms > 0:
                signal.setitimer(signal.ITIMER_PROF, self.cfg.cpu_ms / 1000.0)
            rc = self.sandbox.apply(CHILD_REPORT_FD)
            if rc != 0:
                rep = {"sandbox_error": -rc}
            else:
                rep = self.run_code(job["code"], job["entry"], job["inputs"])
        except MemoryError:
            rep = {"outputs": [], "error_type": "MemoryError", "error_message": "",
                   "error_line": None, "memory": True}
        except BaseException as e:  # our own bug: say so rather than die silently
            rep = {"outputs": [], "error_type": "RuntimeInternalError",
                   "error_message": f"{type(e).__name__}: {_exc_text(e)}",
                   "error_line": None, "memory": False}
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except BaseException:
                pass
        try:
            data = _encode_report(rep)
            view = memoryview(data)
            while view:
                view = view[os.write(CHILD_RESULT_FD, view):]
        except BaseException:
            pass
        os._exit(0)


def _encode_report(rep):
    try:
        return json.dumps(rep, allow_nan=False, separators=(",", ":")).encode()
    except (ValueError, TypeError, RecursionError) as e:  # should not happen after normalise()
        rep = dict(rep, outputs=[], error_type="UnserializableOutput", error_message=_exc_text(e))
        return json.dumps(rep, separators=(",", ":")).encode()
    except MemoryError:
        return b'{"outputs":[],"error_type":"MemoryError","error_message":"","memory":true}'


# --------------------------------------------------------------------------
# Worker

class AbortRequested(Exception):
    """fitrun sent SIGUSR1: its own deadline for the running job passed."""


class Worker:
    def __init__(self, runner, slot, chan):
        self.runner = runner
        self.cfg = runner.cfg
        self.slot = slot
        self.chan = chan
        self.pid = os.getpid()
        self.null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        # fitrun's wall deadline starts when it dispatches the job, a little
        # before ours: it then asks us (SIGUSR1) to kill the child and report
        # as usual, so the facts (CPU used, output so far) are not lost and
        # this worker lives on. Only honoured while a child runs.
        self.supervising = False
        signal.signal(signal.SIGUSR1, self._on_abort)

    def _on_abort(self, signum, frame):
        if self.supervising:
            self.supervising = False  # once
            raise AbortRequested()

    def serve(self):
        reader = self.chan.makefile("rb", buffering=READ_CHUNK)
        while True:
            line = reader.readline()
            if not line:
                return 0  # fitrun closed the channel: the run is over
            if not line.strip():
                continue
            facts = self.handle(line)
            self.chan.sendall(json.dumps(facts, separators=(",", ":")).encode() + b"\n")

    def handle(self, line):
        try:
            job = json.loads(line)
        except ValueError as e:
            return {"id": None, "worker": self.slot, "worker_error": f"job line is not JSON: {e}"}
        jid = job.get("id") if isinstance(job, dict) else None
        problem = _check_job(job, self.cfg.entry)
        if problem:
            return {"id": jid, "worker": self.slot, "worker_error": problem}
        facts = self.run(job)
        expected = job.get("expected")
        if expected is not None:
            facts["passed"] = _passed(facts["outputs"], expected) if _ran_to_end(facts) else None
        return facts

    def run(self, job):
        fds = {"null": self.null}
        pipes = []
        try:
            for name in ("out", "err", "res", "rep"):
                # The violation report is read after the child is gone, so
                # that pipe is non-blocking (a tiny write never blocks).
                r, w = os.pipe2(os.O_CLOEXEC | (os.O_NONBLOCK if name == "rep" else 0))
                pipes += [r, w]
                fds[name + "_r"], fds[name + "_w"] = r, w
            t0 = time.monotonic()
            pid = os.fork()
            if pid == 0:
                self.runner.child(job, fds, self.pid)  # never returns
            t_fork = time.monotonic()
            for name in ("out_w", "err_w", "res_w", "rep_w"):
                os.close(fds[name])
                pipes.remove(fds[name])
            facts = self.supervise(pid, fds, t0)
            facts["fork_ms"] = round((t_fork - t0) * 1000.0, 3)
            facts["id"] = job.get("id")
            return facts
        finally:
            for fd in pipes:
                os.close(fd)

    def supervise(self, pid, fds, t0):
        """Wait for the child while reading its stdout, stderr and result
        pipes; kill it on the wall deadline or when a cap is exceeded."""
        cfg = self.cfg
        caps = {fds["out_r"]: cfg.output_cap, fds["err_r"]: cfg.output_cap,
                fds["res_r"]: cfg.result_cap}
        names = {fds["out_r"]: "stdout", fds["err_r"]: "stderr", fds["res_r"]: "result"}
        bufs = {fd: bytearray() for fd in caps}
        poller = select.poll()
        for fd in caps:
            poller.register(fd, select.POLLIN)
        pidfd = os.pidfd_open(pid)
        poller.register(pidfd, select.POLLIN)
        deadline = t0 + cfg.wall_ms / 1000.0 if cfg.wall_ms > 0 else None
        open_fds = set(caps)
        exited = wall_expired = aborted = False
        exceeded = None
        try:
            try:
                self.supervising = True
                while not exited and not exceeded:
                    timeout = None
                    if deadline is not None:
                        timeout = max(0.0, deadline - time.monotonic()) * 1000.0
                    events = poller.poll(timeout)
                    if not events and deadline is not None and time.monotonic() >= deadline:
                        wall_expired = True
                        break
                    for fd, _ in events:
                        if fd == pidfd:
                            exited = True
                        elif self._read_into(fd, bufs, caps, poller, open_fds):
                            exceeded = exceeded or names[fd]
                self.supervising = False
            except AbortRequested:
                aborted = wall_expired = True
            # The child is gone: drain what is already buffered without
            # waiting for EOF, which a stray grandchild (preset none) could
            # hold back forever.
            while exited and not exceeded and open_fds:
                events = [e for e in poller.poll(0) if e[0] != pidfd]
                if not events:
                    break
                for fd, _ in events:
                    if self._read_into(fd, bufs, caps, poller, open_fds):
                        exceeded = exceeded or names[fd]
            self.supervising = False
            if wall_expired or (exceeded and not exited):
                os.kill(pid, signal.SIGKILL)
            # Anything else in the child's process group goes too. Safe before
            # wait4: the zombie keeps the pid (and group id) from being reused.
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, status, ru = os.wait4(pid, 0)
        finally:
            os.close(pidfd)
        wall_ms = (time.monotonic() - t0) * 1000.0
        violation = self.runner.sandbox.violation(fds["rep_r"])
        facts = self._facts(pid, status, ru, wall_ms, wall_expired, exceeded, violation,
                            bufs[fds["out_r"]], bufs[fds["err_r"]], bufs[fds["res_r"]])
        facts["aborted"] = aborted
        return facts

    @staticmethod
    def _read_into(fd, bufs, caps, poller, open_fds):
        """Read one chunk; returns True when the cap is exceeded."""
        data = os.read(fd, READ_CHUNK)
        if not data:
            poller.unregister(fd)
            open_fds.discard(fd)
            return False
        buf = bufs[fd]
        room = caps[fd] - len(buf)
        buf += data[:max(room, 0)]
        return len(data) > room

    def _facts(self, pid, status, ru, wall_ms, wall_expired, exceeded, violation, out, err, res):
        facts = {
            "worker": self.slot,
            "pid": pid,
            "wstatus": status,
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "cpu_ms": round((ru.ru_utime + ru.ru_stime) * 1000.0, 3),
            "utime_ms": round(ru.ru_utime * 1000.0, 3),
            "stime_ms": round(ru.ru_stime * 1000.0, 3),
            "max_rss_kb": ru.ru_maxrss,
            "wall_ms": round(wall_ms, 3),
            "cpu_limit_ms": self.cfg.cpu_ms,
            "wall_expired": wall_expired,
            "output_exceeded": exceeded,
            "violation_nr": violation,
            "stdout": out.decode("utf-8", errors="replace"),
            "stderr": err.decode("utf-8", errors="replace"),
            "reported": False,
        }
        rep = None
        if res and exceeded != "result":
            try:
                rep = json.loads(res)
            except ValueError:
                rep = None  # cut short (killed mid-write) or forged: not a report
        if isinstance(rep, dict):
            facts["reported"] = True
            if "sandbox_error" in rep:
                facts["sandbox_error"] = rep["sandbox_error"]
            else:
                outputs = rep.get("outputs")
                facts["outputs"] = outputs if isinstance(outputs, list) else []
                for key in ("error_type", "error_message", "error_line"):
                    facts[key] = rep.get(key)
                facts["memory"] = rep.get("memory") is True
        return facts


def _check_job(job, default_entry):
    """Returns None, or why the job cannot run. Fills job['entry']."""
    if not isinstance(job, dict):
        return "job is not a JSON object"
    if not isinstance(job.get("code"), str):
        return "job has no 'code' string"
    if not isinstance(job.get("inputs"), list):
        return "job has no 'inputs' list"
    entry = job.get("entry") or default_entry
    if not isinstance(entry, str) or not entry.isidentifier():
        return f"job 'entry' {entry!r} is not a Python identifier"
    job["entry"] = entry
    expected = job.get("expected")
    if expected is not None and (not isinstance(expected, list) or len(expected) != len(job["inputs"])):
        return "job 'expected' is not a list as long as 'inputs'"
    return None


def _ran_to_end(facts):
    """Did the prediction run to its end (fitrun status ok or error)? Only
    then is `passed` given; when the sandbox or the runtime ended it
    (MemoryError, a kill, a violation, a timeout, a cap) it is None, as in
    fitrun's result (python.c ran_to_end, docs/python-runtime.md)."""
    return (os.WIFEXITED(facts["wstatus"]) and "outputs" in facts
            and not facts.get("memory") and facts["violation_nr"] < 0
            and not facts["output_exceeded"] and not facts["wall_expired"])


def _passed(outputs, expected):
    """Per input: output == expected (None where the expected value is
    unknown, e.g. an ARC test output without solutions)."""
    res = []
    for i, exp in enumerate(expected):
        if exp is None:
            res.append(None)
        else:
            res.append(i < len(outputs) and outputs[i] is not None and outputs[i] == exp)
    return res


# --------------------------------------------------------------------------
# Zygote

class Zygote:
    def __init__(self, cfg, ctrl, boot_ms=None):
        self.cfg = cfg
        self.ctrl = ctrl
        self.boot_ms = boot_ms
        self.workers = {}  # pidfd -> (slot, pid)
        self.runner = None

    def send(self, obj):
        self.ctrl.send(json.dumps(obj, separators=(",", ":")).encode())

    def start(self):
        t0 = time.monotonic()
        sandbox = Sandbox(self.cfg.sandbox_lib, self.cfg.policy)
        t1 = time.monotonic()
        prelude = load_prelude(self.cfg.prelude)
        t2 = time.monotonic()
        self.runner = Runner(self.cfg, sandbox, prelude)
        self.selftest()
        t3 = time.monotonic()
        # The prelude's objects never change again: move them out of the
        # collector's reach so that children do not copy-on-write their pages.
        gc.collect()
        gc.freeze()
        self.send({"event": "ready", "protocol": PROTOCOL, "pid": os.getpid(),
                   "python": sys.version.split()[0], "executable": sys.executable,
                   "sandbox": "on" if sandbox.enabled else "off",
                   "boot_ms": self.boot_ms, "sandbox_ms": _ms(t1 - t0),
                   "prelude_ms": _ms(t2 - t1), "selftest_ms": _ms(t3 - t2),
                   "hooks": [h for h in ("fitrun_input", "fitrun_output") if prelude.get(h)]})

    def selftest(self):
        """Apply the policy once in a throw-away child before any job, so a
        policy the interpreter cannot live with (e.g. a memory limit below its
        own footprint) stops the run with one message instead of failing
        every prediction."""
        vm_mib = _vm_size_mib()
        r, w = os.pipe2(os.O_CLOEXEC)
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                rc = self.runner.sandbox.apply(-1)
                if rc != 0:
                    os.write(w, f"applying the policy failed: {os.strerror(-rc)}".encode())
                    os._exit(1)
                try:
                    # Room for a prediction's data beyond the interpreter itself.
                    bytearray(SELFTEST_ALLOC)
                except MemoryError:
                    os.write(w, f"it cannot allocate {SELFTEST_ALLOC >> 20} MiB: the memory limit is "
                                f"below the interpreter's own size ({vm_mib} MiB of address space "
                                f"with the prelude loaded) plus room for data".encode())
                    os._exit(1)
                rep = self.runner.run_code("def f(x):\n    return [x] * 2\n", "f", [[1, 2]], hooks=False)
                if rep["outputs"] != [[[1, 2], [1, 2]]]:
                    os.write(w, f"a trivial prediction failed: {rep['error_type']}: "
                                f"{rep['error_message']}".encode())
                    os._exit(1)
                json.dumps(rep)
                os._exit(0)
            except BaseException as e:
                try:
                    os.write(w, f"{type(e).__name__}: {_exc_text(e)}".encode())
                finally:
                    os._exit(1)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            why = f.read(2000).decode(errors="replace")
        _, status = os.waitpid(pid, 0)
        if status != 0:
            if not why:
                why = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                       else f"exit status {os.WEXITSTATUS(status)}")
            raise SetupError("sandbox", "SelfTestFailed",
                             f"a sandboxed child of the interpreter cannot run Python code "
                             f"({why}); check the memory limit and the allow/deny lists")

    def spawn(self, slot, chan_fd):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                self.ctrl.close()
                for pidfd in self.workers:
                    os.close(pidfd)
                chan = socket.socket(fileno=chan_fd)
                code = Worker(self.runner, slot, chan).serve()
            except BrokenPipeError:
                code = 0  # fitrun went away mid-reply
            except BaseException as e:
                try:
                    sys.stderr.write(f"fitrun python worker {slot}: {type(e).__name__}: {_exc_text(e)}\n")
                    sys.stderr.flush()
                except BaseException:
                    pass
            finally:
                os._exit(code)
        os.close(chan_fd)
        self.workers[os.pidfd_open(pid)] = (slot, pid)
        self.send({"event": "spawned", "slot": slot, "pid": pid})

    def reap(self, pidfd):
        slot, pid = self.workers.pop(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self.send({"event": "worker_exit", "slot": slot, "pid": pid, "wstatus": status,
                   "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                   "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None})

    def serve(self):
        cfd = self.ctrl.fileno()
        while True:
            poller = select.poll()
            poller.register(cfd, select.POLLIN)
            for pidfd in self.workers:
                poller.register(pidfd, select.POLLIN)
            for fd, _ in poller.poll():
                if fd != cfd:
                    self.reap(fd)
                    continue
                msg, fds, _, _ = socket.recv_fds(self.ctrl, 4096, 4)
                if not msg:
                    return 0  # fitrun is gone
                try:
                    cmd = json.loads(msg)
                except ValueError:
                    cmd = {}
                op = cmd.get("op") if isinstance(cmd, dict) else None
                if op == "spawn" and len(fds) == 1 and isinstance(cmd.get("slot"), int):
                    self.spawn(cmd["slot"], fds[0])
                elif op == "exit":
                    for extra in fds:
                        os.close(extra)
                    return 0
                else:
                    for extra in fds:
                        os.close(extra)
                    self.send({"event": "error", "message": f"unknown control message {msg[:200]!r}"})


def _vm_size_mib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) >> 10
    except (OSError, ValueError):
        pass
    return "?"


def _ms(seconds):
    return round(seconds * 1000.0, 3)


def _boot_ms():
    """Milliseconds from the interpreter's exec to now (10 ms resolution:
    /proc/self/stat counts clock ticks): called first thing in main(), it is
    the interpreter's own start-up, the part a slow disk inflates most."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        hz = os.sysconf("SC_CLK_TCK")
        return _ms(time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / hz)
    except (OSError, ValueError, IndexError):
        return None


def main(argv):
    boot_ms = _boot_ms()  # before anything of ours: the interpreter's own start
    cfg = parse_args(argv)
    try:
        ctrl = socket.socket(fileno=cfg.control_fd)
    except OSError as e:
        sys.stderr.write(f"fitrun_runtime.py: control fd {cfg.control_fd}: {e.strerror}\n")
        return 2
    zygote = Zygote(cfg, ctrl, boot_ms)
    try:
        if not hasattr(os, "pidfd_open"):
            raise SetupError("start", "RuntimeError", f"Python {sys.version.split()[0]} has no "
                             "os.pidfd_open (needs Python >= 3.9 on Linux >= 5.3)")
        zygote.start()
    except SetupError as e:
        zygote.send(e.event)
        return 1
    try:
        return zygote.serve()
    except (BrokenPipeError, ConnectionResetError):
        return 0  # fitrun went away (it closed the control socket with events unread)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
