"""Tests of the Python client (python/fitrun/): fitrun.Runner driving real
`fitrun run` processes with the warm Python runtime, and fitrun.arc.

    FITRUN=build/fitrun /usr/bin/python3 -m unittest -v test_client    (in tests/python)

FITRUN names the binary (default: build/fitrun of this checkout).
"""
import concurrent.futures
import ctypes
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("FITRUN_SRC") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "python"))

import fitrun  # noqa: E402
from fitrun import _options, _progress, arc  # noqa: E402

FITRUN = os.environ.get("FITRUN") or os.path.join(SRC, "build", "fitrun")
PYTHON = "/usr/bin/python3"

# Limits generous enough for a loaded 2-CPU machine; no test depends on them.
PROFILE = """\
[resources]
workers = 2
[sandbox]
cpu_time = 5s
wall_time = 60s
[runtime]
kind = python
interpreter = /usr/bin/python3
entry = transform
"""

SLEEP = "import time\ndef transform(x):\n    time.sleep(x[1])\n    return x[0]\n"
DOUBLE = "def transform(x):\n    return 2 * x\n"


def sleep_job(value, seconds, jid=None):
    job = {"code": SLEEP, "inputs": [[value, seconds]]}
    if jid is not None:
        job["id"] = jid
    return job


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="fitrun-test-client-")
        self.addCleanup(self.tmp.cleanup)
        self.profile = write(os.path.join(self.tmp.name, "python.ini"), PROFILE)
        # fitrun's stderr lines are logged on "fitrun"; keep test output clean.
        logger = logging.getLogger("fitrun")
        handler = logging.NullHandler()
        logger.addHandler(handler)
        logger.propagate = False
        self.addCleanup(logger.removeHandler, handler)
        self.addCleanup(setattr, logger, "propagate", True)

    def runner(self, **kw):
        kw.setdefault("profile", self.profile)
        r = fitrun.Runner(fitrun=FITRUN, **kw)
        self.addCleanup(r.terminate)
        return r


