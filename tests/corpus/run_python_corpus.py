#!/usr/bin/python3
"""The hostile corpus, Python side: run every snippet in tests/corpus/python/
under libfitrun_sandbox.so the way the warm Python runtime does — a Python
worker (numpy already imported) forks, the child applies the policy through
ctypes and runs the snippet; the parent waits and classifies the facts with
fitrun's verdict (build/tests/helpers/classify, which calls fr_classify).
Every snippet runs twice, once per way of supervising:
    relay   the child calls fr_policy_apply(pol, report_w): it becomes a
            relay, the snippet runs in the relay's child, the parent reads
            the relay's record with fr_report_read
    notify  the child calls fr_policy_apply_notify(pol, sock, -1); the
            parent is the supervisor: fr_notify_receive, poll, then
            fr_notify_read and SIGKILL (what the warm runtime's worker does)

Each snippet starts with header comments:
    # expect: violation socket    status, then the syscall (violation),
                                  signal name (signal) or kind (timeout)
    # policy: preset=python;...   sandbox text (fitrun/sandbox_keys.h; default
                                  preset=python), packed by build/tests/helpers/policy_pack
                                  and built with fr_policy_build_packed
    # stdout: text                must appear in what the child printed
    # output: text                must appear in stdout+stderr
    # never: text                 must not appear in stdout+stderr
    # absent: {tmp}/name          must not exist afterwards
    # keep: {tmp}/name            created before the run, must still exist
    # stdout-file: {tmp}/name     the child's stdout is this regular file
    # size: {tmp}/name 65536      that file's size afterwards
    # listener: yes               a loopback listener; PORT and PREPARED_FD
                                  (a socket made before apply) are given to
                                  the snippet; no connection may arrive
    # wall: 20                    wall-clock limit in seconds (default 20)
    # interpreter-paths: yes      the policy is built with this interpreter's
                                  own tree (prefix, stdlib, site-packages) as
                                  more read paths
    # cwd: {tmp}                  the child's working directory (inherited, as
                                  the launcher's is)
    # import: torch               imported in the parent before the fork (a
                                  prelude); the snippet is skipped when that
                                  fails
The snippet sees TMP, PORT, PREPARED_FD and REPORT_FD (the child's
descriptor to the supervisor) as globals. A MemoryError that
escapes the snippet is reported as memory_hint (as the runtime does).

Usage: run_python_corpus.py --build BUILD_DIR [-v] [--mode relay|notify|both] [NAME...]
Exit status 0 when every snippet got exactly its expected outcome.
Always run with /usr/bin/python3 (it has numpy)."""
import argparse
import ctypes
import glob
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")  # jobs are single-threaded
import importlib  # noqa: E402
import site  # noqa: E402
import sysconfig  # noqa: E402

import numpy  # noqa: E402,F401  (imported before fork, like the warm runtime)

NOMEM_EXIT = 86


def load(path):
    lib = ctypes.CDLL(path)
    lib.fr_policy_build_packed.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                                           ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
    lib.fr_policy_apply.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.fr_policy_apply_notify.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    lib.fr_notify_receive.argtypes = [ctypes.c_int]
    lib.fr_notify_read.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    lib.fr_policy_fd.argtypes = [ctypes.c_void_p]
    lib.fr_policy_free.argtypes = [ctypes.c_void_p]
    lib.fr_report_read.argtypes = [ctypes.c_int]
    return lib


def packed(build, text):
    """The policy text as fitrun hands it to its interpreter: packed."""
    r = subprocess.run([os.path.join(build, "tests", "helpers", "policy_pack"), text], capture_output=True)
    if r.returncode != 0:
        raise ValueError(r.stderr.decode(errors="replace").strip())
    return r.stdout


def classify(build, status, nr, cpu_limit, ru, wall, memory_hint):
    """fitrun's verdict on the facts (fr_classify, through a helper)."""
    cpu_us = int((ru.ru_utime + ru.ru_stime) * 1e6)
    args = [str(v) for v in (status, nr, cpu_limit, cpu_us, int(wall), int(memory_hint))]
    return subprocess.run([os.path.join(build, "tests", "helpers", "classify")] + args,
                          capture_output=True, check=True, text=True).stdout.strip()


