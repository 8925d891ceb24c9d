"""fitrun_runtime.py — the Python side of fitrun's warm runtime.

One interpreter per run (the "zygote") is started by fitrun, runs the
prelude once, builds the sandbox policy once (from the spec fitrun packed,
plus this interpreter's own tree as what predictions may read), and then
forks workers on request. A worker only forks: each prediction's child
gets four pipe ends (the job to read, the report to write, stdout,
stderr): the worker's own, which fitrun sends once when no process of a
prediction can outlive it, or four fitrun sends with the prediction's RUN.
The child reads its own job, applies the sandbox, runs the code and
writes its own report. The
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

import _imp  # noqa: E402
import _locale  # noqa: E402  (after the environment above, on purpose)
import _thread  # noqa: E402
import argparse  # noqa: E402
import atexit  # noqa: E402
import builtins  # noqa: E402
import contextvars  # noqa: E402
import ctypes  # noqa: E402
import errno  # noqa: E402
import faulthandler  # noqa: E402
import fcntl  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import linecache  # noqa: E402
import marshal  # noqa: E402
import re  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
import warnings  # noqa: E402

PROTOCOL = 6

# File descriptors inside a prediction's child. Everything else is closed
# before any of its code runs (the Landlock ruleset until apply closes it):
# it cannot reach its worker's channel.
CHILD_STDIN, CHILD_STDOUT, CHILD_STDERR = 0, 1, 2
CHILD_REPORT_FD = 3         # the report, read by fitrun
CHILD_NOTIFY_FD = 4         # the socket the filter's listener goes to the worker on; closed by apply
CHILD_JOB_FD = 5            # the job, written by fitrun; closed once read
REUSE_CHAN_FD = 6           # reuse: the process's own socket to its worker (jobs in, "done" out)
CHILD_FIRST_FREE_FD = 7

# Worker channel messages (SOCK_SEQPACKET; native byte order, no padding).
MSG_PIPES = struct.Struct("=cxxx")               # b"P"; + the worker's own 4 pipe ends (RUN_FDS), once
MSG_RUN = struct.Struct("=cBxxI")                # b"R", flags (RUN_*), seq; + 4 fds (RUN_FDS), or none:
                                                 # the worker's own
MSG_STARTED = struct.Struct("=cxxxIiq")          # b"S", seq, pid, cpu_base_ns; + the child's pidfd;
                                                 # on the worker's status socket, not its channel
MSG_EXITED = struct.Struct("=cBxxIiiqqqqq")      # b"E", flags (EXITED_*), seq, wstatus, violation_nr,
                                                 # utime_us, stime_us, max_rss_kb, wall_us, fork_us;
                                                 # then why the process was replaced (UTF-8, reuse only)
MSG_FAILED = struct.Struct("=cxxxI")             # b"F", seq; then the reason (UTF-8)
RUN_FDS = 4                 # job read end, report, stdout and stderr write ends
RUN_FRESH = 1               # reuse: end the process that ran the previous job first (fitrun killed it)
EXITED_APPLIED = 1          # the process applied the sandbox: its worker received the filter's listener
                            # (or its word that there is no filter), which it sends only once applied
JOB_FRAME = struct.Struct("=I")  # the job's length, before it on the job pipe
SPAWN_FDS_MAX = 5           # a spawn request: the channel, the status socket, then its slot's
                            # cgroup.procs files (<= 3)

PREDICTION_FILE = "<prediction>"  # the file name of a prediction's code (tracebacks, warnings, sys.argv[0])
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
    p.add_argument("--isolation", choices=("fork", "reuse"), default="fork",
                   help="fork: a fresh child per prediction; reuse: one sandboxed process runs "
                        "consecutive predictions (docs/python-runtime.md)")
    p.add_argument("--max-predictions", type=int, default=1000,
                   help="reuse: predictions one process runs before it is replaced")
    p.add_argument("--max-memory-kb", type=int, default=512 << 10,
                   help="reuse: resident size (KiB) beyond which a process is replaced")
    p.add_argument("--reuse-cpu-ms", type=int, default=0,
                   help="reuse: CPU time one process may accumulate before it is replaced "
                        "(RLIMIT_CPU is this plus the backstop; 0 = no limit)")
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
        # fork isolation's worker loop runs with the interpreter's lock held
        # (PyDLL): around each fork it runs the interpreter's fork work,
        # which needs this thread's state.
        serve = ctypes.PyDLL(lib_path, use_errno=True).fr_worker_serve
        serve.argtypes = [ctypes.POINTER(_WorkerConfig), ctypes.POINTER(_WorkerChild)]
        serve.restype = i
        lib.fr_worker_child_free.argtypes = [ctypes.POINTER(_WorkerChild)]
        lib.fr_worker_child_free.restype = None
        self.serve_fn = serve

    def serve(self, chan, status, null, cgroup_fds, slot, backstop_ms):
        """In a fork-isolation worker (ForkWorker): fr_worker_serve. None
        once fitrun closed the channel; in each child, what the child holds
        (_WorkerChild). The zygote refuses fork isolation without the
        library."""
        fds = (ctypes.c_int * max(1, len(cgroup_fds)))(*cgroup_fds)
        api = ctypes.pythonapi
        fn = lambda f: ctypes.cast(f, ctypes.c_void_p)  # noqa: E731
        # What os.fork() runs around fork(): the handlers, the import lock.
        cfg = _WorkerConfig(chan=chan, status=status, null_fd=null, cgroup_fds=fds, ncgroups=len(cgroup_fds),
                            policy=self.policy, slot=slot, backstop_ms=max(0, backstop_ms),
                            before_fork=fn(api.PyOS_BeforeFork), after_fork_parent=fn(api.PyOS_AfterFork_Parent),
                            after_fork=fn(api.PyOS_AfterFork_Child))
        child = _WorkerChild()
        rc = self.serve_fn(ctypes.byref(cfg), ctypes.byref(child))
        if rc == 1:
            return child
        if rc < 0:
            e = ctypes.get_errno()
            raise OSError(e, f"the worker's channel: {os.strerror(e)}")
        return None

    def free_child(self, child):
        self.lib.fr_worker_child_free(ctypes.byref(child))

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

    def peek(self):
        """fr_peek_words (the reuse check's reader of many words), or None."""
        return _peek_words(self.lib) if self.enabled else None

    def syscall_name(self, nr):
        buf = ctypes.create_string_buffer(40)
        return self.lib.fr_syscall_name(nr, buf, len(buf)).decode()


class _WorkerConfig(ctypes.Structure):
    """struct fr_worker_config (fitrun/sandbox.h)."""
    _fields_ = [("chan", ctypes.c_int), ("status", ctypes.c_int), ("null_fd", ctypes.c_int),
                ("cgroup_fds", ctypes.POINTER(ctypes.c_int)), ("ncgroups", ctypes.c_int),
                ("policy", ctypes.c_void_p), ("slot", ctypes.c_int), ("backstop_ms", ctypes.c_uint64),
                ("before_fork", ctypes.c_void_p), ("after_fork_parent", ctypes.c_void_p),
                ("after_fork", ctypes.c_void_p)]


class _WorkerChild(ctypes.Structure):
    """struct fr_worker_child (fitrun/sandbox.h)."""
    _fields_ = [("job", ctypes.c_void_p), ("job_len", ctypes.c_size_t), ("error", ctypes.c_char * 160)]


def _peek_words(lib):
    """fr_peek_words(addrs, out, n) of the sandbox library `lib` (a CDLL),
    with the library's fr_peek_arrays as its attribute `arrays`."""
    f = lib.fr_peek_words
    f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    f.restype = None
    f.arrays = lib.fr_peek_arrays
    f.arrays.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_uint64,
                         ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
    f.arrays.restype = ctypes.c_size_t
    f.differs = getattr(lib, "fr_peek_differs", None)  # (an older library has none)
    if f.differs is not None:
        f.differs.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
        f.differs.restype = ctypes.c_size_t
    return f


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


def _stdio_for_pipes():
    """Make sys.stdout and sys.stderr (and __stdout__, __stderr__) anew, as
    the interpreter makes them when fd 1 and 2 are pipes: what they are in
    every prediction, as in `python3 script.py | cat`. The interpreter made
    them for this process's own fd 1 and 2, fitrun's stderr (a terminal, a
    file, /dev/null), and a stream keeps what it found there: over a file or
    /dev/null it is seekable, and reconfigure(encoding=...) then asks the
    pipe for its position (OSError: [Errno 29] Illegal seek, where the script
    works), tell() and seekable() answer as for a file; over a terminal,
    stdout is line-buffered. Each is built over a pipe of our own, put on
    fd 1 and 2 for the purpose, with what the interpreter chose for it
    (encoding and errors: the locale, PYTHONIOENCODING; buffering:
    PYTHONUNBUFFERED), and the same name, mode and descriptor. A closed fd
    1 or 2 (never under fitrun, which opens both) leaves its stream alone."""
    saved, made = {}, []
    try:
        for fd in (CHILD_STDOUT, CHILD_STDERR):
            try:
                saved[fd] = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, CHILD_FIRST_FREE_FD)
            except OSError as e:
                if e.errno != errno.EBADF:
                    raise
        r, w = os.pipe2(os.O_CLOEXEC)
    except OSError as e:
        for copy in saved.values():
            os.close(copy)
        raise SetupError("start", "OSError", f"making the predictions' stdout and stderr: {e.strerror}") from None
    try:
        for fd in saved:
            os.dup2(w, fd)
        for fd, name in ((CHILD_STDOUT, "stdout"), (CHILD_STDERR, "stderr")):
            old = getattr(sys, name)
            if fd not in saved or type(old) is not io.TextIOWrapper or old.closed or old.fileno() != fd:
                continue  # not the interpreter's own: leave it alone
            unbuffered = old.write_through  # -u, PYTHONUNBUFFERED: a raw FileIO under it
            buf = io.open(fd, "wb", 0 if unbuffered else -1, closefd=False)
            (buf if unbuffered else buf.raw).name = f"<{name}>"
            stream = io.TextIOWrapper(buf, old.encoding, old.errors, "\n",
                                      line_buffering=fd == CHILD_STDERR and not unbuffered,
                                      write_through=unbuffered)
            stream.mode = "w"
            made.append((name, old, stream))
    finally:
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        os.close(r)
        os.close(w)
    for name, old, stream in made:
        old.flush()
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _warn_as_main():
    """Give the predictions' module (__prediction__, Runner.fresh_globals)
    the warning filters that name __main__, next to them: Python's default
    shows a DeprecationWarning that a script's own code triggers
    (`default::DeprecationWarning:__main__`), and a prediction's code is
    the script. Without it, such a warning was not printed."""
    filters = warnings.filters
    for i in range(len(filters) - 1, -1, -1):
        action, message, category, module, lineno = filters[i]
        if type(module) is str and module == "__main__":  # Python's own, matched exactly
            filters.insert(i + 1, (action, message, category, "__prediction__", lineno))
        elif isinstance(module, re.Pattern) and module.pattern in ("__main__", r"__main__\Z"):
            filters.insert(i + 1, (action, message, category,
                                   re.compile(module.pattern.replace("__main__", "__prediction__")), lineno))
    warnings._filters_mutated()


# --------------------------------------------------------------------------
# Prelude

def _innermost_line(tb, filename, allow=None):
    """The innermost line of tb in filename. allow (reuse: the tripwire's
    exemption) is told each traceback and frame this reads before it does."""
    line = None
    try:
        while tb is not None:
            if allow is not None:
                allow(tb)
            frame = tb.tb_frame
            if allow is not None:
                allow(frame)
            if frame.f_code.co_filename == filename:
                line = tb.tb_lineno
            tb = tb.tb_next
    finally:
        # Whatever happened on the way: no frame of the prediction stays
        # exempt, nor held (with its globals) past this prediction.
        if allow is not None:
            allow(None)
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
        self.namespaces = None  # isolation = reuse: the zygote's _Namespaces
        self.recorded = None  # isolation = reuse: the zygote's _RecordedRegistrations
        # isolation = reuse: the zygote's context variables, as a fork child
        # inherits them; each prediction runs in a copy of it.
        self.context = contextvars.copy_context()
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
        """A prediction's module globals: the namespace of a new module,
        its `__builtins__` the mapping of builtins and prelude names built
        once in the zygote. Copying the prelude's globals instead would
        write the reference count of every object they name, in every
        child: a page copied per object, for objects the prediction mostly
        never uses. (Under reuse that mapping is shared by the process's
        predictions: _Baseline checks it as it checks the modules.)
        The module is sys.modules["__prediction__"] while the prediction
        runs, as a script is sys.modules["__main__"]: what looks a class's
        module up there (dataclasses under `from __future__ import
        annotations`, pickle, typing's get_type_hints) finds it. Under
        reuse the check drops it with the other modules the prediction
        added."""
        # Not "__main__": LLM code often ends with an `if __name__ == "__main__":`
        # self-test that must not run here.
        module = types.ModuleType("__prediction__")
        module.__builtins__ = self.builtins
        sys.modules["__prediction__"] = module
        return module.__dict__

    def run_code(self, code, entry, inputs, hooks=True, allow=None):
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
                if isinstance(e, SyntaxError) and e.filename == PREDICTION_FILE:
                    rep["error_line"] = e.lineno
                else:
                    rep["error_line"] = _innermost_line(e.__traceback__, PREDICTION_FILE, allow)

        g = self.fresh_globals()
        # Its source, where a script's is on disk: a traceback it prints, a
        # warning and inspect.getsource() show its lines as they would a
        # script's. (mtime None: linecache.checkcache() keeps it.)
        linecache.cache[PREDICTION_FILE] = (len(code), None, code.splitlines(True), PREDICTION_FILE)
        try:
            try:
                exec(compile(code, PREDICTION_FILE, "exec"), g)
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
        finally:
            # Out again once the prediction is over: under reuse linecache's
            # cache is then as the zygote left it, with nothing to put back
            # (a put-back costs a collection and a second comparison).
            linecache.cache.pop(PREDICTION_FILE, None)

    def forked(self, child, worker):
        """Never returns: runs in a prediction's child, which the sandbox
        library's fork worker made (fr_worker_serve; docs/python-runtime.md,
        "The prediction's child"): in its slot's cgroups, its descriptors
        laid out, its job read and its CPU backstop armed. Here the job is
        decoded, the sandbox applied and the code run, and the child writes
        its own report."""
        def start():
            if child.error:
                raise EOFError(child.error.decode(errors="replace"))
            job = json.loads(ctypes.string_at(child.job, child.job_len))
            self.sandbox.free_child(child)
            self.job_environ(job, worker)
            return job, self.sandbox.apply(CHILD_NOTIFY_FD, worker)
        self.write_report(self.run_job(start))
        os._exit(0)

    @staticmethod
    def job_environ(job, worker):
        """A prediction's job id and worker, in its environment."""
        os.environ["FITRUN_JOB_ID"] = job["id"]
        os.environ["FITRUN_WORKER"] = str(worker)

    def arm_backstop(self, job, worker):
        """What every prediction of a reused process gets before its code
        runs (a fork child gets the same from fr_worker_serve): its job id
        and worker in the environment, and the CPU backstop."""
        self.job_environ(job, worker)
        # Backstop only: fitrun reads this process's CPU clock and kills
        # it at the budget. Should fitrun be late, SIGPROF's default
        # action ends it here; RLIMIT_CPU (set by the sandbox) is the last
        # resort when the code disarms the timer.
        if self.cfg.cpu_backstop_ms > 0:
            signal.setitimer(signal.ITIMER_PROF, min(self.cfg.cpu_backstop_ms / 1000.0, SETITIMER_MAX_S))

    def run_job(self, start, allow=None):
        """The report of one job: start() reads it and returns it with the
        sandbox's result (0, or -errno when applying it failed)."""
        try:
            job, apply_rc = start()
            if apply_rc != 0:
                return {"sandbox_error": -apply_rc}
            return self.run_code(job["code"], job.get("entry") or self.cfg.entry, job["inputs"], allow=allow)
        except MemoryError:
            return {"outputs": [], "error_type": "MemoryError", "error_message": "",
                    "error_line": None, "memory": True}
        except BaseException as e:  # our own bug: say so rather than die silently
            return {"outputs": [], "error_type": "RuntimeInternalError",
                    "error_message": f"{_exc_type(e)}: {_exc_text(e)}",
                    "error_line": None, "memory": False}

    def write_report(self, rep):
        """Flush the prediction's prints, then write its report on fd 3."""
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

    def reused_child(self, sock, null, worker_pid, worker, cgroup_fds=()):
        """Never returns: the long-lived process of a worker under reuse
        isolation. It applies the sandbox once (as slot `worker`), then
        runs one job per message from its worker: the message brings the
        job's four pipe ends (its worker's own, or the RUN's) and a nonce;
        the process lays the ends out as a fork child would have them, runs
        the job as a fork child does, gives the ends up (/dev/null over
        them, before "done": with its worker's own pipes, fitrun takes what
        they hold at EXITED as all of the job's), checks and restores
        shared state (_Baseline) and answers "done" with the nonce and its
        own reason to be replaced.
        cgroup_fds: as for child(); the process stays in its slot's cgroups
        for all its jobs."""
        _join_cgroups(cgroup_fds, worker)
        try:
            os.setpgid(0, 0)
            self.die_with_parent(worker_pid)
            _layout_fds(((null, CHILD_STDIN), (null, CHILD_STDOUT), (null, CHILD_STDERR),
                         (sock, CHILD_NOTIFY_FD), (sock, REUSE_CHAN_FD)), self.sandbox.fd())
            chan = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, 0, fileno=REUSE_CHAN_FD)
        except BaseException:
            os._exit(EXIT_CHILD_SETUP)
        apply_rc = self.sandbox.apply(CHILD_NOTIFY_FD, worker)
        recv_fds, write, dup2, close, fcntl_ = socket.recv_fds, os.write, os.dup2, os.close, fcntl.fcntl
        new_context = self.context.copy
        # Between jobs /dev/null holds every descriptor below the socket, so
        # the pipe ends of the next job arrive above all the ones they go to.
        for fd in (CHILD_REPORT_FD, CHILD_NOTIFY_FD, CHILD_JOB_FD):
            dup2(CHILD_STDIN, fd)
        baseline = _Baseline(CHILD_STDIN, REUSE_CHAN_FD, self.namespaces or _Namespaces(self.builtins),
                             self.recorded)
        baseline.freeze()
        # Bound now: by the time it is called, _Baseline.check may be
        # another function (its first step finds that out).
        check = baseline.check
        allowed = [None]
        _install_tripwire(REUSE_CHAN_FD, allowed, baseline.ns.owners)
        write(REUSE_CHAN_FD, b"R")  # ready: its worker reads the CPU clock of the first job after this

        def allow(obj):
            allowed[0] = obj
        while True:
            try:
                msg, fds, _, _ = recv_fds(chan, 64, RUN_FDS, socket.MSG_CMSG_CLOEXEC)
            except BaseException:
                os._exit(EXIT_CHILD_SETUP)
            if not msg:
                os._exit(0)  # the worker is gone
            if msg[:1] != b"J" or len(fds) != RUN_FDS:
                os._exit(EXIT_CHILD_SETUP)
            nonce = msg[1:]
            try:
                for src, dst in zip(fds, (CHILD_JOB_FD, CHILD_REPORT_FD, CHILD_STDOUT, CHILD_STDERR)):
                    dup2(src, dst)
                    close(src)
                _reset_write_ends(fcntl_)
            except BaseException:
                os._exit(EXIT_CHILD_SETUP)

            def start():
                job = self.read_job()
                self.arm_backstop(job, worker)
                return job, apply_rc
            # In a copy of the zygote's context: a context variable the
            # prediction sets (a ContextVar of its own, decimal.setcontext)
            # is gone with it, as in a fork child.
            rep = new_context().run(self.run_job, start, allow)
            self.write_report(rep)
            if apply_rc != 0:
                os._exit(0)  # it reported the sandbox's failure; a fresh process tries again
            try:
                for fd in (CHILD_STDOUT, CHILD_STDERR, CHILD_REPORT_FD, CHILD_JOB_FD):
                    dup2(CHILD_STDIN, fd)  # the job's pipes end here: fitrun sees EOF
            except OSError:
                pass
            # Written: the report (its outputs) is not kept while the next
            # prediction runs.
            memory, rep = rep.get("memory"), None
            try:
                # After a MemoryError the heap may hold what the failed
                # allocations left; the process goes, as a fork child would.
                why = "memory_error: the prediction ran out of memory" if memory else check()
            except BaseException as e:
                why = f"poisoned: the check failed ({_exc_type(e)}: {_exc_text(e)})"
            try:
                write(REUSE_CHAN_FD, b"D" + nonce + why.encode(errors="replace")[:300])
            except BaseException:
                os._exit(EXIT_CHILD_SETUP)
            if why:
                os._exit(0)  # its worker replaces it

    @staticmethod
    def read_job():
        """The job fitrun wrote on the job pipe: its length (JOB_FRAME),
        then {"id", "code", "inputs"[, "entry"]}. Reads exactly that, then
        closes the pipe: no prediction ever holds it (with a worker's own
        pipes, later jobs come on it)."""
        size = JOB_FRAME.unpack(_read_exactly(CHILD_JOB_FD, JOB_FRAME.size))[0]
        data = _read_exactly(CHILD_JOB_FD, size)
        os.close(CHILD_JOB_FD)
        return json.loads(data)


