"""Tests of the Python side of the warm runtime (fitrun_runtime.py), driven
directly over its protocol by drive_runtime.Runtime — no fitrun binary.

    /usr/bin/python3 -m unittest discover -s tests/python -p 'test_*.py'

Tests that need the real sandbox (hostile predictions) run when
libfitrun_sandbox.so is built and builds a python policy; otherwise they
are skipped with the reason (tests/cli/python_*.bats cover them through
fitrun itself).
"""
import os
import select
import signal
import subprocess
import tempfile
import textwrap
import time
import unittest

import drive_runtime as dr

LIB = dr.find_sandbox_lib()
needs_sandbox = unittest.skipUnless(LIB, "libfitrun_sandbox.so not built (or still the placeholder)")


def job(code, inputs=([[1]],), jid="j", **kw):
    return dict({"id": jid, "code": textwrap.dedent(code), "inputs": list(inputs)}, **kw)


class Base(unittest.TestCase):
    prelude_text = None
    kwargs = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="fitrun-test-python-")
        prelude = ""
        if cls.prelude_text is not None:
            prelude = os.path.join(cls.tmp.name, "prelude.py")
            with open(prelude, "w") as f:
                f.write(textwrap.dedent(cls.prelude_text))
        # A generous wall limit: on a loaded machine a CPU-bound test must
        # still reach its CPU limit first (WallTime below tests wall time).
        # Without the sandbox library only by name, and only under reuse
        # (fork isolation's worker is the library's): these tests are about
        # the protocol; Hostile below needs the sandbox and is skipped.
        kw = dict(workers=2, sandbox_lib=LIB or "none", cpu_ms=1000, wall_ms=60000)
        kw.update(cls.kwargs)
        if not LIB and kw.get("isolation", "fork") == "fork":
            raise unittest.SkipTest("fork isolation needs libfitrun_sandbox.so (build fitrun)")
        cls.rt = dr.Runtime(prelude, **kw)
        assert cls.rt.ready.get("event") == "ready", cls.rt.ready

    @classmethod
    def tearDownClass(cls):
        cls.rt.close()
        cls.tmp.cleanup()

    def run1(self, code, inputs=([[1]],), slot=0, **kw):
        f = self.rt.run_one(job(code, inputs, **kw), slot)
        self.assertIsNotNone(f, "the worker died")
        return f


class Results(Base):
    prelude_text = """
        import numpy as np
        HELPER = 41
    """

    def test_ok_outputs_and_passed(self):
        f = self.run1("def transform(g):\n    return [r[::-1] for r in g]\n",
                      inputs=[[[1, 2]], [[3, 4]], [[5, 6]]],
                      expected=[[[2, 1]], [[0, 0]], None])
        self.assertEqual(f["status"], "ok")
        self.assertEqual(f["outputs"], [[[2, 1]], [[4, 3]], [[6, 5]]])
        self.assertEqual(f["passed"], [True, False, None])
        self.assertEqual((f["exit_code"], f["signal"], f["violation_nr"]), (0, None, -1))
        for key in ("cpu_ms", "wall_ms", "max_rss_kb", "utime_ms", "stime_ms", "fork_ms"):
            self.assertGreaterEqual(f[key], 0, key)
        self.assertGreater(f["max_rss_kb"], 1000)
        self.assertEqual(f["id"], "j")

    def test_passed_only_when_the_prediction_ran_to_its_end(self):
        # ok and error report it; a MemoryError (status memory, like an OOM
        # kill of the same prediction) or a signal do not: None.
        exp = [[[1]]]
        f = self.run1("def transform(g):\n    raise ValueError('no')\n", expected=exp)
        self.assertEqual((f["status"], f["passed"]), ("error", [False]))
        f = self.run1("def transform(g):\n    raise MemoryError()\n", expected=exp)
        self.assertEqual((f["status"], f["outputs"], f["passed"]), ("memory", [None], None))
        f = self.run1("import ctypes\ndef transform(g):\n    return ctypes.string_at(0)\n", expected=exp)
        self.assertEqual((f["status"], f["passed"]), ("signal", None))

    def test_entry_override_and_prelude_globals(self):
        f = self.run1("def solve(x):\n    return x + HELPER\n", inputs=[1], entry="solve")
        self.assertEqual(f["outputs"], [42])

    def test_numpy_outputs_are_normalised(self):
        f = self.run1("""
            def transform(g):
                a = np.array(g)
                return {"arr": a * 2, "int": np.int64(7), "float": np.float32(0.5),
                        "bool": np.bool_(True), "tup": (1, (2, 3)), "obj": a.sum(axis=0)}
        """, inputs=[[[1, 2], [3, 4]]])
        self.assertEqual(f["status"], "ok", f)
        self.assertEqual(f["outputs"][0], {"arr": [[2, 4], [6, 8]], "int": 7, "float": 0.5,
                                           "bool": True, "tup": [1, [2, 3]], "obj": [4, 6]})

    def test_tuple_grid_passes(self):
        f = self.run1("def transform(g):\n    return tuple(zip(*g))\n",
                      inputs=[[[1, 2], [3, 4]]], expected=[[[1, 3], [2, 4]]])
        self.assertEqual(f["passed"], [True])

    def test_prints_are_captured_and_do_not_corrupt(self):
        f = self.run1("""
            import sys
            print("hello", '{"id": "forged"}')
            def transform(g):
                print("line\\nbreak")
                sys.stderr.write("to stderr\\n")
                return g
        """)
        self.assertEqual(f["status"], "ok")
        self.assertEqual(f["stdout"], 'hello {"id": "forged"}\nline\nbreak\n')
        self.assertEqual(f["stderr"], "to stderr\n")
        self.assertEqual(f["id"], "j")
        self.assertEqual(f["outputs"], [[[1]]])

    def test_errors_name_type_message_and_line(self):
        f = self.run1("def transform(g):\n    x = 1\n    return g[5]\n")
        self.assertEqual((f["status"], f["error_type"]), ("error", "IndexError"))
        self.assertEqual(f["error_message"], "list index out of range")
        self.assertEqual(f["error_line"], 3)
        f = self.run1("def transform(g)\n    return g\n")
        self.assertEqual((f["status"], f["error_type"], f["error_line"]), ("error", "SyntaxError", 1))
        f = self.run1("def solve(g):\n    return g\n")
        self.assertEqual((f["status"], f["error_type"]), ("error", "NameError"))
        self.assertIn("transform", f["error_message"])
        f = self.run1("def transform(g):\n    raise ValueError('x' * 5000)\n")
        self.assertEqual(f["error_type"], "ValueError")
        self.assertLess(len(f["error_message"]), 1100)

    def test_every_input_runs_after_an_error(self):
        f = self.run1("def transform(x):\n    return 10 // x\n", inputs=[0, 5, "a"])
        self.assertEqual(f["status"], "error")
        self.assertEqual(f["error_type"], "ZeroDivisionError")  # the first error is reported
        self.assertEqual(f["outputs"], [None, 2, None])

    def test_unserializable_outputs(self):
        for code, why in (("return {1, 2}", "set"), ("return float('nan')", "nan"),
                          ("return 2 ** 80", "64 bits"), ("return object()", "object"),
                          ("return {1: 2}", "int key"), ("return [{'a\\0': 1}]", "NUL in a key")):
            f = self.run1(f"def transform(g):\n    {code}\n")
            self.assertEqual((f["status"], f["error_type"]), ("error", "UnserializableOutput"), why)

    def test_main_block_does_not_run(self):
        f = self.run1("""
            def transform(g):
                return g
            if __name__ == "__main__":
                print("self-test ran")
        """)
        self.assertEqual(f["stdout"], "")

    def test_fresh_globals_per_prediction(self):
        self.run1("HELPER = 0\nimport numpy\nnumpy.MARK = 1\ndef transform(g):\n    return g\n")
        f = self.run1("def transform(g):\n    return [HELPER, hasattr(np, 'MARK')]\n")
        self.assertEqual(f["outputs"], [[41, False]])

    def test_prelude_names_resolve_without_being_copied(self):
        # Prelude names resolve in module code, functions and `global`
        # statements (assigning one makes the prediction's own global); its
        # globals hold only its own names.
        f = self.run1("import sys\nA = HELPER + 1\ndef bump():\n    global HELPER\n    HELPER += 10\n"
                      "    return HELPER\n"
                      "def transform(g):\n    return [A, bump(), HELPER, np.int64(3).item(), len(g),\n"
                      "            sorted(k for k in globals() if not k.startswith('__'))]\n")
        self.assertEqual(f["outputs"], [[42, 51, 51, 3, 1, ["A", "HELPER", "bump", "sys", "transform"]]])
        f = self.run1("def transform(g):\n    return HELPER\n")
        self.assertEqual(f["outputs"], [41])

    def test_only_the_protocol_fds_are_open(self):
        f = self.run1("import os\ndef transform(g):\n    return sorted(int(x) for x in os.listdir('/proc/self/fd'))\n")
        # 0-2 and the report (and the fd listdir itself used); the job pipe
        # was closed before the code ran, apply closed the socket the
        # filter's listener went to the worker on, and the Landlock ruleset
        self.assertEqual(f["outputs"][0][:4], [0, 1, 2, 3])
        self.assertLessEqual(len(f["outputs"][0]), 5)

    def test_thread_variables_set_before_numpy(self):
        f = self.run1("import os\ndef transform(g):\n    return [os.environ[v] for v in "
                      "('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS')]\n")
        self.assertEqual(f["outputs"], [["1", "1", "1"]])

    def test_crash_without_result(self):
        f = self.run1("import os\ndef transform(g):\n    os._exit(3)\n")
        self.assertEqual((f["status"], f["exit_code"], f["reported"]), ("crash", 3, False))

    def test_segfault_is_a_signal_and_the_worker_survives(self):
        f = self.run1("import ctypes\ndef transform(g):\n    return ctypes.string_at(0)\n", slot=1)
        self.assertEqual((f["status"], f["signal"]), ("signal", signal.SIGSEGV))
        f = self.run1("def transform(g):\n    return 1\n", slot=1)
        self.assertEqual(f["outputs"], [1])

    def test_cpu_timeout_has_ms_resolution(self):
        f = self.run1("def transform(g):\n    while True:\n        pass\n")
        self.assertEqual(f["status"], "timeout")
        self.assertEqual(f["signal"], signal.SIGPROF)
        # rusage is tick-sampled (and a loaded VM skews it): only rough bounds,
        # the point being that SIGPROF (our ms timer) ended it, not RLIMIT_CPU.
        self.assertGreaterEqual(f["cpu_ms"], 500)
        self.assertLess(f["cpu_ms"], 1900)

    def test_output_flood_is_cut_at_the_cap(self):
        f = self.run1("def transform(g):\n    while True:\n        print('x' * 999)\n")
        self.assertEqual((f["status"], f["output_exceeded"]), ("output_limit", "stdout"))
        self.assertEqual(len(f["stdout"]), 1 << 20)

    def test_a_bad_message_is_refused_and_the_worker_goes_on(self):
        # RUN without its four descriptors: the worker says so (F) and waits
        # for the next one; it never reads a job itself.
        chan = self.rt.chans[0]
        chan.send(dr.MSG_RUN.pack(b"R", 0, 77))
        msg = chan.recv(1 << 16)
        self.assertEqual(msg[:1], b"F")
        self.assertIn(b"fds", msg)
        f = self.run1("def transform(g):\n    return 3\n")
        self.assertEqual(f["outputs"], [3])

    def test_the_child_reads_its_own_job_and_knows_its_id(self):
        f = self.run1("import os\ndef transform(g):\n    return [os.environ['FITRUN_JOB_ID'], "
                      "os.environ['FITRUN_WORKER']]\n", jid="job \u00e9", slot=1)
        self.assertEqual(f["outputs"], [["job \u00e9", "1"]])

    def test_protocol_survives_hostile_text(self):
        f = self.run1("def transform(g):\n    print('a\\0b')\n    return 'x\\udc80y'\n")
        self.assertEqual((f["status"], f["stdout"], f["outputs"]), ("ok", "a\0b\n", ["x\ufffdy"]))
        f = self.run1("def transform(g):\n    raise ValueError('bad\\0thing')\n")
        self.assertEqual((f["status"], f["error_message"]), ("error", "bad\0thing"))
        f = self.run1("def transform(g):\n    raise type('X\\x1b[2K\\r\\nY', (Exception,), {})()\n")
        self.assertEqual((f["status"], f["error_type"]), ("error", "X\x1b[2K\r\nY"))

    def test_outputs_nested_deeper_than_the_limit(self):
        f = self.run1("def transform(g):\n    x = 1\n    for _ in range(101):\n        x = [x]\n    return x\n")
        self.assertEqual((f["status"], f["error_type"]), ("error", "UnserializableOutput"))
        f = self.run1("def transform(g):\n    x = 1\n    for _ in range(100):\n        x = [x]\n    return x\n")
        self.assertEqual(f["status"], "ok")

    def test_ready_event_reports_startup(self):
        r = self.rt.ready
        self.assertEqual(r["protocol"], 6)
        for k in ("boot_ms", "prelude_ms", "selftest_ms"):
            self.assertGreaterEqual(r[k], 0, k)
        self.assertEqual(r["sandbox"], "on" if LIB else "off")