class Map(Base):
    def test_map_returns_results_in_input_order_with_the_callers_ids(self):
        # Earlier jobs sleep longer: fitrun finishes them in another order.
        jobs = [sleep_job(i, 0.02 * (12 - i), jid=f"j{i}") for i in range(12)]
        with self.runner() as r:
            results = r.map(jobs)
        self.assertEqual([res["id"] for res in results], [f"j{i}" for i in range(12)])
        self.assertEqual([res["outputs"] for res in results], [[i] for i in range(12)])
        self.assertTrue(all(res["status"] == "ok" for res in results))
        self.assertEqual(r.returncode, 0)

    def test_one_process_for_many_batches(self):
        with self.runner() as r:
            pid = r.pid
            for b in range(20):
                res = r.map([{"id": k, "code": DOUBLE, "inputs": [b * 10 + k]} for k in range(4)])
                self.assertEqual([x["outputs"] for x in res], [[2 * (b * 10 + k)] for k in range(4)])
                self.assertEqual(r.pid, pid)
            self.assertIsNone(r.returncode)  # still the same fitrun
        self.assertEqual(r.returncode, 0)

    def test_imap_unordered_yields_every_result_once_as_they_finish(self):
        jobs = [sleep_job(i, 0.3 if i == 0 else 0.01, jid=i) for i in range(30)]
        with self.runner() as r:
            got = list(r.imap_unordered(jobs))
        self.assertEqual(sorted(res["id"] for res in got), list(range(30)))
        self.assertTrue(all(res["outputs"] == [res["id"]] for res in got))
        self.assertNotEqual(got[0]["id"], 0)  # the slow first job is not waited for

    def test_submit_gives_a_future(self):
        with self.runner() as r:
            fut = r.submit({"id": "x", "code": DOUBLE, "inputs": [21]})
            self.assertIsInstance(fut, concurrent.futures.Future)
            res = fut.result(60)
        self.assertEqual((res["id"], res["status"], res["outputs"]), ("x", "ok", [42]))

    def test_concurrent_submit_from_8_threads(self):
        # Every thread uses the same ids: each result still reaches its own Future.
        out = {}

        def work(t):
            futs = [(k, r.submit({"id": f"k{k}", "code": DOUBLE, "inputs": [t * 100 + k]})) for k in range(10)]
            out[t] = [(k, f.result(120)) for k, f in futs]

        with self.runner() as r:
            threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        self.assertEqual(sorted(out), list(range(8)))
        for t, results in out.items():
            for k, res in results:
                self.assertEqual((res["id"], res["status"], res["outputs"]), (f"k{k}", "ok", [2 * (t * 100 + k)]))

    def test_ids_may_repeat_across_and_within_batches(self):
        with self.runner() as r:
            a = r.map([{"id": "same", "code": DOUBLE, "inputs": [1]}, {"id": "other", "code": DOUBLE, "inputs": [2]}])
            b = r.map([{"id": "same", "code": DOUBLE, "inputs": [3]}, {"id": "other", "code": DOUBLE, "inputs": [4]}])
            c = r.map([{"id": "dup", "code": DOUBLE, "inputs": [5]}, {"id": "dup", "code": DOUBLE, "inputs": [6]}])
            d = r.map([{"code": DOUBLE, "inputs": [7]}])
        self.assertEqual([(x["id"], x["outputs"]) for x in a + b + c + d],
                         [("same", [2]), ("other", [4]), ("same", [6]), ("other", [8]),
                          ("dup", [10]), ("dup", [12]), (None, [14])])
        self.assertNotIn("DuplicateId", [x["error_type"] for x in a + b + c])

    def test_a_large_result_arrives_whole(self):
        code = "def transform(n):\n    return 'x' * n\n"
        # 5 MB of outputs: above the default [sandbox] result of 1 MiB
        with self.runner(sandbox__result="8M") as r:
            res = r.map([{"code": code, "inputs": [5_000_000]}, {"code": code, "inputs": [3]}])
        self.assertEqual([len(x["outputs"][0]) for x in res], [5_000_000, 3])

    def test_map_timeout(self):
        with self.runner() as r:
            with self.assertRaises(concurrent.futures.TimeoutError):
                r.map([sleep_job(1, 3)], timeout=0.2)
            self.assertEqual(r.map([sleep_job(2, 0)])[0]["outputs"], [2])

    def test_exec_jobs_with_the_default_profile(self):
        with self.runner(profile=None) as r:
            res = r.map([{"id": 1, "argv": ["echo", "hello"]}, {"id": 2, "argv": ["sh", "-c", "exit 3"]}])
        self.assertEqual([(x["status"], x["stdout"], x["exit_code"]) for x in res],
                         [("ok", "hello\n", 0), ("error", "", 3)])


class Ready(Base):
    def test_the_constructor_returns_with_fitrun_ready(self):
        r = self.runner(workers=3)
        self.assertEqual(r.workers, 3)
        self.assertEqual(r.wait_ready(0), {"ready": True, "pid": r.pid, "workers": 3, "runtime": "python"})
        self.assertEqual(r.map([{"code": DOUBLE, "inputs": [4]}])[0]["outputs"], [8])

    def test_wait_ready_later(self):
        # a slow prelude: the constructor returns at once, wait_ready waits
        prelude = write(os.path.join(self.tmp.name, "slow.py"), "import time\ntime.sleep(1)\n")
        slow = write(os.path.join(self.tmp.name, "slow.ini"), PROFILE + f"prelude = {prelude}\n")
        r = self.runner(profile=slow, wait_ready=False)
        self.assertIsNone(r.workers)
        with self.assertRaises(concurrent.futures.TimeoutError):
            r.wait_ready(0.05)
        self.assertEqual(r.wait_ready()["workers"], 2)
        self.assertEqual(r.workers, 2)

    def test_the_plan_decides_without_workers(self):
        with self.runner(profile=None) as r:
            self.assertEqual(r.wait_ready(0)["runtime"], "exec")
            self.assertGreaterEqual(r.workers, 1)