def _read_exactly(fd, n):
    """n bytes of fd, which stays non-blocking: it is the file description
    fitrun reads too (to discard what a child left unread), and fitrun must
    never block on it. EOFError when it ends first."""
    buf = bytearray()
    while len(buf) < n:
        try:
            chunk = os.read(fd, min(n - len(buf), READ_CHUNK))
        except BlockingIOError:
            select.select([fd], [], [])
            continue
        if not chunk:
            raise EOFError(f"the job pipe ended after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def _reset_write_ends(fcntl_):
    """The report, stdout and stderr write ends as this job's code must
    find them: blocking, and with no flag a previous job of the same pipes
    left on their shared file descriptions (O_NONBLOCK, O_DIRECT: packet
    mode, which would cut what fitrun reads; O_ASYNC, O_APPEND). fitrun's
    read ends are descriptions of their own."""
    for fd in (CHILD_STDOUT, CHILD_STDERR, CHILD_REPORT_FD):
        fcntl_(fd, fcntl.F_SETFL, 0)


def _join_cgroups(cgroup_fds, worker):
    """In a forked child of a worker, first thing: join its slot's cgroups
    (fitrun's own; cgroup_fds are their cgroup.procs files), so that
    everything it allocates is charged to, and limited by, its slot. Exits
    the child on failure."""
    try:
        for fd in cgroup_fds:
            os.write(fd, b"0")  # "0" is the writer itself
            os.close(fd)
    except OSError as e:
        try:
            os.write(2, f"fitrun python worker {worker}: cannot join its cgroup: {e.strerror}\n".encode())
        finally:
            os._exit(EXIT_CHILD_SETUP)


def _closer():
    """A function that closes every descriptor from `fd` up. From Python
    3.10 os.closerange is one close_range(2); before, it closes each
    number in turn, a million of them under the usual hard limit (a second
    here, after every prediction under reuse): there the system call is
    made through libc's syscall(3), and os.closerange only where it fails
    (a kernel before 5.9). Bound at import, in the zygote: a lookup in a
    library later would be an audited call."""
    def closerange(fd):
        os.closerange(fd, 1 << 20)
    if sys.version_info >= (3, 10):
        return closerange
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return closerange
    syscall.restype = ctypes.c_long
    nr, uint = 436, ctypes.c_uint  # close_range, the same number on every architecture
    everything = uint(0xFFFFFFFF)

    def close_from(fd):
        if syscall(ctypes.c_long(nr), uint(fd), everything, uint(0)) != 0:
            closerange(fd)
    return close_from


_close_from = _closer()


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
        _close_from(keep + 1)
    else:
        _close_from(top)


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
    """A worker's channel: PIPES once, then one RUN per job (run()). The
    job's pipe ends come with the RUN (the worker holds them from the
    message to the job's start) or are the worker's own, sent once with
    PIPES when no process of a prediction can outlive it. Either way the
    worker never reads from or writes to them. This loop is reuse
    isolation's (ReuseWorker); fork isolation's is the sandbox library's
    (ForkWorker)."""

    def __init__(self, runner, worker, chan, status, cgroup_fds=()):
        self.runner = runner
        self.worker = worker
        self.chan = chan
        # STARTED goes here: fitrun reads it when it needs the child (to
        # kill it, to read its CPU clock) or at EXITED, and is not woken
        # for it.
        self.status = status
        self.cgroup_fds = tuple(cgroup_fds)  # each child's slot cgroups (cgroup.procs)
        self.pid = os.getpid()
        # Every child's stdin. Open for writing too: a reused process puts
        # it on its output descriptors between jobs, where what is printed
        # after a report (a finalizer, the collector's debug output) must
        # be flushed away, not kept for the next prediction's output.
        self.null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        self.pipes = None  # the child ends of the worker's own pipes (PIPES), if any

    def serve(self):
        while True:
            msg, fds, _, _ = socket.recv_fds(self.chan, 64, RUN_FDS, socket.MSG_CMSG_CLOEXEC)
            if not msg:
                return 0  # fitrun closed the channel: the run is over
            try:
                if msg == MSG_PIPES.pack(b"P") and len(fds) == RUN_FDS and self.pipes is None:
                    self.pipes, fds = fds, []
                elif len(msg) == MSG_RUN.size and msg[:1] == b"R" and len(fds) == RUN_FDS:
                    self.run(*MSG_RUN.unpack(msg)[2:0:-1], fds)
                elif len(msg) == MSG_RUN.size and msg[:1] == b"R" and not fds and self.pipes is not None:
                    self.run(*MSG_RUN.unpack(msg)[2:0:-1], self.pipes)
                else:
                    self.failed(0, f"unreadable message of {len(msg)} bytes with {len(fds)} fds")
            finally:
                for fd in fds:
                    try:
                        os.close(fd)
                    except OSError:
                        pass

    def release(self, fds):
        """After the job went to its process: close a RUN's own pipe ends
        (so that fitrun sees EOF when the child is done with them), never
        the worker's."""
        if fds is not self.pipes:
            for fd in fds:
                os.close(fd)
            fds.clear()

    def failed(self, seq, why):
        self.chan.send(MSG_FAILED.pack(b"F", seq) + why.encode(errors="replace")[:1000])


class ForkWorker(Worker):
    """isolation = fork: the sandbox library's loop (fr_worker_serve) forks
    one child per RUN, supervises it and sends STARTED and EXITED; this
    process runs no Python again until the run is over. In each child the
    call returns: the child runs the prediction (Runner.forked)."""

    def serve(self):
        child = self.runner.sandbox.serve(self.chan.fileno(), self.status.fileno(), self.null, self.cgroup_fds,
                                          self.worker, self.runner.cfg.cpu_backstop_ms)
        if child is None:
            return 0  # fitrun closed the channel: the run is over
        self.runner.forked(child, self.worker)  # never returns


def supervise(sandbox, pid, pidfd, sock):
    """The supervisor's side of the sandbox, for a child that applies the
    policy with apply(sock, slot): take the filter's listener the child
    sends, then wait for the child to end, SIGKILLing it at a denied call
    (which never returns: the supervisor does not answer). When this
    returns the child and its process group are dead, not reaped. Returns
    (the first denied call's number or -1, whether the child applied the
    sandbox: it sends the listener, or says there is no filter, only then).

    The number is the kernel's, read from the listener, which the child
    never holds once untrusted code runs: a prediction can neither forge a
    violation (a record written anywhere, a SIGSYS it raises) nor hide one
    (handlers, masks)."""
    listener = sandbox.receive(sock)  # blocks until the child applied, or died (-EPIPE)
    applied = _applied(listener)
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
    return violation, applied


def _applied(listener):
    """Did the child apply the sandbox, by what receiving its listener
    gave: the listener, or -ENODATA (a policy without a filter), both
    sent only once every step succeeded; else -errno (-EPIPE: it died or
    failed first)."""
    return listener >= 0 or listener == -errno.ENODATA


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# --------------------------------------------------------------------------
# Reuse: one sandboxed process runs consecutive predictions

# The process's state that later predictions share, checked after each
# prediction against what it was before the first. Only identities are
# compared (operator.is_): no __eq__ of anything a prediction made runs.
# Everything here is bound when the process starts, before any prediction:
# a prediction that replaces a module's function cannot change these checks.
_is = __import__("operator").is_
_REUSE_TAINT_EVENTS = frozenset((
    "sys._getframe", "sys._current_frames", "sys._current_exceptions", "sys.settrace", "sys.setprofile",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "object.__getattr__", "object.__setattr__",
    "object.__delattr__", "code.__new__", "function.__new__", "sys.addaudithook", "sys.monitoring.register_callback",
    "cpython.PyInterpreterState_Clear", "cpython.PyInterpreterState_New", "cpython._PySys_ClearAuditHooks",
    "setopencodehook", "resource.setrlimit", "resource.prlimit", "os.putenv", "os.unsetenv"))
_REUSE_TAINT_PREFIXES = ("ctypes.", "cpython.")
_REUSE_PREIMPORTS = ("importlib", "importlib.util", "importlib.machinery", "inspect", "dataclasses", "typing",
                     "fractions", "decimal", "statistics", "logging", "resource")
# Of the attribute reads CPython audits (object.__getattr__), those that
# give a frame: from a frame, f_back and f_locals reach the runtime's own.
# Reading a function's __code__ or __globals__ (the arc-dsl reads
# __code__.co_argcount) gives nothing a prediction could not reach anyway.
_REUSE_FRAME_ATTRS = frozenset(("tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"))


def _install_tripwire(chan_fd, allowed, known=frozenset()):
    """An audit hook (it cannot be removed) that tells the worker, on the
    process's own socket, the first time anything reaches for what could
    change a later prediction unseen: frames (and through them the runtime's
    own state), the garbage collector's object lists, ctypes, new code
    objects, type and function attribute writes, tracing, audit hooks. The
    worker then replaces the process after the prediction: the message is
    out of this process before the call it reports returns. A new audit
    hook is refused outright (it would see later predictions' code). When
    the socket is no longer the one it was (closed, or another descriptor
    put in its place), the call is refused instead: nothing could say it.
    allowed[0]: the one traceback or frame the runtime itself is reading
    (an error's line), set only by code no prediction can reach unseen.
    known: the ids of the classes (and modules, objects) whose namespaces
    the check compares. A write of a dunder attribute to a class it does
    not know and that no class inherits from (the prediction's own:
    @dataclass, a class's __doc__) changes nothing a plain attribute write
    to that class could not, which no audit event reports either: it is
    not reported, so honest code defining dataclasses keeps its process.
    (A class some other class inherits from is reported: a write to it
    reaches them, known ones included.)"""
    fstat, write, dev_ino, refused = os.fstat, os.write, _dev_ino(chan_fd), RuntimeError
    events, prefixes, frame_attrs, said = _REUSE_TAINT_EVENTS, _REUSE_TAINT_PREFIXES, _REUSE_FRAME_ATTRS, [False]
    job_vars = _JOB_VARS
    is_type, type_, id_, subclasses = issubclass, type, id, type.__subclasses__

    def hook(event, args):
        if event not in events and not event.startswith(prefixes):
            return
        # The real class of what is written to (type(): never its own
        # __class__), ids, and type's own list of subclasses: nothing of the
        # prediction's runs here.
        if event == "object.__setattr__" and is_type(type_(args[0]), type) and id_(args[0]) not in known and \
                not subclasses(args[0]):
            return
        if event == "object.__getattr__" and (args[1] not in frame_attrs or args[0] is allowed[0]):
            return
        if event == "resource.prlimit" and args[2] is None:
            return  # reading a limit
        # The runtime's own, before each job (the check leaves them out
        # too). Exactly bytes: no __eq__ of a subclass runs here.
        if event == "os.putenv" and type(args[0]) is bytes and args[0] in job_vars:
            return
        if not said[0]:
            try:
                st = fstat(chan_fd)
                if (st.st_dev, st.st_ino) != dev_ino:
                    raise OSError
                write(chan_fd, b"T" + event.encode()[:200])
            except BaseException:
                raise refused(f"{event} refused: this reused process can no longer report it") from None
            said[0] = True
        if event == "sys.addaudithook":
            raise refused("a reused process takes no audit hooks")  # the hook is not added

    sys.addaudithook(hook)


def _dev_ino(fd):
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


class _Namespaces:
    """Every namespace a prediction could change for later ones, as the
    zygote leaves them, and their check. Built once, in the zygote, after
    the prelude and the self-test: every reused process is forked from it
    and starts from exactly this state, so none walks the namespaces again
    when it starts (about 2,500 pages written, 15 ms, per process with the
    arc-dsl prelude); each only reads them."""

    def __init__(self, prediction_builtins, peek=None):
        self.builtins = prediction_builtins
        self.peek = peek  # _DictVersions' reader
        # The functools.lru_cache wrappers: found once, here (the collector
        # lists no frozen object), for _LibraryCaches and _user_caches.
        self.library_lru, self.user_lru = _lru_caches(list(_user_modules(list(sys.modules.items()))))
        self._take()

    def _take(self):
        self.modules = sys.modules
        self.module_list = list(sys.modules.items())
        self.module_names = [name for name, _ in self.module_list]
        self.module_objects = [mod for _, mod in self.module_list]
        self.bound = len, all, map, _is, list, _chain, dict.values
        modules = self.modules
        self.dropping = (modules.pop, modules.keys, modules.__delitem__, type, str,
                         frozenset(self.module_names))
        # Namespaces: every module's, and those of the classes and the
        # plain objects (json's default encoder...) module globals name.
        self.owners = set()
        self.user_modules = list(_user_modules(self.module_list))
        self.functions = []  # the user's own functions, whose own fields _FunctionFields reads
        self.library_functions, self.builtin_functions = [], []  # and every other module's and class's
        nested = _nested(self.user_modules)  # what their data holds below the top level, walked once
        self.held_objects = []  # cells, staticmethods, classmethods, properties: fields in C
        self.enclosed = []  # the containers the library's functions close over
        self.dicts = _namespaces(self.module_list, self.owners, {name for name, _ in self.user_modules},
                                 self.functions, nested, self.library_functions, self.builtin_functions,
                                 self.held_objects, self.enclosed)
        # The builtins-and-prelude mapping every prediction's globals fall
        # back to (Runner.fresh_globals): one dict, shared by them all.
        self.dicts.append(("the predictions' builtins", self.builtins))
        self.spaces = [d for _, d in self.dicts]
        self.sizes = [len(d) for d in self.spaces]
        self.keys = list(_chain(self.spaces))
        # The dicts themselves (a class's, under its mappingproxy). Their
        # values are read with dict.values: gc.get_referents misses those
        # an instance keeps beside its dict (3.13).
        self.real = tuple(d if type(d) is dict else gc.get_referents(d)[0] for d in self.spaces)
        self.values = list(_chain(map(dict.values, self.real)))
        # The fast path of check(): the write counters of these dicts and
        # of sys.modules (None where this interpreter keeps none that every
        # write moves); namespaces of a kind whose writes do not move them
        # (an instance's, on 3.13) are compared entry by entry every time.
        kinds = _DictVersions.kinds()
        counted = {"dict", "module", "class"} <= kinds
        by_kind = [(_namespace_kind(name), d) for (name, _), d in zip(self.dicts, self.real)]
        self.counted = [i for i, (k, _) in enumerate(by_kind) if k in kinds]  # which namespace each counter is
        self.versions = _DictVersions([self.real[i] for i in self.counted] + [sys.modules],
                                      self.peek) if counted else None
        self.loose_at = [i for i, (k, _) in enumerate(by_kind) if k not in kinds] if counted else []
        self.loose = [self.real[i] for i in self.loose_at]
        self._take_loose()
        self.fields = _FunctionFields(self.functions + self.library_functions, self.peek, self.builtin_functions,
                                      self.held_objects)
        self.data = _user_data(self.user_modules, nested, self._cells_unread())
        # struct.Struct objects keep their format in C, and its __init__
        # can be called again (`MSG.__init__("=H")`): compared by format.
        self.structs = [(f"{name}.{key}", v, _STRUCT_FORMAT(v)) for (name, _), d in zip(self.dicts, self.real)
                        for key, v in list(dict.items(d)) if type(v) is struct.Struct]
        self.held = _heap_state()  # the locks, counters and foreign functions whose state is in C
        # The containers the standard library's and packages' modules hold
        # at their top level: put back after each prediction (a fork child
        # finds them as the zygote left them). Not sys.modules, nor the
        # lists whose change replaces the process (_Baseline.lists), nor
        # os.environ's mapping (posix.environ): its writes also went to the
        # process's environment in C, which putting it back would not undo.
        # And what the standard library's and packages' lru_caches hold
        # (not their own dicts: _cached_values).
        cached, cache_dicts = _cached_values(self.library_lru)
        handled = {id(sys.modules), id(vars(os.environ).get("_data"))} | {id(x) for _, x in _replacing_lists()} | \
            {id(d) for d in cache_dicts}
        found = _module_containers(self.module_list, self.user_modules, handled, cached)
        dicts, objects = found["dicts"], found["objects"]
        # Objects' dicts only where every write to one moves its counter
        # (not on 3.13: _DictVersions.kinds); else compared every time.
        if "object" in kinds:
            dicts, objects = dicts + objects, []
        # linecache's cache holds each prediction's source while it runs
        # (Runner.run_job): its counter moves for every prediction, which
        # would make every put-back read and search all the counters. It is
        # compared entry by entry instead (it is empty between predictions).
        objects = objects + [d for d in dicts if d is linecache.cache]
        dicts = [d for d in dicts if d is not linecache.cache]
        taken = {id(x) for x in dicts + objects + found["lists"] + found["sets"]}
        enclosed = [x for x in self.enclosed if id(x) not in taken]
        dicts += [x for x in enclosed if type(x) is dict]
        found["lists"] += [x for x in enclosed if type(x) is list]
        found["sets"] += [x for x in enclosed if type(x) is set]
        self.containers = _PutBack(dicts, found["lists"], self.peek, counted, found["sets"], loose=objects,
                                   slotted=found["slotted"], partials=found["partials"], arrays=found["arrays"],
                                   deques=found["deques"])

    def rebase(self):
        """In a process forked from the one that took these, before its
        first prediction: the namespaces the runtime's own code wrote since
        (every fork runs threading's at-fork handler, which replaces its
        locks and renames its main thread) are taken again as they are
        now, and so is the user's data. Everything is taken again where
        there are no write counters, when sys.modules moved, or when a
        module's namespace written since names a class or an object whose
        namespace is not among these. The namespaces without counters
        (instances' on 3.13) are taken again in any case: the walk after a
        moved counter compares them too, and a fork may have written them
        (threading's main thread gets its new ident)."""
        versions = self.versions
        if versions is None:
            return self._take()
        now = versions.read()
        moved = versions.moved(versions.seen, now)
        if moved and moved[-1] == versions.n - 1:  # sys.modules is counted last
            return self._take()
        moved = [self.counted[i] for i in moved]
        own = {name for name, _ in self.user_modules}
        for j in moved:
            kind = _namespace_kind(self.dicts[j][0])
            # Only modules' values, and the functions of the user's own
            # classes, have namespaces of their own here.
            if kind != "module" and not (kind == "class" and self.real[j].get("__module__") in own):
                continue
            for v in dict.values(self.real[j]):
                f = _function_of(v)
                if (f is not None and id(f) not in self.owners) or \
                        (kind == "module" and _held_namespace(v)[1] is not None and id(v) not in self.owners):
                    return self._take()
        starts = list(_accumulate(self.sizes, initial=0))  # where each namespace's entries begin
        for j in sorted(set(moved) | set(self.loose_at), reverse=True):  # from the last: earlier places stay put
            a, b = starts[j], starts[j] + self.sizes[j]
            self.keys[a:b] = list(self.spaces[j])
            self.values[a:b] = list(dict.values(self.real[j]))
            self.sizes[j] = len(self.spaces[j])
        self._take_loose()
        self.data = _user_data(self.user_modules, cells=self._cells_unread())
        self.containers.rebase()
        # And the locks threading's at-fork handler put in place of its own.
        self.held = self.held + _heap_state([self.real[j] for j in moved])
        versions.seen = now

    def _cells_unread(self):
        """Whether closure cells' words go unread (their type's fields not
        found): then _user_data compares what the user's own hold."""
        return types.CellType not in self.fields.held_places

    def check(self):
        """'' or 'poisoned: what'. Drops the modules a prediction imported
        first (the next one imports them afresh).

        Modules and builtins are checked first, with nothing but what was
        bound before any prediction ran (the builtins and functions below
        are this object's, not looked up): only once they are known intact
        does the rest of the check call through them.

        A class's bases are not compared here: assigning `__bases__`, by
        setattr or through its descriptor, is an audited type attribute
        write (object.__setattr__), which the tripwire reports (for any
        class others inherit from or this check knows), and nothing else
        changes a class's method resolution order."""
        if self.modules_added():
            self._drop_new_modules()  # first: what dropping them runs is checked below
        # The fast path: no namespace written since a check found them all
        # intact. After a write (put back, or a module imported and
        # dropped), entry by entry; once intact, this reading (taken before
        # the walk, so nothing after it is taken for checked) is the new
        # reference.
        versions, loose = self.versions, self.loose
        now = versions.read() if versions is not None else None
        loose_moved = loose and not self._same_loose()
        if now is None or now != versions.seen or loose_moved:
            # Only sys.modules written (the prediction's own module, put
            # there and dropped; a module imported and dropped, which wrote
            # nothing else): its entries alone decide.
            only_modules = now is not None and not loose_moved and versions.only_last_moved(versions.seen, now)
            why = self._check_modules() if only_modules else self._check_namespaces()
            if why:
                return why
            if now is not None:
                versions.seen = now
        fields = self.fields
        if not fields.read.same(fields.seen):
            return f"poisoned: {fields.which()}"
        for name, packer, fmt in self.structs:
            if _STRUCT_FORMAT(packer) != fmt:
                return f"poisoned: {name.split(' ', 1)[-1]} was given another format"
        # From here on, module attributes and builtins are the ones they were.
        for name, value, snap in self.data:
            if not _same_data(value, snap):
                return f"poisoned: {name} was changed in place"
        return ""

    def _take_loose(self):
        self.loose_keys = list(_chain(self.loose))
        self.loose_values = list(_chain(map(dict.values, self.loose)))

    def _same_loose(self):
        """The namespaces the write counters do not cover, unchanged."""
        return self._same_entries(self.loose, self.loose, self.loose_keys, self.loose_values)

    def _same_entries(self, spaces, dicts, keys, values):
        """Do the namespaces (spaces: what their keys are read through;
        dicts: the dicts themselves, for their values) still hold exactly
        these keys and values, by identity?"""
        len_, all_, map_, is_, list_, chain, values_of = self.bound
        now_keys = list_(chain(spaces))
        now_values = list_(chain(map_(values_of, dicts)))
        return len_(now_keys) == len_(keys) and len_(now_values) == len_(values) and \
            all_(map_(is_, now_keys, keys)) and all_(map_(is_, now_values, values))

    def _check_modules(self):
        """sys.modules, entry by entry, by identity: '' or 'poisoned: what'."""
        len_, all_, map_, is_, _, _, _ = self.bound
        modules, module_list = self.modules, self.module_list
        if len_(modules) < len_(module_list):
            return "poisoned: sys.modules lost entries"
        if len_(modules) > len_(module_list):  # what _drop_new_modules left: a name not a str
            return "poisoned: sys.modules holds an entry that could not be dropped"
        if not all_(map_(is_, modules.values(), self.module_objects)) or \
                not all_(map_(is_, modules, self.module_names)):
            return "poisoned: sys.modules entries were replaced or removed"
        return ""

    def _check_namespaces(self):
        """sys.modules and every namespace, entry by entry, by identity:
        '' or 'poisoned: what'."""
        why = self._check_modules()
        if why:
            return why
        if not self._same_entries(self.spaces, self.real, self.keys, self.values):
            return f"poisoned: {_which_namespace(self.dicts, self.sizes, self.keys, self.values)}"
        return ""

    def modules_added(self):
        """Does sys.modules hold another number of entries than when these
        were taken (the prediction's own module, the ones it imported)?
        Through what was bound before any prediction."""
        len_ = self.bound[0]
        return len_(self.modules) != len_(self.module_list)

    def _drop_new_modules(self):
        """Drop sys.modules["__prediction__"] (every prediction's own:
        Runner.fresh_globals) and the modules a prediction imported first
        or put there: the next prediction imports them afresh. It runs
        before anything is compared (_Baseline.check, before its
        collection), so it calls only what this object bound before any
        prediction, and no name's own __hash__ or __eq__: a name that is
        not exactly a str stays, and _check_modules finds it."""
        list_ = self.bound[4]
        pop, keys, delete, type_, str_, known = self.dropping
        pop("__prediction__", None)
        if self.modules_added():
            for name in list_(keys()):
                if type_(name) is str_ and name not in known:
                    delete(name)


def _collect_all(collect):
    """A function that collects until two collections in a row find no
    garbage, at most five: the finalizers one collection runs may leave
    new cycles (a __del__ that makes an object referring to itself), which
    only a later collection frees, and a later collection may come in the
    middle of the next prediction. One that finds nothing is not enough:
    a finalizer that makes an object of a class among the garbage brings
    all of it back, and that collection counts none. True once two found
    none; False when finalizers kept making garbage (the process goes).
    Bound before any prediction, it calls nothing else (no builtins)."""
    def collect_all():
        a, b = collect(), collect()
        if not a and not b:
            return True
        c = collect()
        if not b and not c:
            return True
        d = collect()
        if not c and not d:
            return True
        return not d and not collect()
    return collect_all


_ENDLESS_GARBAGE = "poisoned: its finalizers kept leaving garbage for later collections"


def _replacing_lists():
    """(name, list) of the interpreter's lists whose change replaces the
    process (_Baseline.check), rather than being put back."""
    return (("sys.path", sys.path), ("sys.meta_path", sys.meta_path), ("sys.path_hooks", sys.path_hooks),
            ("gc.callbacks", gc.callbacks), ("sys.warnoptions", sys.warnoptions), ("sys.argv", sys.argv))


def _monitoring_state(monitoring=getattr(sys, "monitoring", None), text=str.__str__):
    """sys.monitoring's tools (3.12 on): the name each tool id is in use
    by, or None, and the events it watches everywhere, both kept in C: a
    tool id left in use makes a later prediction's use_tool_id fail, and a
    later prediction reads both. Names as plain str (a subclass's __eq__
    would run in the comparison); None before 3.12. (A callback cannot be
    registered unseen: register_callback is an audited call, the
    tripwire's.)"""
    if monitoring is None:
        return None
    return tuple((None if (tool := monitoring.get_tool(i)) is None else text(tool), monitoring.get_events(i))
                 for i in range(6))


class _Baseline:
    """What a reused process looked like before its first prediction, and
    the check run after each one: restore what can be restored exactly,
    and name the first change that cannot (the process is then replaced).
    namespaces: the zygote's _Namespaces."""

    def __init__(self, null_fd, chan_fd, namespaces, recorded=None):
        self.null_fd, self.chan_fd = null_fd, chan_fd
        null = _dev_ino(null_fd)
        self.fds = {fd: null for fd in range(chan_fd)}
        self.fds[chan_fd] = _dev_ino(chan_fd)
        namespaces.rebase()  # what forking this process changed in them is its starting state
        self.ns = namespaces
        self.modules = namespaces.modules
        self.lists = [(name, lst, list(lst)) for name, lst in _replacing_lists()]
        self.sys_values = [(name, get, get()) for name, get in (
            ("sys.gettrace", sys.gettrace), ("sys.getprofile", sys.getprofile),
            ("sys.getrecursionlimit", sys.getrecursionlimit), ("sys.getswitchinterval", sys.getswitchinterval),
            ("sys.get_int_max_str_digits", getattr(sys, "get_int_max_str_digits", lambda: None)),
            ("gc.isenabled", gc.isenabled), ("gc.get_threshold", gc.get_threshold),
            # Functions registered to run at exit: none runs (a process
            # ends with os._exit), but a later prediction could count them
            # or run them (atexit._run_exitfuncs); a fork child has the
            # zygote's.
            ("atexit._ncallbacks", getattr(atexit, "_ncallbacks", lambda: None)),
            ("sys.monitoring.get_tool", _monitoring_state),  # with each tool's events
            # 3.12 on: perf's trampoline, which every later call goes through.
            ("sys.is_stack_trampoline_active", getattr(sys, "is_stack_trampoline_active", lambda: None)),
            # The import lock is re-entrant: left held (_imp.acquire_lock),
            # imports still work, but what it says is not a fork child's.
            ("_imp.lock_held", _imp.lock_held))]
        self.held = _HeapState(namespaces.held)
        self.cwd = os.getcwd()
        self.environ = _job_environ()
        self.umask = os.umask(0o022)
        os.umask(self.umask)
        self.getsignal = __import__("_signal").getsignal  # signal.getsignal's enum wrapping costs 2 µs a call
        self.signals = {n: self.getsignal(n) for n in _catchable_signals()}
        self.sigmask = signal.pthread_sigmask(signal.SIG_BLOCK, ())
        self.random = self._random_state()
        self.numpy = self._numpy_state()
        self.numpy_rng = _numpy_rng_words(self.numpy, namespaces.peek)
        self.numpy_hooks, self.numpy_printers = self._numpy_hooks()
        self.generators = _user_generators(namespaces.user_modules)
        self.caches = _user_caches(namespaces.user_modules, namespaces.user_lru)
        self.library_caches = _LibraryCaches(namespaces.library_lru)
        self.warnings = list(sys.modules["warnings"].filters) if "warnings" in sys.modules else None
        self.c_settings = _CSettings()
        self.registries = _Registries(recorded, namespaces.peek, namespaces.versions is not None)
        self.containers = namespaces.containers
        # With each stream, its own attributes (`sys.stdout.write = ...`
        # sets one, which later prints would go through). Each once:
        # sys.__stdout__ is sys.stdout unless the prelude set another.
        named = {}
        for name in ("stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__"):
            stream = getattr(sys, name)
            if stream is not None and id(stream) not in named:
                named[id(stream)] = (name, stream)
        self.streams = [(name, stream, _stream_mode(stream), getattr(stream, "__dict__", None),
                         dict(getattr(stream, "__dict__", None) or {})) for name, stream in named.values()]
        # And their buffers' and raw files' own (sys.stdout.buffer.write = ...).
        self.stream_layers = [(d, dict(d)) for _, stream, _, _, _ in self.streams
                              for layer in (getattr(stream, "buffer", None),
                                            getattr(getattr(stream, "buffer", None), "raw", None))
                              if type(d := getattr(layer, "__dict__", None)) is dict]
        self.gc_collect, self.check_namespaces = _collect_all(gc.collect), namespaces.check
        # sys.modules["__prediction__"] (Runner.fresh_globals) holds the
        # prediction's globals, and the modules it imported first theirs,
        # until they are dropped: before the collection.
        self.drop_modules = namespaces._drop_new_modules
        self.modules_added = namespaces.modules_added
        self.own_intact = _own_guard(namespaces.peek)
        self.gc_get_freeze_count = gc.get_freeze_count
        # freeze()'s watch over the frozen heap, or where there is none the
        # count of frozen objects it took (a count walks every frozen
        # object: 300 µs with arc-dsl's prelude).
        self.frozen_intact, self.frozen = None, None
        self.acted = False  # _check_once's: whether anything was put back

    def freeze(self):
        """Once built, before the first prediction: the baseline's own
        lists out of every collection after each prediction, and the frozen
        heap that check() holds to: its ends (_FrozenHeap), or where they
        cannot be watched, its count."""
        heap = _FrozenHeap.make(self.ns.peek)
        self.frozen_intact = heap.intact if heap is not None else None
        self.frozen = gc.get_freeze_count() if heap is None else None

    @staticmethod
    def _random_state():
        rnd = sys.modules.get("random")
        return (rnd,) if rnd is not None else None

    @staticmethod
    def _numpy_state():
        np = sys.modules.get("numpy")
        if np is None:
            return None
        # And the bit generator of its global RandomState, a public
        # attribute: another one there would be the one set_state restores
        # and seed() seeds, while draws go on from the first one's state.
        rand = getattr(getattr(np.random, "mtrand", None), "_rand", None)
        bitgen = type(rand).__dict__.get("_bit_generator")
        bitgen = (bitgen.__get__, rand, bitgen.__get__(rand)) if hasattr(bitgen, "__get__") else None
        return (np, np.geterr(), np.get_printoptions(), np.random.get_state(), np.getbufsize(), np.geterrcall(),
                bitgen)

    @staticmethod
    def _numpy_hooks():
        """numpy 1.x's process-wide hooks, which honest code rarely sets and
        which change what later predictions compute or print: the ufuncs
        behind arrays' operators (`np.set_numeric_ops(add=np.subtract)`:
        `a + b` subtracts) and the functions that print arrays
        (`np.set_string_function`). (numpy 2 has neither.) Also numpy's
        other settings kept in C: its dtype name table, scalar promotion,
        the scalars' print mode, huge-page advice. Two lists of functions,
        each putting one back (True when it did, where that can be known):
        the operators as they are now (set_numeric_ops with no argument
        only returns them) and those settings; the printing functions back
        to numpy's own, where arrays print as numpy's own print them now
        (a prelude that set its own cannot have it back: there is no way to
        read a printing function back, so they are put back every time)."""
        umath = sys.modules.get("numpy.core._multiarray_umath")
        set_ops = getattr(umath, "set_numeric_ops", None)
        set_printer = getattr(umath, "set_string_function", None)
        out, printers = [], []
        if callable(set_ops):
            ops = set_ops()
            keys, values = list(ops), list(ops.values())
            is_not, any_, map_, len_ = __import__("operator").is_not, any, map, len
            # Setting them warns (DeprecationWarning), and a warning adds a
            # __warningregistry__ to its caller's globals: the caller here
            # is a function of its own globals, not the runtime's.
            call = eval("lambda f, kw: f(**kw)", {"__builtins__": {}})
            catch, ignore = warnings.catch_warnings, warnings.simplefilter

            def put_ops_back():
                now = set_ops()  # compared by identity: no __eq__ of what a prediction set runs
                if len_(now) != len_(keys) or any_(map_(is_not, map_(now.get, keys), values)):
                    with catch():
                        ignore("ignore")
                        call(set_ops, ops)
                    return True
                return False
            out.append(put_ops_back)
        # Three more settings kept in C, each set by one call and seen by
        # every later prediction: the table of type names that np.dtype("...")
        # reads (set_typeDict, at numpy's import, to numerictypes.sctypeDict:
        # another table made np.dtype("float64") raise; there is no reading
        # it back, so it is put back every time), how scalars promote
        # (_set_promotion_state("weak") made np.uint8(200) + 100 a uint8:
        # other answers) and whether arrays ask for huge pages (speed only).
        core = sys.modules.get("numpy._core._multiarray_umath") or umath
        set_types = getattr(core, "set_typeDict", None)
        types = getattr(sys.modules.get("numpy._core.numerictypes") or sys.modules.get("numpy.core.numerictypes"),
                        "sctypeDict", None)
        if callable(set_types) and type(types) is dict:
            out.append(lambda: set_types(types))
        for getter, setter in (("_get_promotion_state", "_set_promotion_state"),
                               ("_get_madvise_hugepage", "_set_madvise_hugepage")):
            get, put = getattr(core, getter, None), getattr(core, setter, None)
            if callable(get) and callable(put):
                out.append(_put_setting_back(get, put, get()))
        # The printing mode np.set_printoptions(legacy=...) sets in C for
        # scalars (set_legacy_print_mode(113) made str(np.float64(0.1) +
        # 0.2) "0.3") has no getter either: put back every time, to the mode
        # the print options held before any prediction.
        arrayprint = sys.modules.get("numpy.core.arrayprint")
        set_legacy = getattr(core, "set_legacy_print_mode", None)
        options = getattr(arrayprint, "_format_options", None)
        legacy = options.get("legacy") if type(options) is dict else None
        if callable(set_legacy) and type(legacy) is int:
            # No legacy mode is held as sys.maxsize and set in C as 0.
            mode = legacy if 0 < legacy < 2 ** 31 else 0
            out.append(lambda: set_legacy(mode))
        np = sys.modules.get("numpy")
        if callable(set_printer) and arrayprint is not None and np is not None:
            probe = np.array([[1.5, 2], [3, 4]])
            default = getattr(arrayprint, "_default_array_repr", None), getattr(arrayprint, "_default_array_str", None)
            if callable(default[0]) and callable(default[1]) and \
                    repr(probe) == default[0](probe) and str(probe) == default[1](probe):
                printers.append(lambda: (set_printer(None, 1), set_printer(None, 0)))
        return out, printers

    def check(self):
        """After a prediction: '' (the next one may run here) or the first
        change found, as 'poisoned: what'. Checks the namespaces
        (_Namespaces.check, which drops modules the prediction imported
        first), then restores fds, timers, signal handlers and mask, cwd,
        umask, warnings filters, numpy's error mode, print options and
        global random state (random reseeds, as after a fork). Only once
        modules and builtins are known intact does it call through them;
        until then, only what this object bound before any prediction."""
        # numpy's array printers, put back first, through numpy's own C
        # function bound before any prediction: there is no reading them
        # back, so they are always put back, and what a prediction set
        # there is freed now, before anything is compared.
        for put_back in self.numpy_printers:
            put_back()
        # Its module and the ones it imported go first: held there, their
        # globals (and what they name, in a cycle with their functions)
        # would outlive this collection and be freed by a later one, their
        # finalizers then running in the middle of a later prediction, after
        # this check.
        self.drop_modules()
        if not self.gc_collect():  # finalizers of the prediction's cycles run now, not in a later prediction
            return _ENDLESS_GARBAGE
        # First, by what was bound before any prediction: everything below
        # calls through the runtime's own classes and module.
        if not self.own_intact():
            return "poisoned: the runtime's own code was changed"
        # gc.freeze() keeps whatever it froze, garbage included, for the
        # process's life (memory later predictions would lack); gc.unfreeze()
        # puts the prelude's heap back under collection. The ends of the
        # frozen list show either (_FrozenHeap); without them, the count:
        # only these raise the count of frozen objects or empty it; a frozen
        # object that is freed lowers it (the runtime's start-up leaves a few).
        frozen_intact = self.frozen_intact
        if frozen_intact is not None:
            if not frozen_intact():
                return "poisoned: gc.freeze() or gc.unfreeze() was called"
        else:
            frozen = self.gc_get_freeze_count()
            if self.frozen is None:  # a baseline freeze() did not make (tests'): counted from here
                self.frozen = frozen
            if frozen > self.frozen or (frozen == 0 and self.frozen):
                return "poisoned: gc.freeze() or gc.unfreeze() was called"
            self.frozen = frozen
        why = self._check_once()
        if why or not self.acted:
            return why
        # What was put back held what the prediction had put in its place,
        # freed as it was taken out: its finalizers (the prediction's code:
        # a __del__, a generator's finally) ran after the namespaces were
        # compared, and could have changed them, or what was put back before
        # them (a module's function replaced, the working directory
        # changed). So once more, after a collection; and now nothing may
        # need putting back.
        if not self.gc_collect():
            return _ENDLESS_GARBAGE
        why = self._check_once()
        if not why and self.acted:
            why = "poisoned: what was put back was changed again as it was freed (a finalizer)"
        return why

    def _check_once(self):
        """The namespaces, the process's state, the interpreter's lists and
        settings: '' or the first change that cannot be put back; sets
        self.acted when anything was put back (its finalizers may have run
        meanwhile: check() then looks once more)."""
        # A module that a finalizer of the collection imported or planted is
        # dropped by the namespace check, after the collection, as the
        # prediction's were before it: its globals need the second look's.
        self.acted = self.modules_added()
        why = self.check_namespaces()
        if why:
            return why
        why = self._restore_process()
        if why:
            return why
        for name, lst, items in self.lists:
            if not _PutBack._same_list(lst, items):
                return f"poisoned: {name} was changed"
        for name, get, value in self.sys_values:
            now = get()
            if now is not value and now != value:
                return f"poisoned: {name}() changed"
        env = _job_environ()
        if env is None or env != self.environ:
            return "poisoned: os.environ was changed"
        why = self.held.changed()
        if why:
            return f"poisoned: {why}"
        return ""

    def _restore_process(self):
        """Descriptors, timers, signals, cwd, umask: put back as they were."""
        for fd, ident in self.fds.items():
            try:
                if _dev_ino(fd) == ident:
                    continue
            except OSError:
                pass
            if fd == self.chan_fd:
                return "poisoned: the process's socket to its worker was closed or replaced"
            os.dup2(self.null_fd, fd)
        _close_from(REUSE_CHAN_FD + 1)
        # The socket's file status flags are the prediction's to set (fcntl
        # F_SETFL is allowed): left non-blocking, the wait for the next job
        # would fail and end the process between two jobs. Blocking again.
        fcntl.fcntl(self.chan_fd, fcntl.F_SETFL, 0)
        for which in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):
            signal.setitimer(which, 0)
        for n, handler in self.signals.items():
            if self.getsignal(n) is not handler:
                signal.signal(n, handler)
                self.acted = True
        signal.pthread_sigmask(signal.SIG_SETMASK, self.sigmask)
        if signal.sigpending():
            return "poisoned: signals left pending"
        if os.getcwd() != self.cwd:
            os.chdir(self.cwd)
        os.umask(self.umask)
        w = self.modules.get("warnings")
        if self.warnings is not None and w is not None and w.__dict__.get("filters") is not None:
            if len(w.filters) != len(self.warnings) or not all(map(_is, w.filters, self.warnings)):
                w.filters[:] = self.warnings
                w._filters_mutated()
                self.acted = True
        why = self._put_back((self.c_settings.restore, self.registries.restore, self.containers.restore,
                              self.library_caches.empty))
        if why:
            return why
        # What was printed after the report was written (a finalizer run by
        # the collection above, the collector's own debug output) goes to
        # /dev/null now, not into the next prediction's output.
        for name, stream, mode, attrs, items in self.streams:
            if stream.closed:  # stdin too: exit() and quit() close it
                return f"poisoned: sys.{name} was closed"
            if attrs is not None and not _same_items(attrs, items):
                attrs.clear()
                attrs.update(items)
                self.acted = True
        for attrs, items in self.stream_layers:
            if not _same_items(attrs, items):
                attrs.clear()
                attrs.update(items)
                self.acted = True
        for name, stream, mode, attrs, items in self.streams:
            try:
                stream.flush()
                if _stream_mode(stream) != mode:
                    return f"poisoned: sys.{name} was reconfigured"
            except BaseException:
                return f"poisoned: sys.{name} cannot be flushed"
        if self.random is not None:
            self.random[0].seed()  # as in a fork child: random reseeds itself after fork
        if self.numpy is not None:
            np, err, printopts, rng, bufsize, errcall, bitgen = self.numpy
            if bitgen is not None and bitgen[0](bitgen[1]) is not bitgen[2]:
                return "poisoned: numpy's global RandomState was given another bit generator"
            np.seterr(**err)
            if np.getbufsize() != bufsize:
                np.setbufsize(bufsize)
            if np.geterrcall() is not errcall:
                np.seterrcall(errcall)
                self.acted = True
            # By identity, or as numbers and strings (no __eq__ of a
            # formatter a prediction set runs here).
            if not _same_options(np.get_printoptions(), printopts):
                np.set_printoptions(**printopts)
                self.acted = True
            words = self.numpy_rng
            if words is None or not words[0].same(words[1]):
                np.random.set_state(rng)
        for put_back in self.numpy_hooks:
            self.acted = put_back() or self.acted
        for put_back in self.generators:
            put_back()
        return self._put_back(self.caches)

    def _put_back(self, restores):
        """Call each: '', 'put back' (self.acted) or why the process cannot
        run on, which ends it."""
        for restore in restores:
            why = restore()
            if why.startswith("poisoned"):
                return why
            self.acted = self.acted or bool(why)
        return ""


