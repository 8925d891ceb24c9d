"""fitrun_runtime.py — the Python side of fitrun's warm runtime.

One interpreter per run (the "zygote") is started by fitrun, runs the
prelude once, builds the sandbox policy once (from the spec fitrun packed,
plus this interpreter's own tree as what predictions may read), and then
forks workers on request. A worker only forks: for each prediction fitrun
hands it four pipe ends (the job to read, the report to write, stdout,
stderr), the worker forks a child with them, and the child reads its own
job, applies the sandbox, runs the code and writes its own report. The
worker never sees a job, an output or a line of output: it supervises the
child (the sandbox's seccomp listener) and sends fitrun what the child
cannot forge (wait status, rusage, the denied call). fitrun's C side
(launcher/runtime/python/) reads the pipes, scores and classifies. The
wire protocol is documented in docs/python-runtime.md; keep the two in
step.

    python3 fitrun_runtime.py --control-fd 3 --prelude arc_prelude.py \
        --entry transform --sandbox-lib .../libfitrun_sandbox.so --policy-fd 4 \
        --cpu-backstop-ms 2400 --report-cap 1064960 --max-nesting 100

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
import errno  # noqa: E402
import fcntl  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

PROTOCOL = 2

# File descriptors inside a prediction's child. Everything else is closed
# before any of its code runs (the Landlock ruleset until apply closes it):
# it cannot reach its worker's channel.
CHILD_STDIN, CHILD_STDOUT, CHILD_STDERR = 0, 1, 2
CHILD_REPORT_FD = 3         # the report, read by fitrun
CHILD_NOTIFY_FD = 4         # the socket the filter's listener goes to the worker on; closed by apply
CHILD_JOB_FD = 5            # the job, written by fitrun; closed once read
CHILD_FIRST_FREE_FD = 6

# Worker channel messages (SOCK_SEQPACKET; native byte order, no padding).
MSG_RUN = struct.Struct("=cxxxI")                # b"R", seq; + 4 fds (RUN_FDS)
MSG_STARTED = struct.Struct("=cxxxIi")           # b"S", seq, pid; + the child's pidfd
MSG_EXITED = struct.Struct("=cxxxIiiqqqqq")      # b"E", seq, wstatus, violation_nr,
                                                 # utime_us, stime_us, max_rss_kb, wall_us, fork_us
MSG_FAILED = struct.Struct("=cxxxI")             # b"F", seq; then the reason (UTF-8)
RUN_FDS = 4                 # job read end, report, stdout and stderr write ends
SPAWN_FDS_MAX = 4           # a spawn request: the channel, then its slot's cgroup.procs files (<= 3)

MESSAGE_CAP = 1000          # characters kept of an exception's text
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1  # fitrun's integers
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
READ_CHUNK = 1 << 16
SELFTEST_ALLOC = 16 << 20   # what the sandbox self-test allocates
SETITIMER_MAX_S = 1e9       # ~31 years: beyond it setitimer overflows; no budget is that long

# Exit statuses of a prediction's child when it cannot even run the code.
EXIT_CHILD_SETUP = 70       # fd setup / prctl failed / joining its cgroups failed
EXIT_ORPHANED = 71          # the worker died between fork and prctl

# Deepest nesting of an input or output value (a scalar is 0, [1] is 1):
# fitrun's --max-nesting, the limit it checks inputs against.
max_nesting = 100

_SURROGATE = re.compile("[\ud800-\udfff]")


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
    p.add_argument("--policy-fd", type=int, default=-1,
                   help="inherited descriptor holding the sandbox spec fitrun packed (fr_policy_spec_pack)")
    p.add_argument("--cpu-backstop-ms", type=int, default=0,
                   help="ITIMER_PROF of each child (0 = none); fitrun enforces the budget itself")
    p.add_argument("--report-cap", type=int, default=(1 << 20) + (16 << 10),
                   help="a child writes at most this many bytes of report (+1 to show it was more)")
    p.add_argument("--max-nesting", type=int, default=100, help="deepest output value accepted")
    return p.parse_args(argv)


# --------------------------------------------------------------------------
# Sandbox: libfitrun_sandbox.so through ctypes

class SetupError(Exception):
    """A start-up failure reported to fitrun as one 'fatal' event."""

    def __init__(self, stage, error_type, message, file=None, line=None):
        super().__init__(message)
        self.event = {"event": "fatal", "stage": stage, "error_type": error_type,
                      "message": message, "file": file, "line": line}


def interpreter_paths():
    """What this interpreter reads after start-up: its prefixes, stdlib and
    site-packages. The prelude's directory and the working directory are
    not among them: the prelude has run, and a project directory often
    holds keys and .env files."""
    import site
    import sysconfig
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths().get(key, ""))
    try:
        paths.update(site.getsitepackages())
    except AttributeError:  # a virtualenv's old site.py
        pass
    return sorted(p for p in paths if p and os.path.isabs(p) and os.path.exists(p))


class Sandbox:
    """libfitrun_sandbox.so through ctypes. The policy is built (its
    seccomp filter compiled, its Landlock ruleset prepared) once, here in
    the zygote, from the spec fitrun packed, with this interpreter's own
    tree added to what a prediction may read. A prediction's child only
    calls apply(); its worker supervises it (receive, notification)."""

    def __init__(self, lib_path, policy_fd):
        self.enabled = lib_path != "none"
        self.policy = None
        if not self.enabled:
            return
        packed = _read_all(policy_fd)
        try:
            lib = ctypes.CDLL(lib_path, use_errno=True)
        except OSError as e:
            raise SetupError("sandbox", "OSError", f"cannot load {lib_path}: {e}") from None
        vp, i, c_int_p = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int)
        for name, args in (("fr_policy_build_packed", [ctypes.c_char_p, ctypes.c_size_t,
                                                        ctypes.POINTER(ctypes.c_char_p),
                                                        ctypes.POINTER(vp), ctypes.c_char_p, ctypes.c_size_t]),
                           ("fr_policy_apply_notify", [vp, i, i]), ("fr_policy_fd", [vp]),
                           ("fr_policy_prepare_worker", [vp]), ("fr_notify_receive", [i]),
                           ("fr_notify_read", [i, c_int_p, c_int_p])):
            getattr(lib, name).argtypes = args
            getattr(lib, name).restype = i
        lib.fr_syscall_name.argtypes = [i, ctypes.c_char_p, ctypes.c_size_t]
        lib.fr_syscall_name.restype = ctypes.c_char_p
        reads = interpreter_paths()
        arr = (ctypes.c_char_p * (len(reads) + 1))(*[r.encode() for r in reads], None)
        policy = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        # The ruleset descriptor must stay clear of the child's fds 0..5,
        # which it lays out before applying: hold them while it is made.
        held = _hold_low_fds(CHILD_FIRST_FREE_FD)
        try:
            rc = lib.fr_policy_build_packed(packed, len(packed), arr, ctypes.byref(policy), err, len(err))
        finally:
            for fd in held:
                os.close(fd)
        if rc != 0:
            msg = err.value.decode(errors="replace") or "unknown error"
            raise SetupError("sandbox", "PolicyError", f"sandbox policy: {msg}")
        self.lib, self.policy, self.read_paths = lib, policy, reads

    def fd(self):
        """The descriptor a child keeps until apply (the Landlock ruleset), or -1."""
        return self.lib.fr_policy_fd(self.policy) if self.enabled else -1

    def prepare_worker(self):
        """In a worker, once: drop its capability bounding set, so that each
        child skips that step. Returns 0 or -errno."""
        return self.lib.fr_policy_prepare_worker(self.policy) if self.enabled else 0

    def apply(self, sock, slot):
        """In the child, last before the prediction: everything the policy
        says, then the seccomp filter, whose listener goes to the worker
        over sock (closed by this). Returns 0 or -errno of the first
        failing step."""
        if not self.enabled:
            os.close(sock)
            return 0
        return self.lib.fr_policy_apply_notify(self.policy, sock, slot)

    def receive(self, sock):
        """In the worker: the listener its child sent (>= 0), -ENODATA (no
        filter: nothing to supervise), -EPIPE (the child died or its apply
        failed), or another -errno."""
        if not self.enabled:
            return -errno.ENODATA
        return self.lib.fr_notify_receive(sock)

    def notification(self, listener):
        """In the worker, once the listener is readable: the denied call's
        number and the calling thread, or None (it died meanwhile)."""
        nr, who = ctypes.c_int(-1), ctypes.c_int(0)
        if self.lib.fr_notify_read(listener, ctypes.byref(nr), ctypes.byref(who)) != 0:
            return None
        return nr.value, who.value

    def syscall_name(self, nr):
        buf = ctypes.create_string_buffer(40)
        return self.lib.fr_syscall_name(nr, buf, len(buf)).decode()


def _read_all(fd):
    """The packed policy fitrun wrote into a sealed memfd, then close it."""
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0)
        os.close(fd)
    except OSError as e:
        raise SetupError("sandbox", "OSError", f"policy descriptor {fd}: {e.strerror}") from None
    if len(data) != size:
        raise SetupError("sandbox", "OSError", f"policy descriptor {fd}: short read")
    return data


def _hold_low_fds(below):
    """Open /dev/null on every free descriptor below `below`; returns them."""
    held = []
    while True:
        fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        if fd >= below:
            os.close(fd)
            return held
        held.append(fd)


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


def prelude_builtins(prelude_globals):
    """The builtins a prediction sees: Python's, then the prelude's names
    (which win, as its globals did over builtins), without the prelude
    module's own dunder attributes (__name__, __file__, __builtins__...).
    A name lookup in a prediction's code falls back to this mapping when
    its own globals do not have the name, so the prelude's names resolve as
    if they were globals without being copied into each prediction."""
    names = dict(builtins.__dict__)
    for k, v in prelude_globals.items():
        if not (k.startswith("__") and k.endswith("__")):
            names[k] = v
    return names


# --------------------------------------------------------------------------
# Output normalisation (runs in the child)

class UnserializableOutput(Exception):
    pass


def _text(s):
    """s as text UTF-8 can hold: each lone surrogate (a str can hold one,
    UTF-8 cannot) becomes U+FFFD, as invalid bytes of captured output do."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", s)