class Invalid(Base):
    def test_bad_jobs_are_invalid_results_not_exceptions(self):
        with self.runner() as r:
            res = r.map([{"id": "nocode", "inputs": [1]},
                         [1, 2],
                         {"id": "badinputs", "code": DOUBLE, "inputs": "x"},
                         {"id": "nan", "code": DOUBLE, "inputs": [float("nan")]},
                         {"id": "fine", "code": DOUBLE, "inputs": [1]}])
            self.assertEqual(r.map([{"code": DOUBLE, "inputs": [5]}])[0]["outputs"], [10])
        self.assertEqual([(x["id"], x["status"], x["error_type"]) for x in res],
                         [("nocode", "invalid", "InvalidJob"), (None, "invalid", "InvalidJSON"),
                          ("badinputs", "invalid", "InvalidJob"), ("nan", "invalid", "InvalidJSON"),
                          ("fine", "ok", None)])
        self.assertEqual(r.returncode, 1)  # fitrun's "some input line was invalid"; not an error

    def test_what_is_not_json_raises_at_submit(self):
        with self.runner() as r:
            with self.assertRaisesRegex(TypeError, "not JSON serializable"):
                r.submit({"code": DOUBLE, "inputs": [object()]})
            self.assertEqual(r.map([{"code": DOUBLE, "inputs": [1]}])[0]["status"], "ok")

    def test_numpy_values_are_sent_as_lists(self):
        try:
            import numpy as np
        except ImportError:
            self.skipTest("numpy is not importable")
        code = "def transform(g):\n    return [row[::-1] for row in g]\n"
        with self.runner() as r:
            res = r.map([{"code": code, "inputs": [np.array([[1, 2], [3, 4]])]}])
        self.assertEqual(res[0]["outputs"], [[[2, 1], [4, 3]]])


class Options(Base):
    def test_keywords_are_the_cli_options(self):
        args = _options.run_arguments(dict(workers=2, cpus=1.5, rounding="ceil", memory_per_worker="1G",
                                           cpu_time="500ms", wall_time=3, memory="256M",
                                           output="1M", preset="python", isolation="reuse",
                                           sandbox__allow=["socket", "connect"], env__SEED=1,
                                           sandbox__spec_allow=True, resources__memory_per_worker=None))
        self.assertEqual(args, ["--workers", "2", "--cpus", "1.5", "--rounding", "ceil",
                                "--memory-per-worker", "1G", "--cpu-time", "500ms", "--wall-time", "3",
                                "--memory", "256M", "--output", "1M", "--preset", "python",
                                "--set", "runtime.isolation=reuse", "--set", "sandbox.allow=socket,connect",
                                "--set", "env.SEED=1", "--set", "sandbox.spec_allow=true"])

    def test_none_leaves_the_profile_alone(self):
        with self.runner(workers=None, isolation=None) as r:
            self.assertEqual(r.args[1:8] + r.args[9:],
                             ["run", "--jobs", "-", "--out", "-", "--quiet", "--ready-fd", "--profile", self.profile])

    def test_an_unknown_keyword_is_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "cpu_tme"):
            fitrun.Runner(fitrun=FITRUN, cpu_tme="1s")

    def test_overrides_reach_the_jobs(self):
        noisy = "def transform(x):\n    print('x' * 5000)\n"
        env = "import os\ndef transform(x):\n    return os.environ.get('FITRUN_CLIENT_TEST')\n"
        with self.runner(output="1K", wall_time="300ms", env__FITRUN_CLIENT_TEST="42") as r:
            res = r.map([{"code": noisy, "inputs": [0]}, sleep_job(0, 10), {"code": env, "inputs": [0]}])
        self.assertEqual([(x["status"], x.get("timeout")) for x in res[:2]], [("output_limit", None), ("timeout", "wall")])
        self.assertEqual(res[1]["error_type"], "WallTimeout")
        self.assertEqual(res[2]["outputs"], ["42"])