def _put_setting_back(get, put, value):
    """A function that puts a setting read by get() back to value with put()
    when it reads otherwise: True when it did. Both are C functions bound
    before any prediction, and value a str or bool, so the comparison runs
    no code of a prediction's."""
    def put_back():
        if get() != value:
            put(value)
            return True
        return False
    return put_back


def _numpy_rng_words(numpy_state, peek):
    """(reader, reading) of the words that hold the state of numpy's global
    RandomState, as np.random.set_state(its state then) leaves them: the
    RandomState object's own fields past its reference count (the cached
    gaussian and whether there is one, the binomial's cache) and its bit
    generator's from the state's address to its end (MT19937's key and
    position). Where they still read so, that set_state (19 µs) would
    write what is there, and the put-back skips it; a prediction that drew
    from the generator, seeded it or set its state moved them. None (always
    set_state) without the sandbox library's reader, or where numpy does
    not show the state's address."""
    if numpy_state is None or peek is None:
        return None
    np, _, _, rng, _, _, bitgen_of = numpy_state  # _Baseline._numpy_state's
    if bitgen_of is None:
        return None
    _, rand, bitgen = bitgen_of
    try:
        start = int(bitgen.ctypes.state_address)
    except Exception:
        return None
    ends = id(bitgen) + type(bitgen).__basicsize__
    if not (id(bitgen) < start < ends) or start % 8:
        return None
    word = 8
    addrs = [id(rand) + o for o in range(word, type(rand).__basicsize__ - word + 1, word)] + \
        list(range(start, ends - word + 1, word))
    np.random.set_state(rng)  # the words as the put-back leaves them
    read = _word_reader(addrs, peek)
    return read, read()