def normalise(value, depth=0):
    """Turn an output into plain JSON values: numpy arrays via tolist(),
    numpy scalars via item(), tuples to lists (recursively), strings as
    _text(). Anything else that JSON (and fitrun) cannot hold raises
    UnserializableOutput: sets, objects, NaN/inf, ints beyond 64 bits,
    keys holding NUL, values nested deeper than max_nesting. depth: containers around value."""
    t = type(value)
    if value is None or t is bool:
        return value
    if t is str:
        return _text(value)
    if t is int:
        if INT64_MIN <= value <= INT64_MAX:
            return value
        raise UnserializableOutput("integer output does not fit in 64 bits")
    if t is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise UnserializableOutput(f"float output {value!r} is not valid JSON")
        return value
    if t is list or t is tuple or t is dict:
        if depth >= max_nesting:
            raise UnserializableOutput(f"output nested deeper than {max_nesting} levels")
        if t is not dict:
            return [normalise(v, depth + 1) for v in value]
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise UnserializableOutput(f"dict output has a {type(k).__name__} key")
            if "\0" in k:
                raise UnserializableOutput("dict output has a key holding NUL, which JSON readers refuse")
            out[_text(k)] = normalise(v, depth + 1)
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
    if type(text) is not str:
        text = "<unprintable exception>"
    return _text(text if len(text) <= MESSAGE_CAP else text[:MESSAGE_CAP] + "...")


