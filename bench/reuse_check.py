#!/usr/bin/python3
"""reuse_check.py — what the state check of `isolation = reuse` costs after
each prediction, with a given prelude loaded: the runtime's own _Baseline,
built as a reused process builds it (the prelude run, the collector
frozen, /dev/null on fds 0-5), then check() in a loop. No sandbox, no
fitrun: the check alone, in a forked child (it closes every descriptor
above its socket's, fd 6, which here is the pipe the figures come back on).

    /usr/bin/python3 bench/reuse_check.py --prelude DIR/prelude.py [--loops 300]
                                          [--sandbox-lib build/lib/libfitrun_sandbox.so | none]
                                          [--after-prediction] [--evict-mib 8]
                                          [--runtime-dir launcher/runtime/python]

`--after-prediction`: before each check, what the runtime itself writes
around every prediction (its module in sys.modules, its source in
linecache's cache, both taken out again), so the check takes the path
an honest prediction gives it. `--evict-mib N`: then N MiB written, as a
prediction's own allocations push the check's objects out of the caches
(the loop alone keeps them all hot). `--runtime-dir`: another copy of
fitrun_runtime.py, to compare two runtimes (run them in turn).

The write counters are read as a run reads them: by the sandbox library's
fr_peek_words (the build's, by default), or with `--sandbox-lib none`
through one ctypes view per dict, as without the library.

Prints the interpreter's version, how many namespaces, names and modules
the check covers, and three timings (µs per check).
"""
import argparse
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME_DIR = os.path.join(HERE, "..", "launcher", "runtime", "python")
for i, arg in enumerate(sys.argv[:-1]):  # before the import: which runtime
    if arg == "--runtime-dir":
        RUNTIME_DIR = sys.argv[i + 1]
sys.path.insert(0, RUNTIME_DIR)
import fitrun_runtime as fr  # noqa: E402


def as_prediction():
    """What the runtime writes around a prediction (Runner.fresh_globals,
    run_job)."""
    import linecache
    import types
    sys.modules["__prediction__"] = types.ModuleType("__prediction__")
    linecache.cache[fr.PREDICTION_FILE] = (1, None, ["pass\n"], fr.PREDICTION_FILE)
    linecache.cache.pop(fr.PREDICTION_FILE, None)


def measure(loops, namespaces, recorded, peek, prediction=False, evict_mib=0):
    base = fr._Baseline(fr.CHILD_STDIN, fr.REUSE_CHAN_FD, namespaces, recorded)
    base.freeze()
    lines = [f"python {sys.version.split()[0]}: namespaces {len(base.ns.spaces)}, names {len(base.ns.keys)}, "
             f"modules {len(base.ns.module_list)}, "
             f"data compared by content {len(base.ns.data)}, library caches {len(getattr(base.ns, 'library_lru', ()))}, "
             f"slotted objects {len(getattr(getattr(base.containers, 'slots', None), 'objects', ()))}, counters read by "
             f"{'fr_peek_words' if peek else 'ctypes views'}"]
    evict = None
    if evict_mib:
        import ctypes
        buf, size, k = (ctypes.c_char * (evict_mib << 20))(), evict_mib << 20, [0]

        def evict():
            k[0] ^= 1
            ctypes.memset(buf, k[0], size)
    for _ in range(3):
        if prediction or evict is not None:
            # Each check timed alone, the prediction's part outside the timer.
            spent = 0
            for _ in range(loops):
                if prediction:
                    as_prediction()
                if evict is not None:
                    evict()
                t = time.perf_counter_ns()
                why = base.check()
                spent += time.perf_counter_ns() - t
            lines.append(f"check {why!r}: {spent / loops / 1000:.0f} µs")
            continue
        t = time.perf_counter()
        for _ in range(loops):
            why = base.check()
        lines.append(f"check {why!r}: {(time.perf_counter() - t) / loops * 1e6:.0f} µs")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prelude", required=True, help="the profile's prelude")
    ap.add_argument("--loops", type=int, default=300)
    ap.add_argument("--sandbox-lib", default=os.path.join(HERE, "..", "build", "lib", "libfitrun_sandbox.so"),
                    help="the library whose fr_peek_words reads the counters, or none")
    ap.add_argument("--after-prediction", action="store_true",
                    help="the runtime's own writes around a prediction before each check")
    ap.add_argument("--evict-mib", type=int, default=0, help="MiB written before each check")
    ap.add_argument("--runtime-dir", default=RUNTIME_DIR, help="where fitrun_runtime.py is")
    a = ap.parse_args()
    g = fr.load_prelude(os.path.abspath(a.prelude))  # as the zygote loads it
    # As the zygote prepares its reused processes: the modules it imports,
    # then the namespaces taken, then its heap frozen.
    for name in fr._REUSE_PREIMPORTS:
        __import__(name)
    import ctypes
    peek = fr._peek_words(ctypes.CDLL(a.sandbox_lib)) if a.sandbox_lib != "none" else None
    recorded = fr._RecordedRegistrations()
    namespaces = fr._Namespaces(fr.prelude_builtins(g), peek)
    gc.collect()
    gc.freeze()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.dup2(w, fr.REUSE_CHAN_FD)
        null = os.open(os.devnull, os.O_RDONLY)
        for fd in range(fr.REUSE_CHAN_FD):
            os.dup2(null, fd)
        try:
            text = measure(a.loops, namespaces, recorded, peek, a.after_prediction, a.evict_mib)
        except BaseException as e:
            text = f"failed: {type(e).__name__}: {e}\n"
        os.write(fr.REUSE_CHAN_FD, text.encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        sys.stdout.write(f.read())
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