class _RecordedRegistrations:
    """Registrations the interpreter keeps in C, which no Python call
    lists: codec search functions (codecs.register), codec error handlers
    (codecs.register_error), faulthandler's signals (faulthandler.register)
    and exit functions (atexit.register). Under reuse the zygote puts
    recording wrappers in their place (in codecs, _codecs, faulthandler
    and atexit, before the namespaces are taken), so that what a
    prediction registers is known: a search function is taken out again
    (codecs.unregister, Python 3.10; it also empties the lookup cache,
    which may hold what it found), so is an exit function (a fork child's
    never run: it leaves by os._exit), and an error handler that replaced
    one is replaced back; a new error
    handler or a signal, which nothing can take out, replaces the
    process.

    The wrappers see only calls made through them: a fresh copy of
    _codecs (importlib.util.module_from_spec) has the interpreter's own
    functions, and codecs.unregister takes out its own search function.
    So where the zygote finds the interpreter's two codec tables
    themselves (_codec_tables: its list of search functions, its dict of
    error handlers), they are compared after each prediction, by
    identity, and put back whatever changed them, the lookup cache
    emptied; the wrappers' records are then not needed."""

    def __init__(self):
        import _codecs
        import codecs
        self.added, self.handlers, self.poison = [], [], []
        self.unregister = getattr(_codecs, "unregister", None)
        self.register_error = _codecs.register_error
        added, handlers, poison = self.added, self.handlers, self.poison
        register, register_error, lookup_error = _codecs.register, _codecs.register_error, _codecs.lookup_error
        self.register = register
        fh_register = faulthandler.register
        import atexit
        self.exits, self.atexit_unregister = [], atexit.unregister
        exits, at_register = self.exits, atexit.register

        def recording_register(search_function):
            register(search_function)
            added.append(search_function)

        def recording_register_error(name, error_handler):
            try:
                before = lookup_error(name)
            except (LookupError, TypeError):
                before = None
            register_error(name, error_handler)
            handlers.append((name, before))

        def recording_fh_register(*args, **kwargs):
            fh_register(*args, **kwargs)
            poison.append("faulthandler.register")

        def recording_atexit_register(func, *args, **kwargs):
            at_register(func, *args, **kwargs)
            exits.append(func)
            return func
        for wrapper, original in ((recording_register, register), (recording_register_error, register_error),
                                  (recording_fh_register, fh_register), (recording_atexit_register, at_register)):
            wrapper.__name__ = wrapper.__qualname__ = original.__name__
            wrapper.__doc__ = original.__doc__
        _codecs.register = codecs.register = recording_register
        _codecs.register_error = codecs.register_error = recording_register_error
        faulthandler.register = recording_fh_register
        atexit.register = recording_atexit_register
        self.search_path, self.errors = _codec_tables(register, self.unregister, register_error, lookup_error)
        self.search_base = list(self.search_path) if self.search_path is not None else None
        self.errors_base = dict(self.errors) if self.errors is not None else None

    def empty_codec_cache(self):
        """Empty the interpreter's cache of the codecs its lookups found
        (kept in C): codecs.unregister empties it when it takes out a
        search function, so one is put in and taken out. Before Python
        3.10 there is no codecs.unregister: nothing is emptied."""
        if self.unregister is not None:
            def nothing(name):
                return None
            self.register(nothing)
            self.unregister(nothing)

    def restore(self):
        """'' (nothing was registered), 'put back' once what was registered
        since is gone, or why the process cannot run on."""
        if self.poison:
            return f"poisoned: {self.poison[0]} was called"
        put = self._restore_tables()
        if self.added and self.unregister is None:
            return "poisoned: codecs.register was called (no codecs.unregister before Python 3.10)"
        put = "put back" if put or self.added or self.exits or self.handlers else ""
        while self.added:
            self.unregister(self.added.pop())
        while self.exits:
            self.atexit_unregister(self.exits.pop())
        while self.handlers:
            name, before = self.handlers.pop()
            if before is None:
                return f"poisoned: codecs.register_error added the error handler {name!r}"
            self.register_error(name, before)
        return put

    def _restore_tables(self, len=len, all=all, map=map, is_=_is, keys=dict.keys,
                        values=dict.values, setitem=list.__setitem__, clear=dict.clear, update=dict.update):
        """The codec tables as the zygote left them: '' (they were) or
        'put back'. Clears the wrappers' records of what they cover. Only
        lists' and dicts' own methods, bound before any prediction: the
        handlers' names are exact strs (the interpreter makes them), no
        one's __eq__ runs. (The search functions' list is found only where
        codecs.unregister exists, which empties the lookup cache.)"""
        put = ""
        path, base = self.search_path, self.search_base
        if path is not None:
            self.added.clear()
            if len(path) != len(base) or not all(map(is_, path, base)):
                setitem(path, slice(None), base)
                self.empty_codec_cache()
                put = "put back"
        errors, base = self.errors, self.errors_base
        if errors is not None:
            self.handlers.clear()
            if len(errors) != len(base) or not all(map(is_, keys(errors), keys(base))) or \
                    not all(map(is_, values(errors), values(base))):
                clear(errors)
                update(errors, base)
                put = "put back"
        return put


def _codec_tables(register, unregister, register_error, lookup_error):
    """(search functions, error handlers): the list and the dict in which
    this interpreter keeps its codec search functions and error handlers
    (found by a self-test: a probe registered is in exactly one list, and
    taken out of it; a probe handler is in exactly one dict, and once it
    is taken out of that dict, the interpreter no longer finds it), each
    None where the self-test fails. Called in the zygote, before any
    prediction and before the heap is frozen (the collector's referrers
    leave out frozen objects)."""
    def probe(name):
        return None

    def probe_handler(error):
        raise error
    path = errors = None
    if unregister is not None:
        register(probe)
        try:
            found = [r for r in gc.get_referrers(probe) if type(r) is list and any(x is probe for x in r)]
        finally:
            unregister(probe)
        if len(found) == 1 and not any(x is probe for x in found[0]):
            path = found[0]
    name = "fitrun.probe"
    try:
        lookup_error(name)
        return path, None  # taken: the name cannot be a probe
    except LookupError:
        pass
    register_error(name, probe_handler)
    found = [r for r in gc.get_referrers(probe_handler) if type(r) is dict and r.get(name) is probe_handler]
    for d in found:
        del d[name]
    try:
        lookup_error(name)
    except LookupError:
        if len(found) == 1:
            errors = found[0]
    return path, errors


class _Registries:
    """Registries of the interpreter and of the standard library that
    honest code adds to, and through which a later prediction would see
    it: what _RecordedRegistrations recorded, when the zygote installed
    it (codec search functions and error handlers, faulthandler's
    signals, exit functions), copyreg's tables (how pickle and copy reduce a type:
    `copyreg.pickle(complex, f)`, `copyreg.dispatch_table[cls] = f`), put
    back by content; and the virtual subclasses of abstract base classes
    (`collections.abc.Sequence.register(cls)`, `numbers.Number.register`),
    which abc's cache token says were added to (but not to which class):
    the process is replaced. Also put back by content: copy's dispatch
    tables, shutil's archive and unpack formats, encodings' aliases and
    lookup cache, numpy's type names and codes and np.ma's fill values,
    and logging's state where the prelude imported logging
    (_logging_state); once anything was, the interpreter's own cache of
    found codecs and the loggers' caches are emptied.
    Also process-wide switches kept in C:
    tracemalloc (started: stopped again), the decimal context of a prelude
    that imported decimal, socket's default timeout and the stack size of
    new threads (put back), and sys.implementation's namespace."""

    def __init__(self, recorded=None, peek=None, counted=False):
        """peek, counted: as _PutBack takes them."""
        import abc
        import copyreg
        self.recorded = recorded
        tables = [copyreg.dispatch_table, copyreg._extension_registry, copyreg._inverted_registry,
                  copyreg._extension_cache]
        # Those of the modules the prelude (or the runtime) imported; a
        # prediction's own import of one is dropped after it. encodings'
        # aliases and its cache of what its search function found (a name
        # not found is cached too) decide what a later lookup of a name
        # finds; numpy's, what np.dtype("name"), np.typecodes and np.ma's
        # fill values give.
        for module, names in (("copy", ("_deepcopy_dispatch", "_copy_dispatch")),
                              ("shutil", ("_ARCHIVE_FORMATS", "_UNPACK_FORMATS")),
                              ("encodings.aliases", ("aliases",)), ("encodings", ("_cache",)),
                              ("numpy", ("sctypeDict", "typecodes")),
                              ("numpy.ma.core", ("default_filler", "max_filler", "min_filler"))):
            namespace = getattr(sys.modules.get(module), "__dict__", None)
            tables += map(namespace.get, names) if type(namespace) is dict else ()
        logging_dicts, logging_lists, self.logger_caches = _logging_state()
        self.tables = _PutBack(tables + logging_dicts, logging_lists, peek, counted)
        self.abc_token = abc.get_cache_token
        self.token = self.abc_token()
        import _tracemalloc
        self.tracemalloc = _tracemalloc
        self.tracing = _tracemalloc.is_tracing()
        dec = sys.modules.get("decimal")  # only the prelude's: a prediction's own import is dropped
        self.decimal = (dec.setcontext, dec.getcontext().copy()) if dec is not None else None
        # And the contexts new ones start from (decimal.DefaultContext.prec
        # = 4 is an idiom), compared by their text.
        self.decimal_templates = [(ctx, ctx.copy(), repr(ctx)) for ctx in
                                  (dec.DefaultContext, dec.BasicContext, dec.ExtendedContext)] \
            if dec is not None else []
        self.impl = (vars(sys.implementation), dict(vars(sys.implementation)))
        import _thread
        self.timeout = (socket.getdefaulttimeout, socket.setdefaulttimeout, socket.getdefaulttimeout())
        self.stack = (_thread.stack_size, _thread.stack_size())

    def restore(self):
        """'', 'put back' (what a prediction had added was let go), or why
        the process cannot run on."""
        why = self.recorded.restore() if self.recorded is not None else ""
        if why.startswith("poisoned"):
            return why
        let_go = why
        if self.tracemalloc.is_tracing() != self.tracing:
            if self.tracing:
                return "poisoned: tracemalloc was stopped"
            self.tracemalloc.stop()
        if self.decimal is not None:
            setcontext, context = self.decimal
            setcontext(context.copy())  # as the zygote had it: precision, rounding, flags, traps
        for ctx, snap, text in self.decimal_templates:
            if repr(ctx) != text:
                for name in ("prec", "rounding", "Emin", "Emax", "capitals", "clamp"):
                    setattr(ctx, name, getattr(snap, name))
                ctx.traps, ctx.flags = dict(snap.traps), dict(snap.flags)
        impl, items = self.impl
        if not _same_items(impl, items):
            return "poisoned: sys.implementation was changed"
        get_timeout, set_timeout, timeout = self.timeout
        if get_timeout() != timeout:
            set_timeout(timeout)
        stack_size, size = self.stack
        if stack_size() != size:
            stack_size(size)
        put = self.tables.restore()
        if put.startswith("poisoned"):
            return put
        if put:
            # What was found under what was put back: the interpreter's
            # cache of found codecs, each logger's of its enabled levels.
            if self.recorded is not None:
                self.recorded.empty_codec_cache()
            for cache in self.logger_caches:
                cache.clear()
        if self.abc_token() != self.token:
            return "poisoned: a class was registered with an abstract base class"
        return put or let_go


class _PutBack:
    """Dicts, lists and sets that honest code adds to and later
    predictions read through, put back by content after each prediction
    (by identity: no __eq__ or __hash__ of theirs runs to compare them).
    The dicts are compared only when their write counter moved
    (_DictVersions; counted: the interpreter's dicts have counters that
    every write moves, peek: the reader), each dict whose counter moved
    and no other, so a prediction that wrote none costs one reading; the
    lists and sets, which have no counter, and the loose dicts, whose
    writes may not move it, are compared every time."""

    def __init__(self, dicts, lists=(), peek=None, counted=False, sets=(), loose=(), slotted=(), partials=(),
                 arrays=(), deques=()):
        """dicts: dicts, or of a subclass of dict (numpy's fill values),
        read and written through dict's own methods; anything else is left
        out, as are lists and sets of a subclass. loose: dicts whose
        counter does not move with every write (an object's attributes on
        Python 3.13). slotted: objects whose slots are put back (_Slots).
        partials: functools.partial objects, whose function, arguments and
        keywords (which its __setstate__ replaces) are put back. arrays:
        numpy arrays, whose bytes are put back (_Arrays). deques: deques
        (a threading.Condition's waiters), compared item by item every
        time: they are few, and their blocks have no reader."""
        self.dicts = [(d, dict(dict.items(d))) for d in dicts if isinstance(d, dict)]
        self.loose = [(d, dict(dict.items(d))) for d in loose if type(d) is dict]
        # A defaultdict's factory is a field in C beside its entries
        # (typing's _overload_registry): put back by identity too.
        self.factories = [(d, _DEFAULT_FACTORY.__get__(d)) for d, _ in self.dicts if type(d) is _DEFAULTDICT]
        self.lists = [(lst, list(lst)) for lst in lists if type(lst) is list]
        # A set's items, and the identities they are compared by (the
        # snapshot holds the items, so no id is reused while it is kept).
        self.sets = [(s, list(s), frozenset(map(id, s))) for s in sets if type(s) is set]
        self.read = _word_reader([id(d) + _DictVersions.OFFSET for d, _ in self.dicts], peek) if counted else None
        self.seen = self.read() if counted else None
        # The lists' items and the sets' tables, read by address in one
        # call each where the sandbox library can (a few µs for thousands
        # of items), else compared in Python.
        self.peek = peek
        self.read_lists = _array_reader([lst for lst, _ in self.lists], list, peek)
        self.lists_seen = _copy(self.read_lists() if self.read_lists is not None else None)
        self.read_sets = _array_reader([st for st, _, _ in self.sets], set, peek)
        self.sets_seen = _copy(self.read_sets() if self.read_sets is not None else None)
        self.slots = _Slots(slotted, peek) if slotted else None
        self.partials = [(p, self._partial_fields(p)) for p in partials if type(p) is _PARTIAL]
        self.partials_seen = self._partials_now()
        # Their three fields also as words (no call per field), where the
        # library reads them and a self-test finds where they lie.
        places = _partial_places() if peek is not None and self.partials else None
        self.read_partials = _word_reader([id(p) + o for p, _ in self.partials for o in places], peek) \
            if places else None
        self.partial_words = self.read_partials() if self.read_partials is not None else None
        self.arrays = _Arrays(arrays, peek) if arrays else None
        self.deques = [(q, list(_DEQUE.__iter__(q))) for q in deques if type(q) is _DEQUE]
        self.collect = gc.collect

    def rebase(self):
        """In a process forked from the one that made this, before its
        first prediction: what changed since (a fork's own handlers write
        some: threading's) is taken again as it is now. Only that: the
        rest is the parent's copy, which this process only reads."""
        # Only the moved entries are replaced: a new list of them all would
        # write every dict's and snapshot's reference count, a
        # copy-on-write fault on each of their pages in this fresh fork
        # (14 ms for 5,800 dicts here).
        moved, self.seen = self._moved(self.seen)
        for i in moved:
            d = self.dicts[i][0]
            self.dicts[i] = (d, dict(dict.items(d)))
        self.loose = [(d, items) if self._same_dict(d, items) else (d, dict(dict.items(d))) for d, items in self.loose]
        if not self._same_lists():
            self.lists = [(lst, items) if self._same_list(lst, items) else (lst, list(lst)) for lst, items in self.lists]
            if self.read_lists is not None and self.read_lists() is None:  # grew past its reader
                self.read_lists = _array_reader([lst for lst, _ in self.lists], list, self.peek)
            self.lists_seen = _copy(self.read_lists() if self.read_lists is not None else None)
        if not self._same_sets():
            self.sets = [(st, items, ids) if self._same_set(st, ids) else (st, list(st), frozenset(map(id, st)))
                         for st, items, ids in self.sets]
            if self.read_sets is not None and self.read_sets() is None:
                self.read_sets = _array_reader([st for st, _, _ in self.sets], set, self.peek)
            self.sets_seen = _copy(self.read_sets() if self.read_sets is not None else None)
        if self.slots is not None:
            self.slots.rebase()
        if self._changed_partials():
            self.partials = [(p, self._partial_fields(p)) for p, _ in self.partials]
            self.partials_seen = self._partials_now()
            if self.read_partials is not None:
                self.partial_words = self.read_partials()
        if self.arrays is not None and not self.arrays.same():
            self.arrays = _Arrays(self.arrays.arrays, self.peek)
        self.deques = [(q, items) if self._same_deque(q, items) else (q, list(_DEQUE.__iter__(q)))
                       for q, items in self.deques]

    def _changed_factories(self):
        """(defaultdict, its factory then) of each whose factory changed."""
        return [(d, f) for d, f in self.factories if _DEFAULT_FACTORY.__get__(d) is not f]

    @staticmethod
    def _partial_fields(p):
        return _PARTIAL_FUNC(p), _PARTIAL_ARGS(p), _PARTIAL_KEYWORDS(p)

    def _partials_now(self):
        """Every partial's function, then every one's arguments, then
        keywords: each read through partial's own descriptor, mapped over
        them all."""
        ps = [p for p, _ in self.partials]
        return list(_chain((map(_PARTIAL_FUNC, ps), map(_PARTIAL_ARGS, ps), map(_PARTIAL_KEYWORDS, ps))))

    def _changed_partials(self):
        """(partial, its fields then) of each whose fields changed."""
        if self.read_partials is not None and self.read_partials.same(self.partial_words):
            return []
        if self.partials_seen is not None and all(map(_is, self._partials_now(), self.partials_seen)):
            return []
        return [(p, was) for p, was in self.partials if not all(map(_is, self._partial_fields(p), was))]

    @staticmethod
    def _same_dict(d, items):
        return dict.__len__(d) == len(items) and all(map(_is, dict.keys(d), items)) and \
            all(map(_is, dict.values(d), items.values()))

    @staticmethod
    def _same_list(lst, items):
        return len(lst) == len(items) and all(map(_is, lst, items))

    @staticmethod
    def _same_deque(q, items):
        return _DEQUE.__len__(q) == len(items) and all(map(_is, _DEQUE.__iter__(q), items))

    def _changed_deques(self):
        return [(q, items) for q, items in self.deques if not self._same_deque(q, items)]

    @staticmethod
    def _same_set(s, ids):
        return len(s) == len(ids) and ids.issuperset(map(id, s))

    def _same_sets(self):
        """Every set holds the objects it held (its table is the one read
        then, or its items are compared: the same items elsewhere in a
        table, after a resize, make this reading the one compared with from
        now on)."""
        now = self.read_sets() if self.read_sets is not None else None
        if now is not None and now == self.sets_seen:
            return True
        same = all(self._same_set(st, ids) for st, _, ids in self.sets)
        if same and now is not None:
            self.sets_seen = _copy(now)
        return same

    def _same_lists(self):
        """Every list holds the objects it held (its reading says so, or
        its items are compared: the same items in a moved array make this
        reading the one compared with from now on)."""
        now = self.read_lists() if self.read_lists is not None else None
        if now is not None and now == self.lists_seen:
            return True
        same = all(self._same_list(lst, items) for lst, items in self.lists)
        if same and now is not None:
            self.lists_seen = _copy(now)
        return same

    def _moved(self, since):
        """The places in self.dicts of the dicts that may have been written
        since the reading `since`: those whose counter moved, or all of
        them where there are no counters; and the reading now."""
        if self.read is None:
            return range(len(self.dicts)), None
        if self.read.same(since):
            return (), since
        now = self.read()
        return (_DictVersions.moved(since, now) if now != since else ()), now

    def _moved_dicts(self, since):
        """The dicts (with their items) of _moved, and the reading now."""
        moved, now = self._moved(since)
        return [self.dicts[i] for i in moved], now

    def restore(self):
        """Put everything back: '' (nothing had changed), 'put back', or
        'poisoned: ...' when what was taken out, once freed, wrote to these
        tables again (its finalizer is the prediction's code: it runs only
        after everything is back, and what it did is then looked at)."""
        keep = []  # what putting back takes out: freed only once everything is back
        dicts, now = self._moved_dicts(self.seen)
        for d, items in _chain((dicts, self.loose)):
            if not self._same_dict(d, items):
                keep.append(dict.copy(d))
                dict.clear(d)
                dict.update(d, items)
        if not self._same_lists():
            for lst, items in self.lists:
                if not self._same_list(lst, items):
                    keep.append(list(lst))
                    lst[:] = items
            if self.read_lists is not None:
                self.lists_seen = _copy(self.read_lists())  # its items' array may have moved, with the same items
        if not self._same_sets():
            for st, items, ids in self.sets:
                if not self._same_set(st, ids):
                    keep.append(set.copy(st))
                    set.clear(st)
                    set.update(st, items)
            if self.read_sets is not None:
                self.sets_seen = _copy(self.read_sets())  # the same items may lie elsewhere in its table
        if self.slots is not None:
            self.slots.restore(keep)
        for d, factory in self._changed_factories():
            keep.append(_DEFAULT_FACTORY.__get__(d))
            _DEFAULT_FACTORY.__set__(d, factory)
        for p, (func, args, keywords) in self._changed_partials():
            keep.append(self._partial_fields(p))
            _PARTIAL_SETSTATE(p, (func, args, keywords, _own_dict(p)))
        for q, items in self._changed_deques():
            keep.append(list(_DEQUE.__iter__(q)))
            _DEQUE.clear(q)
            _DEQUE.extend(q, items)  # they came from it: its maxlen, which no one can change, holds them
        if self.arrays is not None:
            why = self.arrays.restore(keep)
            if why:
                return why
        put = bool(keep)
        if put:
            back = self.read() if self.read is not None else None
            keep.clear()
            self.collect()  # and what a cycle held
            again, _ = self._moved_dicts(back)
            if not all(self._same_dict(d, items) for d, items in _chain((again, self.loose))) or \
                    not self._same_lists() or not self._same_sets() or \
                    (self.slots is not None and self.slots._changed()) or self._changed_partials() or \
                    self._changed_factories() or self._changed_deques() or \
                    (self.arrays is not None and not self.arrays.same()):
                return "poisoned: a table was written to again as it was put back (a finalizer)"
        if self.read is not None:
            # Where nothing was put back, nothing here wrote them: the
            # reading above stands.
            self.seen = self.read() if put else now
        return "put back" if put else ""


_CONTAINERS_LIMIT = 50000