def interpreter_paths():
    """What this interpreter reads after start-up: its prefixes, stdlib and
    site-packages (what the warm runtime's zygote passes as read paths)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        paths.add(sysconfig.get_paths().get(key, ""))
    paths.update(site.getsitepackages())
    return sorted(p for p in paths if p and os.path.isabs(p) and os.path.exists(p))


def c_paths(paths):
    arr = (ctypes.c_char_p * (len(paths) + 1))()
    for i, p in enumerate(paths):
        arr[i] = p.encode()
    arr[len(paths)] = None
    return arr


def headers(path, tmp):
    h = {"policy": "preset=python", "wall": "20"}
    multi = {"absent": [], "keep": [], "stdout": [], "output": [], "never": []}
    with open(path) as f:
        for line in f:
            if not line.startswith("# ") or ":" not in line:
                break
            key, _, val = line[2:].partition(":")
            val = val.strip().replace("{tmp}", tmp)
            if key in multi:
                multi[key].append(val)
            else:
                h[key] = val
    h.update(multi)
    if "expect" not in h:
        raise SystemExit("%s: no '# expect:' header" % path)
    return h


def cpu_limit_ms(policy):
    for item in policy.split(";"):
        k, _, v = item.partition("=")
        if k.strip() == "cpu_time":
            v = v.strip()
            if v.endswith("ms"):
                return int(v[:-2])
            return int(float(v.rstrip("s")) * 1000)
    return 0


def child(lib, pol, mode, report_w, out_w, h, src, path, tmp, prepared_fd, port):
    """In the forked child: never returns."""
    try:
        if "stdout-file" in h:
            fd = os.open(h["stdout-file"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 1)
            os.close(fd)
        else:
            os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        code = compile(src, path, "exec")
        # Like the warm runtime: nothing inherited reaches the snippet (a test
        # harness's descriptors included) but what it is given.
        keep = {0, 1, 2, report_w, out_w, lib.fr_policy_fd(pol)} | ({prepared_fd} if prepared_fd >= 0 else set())
        keep = sorted(fd for fd in keep if fd >= 0)
        lo = 3
        for fd in keep + [1 << 20]:
            if fd >= lo:
                os.closerange(lo, fd)
                lo = fd + 1
        if "cwd" in h:
            os.chdir(h["cwd"])
        if mode == "notify":
            rc = lib.fr_policy_apply_notify(pol, report_w, -1)
        else:
            rc = lib.fr_policy_apply(pol, report_w)
        if rc != 0:
            os.write(2, b"fr_policy_apply failed: %d\n" % rc)
            os._exit(125)
        exec(code, {"__name__": "__corpus__", "TMP": tmp, "PORT": port, "PREPARED_FD": prepared_fd,
                    "REPORT_FD": report_w})
        sys.stdout.flush()
        os._exit(0)
    except MemoryError:
        os._exit(NOMEM_EXIT)
    except BaseException:
        try:
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(1)


def run_one(lib, build, path, mode, verbose):
    tmp = tempfile.mkdtemp(prefix="fitrun-test-sandbox-")
    try:
        return _run_one(lib, build, path, mode, tmp, verbose)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def supervise_notify(lib, pid, sock_r, out_r, deadline):
    """The worker's side of fr_policy_apply_notify. Returns (output, wall,
    violation number or -1)."""
    listener = lib.fr_notify_receive(sock_r)  # blocks until the child applied (or died)
    output, wall, nr = b"", False, -1
    watch = [out_r] + ([listener] if listener >= 0 else [])
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                wall = True
                break
            ready, _, _ = select.select(watch, [], [], left)
            if listener in ready:
                got, who = ctypes.c_int(-1), ctypes.c_int(0)
                if lib.fr_notify_read(listener, ctypes.byref(got), ctypes.byref(who)) == 0 and nr < 0:
                    nr = got.value
                os.kill(pid, signal.SIGKILL)  # its denied call never returns
                watch.remove(listener)
            if out_r in ready:
                chunk = os.read(out_r, 65536)
                if not chunk:
                    break
                output += chunk
    finally:
        if listener >= 0:
            os.close(listener)
    return output, wall, nr


def supervise_relay(pid, out_r, deadline):
    output, wall = b"", False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            wall = True
            break
        ready, _, _ = select.select([out_r], [], [], left)
        if ready:
            chunk = os.read(out_r, 65536)
            if not chunk:
                break
            output += chunk
    return output, wall


def _run_one(lib, build, path, mode, tmp, verbose):
    h = headers(path, tmp)
    with open(path) as f:
        src = f.read()
    for p in h["keep"]:
        with open(p, "w") as f:
            f.write("keep\n")
        os.chmod(p, 0o600)
    listener = prepared = None
    port = 0
    if h.get("listener") == "yes":
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        prepared = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    err = ctypes.create_string_buffer(512)
    pol = ctypes.c_void_p()
    reads = c_paths(interpreter_paths() if h.get("interpreter-paths") == "yes" else [])
    try:
        spec = packed(build, h["policy"])
    except ValueError as e:
        return ["policy %r: %s" % (h["policy"], e)]
    if lib.fr_policy_build_packed(spec, len(spec), reads, ctypes.byref(pol), err, len(err)) != 0:
        return ["policy %r: %s" % (h["policy"], err.value.decode())]
    if mode == "notify":
        report_r, report_w = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        report_r, report_w = report_r.detach(), report_w.detach()
    else:
        report_r, report_w = os.pipe()
    out_r, out_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        os.close(report_r)
        os.close(out_r)
        child(lib, pol, mode, report_w, out_w, h, src, path, tmp,
              prepared.fileno() if prepared else -1, port)
    os.close(report_w)
    os.close(out_w)
    deadline = time.monotonic() + float(h["wall"])
    if mode == "notify":
        output, wall, nr = supervise_notify(lib, pid, report_r, out_r, deadline)
    else:
        output, wall = supervise_relay(pid, out_r, deadline)
    _, status, ru = os.wait4(pid, 0)
    os.close(out_r)
    if mode != "notify":
        nr = lib.fr_report_read(report_r)
    os.close(report_r)
    lib.fr_policy_free(pol)

    got = classify(build, status, nr, cpu_limit_ms(h["policy"]), ru, wall,
                   os.WIFEXITED(status) and os.WEXITSTATUS(status) == NOMEM_EXIT)
    text = output.decode(errors="replace")

    problems = []
    if got != h["expect"]:
        problems.append("outcome %r, expected %r" % (got, h["expect"]))
    for want in h["stdout"] + h["output"]:
        if want not in text:
            problems.append("output lacks %r" % want)
    for unwanted in h["never"]:
        if unwanted in text:
            problems.append("output has %r: the action happened" % unwanted)
    for p in h["absent"]:
        if os.path.exists(p):
            problems.append("%s exists: the action happened" % p)
    for p in h["keep"]:
        if not os.path.exists(p) or os.stat(p).st_mode & 0o7777 != 0o600:
            problems.append("%s was removed or changed" % p)
    if "size" in h:
        p, size = h["size"].rsplit(" ", 1)
        if os.stat(p).st_size != int(size):
            problems.append("%s has %d bytes, expected %s" % (p, os.stat(p).st_size, size))
    if listener:
        try:
            listener.accept()
            problems.append("a connection reached the listener")
        except BlockingIOError:
            pass
        listener.close()
        prepared.close()
    if verbose or problems:
        print("--- %s [%s]: %s" % (os.path.basename(path), mode, got))
        if problems:
            print(text.rstrip())
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.environ.get("FITRUN_BUILD", os.path.join(here, "..", "..", "build"))
    ap.add_argument("--build", default=build, help="the build directory (its lib/ and tests/helpers/)")
    ap.add_argument("--corpus", default=os.path.join(here, "python"))
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--mode", choices=("relay", "notify", "both"), default="both")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    lib = load(os.path.join(args.build, "lib", "libfitrun_sandbox.so"))
    snippets = sorted(glob.glob(os.path.join(args.corpus, "*.py")))
    if args.names:
        snippets = [s for s in snippets if os.path.basename(s)[:-3] in args.names]
    if not snippets:
        raise SystemExit("no snippets in %s" % args.corpus)
    modes = ("relay", "notify") if args.mode == "both" else (args.mode,)
    failures = runs = 0
    for path in snippets:
        name = os.path.basename(path)[:-3]
        module = headers(path, "").get("import")
        if module:
            try:
                importlib.import_module(module)  # the prelude: before any fork
            except ImportError as e:
                print("skip %s (%s is not importable: %s)" % (name, module, e))
                continue
        for mode in modes:
            problems = run_one(lib, args.build, path, mode, args.verbose)
            print("%s %s [%s]" % ("ok  " if not problems else "FAIL", name, mode))
            for p in problems:
                print("     " + p)
            failures += bool(problems)
            runs += 1
    print("%d/%d snippets as expected" % (runs - failures, runs))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