class Errors(Base):
    def test_sigkill_of_fitrun_mid_batch_fails_every_waiter_promptly(self):
        r = self.runner()
        r.map([sleep_job(0, 0)])  # up and warm
        errors, started = {}, threading.Barrier(5)

        def waiter(t):
            futs = r._submit([sleep_job(i, 30) for i in range(3)])
            started.wait()
            try:
                [f.result() for f in futs]
            except fitrun.RunnerError as e:
                errors[t] = (time.monotonic(), e)

        threads = [threading.Thread(target=waiter, args=(t,)) for t in range(4)]
        for th in threads:
            th.start()
        started.wait()
        time.sleep(0.3)  # the first jobs are running
        killed = time.monotonic()
        os.kill(r.pid, signal.SIGKILL)
        for th in threads:
            th.join(10)
        self.assertEqual(sorted(errors), [0, 1, 2, 3])
        for at, e in errors.values():
            self.assertLess(at - killed, 2.0)
            self.assertEqual(e.returncode, -signal.SIGKILL)
            self.assertIn("killed by SIGKILL", str(e))
        with self.assertRaisesRegex(fitrun.RunnerError, "SIGKILL"):
            r.map([sleep_job(0, 0)])
        r.close()  # nothing left to wait for: returns

    def test_map_keeps_the_results_fitrun_wrote_before_it_died(self):
        r = self.runner()
        jobs = [sleep_job(0, 0, "quick"), sleep_job(1, 30, "slow"), sleep_job(2, 0, "quick2")]
        handed = []  # result lines the I/O thread has handed to their Futures
        hand = r._results
        r._results = lambda lines: (hand(lines), handed.extend(x for x in lines if x.strip()))

        def kill_after_two():
            _wait_until(lambda: len(handed) == 2)
            os.kill(r.pid, signal.SIGKILL)
        killer = threading.Thread(target=kill_after_two)
        killer.start()
        with self.assertRaises(fitrun.RunnerError) as cm:
            r.map(jobs)
        killer.join()
        e = cm.exception
        self.assertIn("killed by SIGKILL", str(e))
        self.assertEqual([x and (x["id"], x["outputs"]) for x in e.results], [("quick", [0]), None, ("quick2", [2])])

    def test_a_profile_error_is_a_runner_error_with_file_and_line(self):
        bad = write(os.path.join(self.tmp.name, "bad.ini"), "[sandbox]\n; comment\ncpu_tme = 1s\n")
        with self.assertLogs("fitrun", "WARNING") as logs:  # fitrun's stderr, as it comes
            with self.assertRaises(fitrun.RunnerError) as cm:
                self.runner(profile=bad)  # the constructor waits for fitrun to be ready
        e = cm.exception
        self.assertEqual(e.returncode, 125)
        self.assertIn(f"{bad}:3: unknown key 'cpu_tme' in [sandbox]", str(e))
        self.assertIn(f"{bad}:3:", e.stderr)
        self.assertIn(f"{bad}:3:", "\n".join(logs.output))

    def test_without_waiting_a_profile_error_surfaces_at_the_first_wait(self):
        bad = write(os.path.join(self.tmp.name, "bad.ini"), "[sandbox]\ncpu_tme = 1s\n")
        r = self.runner(profile=bad, wait_ready=False)
        with self.assertRaisesRegex(fitrun.RunnerError, f"status 125: .*{bad}:2: unknown key"):
            r.map([{"code": DOUBLE, "inputs": [1]}])
        with self.assertRaisesRegex(fitrun.RunnerError, "status 125"):
            r.submit({"code": DOUBLE, "inputs": [1]})
        with self.assertRaisesRegex(fitrun.RunnerError, f"{bad}:2:"):
            r.wait_ready()
        self.assertIsNone(r.workers)

    def test_a_bad_option_value_is_a_runner_error(self):
        with self.assertRaisesRegex(fitrun.RunnerError, "--workers 0: bad value"):
            self.runner(workers=0)

    def test_a_failing_prelude_is_a_runner_error_from_the_constructor(self):
        prelude = write(os.path.join(self.tmp.name, "prelude.py"), "raise ValueError('no model here')\n")
        bad = write(os.path.join(self.tmp.name, "prelude.ini"), PROFILE + f"prelude = {prelude}\n")
        with self.assertRaisesRegex(fitrun.RunnerError, "(?s)status 125: .*no model here"):
            self.runner(profile=bad)

    def test_an_interrupted_fitrun_is_named_so(self):
        r = self.runner()
        fut = r.submit(sleep_job(0, 30))
        os.kill(r.pid, signal.SIGTERM)  # a batch system's, say: not ours
        with self.assertRaises(fitrun.RunnerError) as cm:
            fut.result(10)
        self.assertEqual(cm.exception.returncode, 143)
        self.assertIn("was interrupted by SIGTERM (exit status 143)", str(cm.exception))

    def test_a_missing_binary_is_a_runner_error(self):
        with self.assertRaisesRegex(fitrun.RunnerError, "not an executable"):
            fitrun.Runner(fitrun=os.path.join(self.tmp.name, "nope"))

    def test_use_after_close_raises(self):
        r = self.runner()
        r.map([{"code": DOUBLE, "inputs": [1]}])
        r.close()
        for use in (lambda: r.map([{"code": DOUBLE, "inputs": [1]}]), lambda: r.submit({}),
                    lambda: r.imap_unordered([{}])):
            with self.assertRaisesRegex(fitrun.RunnerError, "closed"):
                use()
        r.close()  # idempotent
        r.terminate()

    def test_close_waits_for_submitted_jobs(self):
        r = self.runner()
        futs = [r.submit(sleep_job(i, 0.2)) for i in range(4)]
        r.close()
        self.assertEqual([f.result(0)["outputs"] for f in futs], [[0], [1], [2], [3]])
        self.assertEqual(r.returncode, 0)

    def test_terminate_fails_pending_jobs_and_stops_fitrun(self):
        r = self.runner()
        futs = [r.submit(sleep_job(i, 30)) for i in range(4)]
        time.sleep(0.3)
        t0 = time.monotonic()
        r.terminate()
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(r.returncode, 130)
        for f in futs:
            with self.assertRaisesRegex(fitrun.RunnerError, "stopped"):
                f.result(0)

    def test_a_failing_body_stops_the_runner_without_waiting(self):
        t0 = time.monotonic()
        with self.assertRaises(ZeroDivisionError):
            with self.runner() as r:
                r.submit(sleep_job(0, 30))
                1 / 0
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(r.returncode, 130)

    def test_terminate_at_any_moment_of_the_start_is_an_interrupt(self):
        # fitrun is started with its stop signals blocked: a SIGINT before
        # its main() even runs is read by its pool, never its death by SIGINT.
        for _ in range(8):
            r = self.runner(wait_ready=False)
            r.terminate()
            self.assertEqual(r.returncode, 130)
            with self.assertRaisesRegex(fitrun.RunnerError, "stopped .* before fitrun was ready"):
                r.wait_ready(0)

    def test_a_forked_child_does_not_keep_fitrun_alive(self):
        # multiprocessing-style fork: the child must not hold fitrun's stdin,
        # or fitrun would never see the end of its input.
        r = self.runner()
        r.map([{"code": DOUBLE, "inputs": [1]}])
        pid = os.fork()
        if pid == 0:
            try:
                r.submit({})
            except fitrun.RunnerError:
                r.close()  # not the child's to close: a no-op
                time.sleep(5)
                os._exit(0)
            os._exit(1)
        try:
            t0 = time.monotonic()
            r.close()
            self.assertLess(time.monotonic() - t0, 4)
            self.assertEqual(r.returncode, 0)
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