def _exc_type(e):
    name = type(e).__name__
    return _text(name) if type(name) is str else "<unnamed>"


# --------------------------------------------------------------------------
# The prediction's child

class Runner:
    """Everything a worker (and its children) needs, built in the zygote."""

    def __init__(self, cfg, sandbox, prelude_globals):
        self.cfg = cfg
        self.sandbox = sandbox
        self.globals = prelude_globals
        self.builtins = prelude_builtins(prelude_globals)
        self.fin = prelude_globals.get("fitrun_input")
        self.fout = prelude_globals.get("fitrun_output")
        libc = ctypes.CDLL(None, use_errno=True)
        self.prctl = libc.prctl
        self.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong,
                               ctypes.c_ulong, ctypes.c_ulong]
        self.prctl.restype = ctypes.c_int

    def die_with_parent(self, parent_pid):
        """PR_SET_PDEATHSIG, race-free: if the parent died before the prctl,
        getppid() already names someone else."""
        self.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:
            os._exit(EXIT_ORPHANED)

    def fresh_globals(self):
        """A prediction's module globals: a new dict of two entries, its
        `__builtins__` the mapping of builtins and prelude names built once
        in the zygote. Copying the prelude's globals instead would write the
        reference count of every object they name, in every child: a page
        copied per object, for objects the prediction mostly never uses."""
        # Not "__main__": LLM code often ends with an `if __name__ == "__main__":`
        # self-test that must not run here.
        return {"__builtins__": self.builtins, "__name__": "__prediction__"}

    def run_code(self, code, entry, inputs, hooks=True):
        """Execute `code` in fresh globals (fresh_globals) and call
        `entry` on every input (all of them, even after one fails, so that a
        partly working prediction still gets per-input outputs; but not after
        a MemoryError). Returns the report dict the child sends to fitrun."""
        fin, fout = (self.fin, self.fout) if hooks else (None, None)
        rep = {"outputs": [], "error_type": None, "error_message": None,
               "error_line": None, "memory": False}

        def failed(e):
            if isinstance(e, MemoryError):
                rep["memory"] = True
            if rep["error_type"] is None:  # the first error is the one reported
                rep["error_type"] = ("UnserializableOutput" if isinstance(e, UnserializableOutput)
                                     else _exc_type(e))
                rep["error_message"] = _exc_text(e)
                if isinstance(e, SyntaxError) and e.filename == "<prediction>":
                    rep["error_line"] = e.lineno
                else:
                    rep["error_line"] = _innermost_line(e.__traceback__, "<prediction>")

        g = self.fresh_globals()
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

    def child(self, fds, sock, null, worker_pid, worker, cgroup_fds=()):
        """Never returns: runs in the forked child of a worker. fds: the job
        read end and the report, stdout and stderr write ends from fitrun;
        sock: this child's end of the socket its worker supervises it on.
        The child reads its own job, applies the sandbox (as slot `worker`:
        its uid under root), runs the code and writes its own report.
        cgroup_fds: its slot's cgroup.procs files (fitrun's own cgroups):
        the child joins them first, so that everything it allocates is
        charged to, and limited by, its slot's cgroup."""
        try:
            for fd in cgroup_fds:
                os.write(fd, b"0")  # "0" is the writer itself
                os.close(fd)
        except OSError as e:
            try:
                os.write(2, f"fitrun python worker {worker}: cannot join its cgroup: {e.strerror}\n".encode())
            finally:
                os._exit(EXIT_CHILD_SETUP)
        try:
            os.setpgid(0, 0)  # so that the worker can kill anything it leaves behind
            self.die_with_parent(worker_pid)
            job_r, report_w, out_w, err_w = fds
            _layout_fds(((null, CHILD_STDIN), (out_w, CHILD_STDOUT), (err_w, CHILD_STDERR),
                         (report_w, CHILD_REPORT_FD), (sock, CHILD_NOTIFY_FD), (job_r, CHILD_JOB_FD)),
                        self.sandbox.fd())
            # fitrun made the pipes non-blocking for its own ends; the file
            # descriptions of ours are separate, and this code blocks.
            for fd in (CHILD_STDOUT, CHILD_STDERR, CHILD_REPORT_FD, CHILD_JOB_FD):
                os.set_blocking(fd, True)
        except BaseException:
            os._exit(EXIT_CHILD_SETUP)
        try:
            job = self.read_job()
            os.environ["FITRUN_JOB_ID"] = job["id"]
            os.environ["FITRUN_WORKER"] = str(worker)
            # Backstop only: fitrun reads this process's CPU clock and kills
            # it at the budget. Should fitrun be late, SIGPROF's default
            # action ends it here; RLIMIT_CPU (set by the sandbox) is the last
            # resort when the code disarms the timer.
            if self.cfg.cpu_backstop_ms > 0:
                signal.setitimer(signal.ITIMER_PROF, min(self.cfg.cpu_backstop_ms / 1000.0, SETITIMER_MAX_S))
            rc = self.sandbox.apply(CHILD_NOTIFY_FD, worker)
            if rc != 0:
                rep = {"sandbox_error": -rc}
            else:
                rep = self.run_code(job["code"], job.get("entry") or self.cfg.entry, job["inputs"])
        except MemoryError:
            rep = {"outputs": [], "error_type": "MemoryError", "error_message": "",
                   "error_line": None, "memory": True}
        except BaseException as e:  # our own bug: say so rather than die silently
            rep = {"outputs": [], "error_type": "RuntimeInternalError",
                   "error_message": f"{_exc_type(e)}: {_exc_text(e)}",
                   "error_line": None, "memory": False}
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except BaseException:
                pass
        try:
            # More than the cap is output_limit, whatever the rest says:
            # one byte beyond it tells fitrun so.
            data = _encode_report(rep)[:self.cfg.report_cap + 1]
            view = memoryview(data)
            while view:
                view = view[os.write(CHILD_REPORT_FD, view):]
        except BaseException:
            pass
        os._exit(0)

    @staticmethod
    def read_job():
        """The job fitrun wrote on the job pipe: {"id", "code", "inputs"[, "entry"]}."""
        chunks = []
        while True:
            chunk = os.read(CHILD_JOB_FD, READ_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(CHILD_JOB_FD)
        return json.loads(b"".join(chunks))


def _layout_fds(pairs, keep):
    """dup2 each (source, target) pair, then close every other descriptor
    but `keep` (-1 = none). Every source first moves above the targets, so
    that no dup2 overwrites one; `keep` must already be above them."""
    top = max(dst for _, dst in pairs) + 1
    if 0 <= keep < top:
        raise RuntimeError(f"descriptor {keep} to keep is among the targets")
    moved = [(fcntl.fcntl(src, fcntl.F_DUPFD, top), dst) for src, dst in pairs]
    for src, dst in moved:
        os.dup2(src, dst)
    if keep >= 0:
        os.closerange(top, keep)
        os.closerange(keep + 1, 1 << 20)
    else:
        os.closerange(top, 1 << 20)


def _encode_report(rep):
    try:
        return json.dumps(rep, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    except (ValueError, TypeError, RecursionError, UnicodeEncodeError) as e:  # not after normalise()
        rep = dict(rep, outputs=[], error_type="UnserializableOutput", error_message=_exc_text(e))
        return json.dumps(rep, separators=(",", ":")).encode()
    except MemoryError:
        return b'{"outputs":[],"error_type":"MemoryError","error_message":"","memory":true}'


# --------------------------------------------------------------------------
# Worker

class Worker:
    """Forks one child per RUN message and reports how it ended. It holds a
    job's pipe ends only from the message to the fork, and never reads
    from or writes to them."""

    def __init__(self, runner, worker, chan, cgroup_fds=()):
        self.runner = runner
        self.worker = worker
        self.chan = chan
        self.cgroup_fds = tuple(cgroup_fds)  # each child's slot cgroups (cgroup.procs)
        self.pid = os.getpid()
        self.null = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    def serve(self):
        while True:
            msg, fds, _, _ = socket.recv_fds(self.chan, 64, RUN_FDS, socket.MSG_CMSG_CLOEXEC)
            if not msg:
                return 0  # fitrun closed the channel: the run is over
            try:
                if len(msg) == MSG_RUN.size and msg[:1] == b"R" and len(fds) == RUN_FDS:
                    self.run(MSG_RUN.unpack(msg)[1], fds)
                else:
                    self.failed(0, f"unreadable message {msg[:32]!r} with {len(fds)} fds")
            finally:
                for fd in fds:
                    try:
                        os.close(fd)
                    except OSError:
                        pass

    def failed(self, seq, why):
        self.chan.send(MSG_FAILED.pack(b"F", seq) + why.encode(errors="replace")[:1000])

    def run(self, seq, fds):
        # This prediction's own socket: its child sends the filter's listener
        # on it, once, then closes its end; the worker's channel to fitrun is
        # never in the child.
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            t0 = time.monotonic_ns()
            try:
                pid = os.fork()
            except OSError as e:
                self.failed(seq, f"fork: {e.strerror}")
                return
            if pid == 0:
                self.runner.child(fds, theirs.fileno(), self.null, self.pid, self.worker,
                                  self.cgroup_fds)  # never returns
            t_fork = time.monotonic_ns()
            theirs.close()
            for fd in fds:  # the child has them; from now on only it and fitrun do
                os.close(fd)
            fds.clear()
            self.reap(seq, pid, ours, t0, t_fork)
        finally:
            ours.close()
            theirs.close()

    def reap(self, seq, pid, sock, t0, t_fork):
        pidfd = os.pidfd_open(pid)
        try:
            # fitrun kills the child through this pidfd (CPU budget, wall
            # time, output caps): race-free, whatever becomes of the pid.
            socket.send_fds(self.chan, [MSG_STARTED.pack(b"S", seq, pid)], [pidfd])
            violation = supervise(self.runner.sandbox, pid, pidfd, sock.fileno())
            _, status, ru = os.wait4(pid, 0)
        finally:
            os.close(pidfd)
        t_end = time.monotonic_ns()
        self.chan.send(MSG_EXITED.pack(b"E", seq, status, violation,
                                       int(ru.ru_utime * 1e6), int(ru.ru_stime * 1e6), ru.ru_maxrss,
                                       (t_end - t0) // 1000, (t_fork - t0) // 1000))


def supervise(sandbox, pid, pidfd, sock):
    """The supervisor's side of the sandbox, for a child that applies the
    policy with apply(sock, slot): take the filter's listener the child
    sends, then wait for the child to end, SIGKILLing it at a denied call
    (which never returns: the supervisor does not answer). When this
    returns the child and its process group are dead, not reaped. Returns
    the first denied call's number, or -1.

    The number is the kernel's, read from the listener, which the child
    never holds once untrusted code runs: a prediction can neither forge a
    violation (a record written anywhere, a SIGSYS it raises) nor hide one
    (handlers, masks)."""
    listener = sandbox.receive(sock)  # blocks until the child applied, or died (-EPIPE)
    violation = -1
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if listener >= 0:
            poller.register(listener, select.POLLIN)
        while True:
            events = dict(poller.poll())
            ev = events.get(listener, 0) if listener >= 0 else 0
            if ev & select.POLLIN:
                got = sandbox.notification(listener)
                if got is not None:
                    nr, who = got
                    if violation < 0:
                        violation = nr
                    if who > 0:  # parked in the call: its pid is still its own
                        _kill(who)
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            elif ev:  # POLLHUP: no task is left under the filter
                poller.unregister(listener)
            if pidfd in events:
                break
        # Anything else in the child's process group goes too. Safe before
        # wait4: the zombie keeps the pid (and group id) from being reused.
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    finally:
        if listener >= 0:
            os.close(listener)
    return violation


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------
# Zygote

class Zygote:
    def __init__(self, cfg, ctrl, boot_ms=None):
        self.cfg = cfg
        self.ctrl = ctrl
        self.boot_ms = boot_ms
        self.workers = {}  # pidfd -> (token, pid)
        self.runner = None

    def send(self, obj):
        self.ctrl.send(json.dumps(obj, separators=(",", ":")).encode())

    def start(self):
        t0 = time.monotonic()
        sandbox = Sandbox(self.cfg.sandbox_lib, self.cfg.policy_fd)
        t1 = time.monotonic()
        prelude = load_prelude(self.cfg.prelude)
        t2 = time.monotonic()
        self.runner = Runner(self.cfg, sandbox, prelude)
        # Workers and children inherit this: no other process without
        # CAP_SYS_PTRACE can open their /proc/<pid>/{mem,fd,environ}.
        self.runner.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
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
        """Run a trivial prediction once, before any job, exactly as a
        worker runs one (its own socket, fds laid out, the policy applied
        as slot 0 with the zygote as the supervisor), so that a policy the
        interpreter cannot live with (a memory limit below its own
        footprint, a denied call it needs, an installation the slots' uid
        cannot read) stops the run with one message instead of failing
        every prediction."""
        vm_mib = _vm_size_mib()
        r, w = os.pipe2(os.O_CLOEXEC)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        zygote_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            self._selftest_child(zygote_pid, w, theirs.fileno(), vm_mib)  # never returns
        os.close(w)
        theirs.close()
        try:
            pidfd = os.pidfd_open(pid)
            try:
                violation = supervise(self.runner.sandbox, pid, pidfd, ours.fileno())
            finally:
                os.close(pidfd)
            with os.fdopen(r, "rb") as f:
                why = f.read(2000).decode(errors="replace")
            _, status = os.waitpid(pid, 0)
        finally:
            ours.close()
        if violation >= 0:
            why = f"the sandbox denied {self.runner.sandbox.syscall_name(violation)}, which it needs"
        if status != 0 or violation >= 0:
            if not why:
                why = (f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                       else f"exit status {os.WEXITSTATUS(status)}")
            raise SetupError("sandbox", "SelfTestFailed",
                             f"a sandboxed child of the interpreter cannot run Python code "
                             f"({why}); check the memory limit and the allow/deny lists")

    def _selftest_child(self, zygote_pid, w, sock, vm_mib):
        """Never returns. Reports a failure as text on fd 3."""
        try:
            os.setpgid(0, 0)
            self.runner.die_with_parent(zygote_pid)
            _layout_fds(((w, CHILD_REPORT_FD), (sock, CHILD_NOTIFY_FD)), self.runner.sandbox.fd())
            w = CHILD_REPORT_FD
            rc = self.runner.sandbox.apply(CHILD_NOTIFY_FD, 0)
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
            for path in self.runner.sandbox.read_paths if self.runner.sandbox.enabled else ():
                try:
                    os.listdir(path)  # lazy imports read the interpreter's own tree
                except OSError as e:
                    os.write(w, f"the interpreter's own files are unreadable to it ({path}: {e.strerror}); "
                                f"under root each worker's predictions run as uid_base + worker, who must "
                                f"be able to read the interpreter's installation (not in a 0700 home): "
                                f"install it where every user can read it, or set [sandbox] "
                                f"user = root".encode())
                    os._exit(1)
            rep = self.runner.run_code("def f(x):\n    return [x] * 2\n", "f", [[1, 2]], hooks=False)
            if rep["outputs"] != [[[1, 2], [1, 2]]]:
                os.write(w, f"a trivial prediction failed: {rep['error_type']}: "
                            f"{rep['error_message']}".encode())
                os._exit(1)
            _encode_report(rep)
            os._exit(0)
        except BaseException as e:
            try:
                os.write(w, f"{type(e).__name__}: {_exc_text(e)}".encode())
            finally:
                os._exit(1)

    def spawn(self, token, worker, chan_fd, cgroup_fds=()):
        zygote_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                self.runner.die_with_parent(zygote_pid)
                self.runner.sandbox.prepare_worker()
                self.ctrl.close()
                for pidfd in self.workers:
                    os.close(pidfd)
                chan = socket.socket(fileno=chan_fd)
                code = Worker(self.runner, worker, chan, cgroup_fds).serve()
            except BrokenPipeError:
                code = 0  # fitrun went away mid-reply
            except BaseException as e:
                try:
                    sys.stderr.write(f"fitrun python worker {worker}: {type(e).__name__}: {_exc_text(e)}\n")
                    sys.stderr.flush()
                except BaseException:
                    pass
            finally:
                os._exit(code)
        os.close(chan_fd)
        for fd in cgroup_fds:
            os.close(fd)
        self.workers[os.pidfd_open(pid)] = (token, pid)
        self.send({"event": "spawned", "slot": token, "pid": pid})

    def reap(self, pidfd):
        token, pid = self.workers.pop(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        self.send({"event": "worker_exit", "slot": token, "pid": pid, "wstatus": status,
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
                msg, fds, _, _ = socket.recv_fds(self.ctrl, 4096, SPAWN_FDS_MAX)
                if not msg:
                    return 0  # fitrun is gone
                try:
                    cmd = json.loads(msg)
                except ValueError:
                    cmd = {}
                op = cmd.get("op") if isinstance(cmd, dict) else None
                if (op == "spawn" and isinstance(cmd.get("slot"), int) and isinstance(cmd.get("worker"), int)
                        and isinstance(cmd.get("cgroups", 0), int) and len(fds) == 1 + cmd.get("cgroups", 0)):
                    self.spawn(cmd["slot"], cmd["worker"], fds[0], fds[1:])
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
    global max_nesting
    boot_ms = _boot_ms()  # before anything of ours: the interpreter's own start
    cfg = parse_args(argv)
    max_nesting = cfg.max_nesting
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