def _module_containers(module_list, user_modules, handled, roots=(), limit=_CONTAINERS_LIMIT):
    """{"dicts", "objects" (objects' dicts), "lists", "sets", "slotted"
    (objects whose classes declare `__slots__`, for _Slots), "partials"
    (functools.partial objects), "arrays" (writable numpy arrays:
    numpy.polynomial's `polyx`), "deques" (the waiters of threading's
    Conditions: its main thread's `_started`)}, each of exactly those types (and the
    dicts of a defaultdict or of a direct subclass of dict made by Python
    code: numpy's `np.nbytes`),
    that the modules of the standard library and of installed packages
    hold, once each: their caches and registries, which honest code adds
    to and a later prediction reads through (re's compiled patterns, the
    finders in sys.path_importer_cache, json's escapes, numpy's tables, a
    module's __all__ and warnings registry), and below them, breadth first,
    what those hold: the containers inside containers and tuples, the
    containers a class of theirs keeps (an Enum's members by value), the
    objects of their classes (a finder in the importers' cache) with their
    attributes' dicts and what those hold (its list of loaders); at most
    `limit` values (what is further is not seen). For _PutBack. Not the
    user's own modules' or their classes' objects (their data is compared,
    and a change replaces the process: _user_data), not the runtime's own,
    not the builtins, not modules, classes and functions (namespaces of
    their own), not the objects a module's globals name (their namespaces
    are checked: _namespaces), and not what handled names by id (checked
    or put back elsewhere: sys.modules, sys.path...). roots: more values
    to start from, after the modules' globals (what their caches hold)."""
    skip = {name for name, _ in user_modules} | {globals()["__name__"]}
    seen = set(handled)
    dicts, objects, lists, sets, slotted, partials, arrays, deques = [], [], [], [], [], [], [], []
    kinds = {dict: dicts, list: lists, set: sets, _DEQUE: deques}
    ndarray = getattr(sys.modules.get("numpy"), "ndarray", None)
    todo = []  # (value, named by a module's globals)
    for name, mod in module_list:
        d = mod.__dict__ if isinstance(mod, types.ModuleType) else None
        if type(d) is not dict or name in skip or d is globals():
            continue
        todo += [(v, True) for key, v in list(d.items()) if key != "__builtins__"]
    todo += [(v, False) for v in roots]
    i = 0
    while i < len(todo) and len(seen) - len(handled) < limit:
        v, top = todo[i]
        i += 1
        t = type(v)
        if id(v) in seen or any(t is a for a in _ATOMS):
            continue
        seen.add(id(v))
        out = kinds.get(t)
        if out is None and _plain_dict_type(t):
            out = dicts
        if t is ndarray:
            arrays.append(v)
            continue
        if t is _PARTIAL:
            # Its function, arguments and keywords are C fields, beside its
            # __dict__ (walked below): its keywords are a dict of its own.
            partials.append(v)
            todo += [(_PARTIAL_ARGS(v), False), (_PARTIAL_KEYWORDS(v), False)]
        if out is not None:
            out.append(v)
            todo += [(x, False) for x in (list(dict.values(v)) if out is dicts else list(v))]
        elif t is tuple or t is frozenset:
            todo += [(x, False) for x in v]
        elif t is staticmethod or t is classmethod:
            todo.append((t.__dict__["__func__"].__get__(v), False))
        elif t is types.FunctionType:
            # Its defaults: a list or dict there is one object for every
            # call (argparse.ArgumentParser's `parents=[]`).
            # And its annotations (a package's: the user's are namespaces).
            if _FUNCTION_MODULE(v) not in skip:
                kw, ann = _FUNCTION_KWDEFAULTS(v), _annotations(v)
                todo += [(x, False) for x in (_FUNCTION_DEFAULTS(v) or ())] + \
                    ([(x, False) for x in dict.values(kw)] if type(kw) is dict else []) + \
                    ([(ann, False)] if ann is not None else [])
        elif isinstance(v, type):
            if _is_heap_type(v) and type.__dict__["__module__"].__get__(v) not in skip:
                todo += [(x, False) for x in list(type.__dict__["__dict__"].__get__(v).values())]
        elif _is_heap_type(t) and not isinstance(v, types.ModuleType) and \
                type.__dict__["__module__"].__get__(t) not in skip:
            places = _slot_places(t)
            if places:
                slotted.append(v)  # at the top level too: no namespace check reads slots
                todo += [(x, False) for _, x in _slots_of(v, t, places) if x is not _UNSET]
            try:
                vd = object.__getattribute__(v, "__dict__")
            except BaseException:
                continue
            if type(vd) is dict:
                if not top and id(vd) not in seen:
                    seen.add(id(vd))
                    objects.append(vd)
                todo += [(x, False) for x in list(vd.values())]
    return {"dicts": dicts, "objects": objects, "lists": lists, "sets": sets, "slotted": slotted,
            "partials": partials, "arrays": arrays, "deques": deques}


def _heap_state(roots=None):
    """Every lock (`_thread.lock`, and `_thread.RLock`: threading's Lock and
    RLock), every `itertools.count` and every foreign function of ctypes
    that an object of the interpreter holds now (roots: only those that
    these objects hold, and the dicts, lists, tuples and sets among their
    values): since Python 3.10, whose collector tracks every kind, those
    among the collector's objects; before, also those that each object it
    tracks refers to, and the untracked containers among those (a dict of
    atomic values and locks). Their state is in C, where no namespace or
    container check sees it: a lock a prediction acquires and leaves held
    would make a later prediction that takes it wait for ever (numpy's
    global RandomState takes its bit generator's lock for every draw, a
    public attribute), and a counter it advances would give a later
    prediction another number than a fork child gets (threading's thread
    names: `threading.Thread().name`). Those a prediction makes and leaves
    somewhere are changes of namespaces or containers, found there; the
    user's own are also compared with their data (_user_data), which
    names them."""
    kinds = {}  # type -> its _STATE_KINDS entry or None (foreign functions are of subclasses): _state_kind's
    found, seen = {}, set()
    todo = gc.get_objects() if roots is None else list(roots)
    descend = (dict, tuple, list) if roots is None else (dict, tuple, list, set, frozenset)
    wanted = {t for t in set(map(type, todo)) if _state_kind(t, kinds) is not None}
    for o in todo:
        if type(o) in wanted:
            found[id(o)] = o
    if roots is None and gc.is_tracked(_thread.allocate_lock()):
        # Every kind is one the collector tracks (locks since 3.10): all
        # are among its objects, no reference needs following.
        return list(found.values())
    # About 300,000 references with arc-dsl's prelude: the type's entry is
    # looked up here, a function called only for a type not seen yet.
    get, referents, tracked = kinds.get, gc.get_referents, gc.is_tracked
    while todo:
        for r in referents(todo.pop()):
            t = type(r)
            kind = get(t, False)
            if kind is False:
                kind = _state_kind(t, kinds)
            if kind is not None:
                found[id(r)] = r
            elif t in descend and id(r) not in seen and (roots is not None or not tracked(r)):
                seen.add(id(r))
                todo.append(r)
    return list(found.values())


def _state_kind(t, cache):
    """The _STATE_KINDS entry of objects of type t, or None (cache: what
    was found for each type so far)."""
    kind = cache.get(t, False)
    if kind is False:
        kind = _STATE_KINDS.get(t)
        if kind is None and isinstance(t, type) and issubclass(t, ctypes._CFuncPtr):
            kind = _STATE_KINDS[ctypes._CFuncPtr]
        cache[t] = kind
    return kind


# What _heap_state finds, and how its state is read: (what it is, what was
# done to it, its readers: each a function of no argument, made of the
# type's own methods and descriptors when _HeapState is made, a C type's
# cannot be replaced). A lock's reader gives a bool, a counter's a str,
# a foreign function's the objects of its fields (ctypes.memmove's
# restype, assigned without an audit event, would reach the next
# prediction that calls it), compared by identity.
_CFUNC_FIELDS = tuple(ctypes._CFuncPtr.__dict__[n].__get__ for n in ("restype", "argtypes", "errcheck"))
_STATE_KINDS = {
    _thread.LockType: ("a lock", "left acquired, or released", lambda o: [o.locked]),
    _thread.RLock: ("a lock", "left acquired, or released", lambda o: [o._is_owned]),
    __import__("itertools").count: ("a counter (itertools.count)", "advanced",
                                    lambda o: [type(o).__repr__.__get__(o)]),
    ctypes._CFuncPtr: ("a foreign function (ctypes)", "given other types",
                       lambda o: [_PARTIAL(get, o) for get in _CFUNC_FIELDS]),
}


class _HeapState:
    """The objects of _heap_state (kept alive by the caller), as they are
    when this is made; changed() says which kind is not: '' or its words.
    Bools and strs are compared by value, everything else by identity (no
    one's __eq__ runs), each group as one comparison."""

    def __init__(self, objs):
        cache = {}
        readers = [(kind, reader) for o in objs for kind in (_state_kind(type(o), cache),) for reader in kind[2](o)]
        states = [reader() for _, reader in readers]
        plain = [type(v) is bool or type(v) is str for v in states]
        self.by_value = [(k, r) for (k, r), p in zip(readers, plain) if p]
        self.by_identity = [(k, r) for (k, r), p in zip(readers, plain) if not p]
        self.value_readers = [r for _, r in self.by_value]
        self.identity_readers = [r for _, r in self.by_identity]
        self.values = [r() for r in self.value_readers]
        self.objects = [r() for r in self.identity_readers]

    def changed(self):
        now = [reader() for reader in self.value_readers]
        if now != self.values:
            return self._which(self.by_value, now, self.values)
        now = [reader() for reader in self.identity_readers]
        if not all(map(_is, now, self.objects)):
            return self._which(self.by_identity, now, self.objects)
        return ""

    @staticmethod
    def _which(readers, now, was):
        kind = next(k for (k, _), a, b in zip(readers, now, was) if not (a is b or (type(a) is str and a == b)))
        return f"{kind[0]} the interpreter's objects hold was {kind[1]}"


class _Arrays:
    """The writable numpy arrays of the standard library's and packages'
    modules (numpy.polynomial's `polyx`, `polydomain`...: a prediction's
    `polyx[0] = 5` would reach every later call that reads it), as a fork
    child finds them: their bytes put back after a prediction that changed
    them; a changed dtype, shape, strides or writeable flag (what numpy
    changes in place: `a.shape = ...`) replaces the process. Only arrays
    whose bytes lie in one block (C-contiguous); compared as one join of
    their buffers, and their fields read through ndarray's own
    descriptors, each mapped over all of them (numpy's C: no one's code
    runs). Where the sandbox library can read them (peek), their C fields
    and bytes are first compared as words (_ArrayWords): a prediction that
    changed none of them costs three reads, not a walk over every field."""

    def __init__(self, arrays, peek=None):
        self.arrays = [a for a in arrays if a.flags.c_contiguous]
        self.getters, self.dtype, self.flags, self.writeable = [], None, None, None  # none to read
        if self.arrays:
            fields = type.__dict__["__dict__"].__get__(type(self.arrays[0]))
            flags = type.__dict__["__dict__"].__get__(type(self.arrays[0].flags))
            self.getters = [fields[name].__get__ for name in ("shape", "strides")]
            self.dtype, self.flags = fields["dtype"].__get__, fields["flags"].__get__
            self.writeable = flags["writeable"].__get__
        self.meta = self._meta()
        self.data = [bytes(memoryview(a).cast("B")) for a in self.arrays]
        self.joined = b"".join(self.data)
        self.peek = peek
        self.words = _ArrayWords.make(self.arrays, peek)

    def _meta(self):
        """Shapes, strides and writeable flags (by value), dtypes (the
        objects)."""
        arrays = self.arrays  # (none: map calls nothing)
        return [list(map(get, arrays)) for get in self.getters] + \
            [list(map(self.writeable, map(self.flags, arrays))), list(map(self.dtype, arrays))]

    def _same_meta(self):
        now = self._meta()
        return now[:-1] == self.meta[:-1] and all(map(_is, now[-1], self.meta[-1]))

    def _same_bytes(self):
        return b"".join(map(memoryview, self.arrays)) == self.joined

    def same(self):
        if self.words is not None and self.words.same():
            return True
        return self._same_bytes() and self._same_meta()

    def restore(self, keep):
        """'' (their bytes put back where they had changed: keep gets a
        mark) or why the process cannot run on."""
        if self.words is not None and self.words.same():
            return ""
        if not self._same_meta():
            return "poisoned: a numpy array of a package's module was reshaped, retyped or made read-only"
        if not self._same_bytes():
            for a, data in zip(self.arrays, self.data):
                view = memoryview(a).cast("B")
                if view != data:
                    view[:] = data
                    keep.append(a)
        # Equal by value now, but not as words (a flag numpy keeps for
        # itself moved, a buffer moved with the same bytes): read again,
        # so that the next check takes the fast path.
        if self.words is not None and not self.words.same():
            self.words = _ArrayWords.make(self.arrays, self.peek)
        return ""


