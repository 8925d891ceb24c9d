#!/usr/bin/python3
"""layers.py — check that fitrun's layering goes one way.

    scripts/layers.py [--src DIR] [BUILD_DIR]    (defaults: this checkout, its build/)

Reads the object files of a build (the code the binary really links) and
the sources' quoted #include lines, and builds a file-level graph: an edge
a.c -> b.c when a.c calls or reads a symbol b.c defines, or includes a
header of b.c's module. Then it reports

  - circles: groups of source files that depend on each other (strongly
    connected components with more than one file), and
  - upward edges: a file of a lower layer depending on a higher one,
    with LAYERS below as the order (common helpers first, the CLI last),
  - unlayered files: a source of common/, launcher/ or sandbox/ that no
    layer claims (a new folder must take its place in LAYERS).

Exits 1 when it finds either, 0 otherwise. Standard library plus `nm`.
"""
import os
import re
import subprocess
import sys
from collections import defaultdict

# Lowest first: a layer's name and its folder (docs/architecture.md draws
# the same order). A source belongs to the first entry whose prefix matches.
# Files of one layer may depend on each other (without circles) and on
# anything below; never on anything above. `status` is one file of the
# verdict's folder: the status words (fitrun/status.h), the results file's
# vocabulary, below the jobs that write them and the verdict that decides them.
LAYERS = [line.split() for line in """
    common    common/
    detect    launcher/detect/
    plan      launcher/plan/
    env       launcher/env/
    sandbox   sandbox/
    profile   launcher/profile/
    cgroup    launcher/cgroup/
    status    launcher/verdict/status.c
    jobs      launcher/jobs/
    verdict   launcher/verdict/
    runtimes  launcher/runtime/
    init      launcher/init/
    pool      launcher/pool/
    scaleout  launcher/scaleout/
    cli       launcher/cli/
""".strip().splitlines()]

# The folders whose every source must belong to a layer.
CHECKED = ("common/", "launcher/", "sandbox/")

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def layer_of(path):
    for i, (name, prefix) in enumerate(LAYERS):
        if path.startswith(prefix):
            return i, name
    return None, None


def objects(build):
    """{source path relative to SRC: object file} for every object of the build."""
    found = {}
    for root, _, files in os.walk(build):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            obj = os.path.join(root, f)
            # CMake mirrors the source path below <target>.dir/
            m = re.search(r"\.dir/(.+)\.o$", obj)
            if not m:
                continue
            rel = m.group(1)
            # Objects of launcher/ targets are relative to launcher/.
            for base in ("", "launcher/", "sandbox/"):
                cand = os.path.normpath(base + rel)
                if os.path.isfile(os.path.join(SRC, cand)) and cand.startswith(CHECKED):
                    found.setdefault(cand, obj)
                    break
    return found


def nm(obj, *flags):
    out = subprocess.run(["nm", *flags, obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts:
            yield parts[-2] if len(parts) >= 2 else "", parts[-1]


def symbol_edges(objs):
    defined = {}
    for src, obj in objs.items():
        for kind, sym in nm(obj, "--defined-only", "-g"):
            if kind in "TDRBC":
                defined[sym] = src
    edges = defaultdict(set)
    for src, obj in objs.items():
        for _, sym in nm(obj, "-u"):
            dst = defined.get(sym)
            if dst and dst != src:
                edges[src].add(dst)
    return edges


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def include_edges(sources):
    """a.c includes "internal.h" of its own folder: an edge to every source
    of that folder that the header declares (approximated by the folder)."""
    by_dir = defaultdict(list)
    for s in sources:
        by_dir[os.path.dirname(s)].append(s)
    edges = defaultdict(set)
    for s in sources:
        text = open(os.path.join(SRC, s), encoding="utf-8", errors="replace").read()
        for inc in INCLUDE.findall(text):
            if inc.startswith("fitrun/"):
                continue  # public headers: covered by the symbol graph
            hdir = os.path.normpath(os.path.join(os.path.dirname(s), os.path.dirname(inc)))
            if hdir != os.path.dirname(s):
                for t in by_dir.get(hdir, []):
                    edges[s].add(t)
    return edges


def sccs(nodes, edges):
    """Tarjan's strongly connected components."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main(argv):
    global SRC
    args = argv[1:]
    if args[:1] == ["--src"] and len(args) > 1:
        SRC = os.path.abspath(args[1])
        args = args[2:]
    build = os.path.abspath(args[0] if args else os.path.join(SRC, "build"))
    objs = objects(build)
    if not objs:
        print(f"layers.py: no object files under {build} (build first)", file=sys.stderr)
        return 2
    edges = symbol_edges(objs)
    for s, ts in include_edges(list(objs)).items():
        edges[s] |= ts
    bad = 0
    for s in sorted(objs):
        if layer_of(s)[0] is None:
            bad += 1
            print(f"unlayered: {s} (add its folder to LAYERS in scripts/layers.py)")
    for comp in sccs(objs.keys(), edges):
        if len(comp) > 1:
            bad += 1
            print("circle: " + " <-> ".join(comp))
    for s in sorted(edges):
        ls, lname = layer_of(s)
        for t in sorted(edges[s]):
            lt, tname = layer_of(t)
            if lt is not None and ls is not None and lt > ls:
                bad += 1
                print(f"upward: {s} ({lname}) -> {t} ({tname})")
    print(f"{len(objs)} source files, {sum(len(v) for v in edges.values())} edges, "
          f"{bad} problem{'s' if bad != 1 else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