class WallTime(Base):
    kwargs = {"wall_ms": 1000}

    def test_wall_timeout(self):
        t0 = time.monotonic()
        f = self.run1("import time\ndef transform(g):\n    time.sleep(60)\n")
        self.assertEqual((f["status"], f["wall_expired"], f["signal"]), ("timeout", True, signal.SIGKILL))
        self.assertGreaterEqual(f["wall_ms"], 1000)
        self.assertLess(time.monotonic() - t0, 30)


class SmallCaps(Base):
    kwargs = {"output_cap": 1000, "result_cap": 10000}

    def test_result_cap(self):
        f = self.run1("def transform(g):\n    return list(range(100000))\n")
        self.assertEqual((f["status"], f["output_exceeded"]), ("output_limit", "result"))

    def test_stderr_cap(self):
        f = self.run1("import sys\ndef transform(g):\n    sys.stderr.write('e' * 5000)\n    return 1\n")
        self.assertEqual((f["status"], f["output_exceeded"]), ("output_limit", "stderr"))
        self.assertEqual(len(f["stderr"]), 1000)


class Hooks(Base):
    prelude_text = """
        def fitrun_input(value):
            return tuple(tuple(row) for row in value)
        def fitrun_output(value):
            return {"rows": len(value), "grid": value}
    """

    def test_hooks_wrap_every_call(self):
        f = self.run1("def transform(g):\n    assert isinstance(g, tuple)\n    return g[::-1]\n",
                      inputs=[[[1], [2]]])
        self.assertEqual(f["status"], "ok", f)
        self.assertEqual(f["outputs"], [{"rows": 2, "grid": [[2], [1]]}])
        self.assertEqual(self.rt.ready["hooks"], ["fitrun_input", "fitrun_output"])


class Reuse(Base):
    # Its policy as fitrun builds it for reuse: recvmsg takes the job's pipe ends.
    kwargs = {"isolation": "reuse", "workers": 1, "policy": "preset=python;memory=1G;allow=recvmsg"}

    def test_run_fresh_ends_the_process_of_the_previous_job_first(self):
        # fitrun sets FRESH after killing the process at a limit, which may
        # land after its "done": the next job must get a new process.
        code = "import os\ndef transform(g):\n    return os.getpid()\n"
        first = self.run1(code)
        again = self.run1(code)
        self.assertEqual((first["status"], again["status"]), ("ok", "ok"))
        self.assertEqual(again["outputs"], first["outputs"])  # reused
        fresh = self.rt.start(job(code), 0, dr.RUN_FRESH).wait()
        self.assertEqual(fresh["status"], "ok")
        self.assertNotEqual(fresh["outputs"], first["outputs"])
        self.assertEqual(self.run1(code)["outputs"], fresh["outputs"])  # and that one is reused


class WorkerDeath(Base):
    SLEEPER = "import time\nprint('started', flush=True)\ndef transform(g):\n    time.sleep(30)\n"

    def started(self, slot):
        """A sleeping prediction in `slot`, its STARTED received."""
        p = self.rt.start(job(self.SLEEPER), slot)
        r, _, _ = select.select([self.rt.status[slot]], [], [], 30)
        self.assertTrue(r, "no STARTED from the worker")
        self.assertTrue(p._status())
        self.assertIsNotNone(p.pidfd)
        return p

    def test_killed_worker_is_reported_and_replaceable(self):
        pid = self.rt.pids[1]
        p = self.started(1)
        os.kill(pid, signal.SIGKILL)
        self.assertIsNone(p.wait())  # EOF: the job has no result
        ev = self.rt.event()
        self.assertEqual((ev["event"], ev["pid"], ev["signal"]), ("worker_exit", pid, signal.SIGKILL))
        new = self.rt.spawn(1)
        self.assertNotEqual(new, pid)
        f = self.run1("def transform(g):\n    return 5\n", slot=1)
        self.assertEqual(f["outputs"], [5])

    def test_child_of_killed_worker_dies_too(self):
        pid = self.rt.pids[0]
        p = self.started(0)
        child = p.pid
        os.kill(pid, signal.SIGKILL)

        def alive():
            try:
                with open(f"/proc/{child}/stat") as f:
                    return f.read().rsplit(")", 1)[1].split()[0] != "Z"
            except FileNotFoundError:
                return False
        for _ in range(200):
            if not alive():
                break
            time.sleep(0.02)
        self.assertFalse(alive(), "the prediction outlived its worker")
        self.assertIsNone(p.wait())
        self.rt.event()
        self.rt.spawn(0)

    def test_killing_the_child_by_its_pidfd_keeps_the_worker(self):
        # What fitrun does at the wall deadline, the CPU budget or a cap.
        pid = self.rt.pids[0]
        p = self.started(0)
        time.sleep(0.3)
        p.kill()
        f = p.wait()
        self.assertEqual((f["signal"], f["stdout"]), (signal.SIGKILL, "started\n"))
        f = self.run1("def transform(g):\n    return 3\n")
        self.assertEqual(f["outputs"], [3])
        self.assertEqual(self.rt.pids[0], pid)


class PreludeFailure(unittest.TestCase):
    def start(self, text):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(textwrap.dedent(text))
        try:
            rt = dr.Runtime(f.name, workers=1, sandbox_lib=LIB or "none")
            code = rt.close()
            return rt.ready, code, f.name
        finally:
            os.unlink(f.name)

    def test_missing_module_stops_with_file_line(self):
        ready, code, path = self.start("import os\nimport fitrun_no_such_module\n")
        self.assertEqual(ready["event"], "fatal")
        self.assertEqual((ready["stage"], ready["error_type"]), ("prelude", "ModuleNotFoundError"))
        self.assertEqual((ready["file"], ready["line"]), (path, 2))
        self.assertIn("fitrun_no_such_module", ready["message"])
        self.assertEqual(code, 1)

    def test_syntax_error(self):
        ready, _, _ = self.start("x = (\n")
        self.assertEqual((ready["event"], ready["error_type"]), ("fatal", "SyntaxError"))
        self.assertEqual(ready["line"], 1)

    def test_missing_prelude_file(self):
        rt = dr.Runtime("/nonexistent/prelude.py", workers=1, sandbox_lib=LIB or "none")
        rt.close()
        self.assertEqual((rt.ready["event"], rt.ready["error_type"]), ("fatal", "FileNotFoundError"))

    def test_bad_sandbox_library(self):
        rt = dr.Runtime("", workers=1, sandbox_lib="/nonexistent/libfitrun_sandbox.so")
        rt.close()
        self.assertEqual((rt.ready["event"], rt.ready["stage"]), ("fatal", "sandbox"))
        self.assertIn("/nonexistent/libfitrun_sandbox.so", rt.ready["message"])


class NothingLeftBehind(unittest.TestCase):
    @needs_sandbox
    def test_close_leaves_no_process(self):
        rt = dr.Runtime("", workers=2, sandbox_lib=LIB)
        pids = [rt.proc.pid] + list(rt.pids.values())
        rt.run_many([job("def transform(g):\n    return g\n", jid=str(i)) for i in range(4)])
        rt.close()
        time.sleep(0.2)
        def alive(p):
            try:
                with open(f"/proc/{p}/stat") as f:
                    return f.read().rsplit(")", 1)[1].split()[0] != "Z"
            except FileNotFoundError:
                return False
        self.assertEqual([p for p in pids if alive(p)], [])


