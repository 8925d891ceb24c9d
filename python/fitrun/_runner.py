"""fitrun.Runner: one `fitrun run --jobs - --out -` for a whole program.

The Runner starts fitrun once and keeps it (and, with the python runtime,
its warm interpreter) for its whole life. Jobs are written to fitrun's
stdin as they are submitted, results are read from its stdout as fitrun
writes them (one line per job, in completion order), and each result is
given to the Future of its job.

Correlation: fitrun answers every input line with exactly one result that
names the line (`line`). The Runner numbers the lines it writes and matches
results by that number. fitrun also refuses an id that an earlier line of
the same run had; callers reuse ids from batch to batch, so the Runner
replaces each job's `id` with its line number on the way in and puts the
caller's own `id` back into the result (None for a job without one).

Readiness: fitrun gets `--ready-fd` (a pipe) and writes its ready record
there once its runtime is up (docs/run.md, "Readiness"); the constructor
waits for it, so a start-up error (a bad profile, a failing prelude) is a
RunnerError from the constructor.

Signals: fitrun is started with SIGINT, SIGTERM and SIGHUP blocked (it
inherits the mask and reads them from a signalfd), so a terminate() at any
moment of its start, even before its main() runs, is an interrupt (exit
130), never death by the signal with its work half set up.

Threads: callers write (a non-blocking write under a lock; what the pipe
cannot take now waits in an outbox); one I/O thread reads results, stderr
and the ready record, flushes the outbox, and notices when fitrun is gone.
"""
import atexit
import collections
import json
import logging
import os
import queue
import selectors
import signal
import subprocess
import threading
import time
import weakref
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FuturesTimeout

from ._binary import find_fitrun
from ._errors import RunnerError, describe_exit
from ._options import run_arguments
from ._progress import make_bar

log = logging.getLogger("fitrun")

# Exit statuses of a fitrun whose stdin was closed: 0, or 1 when some input
# line was invalid (those lines already have their `invalid` result).
NORMAL_END = (0, 1)
STOP_GRACE_S = 5.0    # SIGINT -> exit: fitrun kills its running jobs' trees first
STDERR_GRACE_S = 0.5  # after fitrun exits, how long its last stderr may take to arrive
STDERR_TAIL = 40      # lines kept for RunnerError
READ_SIZE = 1 << 16
# Blocked while fitrun is spawned: it inherits them blocked (see above).
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}

_live = weakref.WeakSet()  # Runners of this process with a fitrun


class _Outbox:
    """Encoded job lines that the pipe has not taken yet."""

    def __init__(self):
        self.chunks = collections.deque()
        self.offset = 0

    def __bool__(self):
        return bool(self.chunks)

    def add(self, data):
        self.chunks.append(data)

    def clear(self):
        self.chunks.clear()
        self.offset = 0

    def write_to(self, fd):
        """Write until empty or the pipe is full (fd is non-blocking).
        OSError (EPIPE: fitrun is gone) propagates."""
        while self.chunks:
            head = self.chunks[0]
            try:
                n = os.write(fd, memoryview(head)[self.offset:])
            except BlockingIOError:
                return
            self.offset += n
            if self.offset == len(head):
                self.chunks.popleft()
                self.offset = 0


class _Batch:
    """The jobs of one map() call: its caller wakes once, when the last of
    them has its result (or its error), not once per job."""

    def __init__(self):
        self.left = 0
        self.done = threading.Event()
        self.lock = threading.Lock()

    def one_done(self):
        with self.lock:
            self.left -= 1
            if self.left == 0:
                self.done.set()

    def wait(self, timeout):
        return self.left == 0 or self.done.wait(timeout)