PR_SET_CHILD_SUBREAPER = 36


def descendants(root):
    """Pids of every live process below root (from /proc's parent links)."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[0] != "Z":
                parent[int(name)] = int(fields[1])
    out, todo = set(), [root]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out.update(kids)
        todo += kids
    return out


class Interrupt(Base):
    """Ctrl-C in the caller: SIGINT to a program that drives a Runner."""

    HEAD = """
        import sys
        sys.path.insert(0, {pkg!r})
        import fitrun
        SLEEP = {sleep!r}
        """
    # Long jobs, interrupted in map(): a Runner as a plain object...
    PLAIN = """
        r = fitrun.Runner(profile={profile!r}, fitrun={fitrun!r})
        r.map([{{"code": SLEEP, "inputs": [[0, 0]]}}])
        print("ready", r.pid, flush=True)
        r.map([{{"code": SLEEP, "inputs": [[i, 60]]}} for i in range(6)])
        print("not interrupted", flush=True)
        """
    # ... and in a with block, waiting on Futures it cannot know about.
    WITH = """
        with fitrun.Runner(profile={profile!r}, fitrun={fitrun!r}) as r:
            r.map([{{"code": SLEEP, "inputs": [[0, 0]]}}])
            print("ready", r.pid, flush=True)
            futs = [r.submit({{"code": SLEEP, "inputs": [[i, 60]]}}) for i in range(6)]
            [f.result() for f in futs]
            print("not interrupted", flush=True)
        """

    # ... and in imap_unordered's iterator.
    IMAP = """
        with fitrun.Runner(profile={profile!r}, fitrun={fitrun!r}) as r:
            r.map([{{"code": SLEEP, "inputs": [[0, 0]]}}])
            print("ready", r.pid, flush=True)
            for res in r.imap_unordered([{{"code": SLEEP, "inputs": [[i, 60]]}} for i in range(6)]):
                print("not interrupted", flush=True)
        """

    def setUp(self):
        super().setUp()
        # Orphans of the caller come back to this process: nothing can hide.
        libc = ctypes.CDLL(None, use_errno=True)
        self.assertEqual(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0)
        self.addCleanup(libc.prctl, PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

    def caller(self, body):
        text = textwrap.dedent(self.HEAD) + textwrap.dedent(body)
        text = text.format(pkg=os.path.join(SRC, "python"), sleep=SLEEP, profile=self.profile, fitrun=FITRUN)
        return write(os.path.join(self.tmp.name, "caller.py"), text)

    def interrupt(self, body):
        script = self.caller(body)
        p = subprocess.Popen([PYTHON, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = p.stdout.readline().split()
            self.assertEqual(line[:1], ["ready"], p.stderr.read() if p.poll() is not None else "")
            time.sleep(0.5)  # the long jobs run
            tree = descendants(p.pid)
            self.assertIn(int(line[1]), tree)
            self.assertGreaterEqual(len(tree), 4)  # fitrun, zygote, workers, predictions
            self.sigint_leaves_nothing(p, tree, within=2)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def sigint_leaves_nothing(self, p, tree, within):
        """SIGINT to the caller p: it dies of KeyboardInterrupt before saying
        "not interrupted", and no process of tree runs `within` seconds on
        (zombies handed to us are reaped first)."""
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, -signal.SIGINT, err)
        self.assertIn("KeyboardInterrupt", err)
        self.assertNotIn("not interrupted", out)
        deadline = time.monotonic() + within
        while True:
            _reap()
            alive = [pid for pid in tree if _alive(pid)]
            if not alive or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(alive, [], "left running: " + ", ".join(_cmdline(p) for p in alive))

    def test_ctrl_c_while_the_constructor_waits_leaves_no_process(self):
        prelude = write(os.path.join(self.tmp.name, "slow.py"), "import time\ntime.sleep(60)\n")
        slow = write(os.path.join(self.tmp.name, "slow.ini"), PROFILE + f"prelude = {prelude}\n")
        script = self.caller(f"""
            print("starting", flush=True)
            r = fitrun.Runner(profile={slow!r}, fitrun={FITRUN!r})
            print("not interrupted", flush=True)
            """)
        p = subprocess.Popen([PYTHON, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline().strip(), "starting")
            # fitrun and its interpreter, in the prelude
            _wait_until(lambda: len(descendants(p.pid)) >= 2)
            time.sleep(0.3)
            tree = descendants(p.pid)
            self.sigint_leaves_nothing(p, tree, within=5)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()

    def test_ctrl_c_in_map_leaves_no_process(self):
        self.interrupt(self.PLAIN)

    def test_ctrl_c_in_a_with_block_leaves_no_process(self):
        self.interrupt(self.WITH)

    def test_ctrl_c_in_imap_unordered_leaves_no_process(self):
        self.interrupt(self.IMAP)


def _reap():
    """Reap the zombies handed to this (subreaper) process."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def _wait_until(cond, timeout=20):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition never met")
        time.sleep(0.01)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f"{pid} " + f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return str(pid)