def _interpreters():
    """CPython 3.9 and later that this machine has besides /usr/bin/python3
    (pyenv's, in /root/.pyenv: under root a slot's uid cannot read them, so
    the policy keeps root's)."""
    root = "/root/.pyenv/versions"
    found = []
    for v in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        parts = v.split(".")
        exe = os.path.join(root, v, "bin", "python3")
        if len(parts) >= 2 and parts[0] == "3" and parts[1].isdigit() and int(parts[1]) >= 9 and os.access(exe, os.X_OK):
            found.append(exe)
    return found


@needs_sandbox
class Interpreters(unittest.TestCase):
    """Fork isolation's worker runs the interpreter's own fork work around
    each fork as os.fork() does (PyOS_BeforeFork, PyOS_AfterFork_*), on
    every CPython it supports: 3.13 unlocks its import lock in the child
    and dies if the worker did not take it."""

    def test_fork_children_on_every_interpreter(self):
        exes = _interpreters()
        if not exes:
            self.skipTest("no other CPython >= 3.9 here (pyenv)")
        code = ("import random, threading, os\ndef transform(g):\n    return [random.random(), "
                "threading.main_thread() is threading.current_thread(), os.environ['FITRUN_JOB_ID']]\n")
        for exe in exes:
            with self.subTest(exe), dr.Runtime("", workers=1, sandbox_lib=LIB, python=exe, cpu_ms=5000,
                                               wall_ms=30000, policy="preset=python;memory=1G;user=root") as rt:
                self.assertEqual(rt.ready.get("event"), "ready", rt.ready)
                a, b = (rt.run_one(job(code, [1], jid=j), 0) for j in ("a", "b"))
                self.assertEqual((a["status"], a["outputs"][0][1:]), ("ok", [True, "a"]), a)
                self.assertEqual((b["status"], b["outputs"][0][1:]), ("ok", [True, "b"]), b)
                # random is reseeded in every child, as after os.fork()
                self.assertNotEqual(a["outputs"][0][0], b["outputs"][0][0])
                v = rt.run_one(job("import socket\ndef transform(g):\n    socket.socket()\n", [1]), 0)
                self.assertEqual(v["status"], "violation", v)


@needs_sandbox
class Hostile(Base):
    # what fitrun builds for a python profile: Landlock with the libraries
    # (the interpreter adds its own tree), a uid per slot
    # under root. A CPU budget far above what the memory bomb's page faults
    # cost: filling 512M takes about 2 s of CPU on a paravirtualised guest
    # (15-20 µs a fault, bench/README.md); nothing else here is CPU-bound.
    kwargs = {"policy": "preset=python;cpu_time=25s;memory=512M;fs=libs;user=slot;slots=2", "cpu_ms": 20000}

    def test_network_is_a_violation(self):
        f = self.run1("import socket\ndef transform(g):\n    socket.socket()\n    return g\n")
        self.assertEqual(f["status"], "violation", f)
        self.assertGreaterEqual(f["violation_nr"], 0)

    def test_file_write_does_not_happen(self):
        path = os.path.join(self.tmp.name, "pwned")
        f = self.run1(f"def transform(g):\n    open({path!r}, 'w').write('x')\n    return g\n")
        self.assertIn(f["status"], ("violation", "error"), f)
        self.assertFalse(os.path.exists(path))

    def test_fork_is_denied(self):
        f = self.run1("import os\ndef transform(g):\n    os.fork()\n    return g\n")
        self.assertIn(f["status"], ("violation", "error"), f)

    def test_memory_bomb(self):
        f = self.run1("def transform(g):\n    x = []\n    while True:\n        x.append([0] * 10_000_000)\n",
                      expected=[[[1]]])
        self.assertEqual(f["status"], "memory", f)
        self.assertIsNone(f["passed"])

    def test_numpy_still_works(self):
        f = self.run1("import numpy as np\ndef transform(g):\n    a = np.arange(16.).reshape(4, 4)\n"
                      "    return int(np.linalg.matrix_rank(a @ a.T))\n")
        self.assertEqual((f["status"], f["outputs"]), ("ok", [2]), f)


def _load_runtime():
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("fitrun_runtime", dr.RUNTIME)
    fr = importlib.util.module_from_spec(spec)
    sys.modules["fitrun_runtime"] = fr
    spec.loader.exec_module(fr)
    return fr


def _lay_out_as_reused(fr, w):
    """A reused process's descriptors: /dev/null on 0-5, its socket on 6
    (here w, the pipe the answer goes back on)."""
    os.dup2(w, fr.REUSE_CHAN_FD)
    null = os.open(os.devnull, os.O_RDWR)  # as the worker opens it
    for fd in range(fr.REUSE_CHAN_FD):
        os.dup2(null, fd)


def _answer(r, w, pid):
    """The lines a forked test child wrote before it exited."""
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    os.waitpid(pid, 0)
    return out.split("\n")


def _in_forked_reused_shape(between, scenario, kinds=None):
    """As a reused process starts: the namespaces taken in one process (the
    zygote), between() run there, then a fork (its at-fork handlers run),
    and in the child, laid out as _in_reused_shape lays it out, its
    _Baseline over those namespaces; returns scenario(fr, baseline)'s
    lines. kinds: the kinds of namespace whose write counters are used,
    instead of what this interpreter's self-test finds (as on another
    version: CPython 3.13 leaves out "object")."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            import gc
            fr = _load_runtime()
            if kinds is not None:
                fr._DictVersions.kinds = classmethod(lambda cls: set(kinds))
            ns = fr._Namespaces(fr.prelude_builtins({}))
            gc.freeze()
            between()
            child = os.fork()
            if child == 0:
                try:
                    _lay_out_as_reused(fr, w)
                    text = "\n".join(scenario(fr, fr._Baseline(fr.CHILD_STDIN, fr.REUSE_CHAN_FD, ns)))
                except BaseException as e:
                    text = f"failed: {type(e).__name__}: {e}"
                os.write(fr.REUSE_CHAN_FD, text.encode())
                os._exit(0)
            os.waitpid(child, 0)
        finally:
            os._exit(0)
    return _answer(r, w, pid)


def _in_reused_shape(scenario, walk=False, peek=False):
    """Run scenario(fr, baseline) in a forked child laid out as a reused
    process lays itself out (/dev/null on fds 0-5, its socket on fd 6: here
    the pipe the answer comes back on), with the runtime's own _Baseline
    built over this interpreter's modules (walk: without its write
    counters, so that every check walks every namespace; peek: the
    counters read by the sandbox library's fr_peek_words, as in a run,
    rather than through ctypes views); returns the lines it returned, or
    the exception's text."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            fr = _load_runtime()
            _lay_out_as_reused(fr, w)
            import ctypes
            reader = fr._peek_words(ctypes.CDLL(LIB)) if peek else None
            base = fr._Baseline(fr.CHILD_STDIN, fr.REUSE_CHAN_FD, fr._Namespaces(fr.prelude_builtins({}), reader))
            if walk:
                base.ns.versions = None
            base.freeze()
            text = "\n".join(scenario(fr, base))
        except BaseException as e:
            text = f"failed: {type(e).__name__}: {e}"
        os.write(6, text.encode())
        os._exit(0)
    return _answer(r, w, pid)


def _has_numpy():
    import importlib.util
    return importlib.util.find_spec("numpy") is not None


def _poison_json_dumps():
    import json
    json.dumps = None


class _Dropped:
    """Put in sys.modules by a prediction; when the check drops the entry,
    its finalizer poisons a module."""

    def __del__(self):
        _poison_json_dumps()


class _Bomb:
    """What a prediction leaves behind: its finalizer runs `act`."""

    def __init__(self, act):
        self.act = act

    def __del__(self):
        self.act()


class _OddName(str):
    """A module name that is not exactly a str: the check drops no such
    entry (its own __hash__ would run there), and finds it."""

    hashes = 0

    def __hash__(self):
        type(self).hashes += 1
        if type(self).hashes > 1:
            raise RuntimeError("the check hashed a name of the prediction's")
        return str.__hash__(self)


# Writes a prediction could make to state shared with later ones, each
# with its own kind of dict write.
POISONS = {
    "module attribute": lambda: setattr(__import__("json"), "dumps", None),
    "new module attribute": lambda: setattr(__import__("json"), "extra", 1),
    "module dict entry": lambda: vars(__import__("json")).__setitem__("loads", None),
    "removed entry": lambda: vars(__import__("json")).pop("JSONDecodeError"),
    "cleared namespace": lambda: vars(__import__("json")).clear(),
    "class attribute": lambda: setattr(__import__("json").JSONDecoder, "decode", None),
    "instance attribute": lambda: setattr(__import__("json")._default_encoder, "indent", 4),
    "new instance attribute": lambda: setattr(__import__("json")._default_encoder, "extra", 4),
    "builtins": lambda: vars(__import__("builtins")).__setitem__("len", None),
    "sys.modules entry": lambda: __import__("sys").modules.__setitem__("json", __import__("types").ModuleType("json")),
    "a module name not a str": lambda: __import__("sys").modules.__setitem__(_OddName("odd"), __import__("types")
                                                                               .ModuleType("odd")),
    "a finalizer run by the drop": lambda: __import__("sys").modules.__setitem__("fitrun_dropped", _Dropped()),
    "environment variable": lambda: __import__("os").environ.__setitem__("POISON", "1"),
    "function attribute": lambda: setattr(__import__("json").dumps, "cache", {}),
    "function keyword default": lambda: __import__("json").dumps.__kwdefaults__.__setitem__("indent", 4),
    # The runtime's own module is one of the user's here (loaded from
    # outside the interpreter's installation): its functions' fields.
    "user function's doc": lambda: setattr(__import__("sys").modules["fitrun_runtime"]._dev_ino, "__doc__", "x"),
    "user function's name": lambda: setattr(__import__("sys").modules["fitrun_runtime"]._dev_ino, "__name__", "x"),
    "user function's annotations": lambda: setattr(__import__("sys").modules["fitrun_runtime"]._dev_ino,
                                                   "__annotations__", {}),
    "environment, not as bytes": lambda: __import__("os").environ._data.__setitem__(1, 2),
    "a SimpleNamespace's attribute": lambda: setattr(__import__("sys").implementation, "cache_tag", None),
}


