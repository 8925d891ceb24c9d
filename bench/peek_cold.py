#!/usr/bin/python3
"""peek_cold.py — the reuse check's word readers on cold memory: fitrun's
sandbox library (fr_peek_differs, fr_peek_words, fr_peek_arrays, which ask for each
word's cache line ahead of the read) against the same file built here
with cc without that (FR_PEEK_NO_LOOKAHEAD), on the addresses the check
really reads.

    /usr/bin/python3 bench/peek_cold.py --build build [--prelude FILE] [--reps 200] [--evict-mib 8]

With the interpreter warm (the prelude run as the zygote runs it, FILE's
directory on sys.path), the runtime's own _namespaces and
_FunctionFields take what a reused process compares after every
prediction: the fields of every function (fr_peek_differs), the write
counters of every namespace (fr_peek_words), and what the standard
library's and packages' lists and sets hold (fr_peek_arrays). Before each read EVICT MiB
are written, as a prediction's own allocations push those lines out of
the caches. The two readers alternate, REPS reads each. Prints one
table; nothing is written.
"""
import argparse
import ctypes
import importlib.util
import os
import subprocess
import sys
import tempfile
import time



SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def load_plain(tmp):
    """sandbox/peek.c built without its look-ahead (FR_PEEK_NO_LOOKAHEAD)."""
    lib = os.path.join(tmp, "libplain.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-DFR_PEEK_NO_LOOKAHEAD", "-I", os.path.join(SRC, "include"),
                    "-o", lib, os.path.join(SRC, "sandbox", "peek.c")], check=True)
    return ctypes.CDLL(lib)


def warm(prelude):
    if prelude:
        sys.path.insert(0, os.path.dirname(os.path.abspath(prelude)))
        with open(prelude) as f:
            code = compile(f.read(), prelude, "exec")
        exec(code, {"__name__": "fitrun_prelude", "__file__": prelude})


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--prelude")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--evict-mib", type=int, default=8)
    a = ap.parse_args()
    warm(a.prelude)
    spec = importlib.util.spec_from_file_location(
        "fitrun_runtime", os.path.join(a.build, "share", "fitrun", "python", "fitrun_runtime.py"))
    fr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fr)
    peek = fr._peek_words(ctypes.CDLL(os.path.join(a.build, "lib", "libfitrun_sandbox.so")))
    if peek.differs is None:
        sys.exit("peek_cold: this sandbox library has no fr_peek_differs")
    functions, library, builtins = [], [], []
    spaces = fr._namespaces(list(sys.modules.items()), set(), set(), functions, None, library, builtins)
    fields = fr._FunctionFields(functions + library, peek, builtins)
    if not fields.offsets:
        sys.exit("peek_cold: this interpreter's function fields were not found")
    field_addrs = [id(f) + o for _, f in fields.functions for o in fields.offsets] + \
        [id(b) + fields.builtin_offset for _, b in fields.builtins]
    dicts = [d if type(d) is dict else fr.gc.get_referents(d)[0] for _, d in spaces]
    found = fr._module_containers(list(sys.modules.items()), [], set())
    containers = [(kind, [x for x in found[kind + "s"] if type(x) is kind_type])
                  for kind, kind_type in (("list", list), ("set", set))]
    tag_addrs = [id(d) + fr._DictVersions.OFFSET for d in dicts]

    with tempfile.TemporaryDirectory() as tmp:
        plain = fr._peek_words(load_plain(tmp))  # typed as the runtime types the library's
        fw = (ctypes.c_void_p * len(field_addrs))(*field_addrs)
        nf = len(field_addrs)
        seen = fields.read()
        tw = (ctypes.c_void_p * len(tag_addrs))(*tag_addrs)
        nt = len(tag_addrs)
        out = (ctypes.c_uint64 * nt)()
        cases = [
            ("function fields", f"{len(fields.functions)} functions, {len(fields.builtins)} builtins, {nf} words",
             lambda: plain.differs(fw, seen, nf) == nf, lambda: peek.differs(fw, seen, nf) == nf),
            ("namespace counters", f"{nt} dicts", lambda: plain(tw, out, nt) or True,
             lambda: peek(tw, out, nt) or True),
        ]
        for kind, objs in containers:
            layout = fr._array_layout(list if kind == "list" else set, peek)
            if layout is None or not objs:
                continue
            where = (ctypes.c_void_p * len(objs))(*map(id, objs))
            cap = peek.arrays(where, len(objs), *layout, None, 0) + 64
            buf = (ctypes.c_uint64 * cap)()

            def reads(f, where=where, objs=objs, layout=layout, cap=cap, buf=buf):
                return lambda: f(where, len(objs), *layout, buf, cap) <= cap
            cases.append((f"{kind}s' items", f"{len(objs)} {kind}s, {cap - 64} words",
                          reads(plain.arrays), reads(peek.arrays)))
        junk = bytearray(a.evict_mib << 20)
        times = {(name, who): [] for name, *_ in cases for who in ("plain", "fitrun")}
        for _ in range(a.reps):
            for name, _, old, new in cases:
                for who, f in (("plain", old), ("fitrun", new)):
                    for i in range(0, len(junk), 64):
                        junk[i] ^= 1
                    t0 = time.perf_counter_ns()
                    if not f():
                        sys.exit("peek_cold: a word changed while nothing wrote it")
                    times[(name, who)].append((time.perf_counter_ns() - t0) / 1000)
    print(f"peek_cold: Python {sys.version.split()[0]}, prelude {a.prelude or 'none'}, "
          f"{a.reps} cold reads each ({a.evict_mib} MiB written before each), interleaved")
    print(f"| {'read':<20} | {'what':<46} | plain µs | fitrun µs | fitrun / plain |")
    print(f"|{'-' * 22}|{'-' * 48}|----------|-----------|----------------|")
    for name, what, _, _ in cases:
        p, q = median(times[(name, "plain")]), median(times[(name, "fitrun")])
        print(f"| {name:<20} | {what:<46} | {p:8.1f} | {q:9.1f} | {q / p:13.2f}× |")


if __name__ == "__main__":
    main()