class Progress(Base):
    def test_the_plain_bar_without_tqdm(self):
        code = f"""
            import sys
            sys.modules["tqdm"] = None  # not importable, whether installed or not
            sys.path.insert(0, {os.path.join(SRC, "python")!r})
            import fitrun
            DOUBLE = {DOUBLE!r}
            with fitrun.Runner(profile={self.profile!r}, fitrun={FITRUN!r}, progress=True) as r:
                r.map([{{"code": DOUBLE, "inputs": [i]}} for i in range(5)])
                r.map([{{"id": "bad"}}])
            """
        p = subprocess.run([PYTHON, "-c", textwrap.dedent(code)], capture_output=True, timeout=120)
        err = p.stderr.decode()
        self.assertEqual(p.returncode, 0, err)
        # One line redrawn in place (\r), ended by a newline at close.
        self.assertTrue(err.startswith("\r") and err.endswith("\n") and err.count("\n") == 1, repr(err))
        last = err.rstrip("\n").split("\r")[-1]
        self.assertRegex(last, r"^100% \[#{20}\] 6/6 \[\d\d:\d\d<00:00, [\d.]+ jobs/s\] ok 5  invalid 1\s*$")

    def test_plain_bar_line(self):
        bar = _progress.PlainBar(io.StringIO())
        bar.add(4)
        for s in ("ok", "ok", "error"):
            bar.finished(s)
        self.assertRegex(bar.line(), r"^ 75% \[#{15}\.{5}\] 3/4 \[\d\d:\d\d<\d\d:\d\d, [\d.]+ jobs/s\] ok 2  error 1$")

    def test_tqdm_when_importable(self):
        try:
            import tqdm  # noqa: F401
        except ImportError:
            self.skipTest("tqdm is not installed (Debian: python3-tqdm)")
        self.assertIsInstance(_progress.make_bar(io.StringIO()), _progress.TqdmBar)