class ReuseCheck(unittest.TestCase):
    """_Baseline.check, the state check a reused process runs after each
    prediction, on both of its paths: the fast one (no namespace's write
    counter moved since a check found them intact) and the walk, entry by
    entry, that a moved counter leads to (and that interpreters without
    the counters always take)."""

    def test_this_interpreter_keeps_write_counters(self):
        # CPython 3.9-3.12 (Debian's is 3.11): every kind; 3.13 writes an
        # instance's attributes without moving its dict's counter, so
        # instances' namespaces are compared entry by entry every time.
        import sys
        every = sys.version_info < (3, 13)
        out = _in_reused_shape(lambda fr, base: [" ".join(sorted(fr._DictVersions.kinds())),
                                                 str(base.ns.versions is not None), str(len(base.ns.loose) > 0)])
        self.assertEqual(out, ["class dict module" + (" object" if every else ""), "True", str(not every)])

    def test_every_poisoning_is_found_on_both_paths(self):
        # The fast path with either reader of the counters, and the walk.
        paths = [dict(walk=False), dict(walk=True)] + ([dict(peek=True)] if LIB else [])
        for path in paths:
            for name, poison in POISONS.items():
                with self.subTest(poison=name, **path):
                    out = _in_reused_shape(lambda fr, base, poison=poison: [base.check(), (poison(), base.check())[1]],
                                           **path)
                    self.assertEqual(out[0], "", out)
                    self.assertTrue(out[1].startswith("poisoned:"), out)

    def test_registries_put_back_or_replace(self):
        # A codec search function (recorded by the zygote's wrapper) and
        # copyreg's tables are put back; an ABC registration, which no call
        # can undo for one class, replaces the process. Before Python 3.10
        # (no codecs.unregister) a codec registration replaces it too.
        def scenario(fr, base):
            import codecs
            import collections.abc
            import copyreg
            import sys
            reg = fr._Registries(fr._RecordedRegistrations())
            before = dict(copyreg.dispatch_table)
            codecs.register(lambda n: codecs.lookup("utf-8") if n == "fitrun-test-enc" else None)
            copyreg.pickle(complex, lambda c: (complex, (0, 0)))
            why = reg.restore()
            try:
                codecs.lookup("fitrun-test-enc")
                found = "found"
            except LookupError:
                found = "gone"
            restored = copyreg.dispatch_table == before

            class Mine:
                pass
            collections.abc.Sequence.register(Mine)
            return [why if sys.version_info < (3, 10) else found, str(restored), reg.restore()]
        import sys
        if sys.version_info < (3, 10):  # replaced at the first finding: nothing else is put back
            codec = "poisoned: codecs.register was called (no codecs.unregister before Python 3.10)"
            expected = [codec, "False", codec]
        else:
            expected = ["gone", "True", "poisoned: a class was registered with an abstract base class"]
        self.assertEqual(_in_reused_shape(scenario), expected)

    def test_a_write_put_back_is_checked_then_fast_again(self):
        def scenario(fr, base):
            import json
            out = [base.check(), str(base.ns.versions.read() == base.ns.versions.seen)]
            dumps = json.dumps
            json.dumps = None
            json.dumps = dumps  # the same object again: intact, but the counter moved
            out += [str(base.ns.versions.read() == base.ns.versions.seen), base.check(),
                    str(base.ns.versions.read() == base.ns.versions.seen)]
            _poison_json_dumps()  # after the reference moved on: still found
            out.append(base.check())
            return out
        for peek in (False, True) if LIB else (False,):
            with self.subTest(peek=peek):
                out = _in_reused_shape(scenario, peek=peek)
                self.assertEqual(out[:5], ["", "True", "False", "", "True"], out)
                self.assertTrue(out[5].startswith("poisoned: module json was changed"), out)

    def test_freezing_or_unfreezing_the_heap_is_found_from_its_ends_or_its_count(self):
        # After a prediction the young generations hold what it left; each
        # write below changes the frozen heap. On the count's path (no
        # watch of the ends) too.
        writes = {
            "freeze": lambda gc: gc.freeze(),
            "unfreeze": lambda gc: gc.unfreeze(),
            "unfreeze, then freeze": lambda gc: (gc.unfreeze(), gc.freeze()),
        }
        for counted in (False, True):
            for name, write in writes.items():
                with self.subTest(write=name, counted=counted):
                    def scenario(fr, base, write=write):
                        import gc
                        if counted:
                            base.frozen_intact, base.frozen = None, gc.get_freeze_count()  # as freeze() falls back
                        out = [str(base.frozen_intact is not None), base.check()]
                        left = [[i] for i in range(50)]  # noqa: F841 (young, as a prediction leaves them)
                        write(gc)
                        return out + [base.check()]
                    out = _in_reused_shape(scenario)
                    self.assertEqual(out[:2], [str(not counted), ""], out)
                    self.assertEqual(out[2], "poisoned: gc.freeze() or gc.unfreeze() was called", out)

    def test_the_frozen_heaps_ends_show_a_freeze_that_its_count_misses(self):
        # Frozen objects freed, then as many frozen again: the count is
        # lower than before, the tail is not the one it was.
        def scenario(fr, base):
            import gc
            held = [[i] for i in range(200)]
            heap = fr._FrozenHeap.make()
            before, intact = gc.get_freeze_count(), heap.intact()
            held.clear()
            mine = [[i] for i in range(100)]  # noqa: F841
            gc.freeze()
            return [str(intact), str(gc.get_freeze_count() < before), str(heap.intact())]
        self.assertEqual(_in_reused_shape(scenario), ["True", "True", "False"])

    def _on_every_interpreter(self, code, want, peek=False):
        """Run `code`, with the runtime imported as `fr` before it (and,
        with peek, the build's sandbox library's readers as `peek`), on
        /usr/bin/python3 and each other CPython here: it exits 0 and prints
        `want`."""
        code = "import sys\nsys.path.insert(0, sys.argv[1])\nimport fitrun_runtime as fr\n" + \
            ("import ctypes\npeek = fr._peek_words(ctypes.CDLL(sys.argv[2]))\n" if peek else "") + code
        for exe in ["/usr/bin/python3"] + _interpreters():
            with self.subTest(exe):
                r = subprocess.run([exe, "-c", code, os.path.dirname(dr.RUNTIME), LIB], capture_output=True,
                                   text=True, timeout=60)
                self.assertEqual((r.returncode, r.stdout.strip()), (0, want), r.stderr)

    def test_lists_and_sets_read_by_address_show_every_change_on_every_interpreter(self):
        # fr_peek_arrays' readings of lists (length, items' addresses) and
        # sets (their tables): equal while each holds the same objects; an
        # item replaced in place, one added or removed, changes them. The
        # layouts are found on every interpreter here (3.9-3.13).
        code = ("a, b, s = [1, 'x', None], [], {'p', 'q'}\n"
                "rl, rs = fr._array_reader([a, b], list, peek), fr._array_reader([s], set, peek)\n"
                "l0, s0 = bytes(rl()), bytes(rs())\nout = [rl() == l0, rs() == s0]\n"
                "a[1] = 'y'\nout.append(rl() == l0)\na[1] = 'x'\nout.append(rl() == l0)\n"
                "b.append(a)\nout.append(rl() == l0)\nb.pop()\nout.append(rl() == l0)\n"
                "s.add('r')\nout.append(rs() == s0)\ns.discard('r')\ns.discard('p')\nout.append(rs() == s0)\n"
                "b.extend(range(10000))\nout.append(rl())\n"
                "print(out)\n")
        self._on_every_interpreter(code, "[True, True, False, True, False, True, False, False, None]", peek=True)

    def test_sys_monitorings_tools_and_events_are_read_as_plain_data_on_every_interpreter(self):
        # 3.12 on: a tool id taken (by a str subclass that claims to equal
        # anything), then events set, each changes the reading, whose names
        # are plain str. Before 3.12 there is nothing to read.
        code = ("class S(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n"
                "m = getattr(sys, 'monitoring', None)\n"
                "if m is None:\n    out = [fr._monitoring_state() is None] * 4\n"
                "else:\n    was = fr._monitoring_state()\n    m.use_tool_id(3, S('planted'))\n"
                "    now = fr._monitoring_state()\n    m.set_events(3, m.events.PY_START)\n"
                "    out = [was == ((None, 0),) * 6, now != was, type(now[3][0]) is str, fr._monitoring_state() != now]\n"
                "print(out)\n")
        self._on_every_interpreter(code, "[True, True, True, True]")

    def test_descriptors_above_the_socket_are_closed_on_every_interpreter(self):
        # After each prediction a reused process closes every descriptor
        # above its socket's, however high (Python 3.9's os.closerange
        # closes each number up to the bound in turn: _close_from makes the
        # system call there). Those below stay open.
        code = ("import os\n"
                "import resource\nhigh = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 1, 1 << 19)\n"
                "r, w = os.pipe()\nos.dup2(r, 40)\nos.dup2(w, high)\nos.dup2(w, 39)\nfr._close_from(40)\n"
                "def is_open(fd):\n    try:\n        os.fstat(fd)\n        return True\n    except OSError:\n"
                "        return False\nprint(is_open(39), is_open(40), is_open(high), is_open(2))\n")
        self._on_every_interpreter(code, "True False False True")

    def test_the_frozen_heaps_ends_are_watched_on_every_interpreter(self):
        # CPython 3.9-3.13 lay the permanent generation out alike; a freeze
        # moves the tail, allocation and collection move neither end.
        code = ("import gc\n"
                "h = fr._FrozenHeap.make()\nx = [[i] for i in range(100)]\ngc.collect()\n"
                "a = h.intact()\ngc.freeze()\nprint(a, h.intact())\n")
        self._on_every_interpreter(code, "True False")

    def test_setting_a_resource_limit_trips_the_tripwire_and_reading_does_not(self):
        # The check no longer reads every limit after each prediction.
        def scenario(fr, base):
            import resource
            fr._install_tripwire(fr.REUSE_CHAN_FD, [None])
            resource.prlimit(0, resource.RLIMIT_NOFILE)
            resource.getrlimit(resource.RLIMIT_NOFILE)
            os.write(fr.REUSE_CHAN_FD, b"|read|")
            resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE))
            return ["end"]
        self.assertEqual(_in_reused_shape(scenario), ["|read|Tresource.setrlimitend"])

    def test_putenv_trips_the_tripwire_but_the_jobs_own_variables_do_not(self):
        # os.environ does not show the C environment os.putenv writes.
        def scenario(fr, base):
            class Key(bytes):
                def __eq__(self, other):
                    return True
                __hash__ = bytes.__hash__
            fr._install_tripwire(fr.REUSE_CHAN_FD, [None])
            os.environ["FITRUN_JOB_ID"] = "job-2"
            os.environ["FITRUN_WORKER"] = "0"
            os.write(fr.REUSE_CHAN_FD, b"|own|")
            os.putenv(Key(b"TZ"), b"XXX+05")  # claims to be one of them
            return ["end"]
        self.assertEqual(_in_reused_shape(scenario), ["|own|Tos.putenvend"])

    def test_settings_kept_in_c_are_put_back(self):
        # None of them is in a namespace, and none is audited.
        def scenario(fr, base):
            import _locale
            import faulthandler
            import gc
            import signal
            import sys
            first = base.check()
            r, w = os.pipe()
            os.set_blocking(w, False)
            _locale.setlocale(_locale.LC_NUMERIC, "C.UTF-8")
            gc.set_debug(gc.DEBUG_STATS)
            signal.set_wakeup_fd(w)
            faulthandler.enable()
            sys.setdlopenflags(258)
            sys.set_coroutine_origin_tracking_depth(5)
            sys.set_asyncgen_hooks(firstiter=print)
            print("left in the buffer")  # flushed to /dev/null by the check
            out = [first, base.check(), _locale.setlocale(_locale.LC_NUMERIC), str(gc.get_debug()),
                   str(signal.set_wakeup_fd(-1) == -1), str(faulthandler.is_enabled()), str(sys.getdlopenflags()),
                   str(sys.get_coroutine_origin_tracking_depth()), str(sys.get_asyncgen_hooks().firstiter)]
            sys.stdout.reconfigure(line_buffering=True)
            out.append(base.check())
            sys.stdout.reconfigure(line_buffering=False)
            out.append(base.check())
            sys.stderr.close()
            return out + [base.check()]
        self.assertEqual(_in_reused_shape(scenario),
                         ["", "", "C", "0", "True", "False", str(os.RTLD_NOW), "0", "None",
                          "poisoned: sys.stdout was reconfigured", "", "poisoned: sys.stderr was closed"])

    def test_the_user_modules_generators_are_put_back_and_randoms_own_is_not(self):
        # random's own generator reseeds, as in a fork child; a user
        # module's (here a Random subclass's instance) starts where it was.
        def scenario(fr, base):
            import random
            import types

            class Mine(random.Random):
                pass
            mod = types.ModuleType("user_mod")
            mod.RNG, mod.INST = Mine(7), random._inst
            random._inst.seed(1)
            puts = fr._user_generators([("user_mod", mod)])
            first = mod.RNG.random()
            mod.RNG.random()
            random.random()
            for put_back in puts:
                put_back()
            return [str(len(puts)), str(mod.RNG.random() == first)]
        self.assertEqual(_in_reused_shape(scenario), ["1", "True"])

    def test_a_process_forked_after_the_namespaces_were_taken_starts_clean(self):
        # Taken in the zygote; every fork rewrites threading's namespace
        # (its at-fork handler), and the worker may import: the process
        # takes those as its start, and still finds a later poisoning.
        import threading  # noqa: F401  (its at-fork handler is what moves)

        def scenario(fr, base):
            out = [base.check(), base.check()]
            _poison_json_dumps()
            return out + [base.check()]
        for name, between in (("fork only", lambda: None),
                              ("a module imported before the fork", lambda: __import__("colorsys"))):
            with self.subTest(name):
                out = _in_forked_reused_shape(between, scenario)
                self.assertEqual(out[:2], ["", ""], out)
                self.assertTrue(out[2].startswith("poisoned: module json was changed"), out)

    def test_a_namespace_without_a_counter_is_taken_again_after_the_fork(self):
        # As on CPython 3.13, where instances' namespaces have no usable
        # counter: the fork gives threading's main thread a new ident, and
        # a later walk of every namespace (here after a module imported and
        # dropped) must not take that for a change.
        import threading  # noqa: F401  (its at-fork handler is what writes)

        def scenario(fr, base):
            out = [str(len(base.ns.loose) > 0), base.check()]
            __import__("colorsys")
            out.append(base.check())
            _poison_json_dumps()
            return out + [base.check()]
        out = _in_forked_reused_shape(lambda: None, scenario, kinds=("dict", "module", "class"))
        self.assertEqual(out[:3], ["True", "", ""], out)
        self.assertTrue(out[3].startswith("poisoned: module json was changed"), out)

    def test_status_fields_of_a_reused_process(self):
        # What its worker reads from /proc/PID/status after every job: the
        # numbers, and the signal masks (hexadecimal; -1 where missing).
        def scenario(fr, base):
            text = b"Name:\tpython3\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t3"
            return [str([fr._status_field(text, k) for k in (b"\nVmRSS:", b"\nVmHWM:", b"\nThreads:")]),
                    str(fr._status_field(b"Name:\tx\nVmRSS:\n", b"\nVmRSS:")),
                    str(fr._status_field(text, b"\nVmSwap:")),
                    str(fr.ReusedProcess(os.getpid(), -1, None, -1).status()[2]),
                    str([fr._status_mask(b"Name:\tx\nSigIgn:\t0000000000001000\nSigCgt:\t0000000180000002", k)
                         for k in (b"\nSigCgt:", b"\nSigIgn:", b"\nSigBlk:")])]
        self.assertEqual(_in_reused_shape(scenario), ["[1024, 2048, 3]", "0", "0", "1", "[6442450946, 4096, -1]"])

    def test_only_data_that_can_change_in_place_is_compared(self):
        # Tuples and frozensets of atoms cannot change: left out. A tuple
        # that holds a list, and every mutable container, are compared.
        def scenario(fr, base):
            import types
            mod = types.ModuleType("user_mod")
            values = {"UP": (-1, 0), "NESTED": ((1, "a"), frozenset({2.5, None, b"x"})), "HOLDS_LIST": ([1], 2),
                      "GRID": [[1]], "FLAGS": {1}}
            import collections
            values.update(COUNTS=collections.Counter(), POINT=collections.namedtuple("P", "x")(1),
                          BOX=collections.namedtuple("B", "items")([1]), Q=collections.deque())
            vars(mod).update(values)
            data = fr._user_data([("user_mod", mod)])
            values["HOLDS_LIST"][0].append(2)
            return [" ".join(sorted(name.split(".", 1)[1] for name, _, _ in data)),
                    " ".join(sorted(name.split(".", 1)[1] for name, v, snap in data if not fr._same_data(v, snap)))]
        self.assertEqual(_in_reused_shape(scenario), ["BOX COUNTS FLAGS GRID HOLDS_LIST Q", "HOLDS_LIST"])

    def test_the_data_of_a_users_class_object_and_defaults_is_compared(self):
        # Not a stdlib class's, nor an immutable default.
        def scenario(fr, base):
            import json
            import types
            mod = types.ModuleType("user_mod")
            exec("class C:\n    cache = {}\n    def m(self, acc=[], n=1):\n        pass\n"
                 "def f(x, memo={}, *, k=[1], t=(1,)):\n    pass\nf.cache = {}\nf.calls = 0\n"
                 "class B:\n    pass\nB_ = B()\nB_.items = [1]\n"
                 "def make():\n    n, seen = 0, set()\n    def g():\n        return n, seen\n    return g\ng = make()\n", vars(mod))
            mod.C.__module__ = mod.B.__module__ = mod.f.__module__ = mod.C.m.__module__ = mod.g.__module__ = "user_mod"
            mod.Enc = json.JSONEncoder  # a stdlib class: its namespace is not the user's data
            data = fr._user_data([("user_mod", mod)])
            return [" ".join(sorted(name for name, _, _ in data))]
        self.assertEqual(_in_reused_shape(scenario),
                         ["user_mod.B_.items user_mod.C.cache user_mod.C.m's default 1 "
                          "user_mod.f's default 1 user_mod.f's default k user_mod.f.cache "
                          "user_mod.g's variable n user_mod.g's variable seen user_mod.g's variable seen"])

    def test_state_kept_in_c_is_read_for_exactly_the_types_it_can_be_read_from(self):
        # Each snapshot changes with the object's state, and only then; a
        # subclass, or a count of what is not a plain number (its repr is
        # that number's own), has none.
        def scenario(fr, base):
            import array
            import io
            import itertools
            import threading

            class Mine(io.StringIO):
                pass

            import fractions
            objs = {"array": array.array("i", [1]), "stringio": io.StringIO("a"), "bytesio": io.BytesIO(b"a"),
                    "count": itertools.count(3), "lock": threading.Lock(), "rlock": threading.RLock()}
            writes = {"array": lambda o: o.append(2), "stringio": lambda o: o.write("b"),
                      "bytesio": lambda o: o.seek(1), "count": next, "lock": lambda o: o.acquire(),
                      "rlock": lambda o: o.acquire()}
            out = []
            for name, o in objs.items():
                a = fr._state_snapshot(o)
                b = fr._state_snapshot(o)
                writes[name](o)
                out.append(f"{name} {a is not None and a == b} {fr._state_snapshot(o) != a}")
            closed = io.StringIO("x")
            open_snap = fr._state_snapshot(closed)
            closed.close()
            out.append(f"closed {fr._state_snapshot(closed) != open_snap}")
            out.append(f"none {fr._state_snapshot(Mine())} {fr._state_snapshot(itertools.count(fractions.Fraction(1, 2)))} "
                       f"{fr._state_snapshot(object())}")

            class Slots:
                __slots__ = ("a", "__b")

            class More(Slots):
                __slots__ = ("c",)
            m = More()
            m.a = 1
            snap = fr._state_snapshot(m)
            m._Slots__b = 2  # one not set, then set: a private name's slot too
            out.append(f"slots {len(snap[1])} {not fr._same_data(m, snap)}")
            return out
        self.assertEqual(_in_reused_shape(scenario),
                         ["array True True", "stringio True True", "bytesio True True", "count True True",
                          "lock True True", "rlock True True", "closed True", "none None None None", "slots 3 True"])

    def test_what_the_users_data_holds_below_its_top_level_is_found_once_within_the_limit(self):
        # Plain data is compared whole (found, not entered); modules,
        # classes and functions are namespaces of their own (not found).
        def scenario(fr, base):
            import types
            mod = types.ModuleType("user_mod")
            exec("import json\nclass Obj:\n    def __init__(self):\n        self.kids = [1, [2]]\n"
                 "shared = Obj()\nREG = {'a': shared, 'b': [shared, json, Obj], 'plain': [[1, 2]]}\n", vars(mod))
            found = [path for path, _ in fr._nested([("user_mod", mod)])]
            return [" ".join(found), " ".join(path for path, _ in fr._nested([("user_mod", mod)], limit=2))]
        # shared is a module global (its namespace is one already): what it
        # holds is found from there, once; REG['plain'] is found (REG is
        # compared item by item, by identity), but not entered.
        self.assertEqual(_in_reused_shape(scenario),
                         ["user_mod.shared.kids user_mod.REG['b'] user_mod.REG['plain']",
                          "user_mod.shared.kids user_mod.REG['b']"])

    def test_the_dicts_a_function_keeps_beside_its_module_are_namespaces(self):
        # Its own attributes, its keyword-only defaults, a singledispatch
        # function's registry, what it closes over (singledispatch's
        # dispatch function and its cache); its annotations for a function of the
        # user's own; a staticmethod's function; a stdlib class's methods
        # (not their annotations). Each is found when written, on both paths.
        def scenario(fr, base):
            import json
            import types
            mod = types.ModuleType("user_mod")
            exec("import functools\n"
                 "def f(x: int, *, k=1):\n    pass\n"
                 "@functools.singledispatch\ndef show(x):\n    return 0\n"
                 "class C:\n    @staticmethod\n    def s():\n        pass\n", vars(mod))
            mod.Enc = json.JSONEncoder
            names = [name for name, _ in fr._namespaces([("user_mod", mod)], set(), {"user_mod"})]
            return [" ".join(n for n in names if not n.startswith(("function user_mod.show.", "dict user_mod.show.")) or
                             n == "dict user_mod.show.registry")]
        self.assertEqual(_in_reused_shape(scenario), [
            "module user_mod function user_mod.f dict user_mod.f.__kwdefaults__ dict user_mod.f.__annotations__ "
            "function user_mod.show dict user_mod.show.registry function user_mod.show's variable dispatch "
            "object user_mod.show's variable dispatch's variable dispatch_cache class user_mod.C function user_mod.C.s "
            "dict user_mod.C.s.__annotations__ class user_mod.Enc function user_mod.Enc.__init__ "
            "dict user_mod.Enc.__init__.__kwdefaults__ function user_mod.Enc.default function user_mod.Enc.encode "
            "function user_mod.Enc.iterencode"])

    def test_the_fields_of_a_function_are_found_on_this_interpreter(self):
        # CPython 3.9-3.13: each of the six fields, at its own place.
        def scenario(fr, base):
            places = fr._FunctionFields.places()
            return [str(places is not None and len(set(places)) == 6), str(len(base.ns.fields.functions) > 0)]
        self.assertEqual(_in_reused_shape(scenario), ["True", "True"])

    def test_cells_and_descriptors_fields_are_found_read_and_a_change_is_named(self):
        # A closure's cell, a staticmethod, a classmethod, a property: each
        # field at its own place on this interpreter; what a function closes
        # over is taken as a module's function is (its kwdefaults); calling
        # a property's __init__ again, or assigning a cell, is named.
        def scenario(fr, base):
            import types
            mod = types.ModuleType("lib_mod")
            exec("def make():\n    def impl(*, d=1):\n        return d\n    def f():\n        return impl()\n"
                 "    return f\nf = make()\nclass C:\n    @staticmethod\n    def s():\n        pass\n"
                 "    @classmethod\n    def c(cls):\n        pass\n    @property\n    def p(self):\n        return 1\n",
                 vars(mod))
            held = []
            names = [n for n, _ in fr._namespaces([("lib_mod", mod)], set(), (), library=[], held=held)]
            fields = fr._FunctionFields([], None, (), held)
            out = [" ".join(sorted(t.__name__ for t in fr._held_places())),
                   " ".join(n for n in names if "impl" in n), " ".join(n for n, _ in fields.held),
                   str(fields.read() == fields.seen)]
            vars(mod.C)["p"].__init__(lambda s: 2)
            out.append(fields.which())
            vars(mod.C)["p"].__init__(vars(mod.C)["p"].fget)
            mod.f.__closure__[0].cell_contents = None
            out.append(fields.which())
            return out
        self.assertEqual(_in_reused_shape(scenario), [
            "cell classmethod property staticmethod",
            "function lib_mod.f's variable impl dict lib_mod.f's variable impl.__kwdefaults__",
            "lib_mod.f's variable impl lib_mod.C.s lib_mod.C.c lib_mod.C.p", "True",
            "lib_mod.C.p's fget was changed", "lib_mod.f's variable impl was assigned"])

    def test_what_a_librarys_functions_close_over_is_taken_to_be_put_back(self):
        # A list a library function closes over, and the dict a library
        # object in a closure holds (singledispatch's cache, the user's
        # function's too: its dispatch function is functools'); not a list
        # the user's own function closes over (their data is compared).
        def scenario(fr, base):
            import types
            src = ("import functools\ndef make():\n    seen = [1]\n    def f():\n        return seen\n    return f\n"
                   "f = make()\n@functools.singledispatch\ndef show(x):\n    return 0\n")
            lib, mine = types.ModuleType("lib_mod"), types.ModuleType("user_mod")
            exec(src, vars(lib))
            exec(src, vars(mine))
            enclosed = []
            fr._namespaces([("lib_mod", lib), ("user_mod", mine)], set(), {"user_mod"}, [], library=[], held=[],
                           enclosed=enclosed)
            cache = lib.show.dispatch.__closure__[lib.show.dispatch.__code__.co_freevars.index("dispatch_cache")]
            ucache = mine.show.dispatch.__closure__[mine.show.dispatch.__code__.co_freevars.index("dispatch_cache")]
            ids = {id(x) for x in enclosed}
            return [str(id(lib.f()) in ids), str(id(mine.f()) in ids), str(id(cache.cell_contents.data) in ids),
                    str(id(ucache.cell_contents.data) in ids)]
        self.assertEqual(_in_reused_shape(scenario), ["True", "False", "True", "True"])

    def test_the_codec_tables_are_found_and_put_back_whatever_changed_them(self):
        # The interpreter's list of search functions and dict of error
        # handlers, found by the self-test and left as they were; changed
        # through the interpreter's own functions (not the recording
        # wrappers), they are put back, and so is the lookup cache.
        def scenario(fr, base):
            import _codecs
            import codecs
            import encodings
            import gc
            gc.unfreeze()  # the zygote makes its recorder before it freezes the heap
            rec = fr._RecordedRegistrations()
            out = [str(rec.search_path is not None), str(rec.errors is not None),
                   str(any(f is encodings.search_function for f in rec.search_path)),
                   str("strict" in rec.errors and "fitrun.probe" not in rec.errors), rec.restore()]
            original = rec.register  # the interpreter's own register, as a fresh _codecs has it
            utf8 = codecs.lookup("utf-8")
            codecs.unregister(encodings.search_function)
            original(lambda n: utf8 if n in ("latin-1", "latin_1") else None)
            rec.register_error("mine", lambda e: ("?", e.end))
            out += [str(codecs.encode("\u00e9", "latin-1")), rec.restore(), str(codecs.encode("\u00e9", "latin-1"))]
            try:
                _codecs.lookup_error("mine")
                out.append("found")
            except LookupError:
                out.append("none")
            return out
        self.assertEqual(_in_reused_shape(scenario), [
            "True", "True", "True", "True", "", "b'\\xc3\\xa9'", "put back", "b'\\xe9'", "none"])

    def test_a_library_functions_and_a_builtins_fields_are_read_and_a_field_assigned_is_named(self):
        # Library functions (a module's and a class's) and builtins: taken
        # by _namespaces, their words read in one reading; reading a
        # function's __dict__ or __annotations__ later changes nothing.
        def scenario(fr, base):
            import json
            import math
            ns = base.ns
            out = [str(fr._FunctionFields.builtin_place() is not None),
                   str(any(f is json.dumps for _, f in ns.library_functions)),
                   str(any(f is json.JSONEncoder.encode for _, f in ns.library_functions)),
                   str(any(b is math.floor for _, b in ns.builtin_functions))]
            fields = ns.fields
            json.loads.__dict__, json.loads.__annotations__  # read, not assigned
            out.append(str(fields.read() == fields.seen))
            math.floor.__module__ = "P"
            out.append(fields.which())
            math.floor.__module__ = "math"
            json.JSONEncoder.encode.__doc__ = "P"
            out.append(fields.which())
            return out
        self.assertEqual(_in_reused_shape(scenario, peek=True),
                         ["True", "True", "True", "True", "True", "builtin math.floor's __module__ was assigned",
                          "function json.encoder.JSONEncoder.encode's __doc__ was assigned"])

    def test_stdlib_tables_and_logging_are_put_back(self):
        # copy's dispatch tables, shutil's archive formats, encodings'
        # aliases and cache (a name found through a new alias is not found
        # again), logging's loggers, levels, handlers and level names: as
        # they were, with and without the dicts' write counters.
        def scenario(fr, base, counted):
            import copy
            import encodings.aliases
            import logging
            import shutil
            import sys
            try:
                np = __import__("numpy.ma").ma and __import__("numpy")
            except ImportError:
                np = None
            reg = fr._Registries(fr._RecordedRegistrations(), None, counted)
            out = [reg.restore()]
            if np is not None:
                np.sctypeDict["fitrun_int"] = np.int8
                np.ma.core.default_filler["i"] = 7
            copy._deepcopy_dispatch[list] = lambda x, memo: "L"
            shutil.register_archive_format("fitrun_fmt", lambda *a, **k: None)
            encodings.aliases.aliases["fitrun_enc"] = "utf_8"
            "a".encode("fitrun_enc")
            logging.basicConfig()
            logging.getLogger("fitrun.test").setLevel(logging.ERROR)
            logging.disable(logging.WARNING)
            logging.addLevelName(25, "FITRUN")
            out.append(reg.restore())
            try:
                "a".encode("fitrun_enc")
                enc = "found"
            except LookupError:
                enc = "gone"
            out += [str(copy.deepcopy([1])), str("fitrun_fmt" in dict(shutil.get_archive_formats())), enc,
                    str(len(logging.root.handlers)), str("fitrun.test" in logging.root.manager.loggerDict),
                    str(logging.root.manager.disable), logging.getLevelName(25),
                    str(logging.getLogger("x").isEnabledFor(logging.INFO) == logging.getLogger("x").isEnabledFor(
                        logging.INFO)), str(sys.version_info >= (3, 10))]
            out.append("no numpy" if np is None else str(["fitrun_int" in np.sctypeDict,
                                                           int(np.ma.default_fill_value(np.int64(1)))]))
            return out
        import sys
        codec = "gone" if sys.version_info >= (3, 10) else "found"  # no codecs.unregister before 3.10
        for counted in (False, True):
            with self.subTest(counted=counted):
                out = _in_reused_shape(lambda fr, base: scenario(fr, base, counted))
                self.assertEqual(out[:7], ["", "put back", "[1]", "False", codec, "0", "False"], out)
                self.assertEqual(out[7:9], ["0", "Level 25"], out)
                self.assertEqual(out[11], "[False, 999999]" if _has_numpy() else "no numpy", out)

    def test_an_lru_cache_no_call_filled_is_emptied_after_a_prediction_that_called_it(self):
        # One the prelude filled cannot be put back: calling it is
        # poisoning (a value it returned may have been changed in place,
        # and its hits are state the next prediction can read).
        def scenario(fr, base):
            import types
            mod = types.ModuleType("user_mod")
            exec("import functools\n"
                 "@functools.lru_cache(maxsize=None)\ndef palette():\n    return [1, 2]\n"
                 "@functools.cache\ndef warm(x):\n    return [x]\nwarm(1)\n"
                 "class C:\n    @functools.lru_cache\n    def m(self):\n        return [3]\n", vars(mod))
            watches = fr._user_caches([("user_mod", mod)])
            before = [w() for w in watches]
            mod.palette().append(9)
            mod.warm(1).append(9)
            mod.C().m()
            after = [w() for w in watches]
            return before + after + [str(mod.palette()), str(mod.C.m.cache_info().currsize)]
        self.assertEqual(_in_reused_shape(scenario),
                         ["", "", "", "put back", "poisoned: user_mod.warm, a cache the prelude filled, was called",
                          "put back", "[1, 2]", "0"])

    def test_the_librarys_lru_caches_values_are_found_and_a_cache_added_to_is_emptied_on_every_interpreter(self):
        # _cached_values finds what a bounded and an unbounded cache hold
        # (through the collector: C keeps them), and their own dicts apart;
        # _LibraryCaches empties a cache only after a call added to it, not
        # after hits.
        code = ("import functools\n"
                "class V:\n    pass\n"
                "@functools.lru_cache(maxsize=2)\ndef bounded(x):\n    v = V()\n    v.x = x\n    return v\n"
                "@functools.lru_cache(maxsize=None)\ndef unbounded(x):\n    return [x]\n"
                "a, b = bounded(1), unbounded(2)\n"
                "values, dicts = fr._cached_values([bounded, unbounded])\n"
                "ids = {id(v) for v in values}\n"
                "out = [id(a) in ids, id(b) in ids, len(dicts), all(type(d) is dict for d in dicts)]\n"
                "caches = fr._LibraryCaches([bounded, unbounded])\n"
                "out.append(caches.empty())\n"
                "bounded(1), unbounded(2)\nout.append(caches.empty())\n"
                "bounded(3)\nout.append(caches.empty())\n"
                "out += [bounded.cache_info().currsize, unbounded.cache_info().currsize, caches.empty()]\n"
                "print(out)\n")
        self._on_every_interpreter(code, "[True, True, 2, True, '', '', 'put back', 0, 1, '']")

    def test_slots_are_read_where_cpython_keeps_them_and_put_back_on_every_interpreter(self):
        # _Slots finds each slot at its place (read as words, by the sandbox
        # library), sees a slot set, replaced or deleted, and puts it back.
        code = ("class A:\n    __slots__ = ('b', 'a')\nclass B(A):\n    __slots__ = ('c',)\n"
                "class D:\n    pass\nclass E(D):\n    __slots__ = ('z',)\n"
                "x, y, z = A(), B(), E()\nx.a, y.c, z.z = 1, [2], 'q'\n"
                "s = fr._Slots([x, y, z], peek)\nout = [s.read is not None, s._changed() == []]\n"
                "x.b = 5\ndel y.c\nz.z = 'r'\nkeep = []\n"
                "out += [len(s._changed()), s.restore(keep), hasattr(x, 'b'), y.c, z.z, s._changed() == []]\n"
                "print(out)\n")
        self._on_every_interpreter(code, "[True, True, 3, True, False, [2], 'q', True]", peek=True)

    def test_a_partials_fields_and_a_dict_subclasss_entries_are_put_back_on_every_interpreter(self):
        # A functools.partial's keywords changed in place, its __setstate__
        # giving it another function, and a defaultdict's or a plain dict
        # subclass's new entry: each put back; an OrderedDict is not taken
        # for a plain dict.
        code = ("import collections, functools\n"
                "class T(dict):\n    pass\n"
                "p = functools.partial(max, 1, key=abs)\nd, t = collections.defaultdict(list), T(a=1)\n"
                "out = [fr._plain_dict_type(type(d)), fr._plain_dict_type(T),"
                " fr._plain_dict_type(collections.OrderedDict)]\n"
                "put = fr._PutBack([d, t, p.keywords], partials=[p])\n"
                "p.keywords['key'] = None\np.__setstate__((min, (5,), {}, None))\nd['x'].append(1)\nt['b'] = 2\n"
                "out += [put.restore(), p(-7), p.func is max, dict(d), dict(t)]\n"
                "print(out)\n")
        self._on_every_interpreter(code, "[True, True, False, 'put back', -7, True, {}, {'a': 1}]")

    @unittest.skipUnless(LIB, "needs libfitrun_sandbox.so")
    def test_a_partials_fields_are_read_as_words_and_each_one_changed_moves_them_on_every_interpreter(self):
        # Found by a self-test on each interpreter; another function,
        # arguments or keywords (by __setstate__, the only way to set them)
        # each moves the words, and each is put back.
        code = ("import functools\np = functools.partial(max, 1, key=abs)\n"
                "put = fr._PutBack([], partials=[p], peek=peek)\nout = [fr._partial_places() is not None,"
                " put.read_partials.same(put.partial_words)]\nfunc, args, kw = p.func, p.args, p.keywords\n"
                "for state in ((min, args, kw, None), (func, (5,), kw, None), (func, args, {'key': None}, None)):\n"
                "    p.__setstate__(state)\n"
                "    out += [put.read_partials.same(put.partial_words), put.restore(),"
                " put.read_partials.same(put.partial_words), p(-7)]\n"
                "print(out)\n")
        self._on_every_interpreter(code, "[True, True, False, 'put back', True, -7, False, 'put back', True, -7, "
                                   "False, 'put back', True, -7]", peek=True)

    @unittest.skipUnless(_has_numpy(), "needs numpy")
    def test_a_packages_array_changed_in_place_is_put_back_and_one_reshaped_is_poisoning(self):
        def scenario(fr, base):
            import numpy as np
            a, b = np.arange(4), np.zeros((2, 2))
            arrays = fr._Arrays([a, b, np.arange(6)[::2]])  # the last lies in steps: left out
            keep = []
            a[1] = 9
            out = [str(len(arrays.arrays)), str(arrays.same()), repr(arrays.restore(keep)), str(a.tolist()),
                   str(len(keep)), str(arrays.same())]
            b.shape = (4,)
            return out + [arrays.restore([])]
        self.assertEqual(_in_reused_shape(scenario),
                         ["2", "False", "''", "[0, 1, 2, 3]", "1", "True",
                          "poisoned: a numpy array of a package's module was reshaped, retyped or made read-only"])

    def test_a_defaultdicts_factory_is_put_back_by_identity(self):
        import collections
        fr = _load_runtime()
        dd = collections.defaultdict(list, {"a": [1]})
        put = fr._PutBack([dd])
        out = [put.restore()]
        dd.default_factory = dict
        out += [put.restore(), dd.default_factory is list, dict(dd), put.restore()]
        self.assertEqual(out, ["", "put back", True, {"a": [1]}, ""])

    def test_a_deques_items_are_put_back_by_identity_and_a_librarys_deques_are_found(self):
        # A threading.Condition keeps its waiters in a deque; the walk of
        # the library's containers finds it below a module's objects.
        import collections
        import threading
        import types
        fr = _load_runtime()
        eq = type("Eq", (), {"__eq__": lambda self, other: True, "__hash__": object.__hash__})
        a, b = eq(), eq()
        q, bounded = collections.deque([a]), collections.deque([1, 2], maxlen=2)
        mod = types.ModuleType("m")
        mod.cond = threading.Condition()
        found = fr._module_containers([("m", mod)], [], set())
        put = fr._PutBack([], deques=[q, bounded, collections.deque.__new__(type("Q", (collections.deque,), {}))])
        out = [found["deques"] == [mod.cond._waiters], len(put.deques), put.restore()]
        q[0] = b  # equal, not the same
        bounded.append(3)
        out += [put.restore(), q[0] is a, list(bounded), bounded.maxlen, put.restore()]
        self.assertEqual(out, [True, 2, "", "put back", True, [1, 2], 2, ""])

    def test_the_locks_counters_and_foreign_functions_objects_hold_are_found_and_any_change_is_named(self):
        # In a dict (untracked where the collector does not track locks,
        # before 3.10: atomic values only), an object's attribute, a bound
        # method's object, a set below a namespace (roots).
        import gc
        import itertools
        import threading
        fr = _load_runtime()
        plain, rlock, held, deep, count = threading.Lock(), threading.RLock(), threading.Lock(), threading.Lock(), \
            itertools.count(1)
        held.acquire()
        untracked = {"k": plain}

        class Holder:
            pass
        obj = Holder()
        obj.lock = rlock
        keep = [untracked, obj, held, count.__next__]
        gc.collect()  # which untracks a dict of atomic values
        found = fr._heap_state()
        self.assertEqual([any(x is o for x in found) for o in (plain, rlock, held, count)], [True] * 4)
        namespace = {"a": [({deep},)], "b": plain}
        self.assertEqual(sorted(map(id, fr._heap_state([namespace]))), sorted([id(deep), id(plain)]))
        state = fr._HeapState([plain, rlock, held, count])
        out = [state.changed()]
        for take, give in ((plain.acquire, plain.release), (rlock.acquire, rlock.release), (held.release, held.acquire)):
            take()
            out.append(state.changed())
            give()
            out.append(state.changed())
        next(count)
        out.append(state.changed())
        import ctypes
        func = ctypes.CFUNCTYPE(ctypes.c_int)(lambda: 0)
        state = fr._HeapState([func])
        out.append(state.changed())
        func.restype = ctypes.c_long
        out.append(state.changed())
        lock, counter = "a lock the interpreter's objects hold was left acquired, or released", \
            "a counter (itertools.count) the interpreter's objects hold was advanced"
        self.assertEqual(out, ["", lock, "", lock, "", lock, "", counter, "",
                               "a foreign function (ctypes) the interpreter's objects hold was given other types"])
        self.assertTrue(any(x is func for x in fr._heap_state()))
        del keep

    @unittest.skipUnless(LIB, "needs libfitrun_sandbox.so")
    def test_linecaches_cache_is_compared_entry_by_entry_and_put_back(self):
        # The runtime writes it for every prediction (its source), so it is
        # not among the counted tables, whose counters then stay put.
        def scenario(fr, base):
            import linecache
            put = base.containers
            out = [str(any(d is linecache.cache for d, _ in put.loose)),
                   str(any(d is linecache.cache for d, _ in put.dicts)), base.check()]
            linecache.cache[fr.PREDICTION_FILE] = (1, None, ["x\n"], fr.PREDICTION_FILE)
            linecache.cache.pop(fr.PREDICTION_FILE)
            out += [base.check(), str(put.read.same(put.seen))]
            linecache.cache["/honest.py"] = (1, None, ["x\n"], "/honest.py")
            out += [base.check(), str("/honest.py" in linecache.cache)]
            return out
        self.assertEqual(_in_reused_shape(scenario, peek=True), ["True", "False", "", "", "True", "", "False"])

    @unittest.skipUnless(_has_numpy() and LIB, "needs numpy and libfitrun_sandbox.so")
    def test_numpys_global_generator_is_read_as_words_and_every_change_of_its_state_moves_them(self):
        # The put-back skips set_state only where the words still read as
        # set_state left them: a draw, a gaussian cached or taken, a seed,
        # a state set with only the cached gaussian changed each move them;
        # set_state with the state taken then brings them back.
        def scenario(fr, base):
            import numpy as np
            state = fr._Baseline._numpy_state()
            words = fr._numpy_rng_words(state, base.ns.peek)
            read, seen = words
            rng = state[3]
            out = [str(fr._numpy_rng_words(state, None)), str(read.same(seen))]

            def cached_gaussian_only():
                s = list(np.random.get_state())
                s[3], s[4] = 1, 42.0
                np.random.set_state(tuple(s))
            for name, change in (("random", np.random.random), ("gaussian", np.random.standard_normal),
                                 ("seed", lambda: np.random.seed(5)), ("cached gaussian", cached_gaussian_only),
                                 ("nothing", lambda: None)):
                change()
                moved = not read.same(seen)
                np.random.set_state(rng)
                out.append(f"{name} {moved} {read.same(seen)}")
            return out
        self.assertEqual(_in_reused_shape(scenario, peek=True),
                         ["None", "True", "random True True", "gaussian True True", "seed True True",
                          "cached gaussian True True", "nothing False True"])

    @unittest.skipUnless(_has_numpy() and LIB, "needs numpy and libfitrun_sandbox.so")
    def test_a_packages_arrays_are_compared_as_words_first_and_every_change_moves_them(self):
        def scenario(fr, base):
            import numpy as np
            peek = base.ns.peek
            out = [str(fr._ArrayWords.make([np.arange(4)], None))]
            changes = (("none", lambda a: None), ("bytes", lambda a: a.__setitem__(0, 7)),
                       ("shape", lambda a: setattr(a, "shape", (2, 2))),
                       ("strides", lambda a: setattr(a, "strides", (0,))),
                       ("dtype", lambda a: setattr(a, "dtype", np.float64)),
                       ("read-only", lambda a: setattr(a.flags, "writeable", False)))
            for name, change in changes:
                a = np.arange(4)
                words = fr._ArrayWords.make([a], peek)
                change(a)
                out.append(f"{name} {words.same()}")
            a, f16, b = np.arange(4), np.zeros((), np.float16), np.zeros((2, 2))
            arrays = fr._Arrays([a, f16, b], peek)
            out.append(f"{arrays.words is not None} {len(arrays.words.unaligned)} {arrays.same()}")
            a[1], f16[()] = 9, 2
            keep = []
            out.append(f"{arrays.same()} {arrays.restore(keep)!r} {a.tolist()} {float(f16)} {len(keep)} "
                       f"{arrays.words.same()}")
            a.shape = (4,)  # the same shape: its block is a new one, its words another reading
            out.append(f"{arrays.restore([])!r} {arrays.words.same()}")
            b.shape = (4,)
            return out + [arrays.restore([])]
        self.assertEqual(_in_reused_shape(scenario, peek=True),
                         ["None", "none True", "bytes False", "shape False", "strides False", "dtype False",
                          "read-only False", "True 1 True", "False '' [0, 1, 2, 3] 0.0 2 True", "'' True",
                          "poisoned: a numpy array of a package's module was reshaped, retyped or made read-only"])

    def test_a_finalizer_the_put_back_runs_is_looked_at_once_more(self):
        # What the put-back takes out is freed after the namespaces were
        # compared; its finalizer replacing a module's function, or changing
        # the working directory, is seen (or put back) before the next
        # prediction.
        def scenario(fr, base):
            import json
            import os
            import warnings

            cwd = os.getcwd()
            out = [base.check()]
            json.decoder.BACKSLASH["zz"] = _Bomb(lambda: os.chdir("/"))
            warnings.filters.insert(0, ("ignore", None, Warning, None, 0, _Bomb(lambda: os.chdir("/"))))
            out += [base.check(), str(os.getcwd() == cwd)]
            json.decoder.BACKSLASH["zz"] = _Bomb(lambda: setattr(json, "dumps", None))
            return out + [base.check()]
        self.assertEqual(_in_reused_shape(scenario),
                         ["", "", "True", "poisoned: module json was changed (dumps replaced)"])

    def test_the_predictions_globals_are_freed_within_the_check(self):
        # sys.modules["__prediction__"] holds the prediction's globals (a
        # cycle with its function), and a module it put there or imported
        # first its own: dropped before the check's collection, so their
        # globals' finalizers run, and what they change is seen (here put
        # back), in this check, not in a collection during the next
        # prediction.
        def scenario(fr, base):
            import gc
            import os
            import sys
            import types

            class Bomb:
                def __del__(self):
                    os.chdir("/")
            cwd = os.getcwd()
            for name in ("__prediction__", "fitrun_planted"):
                module = types.ModuleType(name)
                exec("def f():\n    pass\n", module.__dict__)
                module.X = Bomb()
                sys.modules[name] = module
            del module
            out = [base.check(), str(os.getcwd() == cwd), str(gc.collect())]
            return out + [str(os.getcwd() == cwd), str("fitrun_planted" in sys.modules)]
        self.assertEqual(_in_reused_shape(scenario), ["", "True", "0", "True", "False"])

    def test_a_module_a_finalizer_of_the_collection_planted_is_collected_too(self):
        # The check drops it after its collection: the second look's
        # collection frees its globals, and what their finalizer changes is
        # put back before the next prediction.
        def scenario(fr, base):
            import gc
            import os
            import sys
            import types


            def plant():
                planted = types.ModuleType("fitrun_planted")
                exec("def f():\n    pass\n", planted.__dict__)
                planted.X = _Bomb(lambda: os.chdir("/"))
                sys.modules["fitrun_planted"] = planted
            cwd = os.getcwd()
            module = types.ModuleType("__prediction__")
            exec("def f():\n    pass\n", module.__dict__)
            module.X = _Bomb(plant)
            sys.modules["__prediction__"] = module
            del module
            out = [base.check(), str(gc.collect())]
            return out + [str(os.getcwd() == cwd), str("fitrun_planted" in sys.modules)]
        self.assertEqual(_in_reused_shape(scenario), ["", "0", "True", "False"])

    def test_collections_go_on_until_two_in_a_row_find_nothing(self):
        # A collection that finds nothing may still have run finalizers
        # (one that brought the garbage back, which the next one frees).
        fr = _load_runtime()
        for counts, want, calls in (([0, 0], True, 2), ([3, 0, 0], True, 3), ([0, 18, 0, 0], True, 4),
                                    ([1, 1, 1, 1, 1, 0, 0], False, 4), ([0, 1, 0, 1, 0], False, 4), ([0, 1, 0, 0, 1], True, 4)):
            with self.subTest(counts=counts):
                left = list(counts)
                collect = fr._collect_all(lambda: left.pop(0))
                self.assertEqual((collect(), len(counts) - len(left)), (want, calls))

    def test_importing_a_new_module_is_not_poisoning(self):
        # The module is dropped (the next prediction imports it afresh).
        def scenario(fr, base):
            import sys
            out = [str("colorsys" in sys.modules)]
            __import__("colorsys")
            return out + [base.check(), str("colorsys" in sys.modules), base.check()]
        self.assertEqual(_in_reused_shape(scenario), ["False", "", "False", ""])


if __name__ == "__main__":
    unittest.main()
