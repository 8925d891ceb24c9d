#!/usr/bin/python3
"""fork_handlers.py — what the modules a warm interpreter has imported cost
every fork child before its first line of Python: the at-fork handlers
they registered (threading's re-creates its locks and main thread, random
reseeds itself) and the interpreter's own after-fork work, as the time
from fork() to the child's first line and the child's page faults by then,
median of 60 forks. One case per interpreter (an at-fork handler cannot be
unregistered):

    for m in bare threading random numpy; do /usr/bin/python3 bench/fork_handlers.py $m; done

bare: nothing imported; threading, random: that module alone; numpy:
numpy (which imports both).
"""
import gc
import os
import resource
import sys
import time

MODES = ("bare", "threading", "random", "numpy")


def one_fork():
    """(µs from fork() to the child's first line, the child's page faults by then)."""
    r, w = os.pipe()
    t0 = time.perf_counter_ns()
    pid = os.fork()
    if pid == 0:
        t1 = time.perf_counter_ns()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        os.write(w, f"{t1 - t0} {faults}".encode())
        os._exit(0)
    os.close(w)
    data = os.read(r, 100).decode().split()
    os.close(r)
    os.waitpid(pid, 0)
    return int(data[0]) / 1000, int(data[1])


def main():
    mode = sys.argv[1] if len(sys.argv) == 2 else ""
    if mode not in MODES:
        sys.exit(f"usage: fork_handlers.py {{{','.join(MODES)}}}")
    if mode != "bare":
        __import__(mode)
    gc.collect()
    gc.freeze()  # as the zygote does: no collection touches the parent's objects in a child
    runs = sorted(one_fork() for _ in range(60))
    us, faults = runs[len(runs) // 2]
    loaded = ", ".join(m for m in ("threading", "random", "numpy") if m in sys.modules) or "none"
    print(f"{mode:10} fork -> first line {us:7.0f} µs, {faults:4d} page faults (median of {len(runs)}); "
          f"loaded: {loaded}")


if __name__ == "__main__":
    main()