class _ArrayWords:
    """_Arrays' fast path: each array's C fields (numpy's PyArrayObject,
    whose layout numpy has kept since 1.7: after the object header, the
    data pointer, ndim, the shape's and the strides' pointers, the base,
    the dtype, the flags), then the shapes and strides they point to, then
    the arrays' bytes, each read as words in one call of the sandbox
    library's fr_peek_words and compared with a reading taken before any
    prediction. Each reading is taken only when the one before it is
    unchanged: then the blocks it reads are the arrays' own, still
    allocated (a moved shape or data block moves its pointer, or is the
    same block; an unchanged shape leaves the data block its size). Arrays
    whose bytes are not whole aligned words (0-d float16, a bool) are
    compared as bytes, in Python. Used only where a reading of every array
    agrees with what numpy's own descriptors say (make): any other layout
    leaves _Arrays to its fields."""

    OFFSETS = (16, 24, 32, 40, 56, 64)  # data, nd, dimensions, strides, descr, flags
    WRITEABLE = 0x0400  # NPY_ARRAY_WRITEABLE
    MAX_WORDS = 512  # an array's bytes read as words up to 4 KiB: allocated in the heap, never a mapping of its own

    @classmethod
    def make(cls, arrays, peek):
        """An _ArrayWords for these arrays (kept alive by the caller), or
        None: no reader, not a 64-bit CPython, or a reading that does not
        agree with the arrays' fields."""
        if peek is None or not arrays or not _CPYTHON_64:
            return None
        try:
            words = cls(arrays, peek)
            return words if words.agrees() else None
        except Exception:
            return None

    def __init__(self, arrays, peek):
        self.arrays = arrays
        self.read_heads = _word_reader([id(a) + off for a in arrays for off in self.OFFSETS], peek)
        self.heads = self.read_heads()
        head = memoryview(self.heads).cast("Q")
        # Each array's data pointer, ndim, dtype and flags as first read
        # (for agrees), and whether its bytes are read as words.
        self.fields, self.as_words = [], []
        shapes, data = [], []
        for i, a in enumerate(arrays):
            ptr, nd, dims, strides, descr, flags = head[6 * i:6 * i + 6]
            nd &= 0xFFFFFFFF  # an int, then padding
            self.fields.append((ptr, nd, descr, flags))
            shapes += [dims + 8 * k for k in range(nd)] + [strides + 8 * k for k in range(nd)]
            words = a.nbytes % 8 == 0 and ptr % 8 == 0 and a.nbytes // 8 <= self.MAX_WORDS
            self.as_words.append(words)
            if words:
                data += [ptr + 8 * j for j in range(a.nbytes // 8)]
        self.unaligned = [a for a, words in zip(arrays, self.as_words) if not words]
        self.read_shapes, self.read_data = _word_reader(shapes, peek), _word_reader(data, peek)
        self.shapes, self.data = self.read_shapes(), self.read_data()
        self.unaligned_bytes = b"".join(map(memoryview, self.unaligned))

    def agrees(self):
        """Does the first reading say what numpy's fields say?"""
        shapes = memoryview(self.shapes).cast("q")
        at = 0
        for a, (ptr, nd, descr, flags) in zip(self.arrays, self.fields):
            if ptr != a.__array_interface__["data"][0] or nd != a.ndim or descr != id(a.dtype) or \
                    bool(flags & self.WRITEABLE) != a.flags.writeable or \
                    tuple(shapes[at:at + nd]) != a.shape or tuple(shapes[at + nd:at + 2 * nd]) != a.strides:
                return False
            at += 2 * nd
        return b"".join(bytes(memoryview(a).cast("B")) for a, words in zip(self.arrays, self.as_words)
                        if words) == self.data

    def same(self):
        """Every array as it was read first: fields, shape, bytes."""
        return self.read_heads() == self.heads and self.read_shapes() == self.shapes and \
            self.read_data() == self.data and b"".join(map(memoryview, self.unaligned)) == self.unaligned_bytes


# Where objects' fields can be read as 8-byte words at their addresses.
_CPYTHON_64 = sys.implementation.name == "cpython" and ctypes.sizeof(ctypes.c_void_p) == 8


def _places_of(probe, values):
    """The byte offset in the probe (a CPython object, 8-byte words) of the
    field that holds each of values (objects the probe holds, each its
    own), in their order; None where one is not found exactly once."""
    if not _CPYTHON_64:
        return None
    try:
        words = memoryview(ctypes.string_at(id(probe), type(probe).__basicsize__)).cast("Q")
    except (TypeError, ValueError):
        return None
    out = []
    for v in values:
        at = [i for i, w in enumerate(words) if w == id(v)]
        if len(at) != 1:
            return None
        out.append(at[0] * 8)
    return out


_PARTIAL = __import__("functools").partial
_PARTIAL_FUNC, _PARTIAL_ARGS, _PARTIAL_KEYWORDS = (
    type.__dict__["__dict__"].__get__(_PARTIAL)[name].__get__ for name in ("func", "args", "keywords"))
_PARTIAL_SETSTATE = _PARTIAL.__setstate__


def _partial_places():
    """The byte offsets of a functools.partial's function, arguments and
    keywords in it (a self-test on a partial of values of its own), or
    None."""
    def probe():
        pass
    p = _PARTIAL(probe, object(), key=object())
    return _places_of(p, (_PARTIAL_FUNC(p), _PARTIAL_ARGS(p), _PARTIAL_KEYWORDS(p)))


_DEFAULTDICT = __import__("collections").defaultdict
_DEQUE, _ORDERED = __import__("collections").deque, __import__("collections").OrderedDict
_DEFAULT_FACTORY = _DEFAULTDICT.__dict__["default_factory"]


def _plain_dict_type(t):
    """Is t a type of dict whose entries are all its state, to be read and
    written through dict's own methods: collections.defaultdict, or a class
    made by Python code directly on dict (numpy's `_typedict`)? Not an
    OrderedDict: it keeps its order beside its dict."""
    if t is _DEFAULTDICT:
        return True
    mro = type.__dict__["__mro__"].__get__(t)
    return _is_heap_type(t) and len(mro) == 3 and mro[1] is dict and mro[2] is object


def _slot_places(t):
    """(member descriptor, offset) of each slot that the classes of t made
    by Python code declare (`__slots__`), in their layout's order: CPython
    sorts a class's slots by name and puts them after its base's size.
    The offsets are where CPython's 64-bit builds keep them; _Slots checks
    them on each object before it reads one there."""
    out = []
    for c in t.__mro__:
        space = type.__dict__["__dict__"].__get__(c)
        if not _is_heap_type(c) or "__slots__" not in space:
            continue
        base = type.__dict__["__base__"].__get__(c)
        start = type.__dict__["__basicsize__"].__get__(base) if base is not None else 0
        members = [d for d in space.values() if type(d) is _MEMBER]
        out += [(d, start + 8 * k) for k, d in enumerate(members)]
    return out


def _slots_of(v, t, places):
    """(descriptor, value) of each of v's slots (places: _slot_places(t)),
    _UNSET for one not set."""
    out = []
    for d, _ in places:
        try:
            out.append((d, d.__get__(v, t)))
        except AttributeError:
            out.append((d, _UNSET))
    return out


class _Slots:
    """The slots of the standard library's and packages' objects
    (`__slots__`, kept beside the object, where no dict's counter sees
    them: typing.ClassVar's name and the function behind
    typing.Optional[...], an ipaddress constant's address), put back by
    identity after a prediction that changed one, as a fork child finds
    them. Read as words, one per slot (its value's address, 0 when unset),
    in one call, where each object's slots are found at the places CPython
    keeps them (checked on each object now, by the reader itself); the
    others through their classes' own descriptors, every time."""

    def __init__(self, objects, peek=None):
        self.peek = peek
        self.take(objects)

    def take(self, objects):
        taken = []  # (object, its slots' places, (descriptor, value) of each)
        for v in objects:
            places = _slot_places(type(v))
            taken.append((v, places, _slots_of(v, type(v), places)))
        self.objects = taken
        addrs = [id(v) + off for v, places, _ in taken for _, off in places]
        expect = [0 if x is _UNSET else id(x) for _, _, slots in taken for _, x in slots]
        read = _word_reader(addrs, self.peek) if addrs else None
        now = read() if read is not None else None
        words = list(memoryview(now).cast("Q")) if type(now) is bytes else now
        if words != expect:
            read = now = None  # another layout: every slot through its descriptor
        self.read, self.seen = read, now

    def _changed(self):
        """(object, places, slots then) of each object whose slots
        changed."""
        if self.read is not None and self.read() == self.seen:
            return []
        return [(v, places, slots) for v, places, slots in self.objects
                if not all(map(_is, (x for _, x in slots), (x for _, x in _slots_of(v, type(v), places))))]

    def rebase(self):
        """In a forked process, before its first prediction: the slots as
        they are now, where they changed since."""
        if self._changed():
            self.take([v for v, _, _ in self.objects])

    def restore(self, keep):
        """Put back each changed slot (what was there goes into keep: freed
        by the caller once everything is back); True when one was."""
        changed = self._changed()
        for v, places, slots in changed:
            for (d, was), (_, now) in zip(slots, _slots_of(v, type(v), places)):
                if now is was:
                    continue
                keep.append(now)
                if was is _UNSET:
                    d.__delete__(v)
                else:
                    d.__set__(v, was)
        if changed and self.read is not None:
            self.seen = _copy(self.read())
        return bool(changed)


def _logging_state():
    """logging's state, where the prelude imported logging, for _PutBack:
    (dicts, lists, caches): the loggers' manager (`logging.disable`), its
    loggers (those `getLogger` made after it are dropped), each logger's
    attributes (level, propagate, disabled), handlers and filters, those
    handlers' attributes and filters, their formatters' attributes (and
    their styles': the format), the level names (`addLevelName`) and the
    list of handlers to flush at exit; caches: each logger's cache of
    which levels are enabled, to be emptied whenever anything was put
    back. A stream's own state is not among these (sys.stderr's is put
    back with the process's streams).
    Module-level switches (`logging.lastResort`, `raiseExceptions`, the
    logger class) are the logging module's namespace, checked with every
    other."""
    lg = sys.modules.get("logging")
    root = getattr(lg, "root", None)
    manager = getattr(root, "manager", None)
    if lg is None or type(getattr(manager, "loggerDict", None)) is not dict:
        return [], [], []
    loggers = [a for x in [root] + list(manager.loggerDict.values()) if (a := _own_dict(x)) is not None]
    handlers = [a for x in loggers for h in (x.get("handlers") or ()) if (a := _own_dict(h)) is not None]
    dicts = [_own_dict(manager), manager.loggerDict, vars(lg).get("_levelToName"), vars(lg).get("_nameToLevel")]
    formatters = [a for h in handlers if (a := _own_dict(h.get("formatter"))) is not None]
    styles = [a for f in formatters if (a := _own_dict(f.get("_style"))) is not None]
    dicts += loggers + handlers + formatters + styles + [x.get("loggerMap") for x in loggers]
    lists = [x.get(k) for x in loggers + handlers for k in ("handlers", "filters")] + [vars(lg).get("_handlerList")]
    return dicts, lists, [c for x in loggers if type(c := x.get("_cache")) is dict]


def _own_dict(x):
    """x's own attributes (its __dict__, read as object's: no method of
    its class runs) when they are a plain dict, else None."""
    try:
        d = object.__getattribute__(x, "__dict__")
    except BaseException:
        return None
    return d if type(d) is dict else None


def _same_options(now, was):
    """Are two dicts of settings (numpy's print options) the same, each
    value the same object or an equal number, string or bool of exactly
    that type (no __eq__ of anyone's runs)?"""
    if type(now) is not dict or len(now) != len(was):
        return False
    for key, v in was.items():
        x = now.get(key, _UNSET) if type(key) is str else _UNSET
        if x is not v and not (type(x) is type(v) and type(v) in (int, float, str, bool) and x == v):
            return False
    return True


def _same_items(d, items):
    """Does dict d hold exactly items' keys and values, in its order (by
    identity: no __eq__ of theirs runs)?"""
    return len(d) == len(items) and all(map(_is, d, items)) and all(map(_is, d.values(), items.values()))


def _stream_mode(stream):
    """What TextIOWrapper.reconfigure() changes of a text stream (strs and
    bools only), and the fields in C that Python code can assign on it and
    its buffer and raw file (ints and bools: `sys.stdout._CHUNK_SIZE = 1`
    is no one's namespace); None for a stream of another kind."""
    if type(stream) is not io.TextIOWrapper:
        return None
    buffer = getattr(stream, "buffer", None)
    layers = (stream, buffer, getattr(buffer, "raw", None))
    return (stream.encoding, stream.errors, stream.line_buffering, stream.write_through) + \
        tuple(getattr(layer, name, None) for layer in layers for name in ("_CHUNK_SIZE", "_finalizing", "_blksize"))


class _CSettings:
    """Process-wide settings kept in C that Python code changes without an
    audit event and that a later prediction would see: the C locale (what
    `format(x, "n")`, `time.strftime` and `locale` give), the collector's
    debug flags (DEBUG_STATS prints to the next prediction's stderr), the
    signal wakeup descriptor (a byte written to whatever the next
    prediction has on it), faulthandler, dlopen flags, asyncgen hooks and
    the coroutine origin tracking depth. Taken before any prediction and
    put back exactly after each one, through functions bound then."""

    def __init__(self):
        self.setlocale, self.lc_all = _locale.setlocale, _locale.LC_ALL
        self.locale = self.setlocale(self.lc_all, None)
        self.gc_get_debug, self.gc_set_debug = gc.get_debug, gc.set_debug
        self.gc_debug = self.gc_get_debug()
        self.set_wakeup_fd = signal.set_wakeup_fd
        self.wakeup_fd = self.set_wakeup_fd(-1)
        self.set_wakeup_fd(self.wakeup_fd)
        self.fh_enabled, self.fh_disable = faulthandler.is_enabled, faulthandler.disable
        self.fh = self.fh_enabled()
        self.get_dl, self.set_dl = sys.getdlopenflags, sys.setdlopenflags
        self.dl = self.get_dl()
        self.get_depth, self.set_depth = sys.get_coroutine_origin_tracking_depth, \
            sys.set_coroutine_origin_tracking_depth
        self.depth = self.get_depth()
        self.get_hooks, self.set_hooks = sys.get_asyncgen_hooks, sys.set_asyncgen_hooks
        self.hooks = tuple(self.get_hooks())

    def restore(self):
        """'' once everything is back, or why the process cannot run on."""
        if self.setlocale(self.lc_all, None) != self.locale:
            try:
                self.setlocale(self.lc_all, self.locale)
            except BaseException:
                return "poisoned: the C locale was changed"
        if self.gc_get_debug() != self.gc_debug:
            self.gc_set_debug(self.gc_debug)
        self.set_wakeup_fd(self.wakeup_fd)  # one call puts it back: no cheaper to read it first
        put = ""  # 'put back' once what a prediction set (a file, hooks) was let go
        if self.fh_enabled() != self.fh:
            if self.fh:
                return "poisoned: faulthandler was disabled"
            self.fh_disable()
            put = "put back"
        if self.get_dl() != self.dl:
            self.set_dl(self.dl)
        if self.get_depth() != self.depth:
            self.set_depth(self.depth)
        hooks = self.get_hooks()
        if hooks[0] is not self.hooks[0] or hooks[1] is not self.hooks[1]:
            self.set_hooks(firstiter=self.hooks[0], finalizer=self.hooks[1])
            put = "put back"
        return put


class _DictVersions:
    """The write counters of a fixed set of dicts: CPython's per-dict
    version tag (PEP 509, `ma_version_tag`), which every insertion,
    deletion, replacement, update and clear sets to a new value of one
    process-wide counter that only grows, so a dict written since a
    reading never shows that reading again. Reading all of them costs
    a few µs, against walking every entry of every dict (a cold walk of
    arc-dsl's prelude's 24,000 names takes over 1 ms after a prediction).
    Python exposes no such counter, so it is read through memory addresses
    taken before any prediction runs: by fitrun's sandbox library in one
    call, or through one ctypes view per dict (neither is audited; a
    prediction that writes raw memory can forge it, like anything else in
    its process: docs/python-runtime.md, "Raw memory"). Used only where a
    self-test on this very interpreter shows every kind of write to every
    kind of namespace moving it (`kinds` says which kinds of namespace:
    CPython 3.13 keeps an instance's attributes beside its dict and writes
    them without moving it; an interpreter without the counter passes
    none); the dicts are kept alive by the caller, so no address outlives
    its dict."""

    # After the object header (ob_refcnt, ob_type) and ma_used.
    OFFSET = 3 * ctypes.sizeof(ctypes.c_void_p)

    def __init__(self, dicts, peek=None):
        """peek: libfitrun_sandbox's fr_peek_words, which reads every
        counter in one call (about 1 µs for 1,500 dicts, against 30 µs for
        one view each); None (no sandbox library): one view per dict. A
        reading (the counters' bytes, or a list of them) is compared with
        ==."""
        self.n = len(dicts)
        self.read = _word_reader([id(d) + self.OFFSET for d in dicts], peek)
        self.seen = self.read()
        self.head = (None, None)  # only_last_moved's: a reference reading, and all of it but its last counter

    def only_last_moved(self, a, b):
        """Do two readings differ in their last counter alone (sys.modules',
        which _Namespaces counts last)? a: the reference reading, which
        changes only after a walk; what precedes its last counter is cut
        once per reference, and b is compared with it in place (bytes'
        startswith: no copy of b, 35 KB with 4,400 counters)."""
        k = 8 if type(a) is bytes else 1
        if self.head[0] is not a:
            self.head = (a, a[:-k])
        head = self.head[1]
        same_head = b.startswith(head) if type(b) is bytes else b[:-k] == head
        return same_head and b[-k:] != a[-k:]

    @staticmethod
    def moved(a, b):
        """The indices of the counters that differ between two readings.
        Bytes (fr_peek_words'): by halving, each half compared as one
        memcmp, so that a few moved among a thousand cost a few dozen
        comparisons, not a loop over all of them."""
        if type(a) is not bytes:
            return [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        out, todo = [], [(0, len(a) // 8)]
        while todo:
            lo, hi = todo.pop()
            if a[8 * lo:8 * hi] == b[8 * lo:8 * hi]:
                continue
            if hi - lo == 1:
                out.append(lo)
            else:
                mid = (lo + hi) // 2
                todo += [(mid, hi), (lo, mid)]
        return out

    @classmethod
    def kinds(cls):
        """The kinds of namespace ('dict', 'object', 'module', 'class')
        every write to which, on this interpreter, moves the counter, while
        reading does not."""
        if not _CPYTHON_64:
            return set()

        class Probe:
            pass
        obj = Probe()
        obj.a = 1
        mod = types.ModuleType("fitrun_probe")
        mod.a = 1
        Probe.a = 1
        probes = (
            ("dict", {"a": 1}, (
                lambda d: d.__setitem__("a", 2), lambda d: d.__setitem__("b", 3), lambda d: d.__delitem__("b"),
                lambda d: d.update(a=4), lambda d: d.setdefault("c", 5), lambda d: d.pop("c"),
                lambda d: d.popitem(), lambda d: d.clear())),
            ("object", obj.__dict__, (
                lambda _: setattr(obj, "a", 2), lambda _: setattr(obj, "b", 2), lambda _: delattr(obj, "b"))),
            ("module", mod.__dict__, (
                lambda _: setattr(mod, "a", 2), lambda _: setattr(mod, "b", 2), lambda _: delattr(mod, "b"))),
            ("class", gc.get_referents(type.__dict__["__dict__"].__get__(Probe))[0], (
                lambda _: setattr(Probe, "a", 2), lambda _: setattr(Probe, "b", 2), lambda _: delattr(Probe, "b"))))
        return {kind for kind, d, writes in probes if type(d) is dict and cls._moves(d, writes)}

    @classmethod
    def _moves(cls, d, writes):
        try:
            versions = cls([d])
            for write in writes:
                if versions.read() != versions.seen:
                    return False  # moved without a write
                write(d)
                now = versions.read()
                if now == versions.seen:
                    return False
                versions.seen = now
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return False
        return True


def _word_reader(addrs, peek=None):
    """A function that reads the 8-byte words at addrs (taken before any
    prediction runs; the caller keeps what they are in alive): through
    peek (libfitrun_sandbox's fr_peek_words) in one call, as bytes; else
    through one ctypes view each, as a list of ints. A reading is compared
    with ==; no one's __eq__ runs. Its attribute `same(reading)` says
    whether the words are those of a reading, compared where they are read
    (fr_peek_differs) where the library can."""
    n = len(addrs)
    if peek is not None:
        where, out, bytes_ = (ctypes.c_void_p * n)(*addrs), (ctypes.c_uint64 * n)(), bytes
        differs = getattr(peek, "differs", None)

        def read():
            peek(where, out, n)
            return bytes_(out)
        if differs is not None:
            read.same = lambda reading: len(reading) == 8 * n and differs(where, reading, n) == n
        else:
            read.same = lambda reading: read() == reading
        return read
    views = [ctypes.c_uint64.from_address(a) for a in addrs]
    # The value getter of ctypes' own base class, bound now: nothing a
    # prediction sets on a ctypes class is looked up on a read.
    value, list_, map_ = vars(ctypes._SimpleCData)["value"].__get__, list, map

    def read():
        return list_(map_(value, views))
    read.same = lambda reading: read() == reading
    return read


def _copy(reading):
    """A reading kept: bytes of it (None stays None)."""
    return None if reading is None else bytes(reading)


def _array_layout(kind, peek):
    """How this interpreter keeps the items of a list or of a set (kind),
    as fr_peek_arrays takes it: (where the count is, where the address of
    the array, add, mult), in bytes from the object's start, where it lays
    them out as CPython's 64-bit builds do: a list's length and the
    addresses of its items; a set's mask and its table of entries (an
    item's address and its hash each). Checked on a probe, through the
    sandbox library's readers themselves (ctypes' own readers are audited
    calls); else None."""
    if not _CPYTHON_64:
        return None
    items = [object(), object(), object()]
    probe = list(items) if kind is list else set(items)
    # The head: the type, then (list) the length, or (set) fill, used and
    # the mask of its smallest table, 8 entries.
    head = (id(list), 3) if kind is list else (id(set), 3, 3, 7)
    where, words = (ctypes.c_void_p * len(head))(*range(id(probe) + 8, id(probe) + 8 + 8 * len(head), 8)), \
        (ctypes.c_uint64 * len(head))()
    peek(where, words, len(head))
    if tuple(words) != head:
        return None
    layout = (16, 24, 0, 1) if kind is list else (32, 40, 1, 2)
    objs, out = (ctypes.c_void_p * 1)(id(probe)), (ctypes.c_uint64 * 17)()
    k = peek.arrays(objs, 1, *layout, out, 17)
    if kind is list:
        ok = k == 4 and list(out)[:4] == [3] + [id(x) for x in items]
    else:
        entries = {(out[1 + 2 * e], out[2 + 2 * e]) for e in range(8)} - {(0, 0)}
        ok = k == 17 and entries == {(id(x), hash(x) & 0xFFFFFFFFFFFFFFFF) for x in items}
    return layout if ok else None


def _array_reader(objs, kind, peek=None):
    """A function that reads what the lists or sets (kind) `objs` hold
    (kept alive by the caller: a list's length and its items' addresses, a
    set's table) in one call of the sandbox library's fr_peek_arrays, as
    bytes, or None when that is more words than it was made for (they
    grew); a reading that equals another says that every one holds the
    very objects it held then. None where there is no such reader (no
    library, another layout)."""
    layout = _array_layout(kind, peek) if getattr(peek, "arrays", None) is not None and objs else None
    if layout is None:
        return None
    n, arrays = len(objs), peek.arrays
    where = (ctypes.c_void_p * n)(*map(id, objs))
    need = arrays(where, n, *layout, None, 0)  # how many words they take now: none read
    cap = need + need // 4 + 256
    # A bytearray, which compares with a reading's bytes as one memcmp
    # (80 KB in 1 µs; a copy of a ctypes array first costs five times that).
    buf = bytearray(8 * cap)
    out = (ctypes.c_char * len(buf)).from_buffer(buf)

    def read():
        """The reading (this reader's own buffer, overwritten by the next:
        bytes() of it to keep), or None."""
        return buf if arrays(where, n, *layout, out, cap) <= cap else None
    return read


def _own_guard(peek=None):
    """A function that says whether this runtime's own module namespace
    and classes still hold exactly what they held when it was made, by
    identity: the state check calls through them, and a prediction can
    reach the classes (object.__subclasses__()) and write to them without
    any audit event. Through their write counters (one reading) where the
    interpreter keeps them, and entry by entry when one moved; everything
    it calls is bound here."""
    here = globals()
    name = here["__name__"]
    dicts = [here] + [gc.get_referents(c.__dict__)[0] for c in list(here.values())
                      if isinstance(c, type) and c.__module__ == name]
    keys = [list(d) for d in dicts]
    values = [list(d.values()) for d in dicts]
    counted = {"dict", "module", "class"} <= _DictVersions.kinds()
    read = _word_reader([id(d) + _DictVersions.OFFSET for d in dicts], peek) if counted else None
    seen = [read() if read is not None else None]
    len_, all_, map_, is_, values_of, zip_ = len, all, map, _is, dict.values, zip

    def intact():
        now = read() if read is not None else None
        if now is not None and now == seen[0]:
            return True
        for d, k, v in zip_(dicts, keys, values):
            if len_(d) != len_(k) or not all_(map_(is_, d, k)) or not all_(map_(is_, values_of(d), v)):
                return False
        seen[0] = now
        return True
    return intact


class _FrozenHeap:
    """Whether gc.freeze() or gc.unfreeze() ran since it was made, from two
    words: the ends of the collector's permanent generation (CPython's
    doubly linked list of frozen objects, whose head is a `PyGC_Head` in
    the interpreter's state). gc.get_freeze_count() walks that whole list:
    300 µs a call for the arc-dsl prelude's heap on a machine whose memory
    is slow, against 1 µs for two words.

    Made once, before the first prediction: the heap is frozen so that a
    list of this object's own is the first frozen object and another the
    last, and both are held here, so that neither is ever freed (nor
    collected: the permanent generation never is), and no other object can
    take their addresses. Then the head's next word is the first's and its
    previous word the last's, and only these change them: gc.freeze() of
    anything appends it after the last; gc.unfreeze() empties the list (the
    head points at itself), and a gc.freeze() after it puts the objects
    that were young first, before the first. What neither changes: a
    freeze with nothing to freeze, and an unfreeze followed by a freeze
    while nothing else is tracked, which leave the same list. (Frozen
    objects freed in between leave it shorter, as freeing them would.)
    So this is stricter than comparing counts, which would miss a
    prediction that frees some frozen objects and freezes as many of its
    own.

    Where the interpreter is laid out otherwise (not CPython, a
    free-threaded build, pointers not 8 bytes) or the self-test at start
    does not find the list as described, `make` returns None and the
    check counts (gc.get_freeze_count: more frozen objects than at the
    last check, or none, is a freeze or an unfreeze)."""

    # A tracked object's PyGC_Head (next, then previous, whose two low
    # bits are the collector's flags) is the 16 bytes before it.
    HEAD = 16

    def __init__(self, first, last, read):
        self.first, self.last, self.read = first, last, read  # the ends held for the process's life
        self.seen = read()

    @classmethod
    def make(cls, peek=None):
        """Freeze the heap (everything gc.freeze() freezes, and the two
        lists); return the watch, or None (the heap frozen all the same)."""
        if not _CPYTHON_64 or \
                __import__("sysconfig").get_config_var("Py_GIL_DISABLED"):
            gc.freeze()
            return None
        enabled = gc.isenabled()
        gc.disable()  # no collection while the frozen heap is young again: it would write to every object
        try:
            # Nothing may be allocated from here to the first list: once
            # everything is frozen, nothing is young; after unfreeze every
            # tracked object is in the oldest generation and `first` alone
            # in the youngest, which freeze() takes first.
            gc.freeze()
            gc.unfreeze()
            first = []
            gc.freeze()
            last = []
            gc.freeze()
            return cls._found(first, last, peek)
        except (OSError, ValueError, TypeError):
            return None
        finally:
            if enabled:
                gc.enable()

    @classmethod
    def _found(cls, first, last, peek):
        """The watch over the list from `first` to `last`, once the four
        links between them and the head are where they should be and a
        freeze moves the tail; else None."""
        at_first, at_last = id(first) - cls.HEAD, id(last) - cls.HEAD
        head = _word_reader([at_last], peek)()  # the last one's next is the head
        head = int.from_bytes(head, sys.byteorder) if type(head) is bytes else head[0]
        links = _word_reader([at_first + 8, at_last], peek)  # first's previous, last's next: the head
        ends = _word_reader([head, head + 8], peek)
        flat = (lambda r: list(memoryview(r).cast("Q")) if type(r) is bytes else r)
        if [w & ~3 for w in flat(links())] != [head, head] or flat(ends()) != [at_first, at_last]:
            return None
        probe = []
        gc.freeze()  # probe is appended after last: the tail word moves to it
        if flat(ends()) != [at_first, id(probe) - cls.HEAD]:
            return None
        return cls(first, probe, ends)

    def intact(self):
        """Neither gc.freeze() nor gc.unfreeze() ran since this was made."""
        return self.read() == self.seen


class _FunctionFields:
    """What functions keep in fields of their own, not in a dict, and
    Python code assigns without an audit event (the user's, and every
    other module's and its classes': `json.dumps.__name__ = "x"` reached
    every later prediction that read it): `__doc__`,
    `__name__`, `__qualname__`, `__module__`, `__annotations__` and
    `__dict__` (each assigned whole). (Their code and defaults are audited
    writes, which the tripwire reports; their own attributes, their
    annotations' contents and keyword-only defaults are counted dicts:
    _function_namespaces.) Each field holds its value's address, so
    assigning any other object changes its word: the words are read like
    _DictVersions' counters, all in one call. Where the fields are is
    found by a self-test on this interpreter (a probe function given a
    value of its own for each); where one is not found exactly once, none
    is read."""

    ATTRS = ("__doc__", "__name__", "__qualname__", "__module__", "__annotations__", "__dict__")

    def __init__(self, functions, peek=None, builtins=(), held=()):
        """functions: (name, function) of the functions, whose
        __annotations__ and __dict__ have been made (_namespaces); builtins:
        (name, builtin function), whose one field Python code assigns is
        __module__; held: (name, object) of _HELD_TYPES' objects (those of
        a type whose fields are not found are left out)."""
        self.functions, self.builtins = functions, builtins
        self.offsets = self.places() or ()
        self.builtin_offset = self.builtin_place() if self.offsets else None
        if self.builtin_offset is None:
            self.builtins = ()
        self.held_places = _held_places()
        self.held = [(name, obj) for name, obj in held if type(obj) in self.held_places]
        self.read = _word_reader([id(f) + o for _, f in functions for o in self.offsets] +
                                 [id(b) + self.builtin_offset for _, b in self.builtins] +
                                 [id(obj) + o for _, obj in self.held for _, o in self.held_places[type(obj)]],
                                 peek)
        self.seen = self.read()

    @staticmethod
    def builtin_place():
        """The byte offset of a builtin function's __module__ field, or None."""
        places = _FunctionFields._places_in([].append, {"__module__": object()})
        return places[0] if places else None

    @staticmethod
    def _places_in(probe, values):
        """Assign each of values (attribute -> an object of its own) to the
        probe; the byte offset of each one's field in it, in values' order,
        or None where one is not found exactly once."""
        try:
            for attr, v in values.items():
                setattr(probe, attr, v)
        except (TypeError, ValueError, AttributeError):
            return None
        return _places_of(probe, values.values())

    @classmethod
    def places(cls):
        """The byte offset of each of ATTRS' fields in a function object,
        or None."""
        def probe():
            pass
        values = {"__doc__": object(), "__name__": "".join(("fitrun", "_name")),
                  "__qualname__": "".join(("fitrun", "_qualname")), "__module__": object(),
                  "__annotations__": {}, "__dict__": {}}
        return cls._places_in(probe, {attr: values[attr] for attr in cls.ATTRS})

    def which(self):
        """Which field was assigned since the reading seen (once poisoned)."""
        now, seen = self.read(), self.seen
        if type(now) is bytes:
            now, seen = memoryview(now).cast("Q"), memoryview(seen).cast("Q")
        k = len(self.offsets)
        for i, (name, _) in enumerate(self.functions):
            for j, attr in enumerate(self.ATTRS):
                if now[i * k + j] != seen[i * k + j]:
                    return f"function {name}'s {attr} was assigned"
        at = k * len(self.functions)
        for i, (name, _) in enumerate(self.builtins):
            if now[at + i] != seen[at + i]:
                return f"builtin {name}'s __module__ was assigned"
        at += len(self.builtins)
        for name, obj in self.held:
            for field, _ in self.held_places[type(obj)]:
                if now[at] != seen[at]:
                    return f"{name}'s {field} was changed" if type(obj) is not types.CellType else \
                        f"{name} was assigned"
                at += 1
        return "a function's field was assigned"


# The objects whose fields, kept in C, Python code changes in place with
# no audited write and no dict written: a closure's cell (its
# cell_contents is writable), and a staticmethod, classmethod or property,
# whose __init__ can be called again on it (numpy's
# `AxisConcatenator.__dict__["concatenate"].__init__(f)`). Each field
# holds its value's address.
_HELD_TYPES = (types.CellType, staticmethod, classmethod, property)


def _held_places():
    """{type: ((field, byte offset), ...)} for each of _HELD_TYPES whose
    fields a self-test on this interpreter finds (a probe of each type
    given a value of its own for each field), each exactly once."""
    def probe():
        pass
    a, b, c, d = object(), object(), object(), object()
    probes = {types.CellType: (types.CellType(a), ("cell_contents",), (a,)),
              staticmethod: (staticmethod(probe), ("function",), (probe,)),
              classmethod: (classmethod(probe), ("function",), (probe,)),
              property: (property(a, b, c, d), ("fget", "fset", "fdel", "__doc__"), (a, b, c, d))}
    out = {}
    for t, (obj, fields, values) in probes.items():
        places = _places_of(obj, values)
        if places is not None:
            out[t] = tuple(zip(fields, places))
    return out


def _namespace_kind(name):
    """The kind of a namespace by its _namespaces name: 'module NAME',
    'class NAME', 'object NAME'; anything else is a plain dict."""
    kind = name.split(" ", 1)[0]
    return kind if kind in ("module", "class", "object") else "dict"


_chain = __import__("itertools").chain.from_iterable
_accumulate = __import__("itertools").accumulate
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by Python code, whose namespace can change


def _is_heap_type(cls):
    return bool(type.__dict__["__flags__"].__get__(cls) & _HEAPTYPE)


def _user_modules(module_list):
    """(name, module) of the user's own modules: the prelude and every
    module loaded from outside the interpreter's installation (sys.prefix,
    sys.base_prefix: the stdlib and site-packages)."""
    roots = tuple({os.path.join(p, "") for p in (sys.prefix, sys.base_prefix)})
    for name, mod in module_list:
        if not isinstance(mod, types.ModuleType) or type(mod.__dict__) is not dict:
            continue
        f = mod.__dict__.get("__file__")
        if name == "fitrun_prelude" or (type(f) is str and not os.path.realpath(f).startswith(roots)):
            yield name, mod


_DATA_TYPES = (list, dict, set, bytearray, tuple, frozenset)


_NESTED_LIMIT = 20000


def _nested(user_modules, limit=_NESTED_LIMIT):
    """(path, value) of what the user's own modules keep below their top
    level, where no module's namespace holds it: the items of each
    container a module's globals (or a plain object's or a class of theirs'
    namespace there) hold whose contents are not all plain data (those are
    compared whole, as marshal's form), the namespaces' values of the plain
    objects of the user's own classes among them and the slots of slotted
    ones, and so on down; each
    value once, breadth first, at most `limit` of them (what is deeper is
    not seen). Modules, classes and functions are not entered: they are
    namespaces of their own. Read with the containers' base types' own
    methods (_plain), so no one's code runs. `REG = {"a": Obj()}`: Obj()
    and its attributes."""
    own = {name for name, _ in user_modules}
    todo, seen, out = [], set(), []

    def enter(path, v):
        """Queue what v holds, if it holds anything that can change."""
        p = _plain(v)
        if p is not None:
            if _immutable(p):
                return
            try:
                marshal.dumps(p)
                return  # plain data all the way down: compared whole
            except ValueError:
                pass
            items = p.items() if type(p) is dict else enumerate(p) if type(p) in (list, tuple) else \
                ((None, x) for x in p)
            for k, x in items:
                todo.append((f"{path}[{k!r}]" if k is not None else f"{path}[...]", x))
            return
        # Objects of the user's own classes only: the standard library's
        # (a logging handler's formatter) are put back where they can be
        # (_Baseline._restore_process), which a namespace found here would
        # pre-empt by replacing the process.
        if getattr(type(v), "__module__", None) not in own:
            return
        kind, space = _held_namespace(v)
        if kind == "object":
            for k, x in list(space.items()):
                todo.append((f"{path}.{k}", x))
        if _is_heap_type(type(v)) and not isinstance(v, type):
            for i, x in enumerate(_slot_values(v, type(v))):
                todo.append((f"{path}'s slot {i + 1}", x))

    for mname, mod in user_modules:
        for key, v in list(mod.__dict__.items()):
            if key.startswith("__") and key.endswith("__"):
                continue
            seen.add(id(v))
            enter(f"{mname}.{key}", v)
            kind, space = _held_namespace(v)
            if kind == "class" and space.get("__module__") in own:
                for k, x in list(space.items()):
                    if not (k.startswith("__") and k.endswith("__")) and id(x) not in seen:
                        seen.add(id(x))
                        enter(f"{mname}.{key}.{k}", x)
    i = 0
    while i < len(todo) and len(out) < limit:
        path, v = todo[i]
        i += 1
        if id(v) in seen or isinstance(v, (types.ModuleType, type)) or type(v) in _FUNCTION_TYPES or \
                any(type(v) is a for a in _ATOMS):
            continue
        seen.add(id(v))
        out.append((path, v))
        enter(path, v)
    return out


def _user_data(user_modules, nested=None, cells=True):
    """(name, value, snapshot) of the data the user's own modules share with
    every prediction: containers and numpy arrays, whose contents an
    identity check cannot see (an in-place sort of a prelude's list, an
    entry added to its dict), held at a module's top level, in the
    namespace of a plain object it names there or of a class of its own (a
    class's cache, an object's list), or as a default of one of its
    functions or of such a class's methods (`def f(x, memo={})`: one dict
    for every call). A snapshot is the marshal form of plain data, an
    array's bytes, or else the container's own items (by identity).
    Tuples and frozensets of nothing but numbers, strings, bytes, None and
    such tuples and frozensets are left out: nothing can change them in
    place (arc-dsl's 26 direction constants: 20 µs a check). nested:
    _nested's walk of the modules, where the caller has it. cells: also
    what each of their functions' closure cells holds, by identity (where
    _FunctionFields does not read the cells' words)."""
    np = sys.modules.get("numpy")
    ndarray = getattr(np, "ndarray", None)
    own = {name for name, _ in user_modules}
    out, seen = [], set()

    def add(name, v):
        if id(v) in seen:
            return
        p = _plain(v)
        if p is not None:
            if _immutable(p):
                return
            snap = _data_snapshot(v)
        elif ndarray is not None and type(v) is ndarray:
            snap = _data_snapshot(v)
        else:
            snap = _state_snapshot(v)  # what _data_snapshot would take of it: taken once
            if snap is None:
                return
        seen.add(id(v))
        if snap is not None:
            out.append((name, v, snap))

    def add_defaults(name, f):
        if type(f) in (staticmethod, classmethod):
            f = f.__func__
        if type(f) is types.FunctionType and f.__module__ in own:
            for i, d in enumerate(f.__defaults__ or ()):
                add(f"{name}'s default {i + 1}", d)
            for k, d in (f.__kwdefaults__ or {}).items():
                add(f"{name}'s default {k}", d)
            # Its own attributes (a cache the prelude keeps on it).
            for k, d in list(_FUNCTION_DICT(f).items()):
                if type(k) is str and not (k.startswith("__") and k.endswith("__")):
                    add(f"{name}.{k}", d)
            # What it closes over (a decorator's cache, a counter): the
            # variable's value, by identity, and that value's contents.
            for var, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
                try:
                    v = cell.cell_contents
                except ValueError:
                    continue  # not bound yet
                if cells and id(cell) not in seen:
                    seen.add(id(cell))
                    out.append((f"{name}'s variable {var}", cell, ("cell", v)))
                add(f"{name}'s variable {var}", v)

    def add_namespace(name, space):
        for key, v in list(space.items()):
            if not (key.startswith("__") and key.endswith("__")):
                add(f"{name}.{key}", v)
                add_defaults(f"{name}.{key}", v)

    for mname, mod in user_modules:
        for key, v in list(mod.__dict__.items()):
            if key.startswith("__") and key.endswith("__"):
                continue
            name = f"{mname}.{key}"
            add(name, v)
            add_defaults(name, v)
            kind, space = _held_namespace(v)
            if kind == "object" or (kind == "class" and space.get("__module__") in own):
                add_namespace(name, space)
    for name, v in _nested(user_modules) if nested is None else nested:
        add(name, v)
    return out


_ATOMS = (int, float, complex, bool, str, bytes, type(None))
# Functions and methods: namespaces of their own (_function_namespaces).
_FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def _user_generators(user_modules):
    """A function that puts back, as it is now, each random number
    generator the user's own modules' globals name: a random.Random (or a
    subclass's instance; its C state), numpy's Generator (its bit
    generator's state) and RandomState. Their state is kept in C, where no
    check sees it change; a fork child starts every prediction from the
    state they had before the first one, and so does a reused process once
    they are put back. Called before any prediction; the functions run
    only once modules and builtins are known intact."""
    import _random
    getstate, setstate, set_attr = _random.Random.getstate, _random.Random.setstate, setattr
    npr = getattr(sys.modules.get("numpy"), "random", None)
    generator, randomstate = getattr(npr, "Generator", None), getattr(npr, "RandomState", None)
    reseeded = getattr(sys.modules.get("random"), "_inst", None)  # random's own: reseeded, as after a fork
    out = []
    for _, mod in user_modules:
        for v in list(mod.__dict__.values()):
            t = type(v)
            if v is reseeded:
                continue
            if issubclass(t, _random.Random):
                out.append(lambda v=v, state=getstate(v): setstate(v, state))
            elif generator is not None and t is generator:
                out.append(lambda bg=v.bit_generator, state=v.bit_generator.state: set_attr(bg, "state", state))
            elif randomstate is not None and t is randomstate:
                out.append(lambda v=v, state=v.get_state(): v.set_state(state))
    return out


def _user_caches(user_modules, found=()):
    """One function per functools.lru_cache (or cache) that the user's own
    modules' globals name, or a class of theirs holds, or that is among
    found (the user's own that _lru_caches found elsewhere: in a
    decorator's closure), called after each prediction: '', 'put back' or
    why the process cannot run on. Its values are the
    ones a prediction got, which it may have changed in place
    (`palette().append(9)`: the next call would return the changed list),
    and its hits and misses are state the next prediction can read
    (`cache_info()`). One that no call had filled before the first
    prediction is emptied again after a prediction that called it: a fork
    child finds it empty. One the prelude filled cannot be put back (its
    values are kept in C, and cannot be read back without an audited
    call): a prediction that called it (its cache_info() moved) has its
    process replaced. Called before any prediction, with the cache's own
    methods bound then."""
    wrapper = _LRU_WRAPPER
    if not isinstance(wrapper, type):
        return []
    info, clear = wrapper.cache_info, wrapper.cache_clear
    own = {name for name, _ in user_modules}
    out, seen = [], set()
    for mod_name, mod in user_modules:
        values = list(mod.__dict__.values())
        for v in list(values):
            kind, space = _held_namespace(v)
            if kind == "class" and space.get("__module__") in own:
                values += [w.__func__ if type(w) in (staticmethod, classmethod) else w for w in space.values()]
        for v in values:
            if type(v) is wrapper and id(v) not in seen:
                seen.add(id(v))
                out.append(_cache_watch(v, info, clear, f"{mod_name}.{getattr(v, '__qualname__', '?')}"))
    for v in found:
        if id(v) not in seen:
            seen.add(id(v))
            attrs = _own_dict(v) or {}
            out.append(_cache_watch(v, info, clear, f"{attrs.get('__module__')}.{attrs.get('__qualname__', '?')}"))
    return out


def _lru_caches(user_modules):
    """(library, user): every functools.lru_cache (or cache) wrapper the
    interpreter holds, found through the collector (most are named by no
    namespace: typing's are in its functions' closures), split by the
    module their function came from (its __module__): the user's own
    modules', and everyone else's. Only in the zygote, before its heap is
    frozen (gc.get_objects does not list frozen objects) and before any
    prediction has run."""
    wrapper = _LRU_WRAPPER
    if not isinstance(wrapper, type):
        return [], []
    own = {name for name, _ in user_modules} | {globals()["__name__"]}
    library, user = [], []
    for o in gc.get_objects():
        if type(o) is wrapper:
            module = (_own_dict(o) or {}).get("__module__")
            (user if type(module) is str and module in own else library).append(o)
    return library, user


def _cached_values(caches):
    """(values, dicts) of the caches: what their entries hold (keys and
    values), to be put back with the standard library's containers (a
    typing.List[int] given another name), and the caches' own dicts, which
    must never be (a bounded cache's entries are also linked in C, in an
    order a dict put back would not match). Read through the collector
    (gc.get_referents: a cache's entries, or its dict), before any
    prediction."""
    values, dicts = [], []
    for c in caches:
        own = _own_dict(c)
        for r in gc.get_referents(c):
            if type(r) is dict:
                if r is not own:
                    dicts.append(r)
                    values += list(dict.values(r))  # an unbounded cache's values; a bounded one's links
            elif not isinstance(r, type) and type(r) not in _FUNCTION_TYPES:
                values.append(r)
    return values, dicts


class _LibraryCaches:
    """The functools.lru_cache (and cache) wrappers of the standard library
    and of packages (_lru_caches: typing's, which give one typing.List[int]
    to every caller; fnmatch's, ipaddress's), each emptied after a
    prediction that added to it (its misses or its size moved): an entry a
    prediction made (typing.Dict[str, int], then given another `_name`)
    is what a later prediction's call would return; a fork child finds
    only the zygote's. Those stay while no prediction adds to the cache,
    and the objects among them are put back with the standard library's
    containers (_cached_values); once a cache is emptied, a later call
    computes its value again: an equal value, not the same object. Hits
    alone add nothing. The caches' own methods, bound before any
    prediction."""

    def __init__(self, caches):
        t = _LRU_WRAPPER
        self.info, self.clear = (t.cache_info, t.cache_clear) if isinstance(t, type) else (None, None)
        self.caches = [[c, self._mark(c)] for c in caches] if self.info is not None else []

    def _mark(self, cache):
        """Its misses and its size."""
        info = self.info(cache)
        return info[1], info[3]

    def empty(self):
        """'' or 'put back' (a cache was emptied)."""
        put = ""
        for entry in self.caches:
            if self._mark(entry[0]) != entry[1]:
                self.clear(entry[0])
                entry[1] = (0, 0)
                put = "put back"
        return put


def _cache_watch(cache, info, clear, name):
    """_user_caches' function for one cache: empties it again, or says
    that the prelude's own was called."""
    was = info(cache)
    if was[0] == was[1] == was[3] == 0:  # hits, misses, size
        def emptied():
            if info(cache) != was:
                clear(cache)
                return "put back"
            return ""
        return emptied
    why = f"poisoned: {name}, a cache the prelude filled, was called"
    return lambda: "" if info(cache) == was else why


def _immutable(v, depth=0):
    """Plain data that nothing can change in place: an atom of exactly one
    of those types (a subclass's instance may carry attributes), or a tuple
    or frozenset of such (nested at most 50 deep)."""
    t = type(v)
    if any(t is a for a in _ATOMS):
        return True
    return (t is tuple or t is frozenset) and depth < 50 and all(_immutable(x, depth + 1) for x in v)


# How the contents of a container of a subclass of a plain type (a
# Counter, a defaultdict, an OrderedDict, a namedtuple) or of a deque are
# read: through the base type's own methods, as that plain type, so that
# no method of the subclass runs. An OrderedDict's order is its own, not
# its dict's (move_to_end changes only the former).
_PLAIN_COPIES = ((_ORDERED, lambda v: dict(_ORDERED.items(v))), (dict, lambda v: dict(dict.items(v))),
                 (list, lambda v: list(list.__iter__(v))),
                 (set, lambda v: set(set.__iter__(v))), (frozenset, lambda v: frozenset(frozenset.__iter__(v))),
                 (tuple, lambda v: tuple(tuple.__iter__(v))), (_DEQUE, lambda v: list(_DEQUE.__iter__(v))))


def _plain(v):
    """v when it is of one of _DATA_TYPES; its contents as such plain data
    when it is a container of a subclass of one, or a deque; else None."""
    t = type(v)
    if t in _DATA_TYPES:
        return v
    for base, copy in _PLAIN_COPIES:
        if issubclass(t, base):
            return copy(v)
    return None


_ARRAY, _COUNT = __import__("array").array, __import__("itertools").count
_LOCKS = (type(__import__("_thread").allocate_lock()), __import__("_thread").RLock)
_COUNT_TEXT = re.compile(r"count\((-?[0-9.e+]+)(, -?[0-9.e+]+)?\)")


def _state_snapshot(v):
    """The state of an object of the standard library that keeps it in C,
    not in a dict, and whose state can be read without running anyone's
    code: an array.array's items, an io.StringIO's or io.BytesIO's text
    and position, where an itertools.count of numbers stands, whether a
    lock is held (a prelude's lock left acquired would block the next
    prediction). Exactly these types (a subclass's methods could be
    anyone's); and the slots of an object of a class made by Python code
    (`__slots__`: no dict holds them). None for anything else."""
    t = type(v)
    if t is _ARRAY:
        return ("array.array", v.typecode, v.tobytes())
    if t is io.StringIO or t is io.BytesIO:
        return ("stream", True) if v.closed else ("stream", False, v.getvalue(), v.tell())
    if t is _COUNT:
        text = repr(v)  # count(5) or count(5, 2): numbers, whose repr is C's
        return ("count", text) if _COUNT_TEXT.fullmatch(text) else None
    if t in _LOCKS:
        # A plain lock: held or not. An RLock: its owner and depth, in its
        # repr ("<unlocked _thread.RLock object owner=0 count=0 at 0x...>").
        return ("lock", v.locked()) if t is _LOCKS[0] else ("lock", repr(v))
    if _is_heap_type(t):
        slots = _slot_values(v, t)
        if slots:
            return ("items", slots)  # by identity, as a container's items
    return None


_MEMBER, _UNSET = types.MemberDescriptorType, object()


def _slot_values(v, t):
    """The values of v's slots (the `__slots__` its classes declare, which
    keep their values beside the object, not in a dict), read through the
    classes' own member descriptors (C: no one's code runs), _UNSET for one
    not set; [] when its classes declare none."""
    out = []
    for c in t.__mro__:
        if not _is_heap_type(c):
            continue
        for d in type.__dict__["__dict__"].__get__(c).values():
            if type(d) is _MEMBER:
                try:
                    out.append(d.__get__(v, t))
                except AttributeError:
                    out.append(_UNSET)
    return out


def _data_snapshot(v):
    p = _plain(v)
    if p is None:
        state = _state_snapshot(v)
        if state is not None:
            return state
        # A numpy array; of its flags, only writeable can be set either way.
        return ("array", v.dtype.str, v.shape, v.strides, v.flags.writeable, v.tobytes())
    try:
        return ("marshal", marshal.dumps(p))
    except ValueError:  # holds something that is not plain data
        t = type(p)
        if t is tuple or t is frozenset:
            return None  # its own items cannot change
        return ("items", list(_chain(p.items())) if t is dict else list(p))


def _same_data(v, snap):
    """v still holds what its snapshot says. Called only once modules and
    builtins are known intact (marshal, numpy's methods: the originals)."""
    if snap[0] == "cell":
        try:
            return v.cell_contents is snap[1]
        except ValueError:
            return False
    now = _data_snapshot(v)
    if now is None or now[0] != snap[0]:
        return False
    if now[0] == "items":
        return len(now[1]) == len(snap[1]) and all(map(_is, now[1], snap[1]))
    return now == snap


def _namespaces(module_list, owners, own=(), functions=None, nested=None, library=None, builtin=None,
                held=None, enclosed=None):
    """(name, namespace) of every module, of each class and plain object a
    module's globals hold, and of each function a module's globals or such
    a class hold (_function_namespaces), once each (by identity): the dicts
    (a class's: its mappingproxy) a later prediction reads through.
    owners: filled with the id of each module, class, object, function and
    function's dict. own: the names of the user's own modules, whose
    classes' functions are taken too (not those of the standard library's
    or a package's classes); functions: filled with (name, function) of
    each function of theirs; nested: _nested's walk of the user's modules,
    where the caller has it; library: filled with (name, function) of every
    other function a module's globals or a class of theirs hold (their
    fields: _FunctionFields), their own dict and annotations made now, so
    that reading them later does not change their fields; builtin: with
    (name, builtin function) of those a module's globals hold; held: with
    (name, object) of the objects whose fields in C a prediction can
    change in place with no audited write (_HELD_TYPES: a function's
    closure cells, a class's staticmethods, classmethods and properties,
    whose __init__ can be called again). What a function closes over, and
    what a property's accessors are, are taken as a module's globals
    would be (numpy's public functions close over their implementation):
    its functions, classes and plain objects, and so on down; enclosed:
    filled with the lists, sets and dicts that the library's functions
    close over (numpy's and reprlib's guards against recursive reprs), and
    that the library's plain objects found there hold (singledispatch's
    caches), to be put back as the library's containers are (not the
    runtime's own: its recording wrappers' lists are its to empty)."""
    out = []
    taken = set()  # the library's functions and builtins, once each
    kept = set()  # the ids of what went to held or enclosed, once each

    def take_held(name, obj):
        if held is not None and id(obj) not in kept:
            kept.add(id(obj))
            held.append((name, obj))

    def take_enclosed(v):
        if enclosed is not None and type(v) in (list, set, dict) and id(v) not in kept:
            kept.add(id(v))
            enclosed.append(v)

    def take_inner(name, v, mine, runtime=False):
        """A value reached through a function's cell or a property's
        accessor, which no namespace names: its namespaces, as a global's;
        and the containers a library's object there holds (a
        singledispatch function's cache: a dict in the WeakKeyDictionary
        its dispatch function closes over)."""
        f = _function_of(v)
        if f is not None and id(f) not in owners:
            take_function(name, f, mine)
            if type(v) is not types.FunctionType:
                take_held(name, v)
        kind, space = _held_namespace(v)
        if space is not None and id(v) not in owners:
            add(f"{kind} {name}", v, space)
            if kind == "class":
                add_functions(name, space, mine and space.get("__module__") in own)
            elif not runtime and type.__dict__["__module__"].__get__(type(v)) not in own:
                for x in list(dict.values(space)):
                    take_enclosed(x)

    def take_function(name, f, mine):
        theirs = mine and f.__module__ in own
        for what, obj, d in _function_namespaces(name, f, theirs):
            add(what, obj, d)
        if theirs and functions is not None:
            functions.append((name, f))
            taken.add(id(f))
        elif not theirs:
            take_library(name, f)
        runtime = f.__module__ == __name__  # its recording wrappers' lists are its own to empty
        for var, cell in zip(_FUNCTION_CODE(f).co_freevars, _FUNCTION_CLOSURE(f) or ()):
            if id(cell) in kept:
                continue
            take_held(f"{name}'s variable {var}", cell)
            try:
                inner = _CELL_CONTENTS(cell)
            except ValueError:
                continue  # not bound yet
            if type(inner) in (list, set, dict):
                if not theirs and not runtime:
                    take_enclosed(inner)
                continue
            take_inner(f"{name}'s variable {var}", inner, mine, runtime)

    def take_library(name, v):
        f = _function_of(v)
        if f is not None and id(f) not in taken and library is not None:
            taken.add(id(f))
            _FUNCTION_DICT(f)
            _annotations(f)
            library.append((name, f))
        elif type(v) is types.BuiltinFunctionType and id(v) not in taken and builtin is not None:
            taken.add(id(v))
            builtin.append((name, v))

    def add(name, obj, space):
        if id(obj) not in owners:
            owners.add(id(obj))
            out.append((name, space))

    def add_functions(name, space, mine):
        for key, v in list(space.items()):
            f = _function_of(v)
            t = type(v)
            if f is None and t is _LRU_WRAPPER and (attrs := _own_dict(v)) is not None:
                add(f"function {name}.{key}", v, attrs)  # a functools.lru_cache's own attributes
            if t is staticmethod or t is classmethod:
                take_held(f"{name}.{key}", v)
            elif t is property:
                take_held(f"{name}.{key}", v)
                for accessor in (v.fget, v.fset, v.fdel):
                    if accessor is not None:
                        take_inner(f"{name}.{key}'s accessor", accessor, mine)
            if f is not None and id(f) not in owners:
                take_function(f"{name}.{key}", f, mine)
            if not mine:
                take_library(f"{name}.{key}", v)

    for name, mod in module_list:
        d = mod.__dict__ if isinstance(mod, types.ModuleType) else None
        if type(d) is not dict:
            continue
        add(f"module {name}", mod, d)
        mine = name in own
        add_functions(name, d, mine)
        for key, v in list(d.items()):
            kind, space = _held_namespace(v)
            if space is not None:
                add(f"{kind} {name}.{key}", v, space)
                if kind == "class":  # its methods' dicts, as a module's functions'
                    add_functions(f"{name}.{key}", space, mine and space.get("__module__") in own)
    # The plain objects the user's own modules keep inside their data
    # (`REG = {"a": Obj()}`): their namespaces too.
    if nested is None:
        nested = _nested([(name, mod) for name, mod in module_list if name in own and
                          isinstance(mod, types.ModuleType)])
    for path, v in nested:
        kind, space = _held_namespace(v)
        if kind == "object":
            add(f"object {path}", v, space)
    return out


_FUNCTION_DICT = types.FunctionType.__dict__["__dict__"].__get__  # made where there is none
_FUNCTION_DEFAULTS, _FUNCTION_KWDEFAULTS, _FUNCTION_MODULE = (
    types.FunctionType.__dict__[name].__get__ for name in ("__defaults__", "__kwdefaults__", "__module__"))
_FUNCTION_ANNOTATIONS = types.FunctionType.__dict__["__annotations__"].__get__  # likewise
_FUNCTION_CODE, _FUNCTION_CLOSURE = (types.FunctionType.__dict__[name].__get__ for name in ("__code__", "__closure__"))
_CELL_CONTENTS = types.CellType.__dict__["cell_contents"].__get__
_STRUCT_FORMAT = struct.Struct.__dict__["format"].__get__


def _annotations(f):
    """f's annotations dict, made now where there is none; None when it is
    not a dict or cannot be had (from Python 3.14 they are evaluated now,
    which may raise)."""
    try:
        ann = _FUNCTION_ANNOTATIONS(f)
    except Exception:
        return None
    return ann if type(ann) is dict else None


_LRU_WRAPPER = getattr(__import__("functools"), "_lru_cache_wrapper", None)


def _function_of(v):
    """The function v is (or a staticmethod or classmethod wraps), or None."""
    t = type(v)
    if t is staticmethod or t is classmethod:
        v = t.__dict__["__func__"].__get__(v)
    return v if type(v) is types.FunctionType else None


def _function_namespaces(name, f, mine):
    """(name, owner, dict) of the dicts a function keeps beside its
    module's namespace, through which a later prediction would see what a
    prediction left: its own attributes (`objects.memo = {}`, `np.pad.cache
    = {}`; the dict is made now where there is none, so that the first
    attribute set is a write to a counted dict), its keyword-only defaults
    (`helper.__kwdefaults__["k"] = 5`: assigning them is audited, changing
    them in place is not), a singledispatch function's registry (what
    `register` adds to; its cache is cleared by each registration), and,
    for a function of the user's own modules (mine), its annotations."""
    attrs = _FUNCTION_DICT(f)
    out = [(f"function {name}", f, attrs)]
    kw = f.__kwdefaults__
    if type(kw) is dict:
        out.append((f"dict {name}.__kwdefaults__", kw, kw))
    registry = attrs.get("registry")
    if type(registry) is types.MappingProxyType and type(attrs.get("register")) is types.FunctionType:
        real = gc.get_referents(registry)
        if len(real) == 1 and type(real[0]) is dict:
            out.append((f"dict {name}.registry", real[0], real[0]))
    if mine and (ann := _annotations(f)) is not None:
        out.append((f"dict {name}.__annotations__", ann, ann))
    return out


def _held_namespace(v):
    """(kind, namespace) of a value a module holds whose namespace a
    later prediction reads through: a class made by Python code ('class',
    its mappingproxy) or a plain object ('object', its __dict__: one of a
    class made by Python code, callable or not, or a types.SimpleNamespace,
    such as sys.implementation); else (None, None). Modules are namespaces
    of their own."""
    if isinstance(v, types.ModuleType):
        return None, None
    if isinstance(v, type):
        return ("class", type.__dict__["__dict__"].__get__(v)) if _is_heap_type(v) else (None, None)
    if type(v) is types.SimpleNamespace:  # not made by Python code, but its attributes are a dict
        return "object", object.__getattribute__(v, "__dict__")
    if _is_heap_type(type(v)):  # callable ones too: `add = Adder()`, np.vectorize(f), typing.List
        try:
            vd = object.__getattribute__(v, "__dict__")
        except BaseException:
            return None, None
        if type(vd) is dict:
            return "object", vd
    return None, None


def _which_namespace(dicts, sizes, keys, values, len=len, all=all, map=map, zip=zip):
    """Which namespace changed, and how (the slow path, once poisoned)."""
    at = 0
    for (name, d), n in zip(dicts, sizes):
        before_k, before_v = keys[at:at + n], values[at:at + n]
        if len(d) != n or not all(map(_is, d, before_k)) or not all(map(_is, d.values(), before_v)):
            return f"{name} was changed ({_first_change(d, before_k, before_v)})"
        at += n
    return "a namespace was changed"


_JOB_VARS = (b"FITRUN_JOB_ID", b"FITRUN_WORKER")  # what each job sets for itself


def _job_environ(_repeat=__import__("itertools").repeat):
    """os.environ but the two variables each job sets for itself, as the
    bytes it holds them in (CPython's os.environ._data: no decoding, three
    times cheaper than reading os.environ), or None when that mapping holds
    anything but bytes (then no key's __eq__ or __hash__ is ever called).
    Read only once os's namespace and os.environ's are known intact."""
    data = vars(os.environ).get("_data")
    if type(data) is not dict:  # not CPython's os.environ: read it decoded
        env = dict(os.environ)
        for key in _JOB_VARS:
            env.pop(key.decode(), None)
        return env
    if not all(map(_is, map(type, data), _repeat(bytes))) or \
            not all(map(_is, map(type, data.values()), _repeat(bytes))):
        return None
    env = dict(data)
    for key in _JOB_VARS:
        env.pop(key, None)
    return env


def _first_change(d, keys, values, dict=dict, zip=zip):
    before = dict(zip(keys, values))
    for k, v in d.items():
        if k not in before:
            return f"{k!s:.60} added"
        if before[k] is not v:
            return f"{k!s:.60} replaced"
    for k in before:
        if k not in d:
            return f"{k!s:.60} removed"
    return "reordered"


def _catchable_signals():
    return [n for n in range(1, signal.NSIG) if n not in (signal.SIGKILL, signal.SIGSTOP)
            and signal.getsignal(n) is not None]


def _status_line(text, key):
    """What follows key (b"\\nVmRSS:") on its line of a /proc/PID/status
    text, or b"" where there is no such line."""
    at = text.find(key)
    if at < 0:
        return b""
    end = text.find(b"\n", at + 1)
    return text[at + len(key):end if end >= 0 else len(text)]


def _status_field(text, key):
    """The number after key (b"\\nVmRSS:") in a /proc/PID/status text, or 0."""
    try:
        return int(_status_line(text, key).split()[0])
    except (ValueError, IndexError):
        return 0


def _signal_name(n):
    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"


def _status_mask(text, key):
    """The hexadecimal mask after key (b"\\nSigCgt:") in a /proc/PID/status
    text, or -1."""
    try:
        return int(_status_line(text, key).strip(), 16)
    except ValueError:
        return -1


class ReusedProcess:
    """In a worker: its long-lived sandboxed process (reuse isolation)."""

    def __init__(self, pid, pidfd, sock, listener):
        self.pid, self.pidfd, self.sock, self.listener = pid, pidfd, sock, listener
        self.count = 0
        self.signals = None  # (caught, ignored) as its baseline left them: ready()
        self.announced = False  # its pidfd went to fitrun (with its first STARTED)
        # Opened while the pid is surely this process (not reaped yet),
        # read again from its start after every job: one pread instead of
        # open, read and close (7 µs instead of 10.5). Once the process is
        # gone the read fails (ESRCH), whatever the pid becomes.
        try:
            self.status_fd = os.open(f"/proc/{pid}/status", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self.status_fd = -1

    def cpu_ns(self):
        """The process's CPU clock (all its threads), or -1 once it is gone."""
        try:
            return time.clock_gettime_ns(((~self.pid) << 3) | 2)  # CPUCLOCK_SCHED of the process
        except OSError:
            return -1

    def status(self):
        """(resident KiB, peak resident KiB, threads, (caught, ignored))
        from its /proc/PID/status: the last, the masks of the signals it
        has a handler for and ignores; (0, 0, 0, None) when it cannot be
        read."""
        try:
            text = os.pread(self.status_fd, 16384, 0)
        except OSError:
            return 0, 0, 0, None
        return _status_field(text, b"\nVmRSS:"), _status_field(text, b"\nVmHWM:"), \
            _status_field(text, b"\nThreads:"), (_status_mask(text, b"\nSigCgt:"), _status_mask(text, b"\nSigIgn:"))

    def ready(self):
        """Once its baseline is built, before its first job: the signals'
        dispositions it keeps between predictions. Python's handlers are
        put back by the process itself; one installed in C (a fresh copy
        of faulthandler's register, out of the recording wrapper's and
        signal.getsignal's sight) is seen only here, from outside."""
        self.signals = self.status()[3]

    def signal_changed(self, signals):
        """The first signal whose disposition differs from ready()'s, or 0."""
        if self.signals is None or signals is None or -1 in self.signals or -1 in signals:
            return 0
        diff = (signals[0] ^ self.signals[0]) | (signals[1] ^ self.signals[1])
        return (diff & -diff).bit_length()

    def end(self):
        """Kill it (and its process group), reap it; returns (wstatus, rusage)."""
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return self.reap()

    def reap(self):
        _, status, ru = os.wait4(self.pid, 0)
        os.close(self.pidfd)
        if self.status_fd >= 0:
            os.close(self.status_fd)
        self.sock.close()
        if self.listener >= 0:
            os.close(self.listener)
        return status, ru


class ReuseWorker(Worker):
    """Runs each RUN's prediction in its long-lived sandboxed process,
    forked from this worker like a fork child but kept for later jobs. The
    job's four pipe ends go to that process with the job message; the
    process sends back "done" with the job's nonce, after its own check of
    shared state. This worker decides on replacement from what the process
    cannot forge: its death, the sandbox's listener, its CPU clock and
    /proc status, the tripwire's message, the nonce."""

    def __init__(self, runner, worker, chan, status, cgroup_fds=()):
        super().__init__(runner, worker, chan, status, cgroup_fds)
        self.proc = None
        cfg = runner.cfg
        self.max_predictions = cfg.max_predictions
        self.max_rss_kb = cfg.max_memory_kb
        self.cpu_cap_ns = cfg.reuse_cpu_ms * 1000000

    def spawn(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = os.fork()
            if pid == 0:
                self.runner.reused_child(theirs.fileno(), self.null, self.pid, self.worker,
                                         self.cgroup_fds)  # never returns
        finally:
            theirs.close()
        pidfd = os.pidfd_open(pid)
        listener = self.runner.sandbox.receive(ours.fileno())  # once: its filter stays for every job
        # Its baseline is built before its first job's CPU clock is read
        # (EOF instead: it died; the job finds it dead). Not when applying
        # the sandbox failed: the message may have gone to receive(), and
        # the first job reports the failure anyway.
        proc = ReusedProcess(pid, pidfd, ours, listener)
        if _applied(listener):
            ours.recv(16)
            proc.ready()
        return proc

    def run(self, seq, flags, fds):
        t0 = time.monotonic_ns()
        fork_us = 0
        p = self.proc
        if p is not None and flags & RUN_FRESH:
            # fitrun killed it for its previous job (a limit), maybe after
            # that job's "done": it is dying, whatever its pidfd says yet.
            p.end()
            p = self.proc = None
        if p is not None and _exited(p.pidfd):
            p.reap()
            p = self.proc = None
        if p is None:
            try:
                p = self.proc = self.spawn()
            except OSError as e:
                self.failed(seq, f"starting a reused process: {e.strerror}")
                return
            fork_us = (time.monotonic_ns() - t0) // 1000
        nonce = os.urandom(16)
        base = p.cpu_ns()
        # The process's pidfd goes to fitrun once, with its first STARTED:
        # fitrun keeps it for the process's later jobs.
        started = MSG_STARTED.pack(b"S", seq, p.pid, max(base, 0))
        if p.announced:
            self.status.send(started)
        else:
            socket.send_fds(self.status, [started], [p.pidfd])
            p.announced = True
        try:
            socket.send_fds(p.sock, [b"J" + nonce], fds)
        except OSError:
            pass  # it died: the wait below says how
        self.release(fds)
        violation, done, taint = self.wait(p, nonce)
        if done is None:  # it ended (killed, violation, crash, exit)
            status, ru = p.end()
            self.proc = None
            cpu_us = max(0, int((ru.ru_utime + ru.ru_stime) * 1e6) - base // 1000)
            self.exited(seq, p, status, violation, cpu_us, ru.ru_maxrss, t0, fork_us,
                        "ended: the prediction's process did not survive it")
            return
        p.count += 1
        cpu = p.cpu_ns()
        rss, hwm, threads, signals = p.status()
        why = done or (f"poisoned: {taint}" if taint else "")
        if not why and threads > 1:
            why = f"threads: {threads - 1} left running"
        if not why and (sig := p.signal_changed(signals)):
            why = f"poisoned: {_signal_name(sig)}'s handler was changed outside Python's signal module"
        if not why and p.count >= self.max_predictions:
            why = f"max_predictions: {p.count} predictions run"
        if not why and rss > self.max_rss_kb:
            why = f"memory: {rss >> 10} MiB resident, above {self.max_rss_kb >> 10} MiB"
        if not why and self.cpu_cap_ns and cpu > self.cpu_cap_ns:
            why = f"cpu_time: {cpu // 1000000} ms of CPU used, above {self.cpu_cap_ns // 1000000} ms"
        if why:
            p.end()
            self.proc = None
        self.exited(seq, p, 0, -1, max(0, cpu - base) // 1000, hwm, t0, fork_us, why)
        if self.proc is None:
            try:
                self.proc = self.spawn()  # ready before the next job arrives
            except OSError:
                self.proc = None  # the next RUN tries again and reports it

    def exited(self, seq, p, status, violation, cpu_us, rss_kb, t0, fork_us, why):
        wall_us = (time.monotonic_ns() - t0) // 1000
        # p applied the sandbox once, when it started (spawn): for all its jobs
        self.chan.send(MSG_EXITED.pack(b"E", EXITED_APPLIED if _applied(p.listener) else 0, seq, status, violation,
                                       cpu_us, 0, rss_kb, wall_us, fork_us)
                       + why.encode(errors="replace")[:400])

    def wait(self, p, nonce):
        """Until the process says "done" for this job or ends. Returns
        (violation, done, taint): done is None when it ended (it is then
        killed, not reaped), else the process's own reason to be replaced
        ('' = none); taint names the first tripwire event seen."""
        sandbox = self.runner.sandbox
        poller = select.poll()
        poller.register(p.pidfd, select.POLLIN)
        poller.register(p.sock.fileno(), select.POLLIN)
        if p.listener >= 0:
            poller.register(p.listener, select.POLLIN)
        violation, taint = -1, ""
        while True:
            events = dict(poller.poll())
            if p.listener >= 0 and events.get(p.listener, 0) & select.POLLIN:
                got = sandbox.notification(p.listener)
                if got is not None:
                    nr, who = got
                    if violation < 0:
                        violation = nr
                    if who > 0:
                        _kill(who)
                    signal.pidfd_send_signal(p.pidfd, signal.SIGKILL)
            elif p.listener >= 0 and events.get(p.listener, 0):
                poller.unregister(p.listener)
            sock_ev = events.get(p.sock.fileno(), 0)
            # Dead: everything it sent is queued now, and read to the end
            # (a poisoned process says "done" and exits at once, often
            # right behind a tripwire message: its "done" still counts).
            dead = p.pidfd in events
            while sock_ev:
                msg = b""
                if sock_ev & select.POLLIN:
                    try:
                        msg, fds, _, _ = socket.recv_fds(p.sock, 1024, 4, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        break
                    except OSError:
                        # ECONNRESET: it died with our job message unread.
                        # As closed: its death is the job's end.
                        msg, fds = b"", []
                    for fd in fds:
                        os.close(fd)
                if msg[:1] == b"T":
                    taint = taint or f"it used {msg[1:].decode(errors='replace') or '?'}"
                elif msg[:1] == b"D" and msg[1:17] == nonce and violation < 0:
                    why = msg[17:].decode(errors="replace")
                    return violation, why or (dead and "ended: its process exited after its report") or "", taint
                elif msg:
                    # A forged "done" or a stray message: the job is not over
                    # (its end is the real "done", its death or its limits),
                    # and the process goes after it.
                    taint = taint or "a message on its socket that is not its own protocol's"
                else:
                    # Closed: it can no longer answer, and ends after the job
                    # (or at its limits); its death is the job's end.
                    poller.unregister(p.sock.fileno())
                    break
                if not dead:
                    break
            if dead:
                return violation, None, taint


def _exited(pidfd):
    return bool(select.select([pidfd], [], [], 0)[0])


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
        # The prelude's streams are the predictions' (a prelude may keep one:
        # a logging handler), made for pipes, but line-buffered while the
        # prelude's prints go to a terminal.
        _stdio_for_pipes()
        out = sys.stdout
        tty = type(out) is io.TextIOWrapper and os.isatty(CHILD_STDOUT) and not out.line_buffering
        if tty:
            out.reconfigure(line_buffering=True)
        prelude = load_prelude(self.cfg.prelude)
        if tty and out.line_buffering:
            out.reconfigure(line_buffering=False)
        _warn_as_main()
        t2 = time.monotonic()
        self.runner = Runner(self.cfg, sandbox, prelude)
        if not sandbox.enabled and self.cfg.isolation != "reuse":
            # Its workers' loop is the library's (ForkWorker).
            raise SetupError("sandbox", "RuntimeError", "isolation = fork needs the sandbox library, "
                             "and --sandbox-lib is none")
        # Workers and children inherit this: no other process without
        # CAP_SYS_PTRACE can open their /proc/<pid>/{mem,fd,environ}.
        self.runner.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
        self.selftest()
        if self.cfg.isolation == "reuse":
            # Modules whose first import by a prediction would have its
            # process replaced, imported once here: they register classes
            # with abstract base classes (fractions, decimal, statistics,
            # logging), importlib renames the frozen importer (and its
            # util and machinery add importlib._abc and friends to it), and
            # honest code often imports the others (dataclasses, typing,
            # inspect) on a prelude that does not. And resource, which
            # os.wait4 imports at its first call (its struct_rusage): a
            # worker's first wait for a replaced process moved sys.modules
            # for every process it forked after, and each of them took
            # every namespace again (some 50 ms with arc-dsl's prelude).
            for name in _REUSE_PREIMPORTS:
                __import__(name)
            # Before the namespaces are taken: the recording wrappers are
            # what every prediction finds in codecs, _codecs, faulthandler
            # and atexit.
            self.runner.recorded = _RecordedRegistrations()
            # After anything that imports.
            self.runner.namespaces = _Namespaces(self.runner.builtins, sandbox.peek())
            self.runner.context = contextvars.copy_context()  # what the workers inherit
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
                violation, _ = supervise(self.runner.sandbox, pid, pidfd, ours.fileno())
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

    def spawn(self, token, worker, chan_fd, status_fd, cgroup_fds=()):
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
                status = socket.socket(fileno=status_fd)
                code = (ReuseWorker if self.cfg.isolation == "reuse" else ForkWorker)(self.runner, worker, chan,
                                                                                       status, cgroup_fds).serve()
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
        os.close(status_fd)
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
                        and isinstance(cmd.get("cgroups", 0), int) and len(fds) == 2 + cmd.get("cgroups", 0)):
                    self.spawn(cmd["slot"], cmd["worker"], fds[0], fds[1], fds[2:])
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
    # The prelude and the predictions are scripts without arguments, not
    # this runtime: `len(sys.argv) > 1` is false and argparse's parse_args()
    # gives the defaults, as for `python3 script.py`, where the runtime's
    # own options were an error (SystemExit 2) naming its command line.
    sys.argv[:] = [PREDICTION_FILE]
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