def _jsonable(value):
    """json.dumps default: numpy arrays and scalars (anything with tolist())."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"a job must be JSON: {type(value).__name__} is not JSON serializable")


def _encode(job):
    """(caller's id, the job line without its id) for one job."""
    if isinstance(job, dict):
        body = json.dumps({k: v for k, v in job.items() if k != "id"},
                          separators=(",", ":"), default=_jsonable)
        return job.get("id"), body
    # Not an object: fitrun answers it `invalid` (InvalidJSON), as on the CLI.
    return None, json.dumps(job, separators=(",", ":"), default=_jsonable)


def _line(number, body):
    if not body.startswith("{"):
        return (body + "\n").encode()
    sep = "" if body == "{}" else ","
    return f'{{"id":"{number}"{sep}{body[1:]}\n'.encode()


class Runner:
    """One `fitrun run` process for the Runner's whole life.

        with fitrun.Runner(profile="profiles/arc-python.ini") as r:
            results = r.map(jobs)                 # input order
            for res in r.imap_unordered(jobs):    # completion order
                ...
            fut = r.submit(job)                   # concurrent.futures.Future

    profile: an INI profile (None: fitrun's built-in defaults).
    workers, isolation and the other keywords override profile keys exactly
    as `fitrun run`'s options do (see fitrun._options): workers=2,
    cpu_time="500ms", memory="256M", sandbox__allow="socket", ...
    progress: True shows a bar on stderr (tqdm when importable).
    fitrun: the executable (default: see fitrun._binary.find_fitrun).
    wait_ready: True (default) returns once fitrun's runtime is up (its
    workers warm), raising RunnerError if fitrun cannot start; False
    returns at once (then wait_ready() waits, and a start-up error
    surfaces at the first call that waits).
    """

    def __init__(self, profile=None, workers=None, isolation=None, progress=False, *,
                 fitrun=None, wait_ready=True, **overrides):
        binary = find_fitrun(fitrun)
        options = ["--profile", os.fspath(profile)] if profile is not None else []
        options += run_arguments(dict(workers=workers, isolation=isolation, **overrides))
        self._lock = threading.Lock()
        self._pending = {}           # line number -> (Future, caller's id)
        self._next_line = 1
        self._outbox = _Outbox()
        self._closing = False        # close() or terminate() was called
        self._stopping = False       # terminate(): fitrun was interrupted on purpose
        self._error = None           # (message, returncode, tail) once fitrun is gone badly
        self._finished = False       # the I/O thread saw fitrun's end
        self._tail = collections.deque(maxlen=STDERR_TAIL)
        self._ready = threading.Event()  # the ready record came, or fitrun is gone
        self._record = None              # the ready record (a dict)
        self._owner = os.getpid()
        ready_r, ready_w = os.pipe()
        argv = [binary, "run", "--jobs", "-", "--out", "-", "--quiet", "--ready-fd", str(ready_w)] + options
        try:
            self._proc = _spawn(argv, ready_w)
        except BaseException:
            os.close(ready_r)
            raise
        finally:
            os.close(ready_w)
        self.args = argv
        try:
            self._ready_r = ready_r
            os.set_blocking(ready_r, False)
            self._stdin = self._proc.stdin.fileno()
            os.set_blocking(self._stdin, False)
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            os.set_blocking(self._wake_w, False)
            self._bar = make_bar() if progress else None
            self._thread = threading.Thread(target=self._loop, name=f"fitrun-{self._proc.pid}", daemon=True)
            _live.add(self)
            self._thread.start()
        except BaseException:  # Ctrl-C, say: no fitrun may be left behind
            self._proc.kill()
            self._proc.wait()
            for fd in (ready_r, getattr(self, "_wake_r", -1), getattr(self, "_wake_w", -1)):
                if fd >= 0:
                    os.close(fd)
            raise
        if wait_ready:
            self.wait_ready()

    # ------------------------------------------------------------------
    # public API

    @property
    def pid(self):
        """The fitrun process."""
        return self._proc.pid

    @property
    def returncode(self):
        """fitrun's exit status once it has ended (subprocess convention), else None."""
        return self._proc.returncode

    @property
    def workers(self):
        """The pool's size (what the plan or `workers=` chose) once fitrun is
        ready, else None."""
        return self._record["workers"] if self._record else None

    def wait_ready(self, timeout=None):
        """Wait until fitrun's runtime is up; its ready record, a dict:
        {"ready": True, "pid": ..., "workers": ..., "runtime": "python"}.
        RunnerError if fitrun ended first (a bad profile: its file:line
        message), concurrent.futures.TimeoutError after timeout seconds."""
        try:
            if not self._ready.wait(timeout):
                raise FuturesTimeout(f"fitrun (pid {self.pid}) not ready after {timeout} s")
        except KeyboardInterrupt:
            self.terminate()
            raise
        if self._record is not None:
            return dict(self._record)
        with self._lock:
            if self._stopping:
                raise RunnerError("the Runner was stopped (terminate() or Ctrl-C) before fitrun was ready",
                                  self.returncode, self._tail_text())
            if self._error:
                raise self._runner_error()
        raise RunnerError(f"{describe_exit(self.pid, self.returncode)} before it was ready",
                          self.returncode, self._tail_text())

    def submit(self, job):
        """Run one job; returns a concurrent.futures.Future of its result."""
        return self._submit([job])[0]

    def map(self, jobs, timeout=None):
        """Run the jobs; their results in input order (a list). timeout
        (seconds, for the whole call) raises TimeoutError; the jobs go on.
        If fitrun ends first, the RunnerError's ``results`` is that list
        with None for each job that got no result."""
        batch = _Batch()
        futures = self._submit(list(jobs), batch)
        try:
            if not batch.wait(timeout):
                raise FuturesTimeout(f"{batch.left} of {len(futures)} jobs unfinished after {timeout} s")
        except KeyboardInterrupt:
            self.terminate()
            raise
        failed = next((f.exception(0) for f in futures if f.exception(0) is not None), None)
        if failed is not None:
            failed.results = [None if f.exception(0) else f.result(0) for f in futures]
            raise failed
        return [f.result(0) for f in futures]

    def imap_unordered(self, jobs):
        """Run the jobs (all submitted now); an iterator over their results
        in completion order. Results carry the job's own `id`."""
        futures = self._submit(list(jobs))
        done = queue.SimpleQueue()
        for f in futures:
            f.add_done_callback(done.put)
        return self._completed(done, len(futures))

    def close(self):
        """No more jobs: fitrun finishes what was submitted, every Future
        gets its result, and fitrun exits. Idempotent. A Runner used after
        close() raises RunnerError."""
        if os.getpid() != self._owner:
            return  # a forked copy: the fitrun is its parent's
        if self._closing_begins(stop=False):
            self._wake()
        self._join()

    def terminate(self):
        """Stop now: fitrun gets SIGINT (it kills the running jobs and exits
        130; SIGKILL if it has not exited after 5 s); every pending Future
        gets RunnerError. Idempotent."""
        if os.getpid() != self._owner:
            return  # a forked copy: the fitrun is its parent's
        if self._closing_begins(stop=True):
            try:
                self._proc.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass
            self._wake()
        if threading.current_thread() is self._thread:
            return  # from a Future callback: the I/O thread finishes by itself
        self._thread.join(STOP_GRACE_S)
        if self._thread.is_alive():
            self._proc.kill()
        self._join()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # A body that failed (or Ctrl-C) must not wait for its jobs.
        if exc_type is None:
            self.close()
        else:
            self.terminate()
        return False

    def __repr__(self):
        state = "open" if not self._closing else ("finished" if self._finished else "closing")
        return f"<fitrun.Runner pid={self.pid} {state} pending={len(self._pending)}>"

    # ------------------------------------------------------------------
    # submitting

    def _submit(self, jobs, batch=None):
        encoded = [_encode(job) for job in jobs]
        futures = []
        with self._lock:
            self._check_usable()
            lines = []
            for cid, body in encoded:
                n = self._next_line
                self._next_line += 1
                fut = Future()
                fut.set_running_or_notify_cancel()  # written at once: it cannot be cancelled
                self._pending[n] = (fut, cid, batch)
                futures.append(fut)
                lines.append(_line(n, body))
            if batch:
                batch.left = len(lines)
            if lines:
                idle = not self._outbox
                self._outbox.add(b"".join(lines))
                if idle:
                    self._flush_locked()
                    if self._outbox:
                        self._wake_locked()  # the I/O thread watches the pipe from now on
            if self._bar:
                self._bar.add(len(futures))
        return futures

    def _check_usable(self):
        if os.getpid() != self._owner:
            raise RunnerError(f"this Runner belongs to process {self._owner} (it was forked)")
        if self._closing:
            raise RunnerError("the Runner is closed")
        if self._error:
            raise self._runner_error()

    def _flush_locked(self):
        try:
            self._outbox.write_to(self._stdin)
        except OSError:
            # fitrun is gone (EPIPE); the I/O thread sees its stdout end
            # and fails every pending Future.
            self._outbox.clear()

    def _wake(self):
        with self._lock:
            self._wake_locked()

    def _wake_locked(self):
        if self._wake_w < 0:
            return  # the I/O thread has finished
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:
            pass  # already woken

    # ------------------------------------------------------------------
    # waiting

    def _completed(self, done, n):
        try:
            for _ in range(n):
                yield done.get().result()
        except KeyboardInterrupt:
            self.terminate()
            raise

    def _closing_begins(self, stop):
        with self._lock:
            if self._finished or (self._closing and not (stop and not self._stopping)):
                return False
            self._closing = True
            self._stopping = self._stopping or stop
            return True

    def _join(self):
        try:
            self._thread.join()
        except KeyboardInterrupt:
            self.terminate()
            raise

    # ------------------------------------------------------------------
    # the I/O thread

    def _loop(self):
        out, err, stdin = self._proc.stdout.fileno(), self._proc.stderr.fileno(), self._stdin
        sel = selectors.DefaultSelector()
        sel.register(out, selectors.EVENT_READ, "out")
        sel.register(err, selectors.EVENT_READ, "err")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        sel.register(self._ready_r, selectors.EVENT_READ, "ready")
        results, errors, ready = bytearray(), bytearray(), bytearray()  # incomplete last lines
        stdin_open, watching = True, False
        try:
            while True:
                with self._lock:
                    if stdin_open:
                        if self._stopping:
                            self._outbox.clear()  # fitrun stops reading on SIGINT
                        self._flush_locked()
                    pending_input = bool(self._outbox)
                    end_input = stdin_open and self._closing and not pending_input
                if end_input:
                    # EOF: fitrun runs what it has read, writes the results, exits.
                    if watching:
                        sel.unregister(stdin)
                        watching = False
                    self._proc.stdin.close()
                    stdin_open = False
                elif pending_input != watching:
                    if pending_input:
                        sel.register(stdin, selectors.EVENT_WRITE, "in")
                    else:
                        sel.unregister(stdin)
                    watching = pending_input
                for key, _ in sel.select():
                    if key.data == "out":
                        data = os.read(out, READ_SIZE)
                        if not data:
                            return  # fitrun has ended (finally: _finish)
                        self._results(_lines(results, data))
                    elif key.data == "err":
                        data = os.read(err, READ_SIZE)
                        if data:
                            self._stderr(_lines(errors, data))
                        else:
                            sel.unregister(err)
                    elif key.data == "wake":
                        _drain(self._wake_r)
                    elif key.data == "ready":
                        data = os.read(self._ready_r, READ_SIZE)
                        if data:
                            self._ready_line(_lines(ready, data))
                        else:  # fitrun closed it: with the record, or ending without one
                            sel.unregister(self._ready_r)
                            os.close(self._ready_r)
                            self._ready_r = -1
                    # "in": writable again; the next turn flushes the outbox
        finally:
            sel.close()
            if self._ready_r >= 0:
                os.close(self._ready_r)
                self._ready_r = -1
            self._finish(err, errors)

    def _ready_line(self, lines):
        for raw in lines:
            try:
                record = json.loads(raw.decode("utf-8", "replace"))
                if record.get("ready") is not True:
                    raise ValueError
            except (ValueError, AttributeError):
                log.warning("fitrun: unexpected ready record ignored: %.200r", raw)
                continue
            self._record = record
            self._ready.set()

    def _results(self, lines):
        """Hand each result line to its Future."""
        done = []
        with self._lock:
            for raw in lines:
                if not raw.strip():
                    continue
                try:
                    res = json.loads(raw.decode("utf-8", "replace"))  # fitrun writes UTF-8
                    entry = self._pending.pop(res["line"])
                except (ValueError, KeyError, TypeError):
                    log.warning("fitrun: unexpected output line ignored: %.200r", raw)
                    continue
                fut, res["id"], batch = entry
                done.append((fut, res, batch))
                if self._bar:
                    self._bar.finished(res.get("status"))
        for fut, res, batch in done:
            fut.set_result(res)
            if batch:
                batch.one_done()

    def _stderr(self, lines):
        """Keep the last lines of fitrun's stderr and log each one."""
        for raw in lines:
            text = raw.decode("utf-8", "replace").rstrip()
            if text:
                self._tail.append(text)
                if not self._stopping:  # after our own SIGINT its messages are expected
                    log.warning("%s", text)

    def _finish(self, err, errors):
        """fitrun's stdout ended: reap it, collect its last words, and fail
        every job still waiting."""
        try:
            rc = self._proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:  # stdout closed yet alive: cannot go on
            self._proc.kill()
            rc = self._proc.wait()
        deadline = time.monotonic() + STDERR_GRACE_S
        os.set_blocking(err, False)
        while time.monotonic() < deadline:
            try:
                data = os.read(err, READ_SIZE)
            except BlockingIOError:
                time.sleep(0.01)
                continue
            except OSError:
                break
            if not data:
                break
            self._stderr(_lines(errors, data))
        if errors:
            self._stderr([bytes(errors)])
        for f in (self._proc.stdout, self._proc.stderr, self._proc.stdin):
            if f is not None and not f.closed:
                f.close()
        with self._lock:
            pending, self._pending = self._pending, {}
            self._outbox.clear()
            if self._stopping:
                self._error = ("the Runner was stopped (terminate() or Ctrl-C) before this job's result",
                               rc, self._tail_text())
            elif not (self._closing and rc in NORMAL_END and not pending):
                tail = self._tail_text()
                self._error = (describe_exit(self.pid, rc) + (f": {tail}" if tail else ""), rc, tail)
            self._finished = True
            if self._bar:
                self._bar.close()
                self._bar = None
            wake = (self._wake_r, self._wake_w)
            self._wake_r = self._wake_w = -1
        for fd in wake:
            os.close(fd)
        self._ready.set()  # a waiter finds the record missing and the error set
        for fut, _, batch in pending.values():
            fut.set_exception(self._runner_error())
            if batch:
                batch.one_done()

    def _tail_text(self):
        return "\n".join(self._tail)

    def _runner_error(self):
        message, rc, tail = self._error
        return RunnerError(message, rc, tail)


def _spawn(argv, ready_fd):
    """Start fitrun with the stop signals blocked (it inherits the mask),
    passing it ready_fd. A Ctrl-C that came meanwhile is raised when the
    mask is restored; fitrun is killed then, not left behind."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    proc = None
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, bufsize=0, pass_fds=(ready_fd,))
    except OSError as e:
        raise RunnerError(f"{argv[0]}: cannot start: {e.strerror}") from None
    finally:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        except BaseException:
            if proc is not None:
                proc.kill()
                proc.wait()
            raise
    return proc


def _lines(buf, data):
    """Append data to buf (the incomplete last line so far); return the
    complete lines, leaving the new incomplete one in buf. Linear in the
    bytes read, however long a line is."""
    if b"\n" not in data:
        buf += data
        return []
    buf += data
    lines = buf.split(b"\n")
    buf[:] = lines.pop()
    return lines


def _drain(fd):
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _stop_all_at_exit():
    """A Runner the program never closed: close it when no job is waiting
    (nobody can wait for one any more), else stop it; leave nothing running."""
    for runner in list(_live):
        if runner._owner == os.getpid() and not runner._finished:
            if runner._pending:
                runner.terminate()
            else:
                runner.close()


def _forget_in_child():
    """A fork of this process (multiprocessing, say) must not hold the
    Runners' pipes: an inherited stdin would keep fitrun from ever seeing
    the end of its input."""
    for runner in list(_live):
        for f in (runner._proc.stdin, runner._proc.stdout, runner._proc.stderr):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        for fd in (runner._wake_r, runner._wake_w, getattr(runner, "_ready_r", -1)):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        runner._wake_r = runner._wake_w = runner._ready_r = -1
    _live.clear()


atexit.register(_stop_all_at_exit)
os.register_at_fork(after_in_child=_forget_in_child)