class FindBinary(Base):
    def fake(self, name):
        path = write(os.path.join(self.tmp.name, name), "#!/bin/sh\n")
        os.chmod(path, 0o755)
        return path

    def test_order_explicit_then_env_then_path(self):
        a, b = self.fake("a"), self.fake("fitrun")
        env = dict(os.environ)

        def restore():
            os.environ.clear()
            os.environ.update(env)
        self.addCleanup(restore)
        os.environ["FITRUN"] = b
        self.assertEqual(fitrun.find_fitrun(a), a)
        self.assertEqual(fitrun.find_fitrun(), b)
        del os.environ["FITRUN"]
        os.environ["PATH"] = self.tmp.name
        self.assertEqual(fitrun.find_fitrun(), b)  # the source tree's package has no build/fitrun next to it
        os.environ["FITRUN"] = os.path.join(self.tmp.name, "missing")
        with self.assertRaisesRegex(fitrun.RunnerError, "FITRUN=.*missing: not an executable"):
            fitrun.find_fitrun()


class ArcApi(Base):
    def test_convert_run_and_score_in_memory(self):
        s = os.path.join(SRC, "samples", "arc")
        tasks = arc.load_tasks(os.path.join(s, "challenges.json"), os.path.join(s, "solutions.json"))
        right = "def transform(g):\n    return [[g[i][j] for i in range(len(g))] for j in range(len(g[0]))]\n"
        wrong = "def transform(g):\n    return g\n"
        jobs, problems = arc.jobs_from_predictions(tasks, {"74dd1130": [right, wrong],
                                                           "nope": [wrong]})
        self.assertEqual(problems, ["predictions: task nope: not in the challenges"])
        self.assertEqual([j["id"] for j in jobs], ["74dd1130#0", "74dd1130#1"])
        with self.runner(profile=os.path.join(SRC, "profiles", "arc-python.ini")) as r:
            results = r.map(jobs)
        table, errors, missing = arc.score(jobs, results)  # a list, as map returns it
        self.assertEqual((table["74dd1130"]["train_pass_rate"], table["74dd1130"]["is_correct"]), (0.5, 1.0))
        self.assertEqual(missing, 0)

    def test_tasks_from_loaded_challenges(self):
        tasks = arc.tasks_from_challenges({"t": {"train": [{"input": [[1]], "output": [[2]]}],
                                                 "test": [{"input": [[3]]}]}}, {"t": [[[4]]]})
        self.assertEqual(tasks, {"t": {"train": [([[1]], [[2]])], "test": [([[3]], [[4]])]}})
        with self.assertRaisesRegex(arc.InputError, "challenges: task u: expected"):
            arc.tasks_from_challenges({"u": []})


if __name__ == "__main__":
    unittest.main()
