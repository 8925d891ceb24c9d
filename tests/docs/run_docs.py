"""Run every shell command the documentation marks runnable.

The marker: a fenced code block whose info string is `sh runnable`
(`bash runnable` for bash-only syntax such as coproc):

    ```sh runnable
    fitrun detect --json
    ```

GitHub and other renderers highlight it as shell and do not show the second
word; in the source it says plainly that a test runs the block. Write a
block as the reader would type it, from the root of a checkout with fitrun
built (`build/fitrun`) or installed (`fitrun` on PATH). Commands that need
what a test machine does not have (a SLURM or HTCondor cluster, a docker
engine, the ARC files from Kaggle) go in an unmarked block.

How the blocks run: per document, in a fresh scratch directory holding
links to the checkout's `profiles/`, `samples/`, `tools/`, `tests/`,
`docs/`, `docker/` and `scripts/`, `build` -> the build tree, and the
stand-ins in tests/docs/kit/ for the reader's own files (jobs.jsonl,
my.ini, train.py, bench). PATH starts with the build tree, so `fitrun` is
the fitrun under test. The blocks of one document run in order in the same
directory (a later block may read what an earlier one wrote), each with
`bash -e -o pipefail` (an `sh` block too: POSIX sh has no pipefail); a block fails when it exits non-zero or takes
longer than --timeout seconds.

    /usr/bin/python3 tests/docs/run_docs.py --src . --build build [FILE.md...]

Prints one line per block (ok / FAIL, file:line) and the output of each
failure; exits 1 when a block failed or when no runnable block was found.
Standard library only.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

MARKER = "runnable"
SHELLS = {"sh", "bash"}
LINKS = ("profiles", "samples", "tools", "tests", "docs", "docker", "scripts")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(.*)$")


def default_files(src):
    files = ["README.md", "profiles/README.md", "docker/README.md", "bench/README.md", "samples/arc/README.md"]
    files += sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))
    return [f for f in files if os.path.exists(os.path.join(src, f))]


def blocks(path):
    """(line of the opening fence, shell, text) of each runnable block."""
    out, inside, shell, start, body, fence = [], False, None, 0, [], ""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line.rstrip("\n"))
            if not inside and m:
                words = m.group(3).split()
                inside, fence, start, body = True, m.group(2), n, []
                shell = words[0] if len(words) >= 2 and words[0] in SHELLS and MARKER in words[1:] else None
            elif inside and m and m.group(2).startswith(fence) and not m.group(3).strip():
                inside = False
                if shell:
                    out.append((start, shell, "".join(body)))
            elif inside:
                body.append(line)
    return out


def scratch(src, build):
    d = tempfile.mkdtemp(prefix="fitrun-docs-")
    for name in LINKS:
        if os.path.exists(os.path.join(src, name)):
            os.symlink(os.path.join(src, name), os.path.join(d, name))
    os.symlink(build, os.path.join(d, "build"))
    kit = os.path.join(src, "tests", "docs", "kit")
    for name in os.listdir(kit):
        shutil.copy2(os.path.join(kit, name), os.path.join(d, name))
    return d


def run_block(text, cwd, env, timeout):
    try:
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", text], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
        return p.returncode, p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        return 124, (e.output or b"").decode(errors="replace") + "\n(timed out after %d s)" % timeout


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, help="the checkout")
    ap.add_argument("--build", required=True, help="the build tree (build/fitrun)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per block")
    ap.add_argument("files", nargs="*", help="documents, relative to --src (default: every README and docs/*.md)")
    a = ap.parse_args(argv)
    src, build = os.path.abspath(a.src), os.path.abspath(a.build)
    env = dict(os.environ, PATH=build + os.pathsep + os.environ.get("PATH", ""))
    total = failed = 0
    for rel in a.files or default_files(src):
        found = blocks(os.path.join(src, rel))
        if not found:
            continue
        d = scratch(src, build)
        try:
            for line, _shell, text in found:
                total += 1
                rc, out = run_block(text, d, env, a.timeout)
                print("%s %s:%d" % ("ok  " if rc == 0 else "FAIL", rel, line), flush=True)
                if rc:
                    failed += 1
                    print("  exit status %d; the block:" % rc)
                    print("".join("    " + t + "\n" for t in text.splitlines()), end="")
                    print("  its output (last 40 lines):")
                    print("".join("    " + t + "\n" for t in out.splitlines()[-40:]), end="", flush=True)
        finally:
            shutil.rmtree(d, ignore_errors=True)
    print("%d runnable block%s, %d failed" % (total, "" if total == 1 else "s", failed))
    if total == 0:
        print("no block is marked runnable: the marker is ```sh %s" % MARKER)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
