#!/usr/bin/env python3
"""scale.py — the ARC workload at 1, 2, 4, 8, 16 workers: fitrun (fork
isolation), fitrun with `runtime.isolation=reuse`, joblib (loky) and a
persistent multiprocessing.Pool, interleaved by rounds, with the launcher's
own CPU per prediction. bench/scale.sh is the usual way in.

    bench/scale.sh --corpus DIR [--fitrun build/fitrun] [--workers 1,2,4,8,16]
                   [--rounds 3] [--out DIR]
    bench/scale.py plot DIR          # table + PNG again from DIR/scale.jsonl
    bench/scale.py project --launcher-us 480 --per-worker 80 [--cores 256]

The runner `sequential` (arc_peers.py's one-process loop, whatever the
worker count) gives the in-process bound: its rate × W, what W workers
would do with no dispatch, no isolation and perfect scaling. No runner
passes it while W is at most the cores; the table shows it as a row.
Below it, the scheduled bound: the same run's time per job, scheduled in
input order onto W workers that each take the next job the moment they
are free, with nothing else (its start-up once): what the best pool can
do with these jobs in this order, tail included (a long job near the end
while the other workers have nothing left). Both are computed from one
process running alone; the runner `shared` measures the bound instead: W
copies of that loop run at once, each taking the next job from one
counter in shared memory (no dispatcher, no isolation), so it pays what
W processes pay on this machine together (shared caches, memory
bandwidth, sibling hyperthreads, the kernel) and the tail.

--baseline FITRUN adds the runner fitrun-base: another fitrun binary (a
build of main, say), run interleaved with the others, for before/after;
the runner fitrun-base-reuse (named in --runners) runs it with
`runtime.isolation=reuse`.

The corpus is a bench/arc_dsl_corpus.py directory (jobs.jsonl, profile.ini,
prelude.py; made with --copy-dsl it carries the DSL too and runs anywhere),
or give --arc-dsl DIR --tasks DIR and one is generated into OUT/corpus.

Each run is a separate process, timed from start to exit (start-up
included) with its CPU split in two: the launcher's own (fitrun's process
alone: `perf stat --no-inherit -e task-clock` when perf works, else
/proc/PID/schedstat and /proc/PID/stat read while it is a zombie; for the
peers their parent process, threads included: the dispatcher) and the rest
of its process tree (workers and predictions, from wait4). Every run's
(id, status, passed) is compared with the first Pool run's.

Writes into --out: scale.jsonl (one record per run), machine.json,
scale.md (machine, command, table, projection) and scale.png (when
matplotlib imports; otherwise run `scale.py plot DIR` where it does).
Timings on a shared machine vary: read the medians, and the spread beside.
"""
import argparse
import collections
import heapq
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import arc_compare  # noqa: E402
import python_common as pc  # noqa: E402

RUNNERS = ("fitrun", "fitrun-base", "fitrun-reuse", "fitrun-base-reuse", "joblib", "pool", "sequential", "shared")
DEFAULT_RUNNERS = ("fitrun", "fitrun-reuse", "joblib", "pool", "sequential", "shared")
# How the table names a runner whose name alone does not say what it is.
LABELS = {"shared": "shared bound (W in-process loops at once, one job counter)"}
TICK = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------
# Running and measuring one process

def perf_works():
    perf = shutil.which("perf")
    if not perf:
        return None
    with tempfile.NamedTemporaryFile("r", suffix=".perf") as f:
        p = subprocess.run([perf, "stat", "--no-inherit", "-e", "task-clock", "-x,", "-o", f.name,
                            "--", "true"], capture_output=True)
        return perf if p.returncode == 0 and "task-clock" in f.read() else None


def zombie_cpu(pid):
    """(seconds, method) of a zombie's own CPU: schedstat (ns, its main
    thread) when it agrees with stat (ticks, all threads) within two ticks —
    a single-threaded process —, else stat."""
    with open(f"/proc/{pid}/stat") as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    stat_s = (int(fields[11]) + int(fields[12])) / TICK
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            sched_s = int(f.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return stat_s, "stat"
    if abs(sched_s - stat_s) <= 2.0 / TICK:
        return sched_s, "schedstat"
    return stat_s, "stat"


def measure(argv, perf=None, stderr_path=None):
    """Runs argv; returns dict(wall_s, rc, launcher_s, launcher_method, tree_s)."""
    perf_out = None
    if perf:
        perf_out = tempfile.NamedTemporaryFile("r", suffix=".perf", delete=False)
        argv = [perf, "stat", "--no-inherit", "-e", "task-clock", "-x,", "-o", perf_out.name,
                "--"] + argv
    err = open(stderr_path or os.devnull, "w")
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    wall = time.monotonic() - t0
    launcher, method = zombie_cpu(p.pid)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    err.close()
    if perf_out is not None:
        text = perf_out.read()
        perf_out.close()
        os.unlink(perf_out.name)
        for line in text.splitlines():
            parts = line.split(",")
            if len(parts) > 2 and parts[2] == "task-clock" and parts[0] not in ("", "<not counted>"):
                launcher, method = float(parts[0]) / 1e3, "perf"
                break
        else:
            launcher, method = None, "perf failed"
    return {"wall_s": wall, "rc": p.returncode, "launcher_s": launcher, "launcher_method": method,
            "tree_s": ru.ru_utime + ru.ru_stime}


def runner_argv(name, a, workers, out):
    if name.startswith("fitrun"):
        binary = a.baseline if name.startswith("fitrun-base") else a.fitrun
        argv = [binary, "run", "--profile", a.profile, "--jobs", a.jobs, "--out", out,
                "--workers", str(workers), "--progress", "none", "--quiet"]
        if a.python != a.profile_interpreter:
            argv += ["--set", f"runtime.interpreter={a.python}"]
        if name.endswith("-reuse"):
            argv += ["--set", "runtime.isolation=reuse"]
        return argv
    # sequential: one process whatever the worker count; its rate × W is
    # the in-process bound of W workers (no dispatch, no isolation, perfect
    # scaling), which no runner can pass while W ≤ the cores.
    return [a.python, os.path.join(HERE, "arc_peers.py"), "--profile", a.profile, "--jobs", a.jobs,
            "--peer", name, "--workers", "1" if name == "sequential" else str(workers), "--out", out]


def reuse_supported(a, tmp):
    """Does this fitrun know runtime.isolation? (125 'unknown key' if not)."""
    one = os.path.join(tmp, "one.jsonl")
    with open(a.jobs) as f, open(one, "w") as g:
        g.write(f.readline())
    argv = runner_argv("fitrun-reuse", dict_ns(a, jobs=one), 1, os.path.join(tmp, "one.out"))
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode == 0:
        return True, ""
    return False, (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[0]


def dict_ns(a, **kw):
    ns = argparse.Namespace(**vars(a))
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


def verdicts(path):
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            out[r["id"]] = {"status": r["status"], "passed": r.get("passed")}
    return out


def job_times(path):
    """The sequential runner's time per job, in input order (µs)."""
    with open(path) as f:
        return [json.loads(line).get("run_us", 0) for line in f if line.strip()]


def scheduled_makespan(times_us, workers):
    """Seconds W workers with no overhead at all take over these job times,
    each job, in input order, going to the first worker free (a pool's
    shared queue): unlike rate × W, it has the tail, where a long job near
    the end keeps one worker busy while the others have nothing left."""
    free = [0] * workers
    for t in times_us:
        heapq.heappush(free, heapq.heappop(free) + t)
    return max(free) / 1e6


# --------------------------------------------------------------------------
# The machine

def sh(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def hypervisor(lscpu):
    """lscpu's vendor; else, for a guest that names none (a PVM guest), what
    the kernel said it detected at boot, or that /proc/cpuinfo has the
    hypervisor flag; "none" on bare metal."""
    if lscpu.get("Hypervisor vendor"):
        return lscpu["Hypervisor vendor"]
    try:
        with open("/proc/cpuinfo") as f:
            guest = any(line.startswith("flags") and " hypervisor" in line for line in f)
    except OSError:
        guest = False
    if not guest:
        return "none"
    for line in sh(["dmesg"]).splitlines():
        if "Hypervisor detected:" in line:
            return line.split("Hypervisor detected:", 1)[1].strip()
    return "unnamed (cpuinfo's hypervisor flag)"


def describe_machine(a):
    lscpu = {}
    for line in sh(["lscpu"]).splitlines():
        k, _, v = line.partition(":")
        lscpu[k.strip()] = v.strip()
    py = sh([a.python, "-c", "import sys, platform; v = [platform.python_version()]\n"
             "for m in ('numpy', 'joblib'):\n"
             "    try: v.append(m + ' ' + __import__(m).__version__)\n"
             "    except ImportError: v.append(m + ' missing')\n"
             "print(', '.join(v))"])
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return {"host": platform.node(), "cpu_model": lscpu.get("Model name", "?"),
            "cpus": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
            "threads_per_core": lscpu.get("Thread(s) per core", "?"),
            "hypervisor": hypervisor(lscpu),
            "memory_gib": round(mem, 1), "kernel": platform.release(),
            "python": a.python, "python_version": py, "fitrun": a.fitrun,
            "fitrun_version": sh([a.fitrun, "--version"]),
            "commit": sh(["git", "-C", os.path.dirname(HERE), "rev-parse", "--short", "HEAD"]),
            "perf": bool(a.perf_path), "load_start": os.getloadavg()}


# --------------------------------------------------------------------------
# Report: table, projection, plot

def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summarise(records):
    """{(workers, runner): row} with medians over the rounds."""
    groups = collections.defaultdict(list)
    for r in records:
        if r.get("rc") == 0:
            groups[(r["workers"], r["runner"])].append(r)
    rows = {}
    for key, rs in groups.items():
        rates = [r["n"] / r["wall_s"] for r in rs]
        rows[key] = {
            "rate": median(rates), "min": min(rates), "max": max(rates), "runs": len(rs),
            "launcher_us": median([r["launcher_s"] * 1e6 / r["n"] if r["launcher_s"] is not None
                                   else None for r in rs]),
            "child_ms": median([(r["tree_s"] - (r["launcher_s"] or 0)) * 1e3 / r["n"] for r in rs]),
            # CPUs the whole tree kept busy: what it leaves idle of the
            # machine (the gaps between one prediction and the next).
            "busy": median([r["tree_s"] / r["wall_s"] for r in rs]),
            "method": rs[0]["launcher_method"], "differ": max(r.get("differ") or 0 for r in rs),
            "n": rs[0]["n"],
            "scheduled": median([r["n"] / r["scheduled_wall_s"] if r.get("scheduled_wall_s") else None
                                 for r in rs])}
    return rows


def projection(launcher_us, per_worker, cores=256):
    """Lines: the ceiling of one launcher, where it binds, and what a node needs."""
    if not launcher_us or not per_worker:
        return ["(no projection: launcher CPU or per-worker rate missing)"]
    ceiling = 1e6 / launcher_us
    bind = ceiling / per_worker
    need = (cores - 1) * per_worker
    lines = [f"one launcher at {launcher_us:.0f} µs of its own CPU per prediction tops out at "
             f"{ceiling:,.0f} predictions/s (one core spent dispatching);",
             f"at {per_worker:.1f} predictions/s per worker it binds at about {bind:.0f} workers "
             f"(there the launcher alone needs a whole core);",
             f"a {cores}-core node ({cores - 1} workers + the launcher) needs {need:,.0f}/s: "
             + (f"one launcher suffices ({need / ceiling:.0%} of its core)." if need <= ceiling else
                f"{-(-need // ceiling):.0f} launchers at least (--shard K/N, each on its own cpuset), "
                f"or {need / ceiling:.1f}× less launcher CPU per prediction "
                f"(≤ {1e6 / need:.0f} µs) for one.")]
    return lines


def fmt_num(x, spec):
    return "–" if x is None else format(x, spec)


def in_caller(name, workers):
    """joblib with n_jobs=1 runs every job in the calling process: no
    dispatcher to tell apart from the work."""
    return name == "joblib" and workers == 1


def table(rows, workers, runners):
    out = ["| workers | runner | predictions/s (median, min–max) | vs joblib | vs Pool "
           "| launcher µs/prediction | rest of the tree, CPU ms/prediction | CPUs busy | verdicts ≠ Pool |",
           "|---|---|---|---|---|---|---|---|---|"]
    for w in workers:
        jb, po = rows.get((w, "joblib")), rows.get((w, "pool"))
        for name in runners:
            r = rows.get((w, name))
            if r is None:
                continue
            vs_j = f"{r['rate'] / jb['rate']:.2f}×" if jb else "–"
            vs_p = f"{r['rate'] / po['rate']:.2f}×" if po else "–"
            if in_caller(name, w):
                lu = "– (n_jobs=1 runs in the caller)"
            elif name == "shared":
                lu = "– (no dispatcher)"
            else:
                lu = fmt_num(r["launcher_us"], ".0f") + ("" if name.startswith("fitrun") else
                                                          " (dispatcher)")
            child = "–" if in_caller(name, w) else fmt_num(r["child_ms"], ".2f")
            if name == "sequential":
                # One process: the row is the in-process bound of w workers.
                b = r["rate"] * w
                vs_j = f"{b / jb['rate']:.2f}×" if jb else "–"
                vs_p = f"{b / po['rate']:.2f}×" if po else "–"
                own = fmt_num(r["launcher_us"] / 1e3 if r["launcher_us"] is not None else None, ".2f")
                out.append(f"| {w} | in-process bound (sequential {r['rate']:.0f}/s × {w}) | {b:.0f} "
                           f"| {vs_j} | {vs_p} | – (no dispatcher) | {own} (its own) "
                           f"| {r['busy'] * w:.2f} (× {w}) | {r['differ']} |")
                if r.get("scheduled"):
                    s = r["scheduled"]
                    vs_j = f"{s / jb['rate']:.2f}×" if jb else "–"
                    vs_p = f"{s / po['rate']:.2f}×" if po else "–"
                    out.append(f"| {w} | scheduled bound (its job times on {w} workers, in order, "
                               f"no overhead) | {s:.0f} | {vs_j} | {vs_p} | – | – | – | – |")
                continue
            out.append(f"| {w} | {LABELS.get(name, name)} | {r['rate']:.0f} ({r['min']:.0f}–{r['max']:.0f}) | {vs_j} "
                       f"| {vs_p} | {lu} | {child} | {r['busy']:.2f} | {r['differ']} |")
    return out


def corpus_text(c):
    text = f"{c['predictions']} predictions"
    if c.get("limit"):
        text += f" (the first {c['limit']} of the corpus)"
    if c.get("solvers"):
        text += (f" of the arc-dsl corpus ({c['solvers']} solvers × {c.get('per_solver', '?')}, "
                 f"seed {c.get('seed', '?')})")
    return text


def report(out_dir):
    with open(os.path.join(out_dir, "scale.jsonl")) as f:
        records = [json.loads(line) for line in f]
    with open(os.path.join(out_dir, "machine.json")) as f:
        meta = json.load(f)
    m = meta["machine"]
    workers = sorted({r["workers"] for r in records})
    runners = [n for n in RUNNERS if any(r["runner"] == n for r in records)]
    rows = summarise(records)
    lines = [f"Machine: {m['cpu_model']}, {m['cpus']} CPUs ({m['affinity']} usable, "
             f"{m['threads_per_core']} thread(s) per core), hypervisor {m['hypervisor']}, "
             f"{m['memory_gib']} GiB, Linux {m['kernel']}; Python {m['python_version']} "
             f"({m['python']}); {m['fitrun_version']} at commit {m['commit'] or '?'}; "
             f"load average {m['load_start'][0]:.2f} at the start, {meta['load_end'][0]:.2f} at the end.",
             "",
             f"Corpus: {corpus_text(meta['corpus'])}, {meta['rounds']} rounds, "
             f"runner order rotated each round. Launcher CPU: "
             + "; ".join(f"{n}: {'/'.join(sorted({r['launcher_method'] for r in records if r['runner'] == n}))}"
                         for n in runners) + ".",
             "", f"Command: `{meta['command']}`", ""]
    lines += table(rows, workers, runners)
    shares = [f"{name} at {w}: {rows[(w, name)]['rate'] / rows[(w, 'shared')]['rate']:.0%}"
              for w in workers if (w, "shared") in rows
              for name in runners if name not in ("shared", "sequential") and (w, name) in rows]
    if shares:
        lines += ["", "Of the shared bound (median against median): " + "; ".join(shares) + "."]
    for note in meta.get("notes", []):
        lines += ["", f"Note: {note}"]
    lines += ["", "Projection (from the largest worker count measured):", ""]
    for name in ("fitrun", "fitrun-base", "fitrun-reuse", "fitrun-base-reuse"):
        top = max((w for w in workers if (w, name) in rows), default=None)
        if top is None:
            continue
        r = rows[(top, name)]
        lines += [f"- {name} at {top} workers: " + " ".join(projection(r["launcher_us"],
                                                                         r["rate"] / top))]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "scale.md"), "w") as f:
        f.write(text)
    print(text)
    plot(rows, workers, runners, os.path.join(out_dir, "scale.png"), m)


def plot(rows, workers, runners, path, m):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"scale: no matplotlib here, no {path}: run `bench/scale.py plot "
              f"{os.path.dirname(path)}` with /usr/bin/python3 (python3-matplotlib)", file=sys.stderr)
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in runners:
        ws = [w for w in workers if (w, name) in rows]
        if not ws:
            continue
        if name == "sequential":  # drawn as the in-process bound, rate × workers
            # A marker too: with one worker count there is no line to see.
            ax1.plot(ws, [rows[(w, name)]["rate"] * w for w in ws], linestyle="--", marker="_", markersize=14,
                     color="grey", label="in-process bound (sequential × W)")
            sw = [w for w in ws if rows[(w, name)].get("scheduled")]
            if sw:
                ax1.plot(sw, [rows[(w, name)]["scheduled"] for w in sw], linestyle=":", marker="x",
                         color="black", label="scheduled bound (job times on W workers)")
            continue
        rates = [rows[(w, name)]["rate"] for w in ws]
        err = [[rows[(w, name)]["rate"] - rows[(w, name)]["min"] for w in ws],
               [rows[(w, name)]["max"] - rows[(w, name)]["rate"] for w in ws]]
        ax1.errorbar(ws, rates, yerr=err, marker="o", capsize=3, label=LABELS.get(name, name))
        if name == "shared":  # its parent only starts and waits: no dispatcher
            continue
        lu = [None if in_caller(name, w) else rows[(w, name)]["launcher_us"] for w in ws]
        if name.startswith("fitrun") and any(x is not None for x in lu):
            ax2.plot(ws, lu, marker="o", label=f"{name} launcher")
        elif any(x is not None for x in lu):
            ax2.plot(ws, lu, marker="x", linestyle=":", label=f"{name} dispatcher")
    for ax, ylabel, title in ((ax1, "predictions/s (median; bars: min–max)", "throughput"),
                              (ax2, "µs of its own CPU per prediction", "launcher / dispatcher CPU")):
        ax.set_ylim(bottom=0)
        ax.set_xscale("log", base=2)
        ax.set_xticks(workers, [str(w) for w in workers])
        ax.set_xlabel("workers")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"ARC arc-dsl corpus — {m['cpu_model']}, {m['affinity']} CPUs, "
                 f"Linux {m['kernel']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"scale: wrote {path}", file=sys.stderr)


# --------------------------------------------------------------------------
# The run

def prepare_corpus(a):
    if a.corpus:
        corpus = os.path.abspath(a.corpus)
    elif a.arc_dsl and a.tasks:
        corpus = os.path.join(a.out, "corpus")
        subprocess.run([sys.executable, os.path.join(HERE, "arc_dsl_corpus.py"), "--arc-dsl",
                        a.arc_dsl, "--tasks", a.tasks, "--out", corpus, "--copy-dsl"], check=True)
    else:
        sys.exit("scale: give --corpus DIR, or --arc-dsl DIR --tasks DIR to generate one")
    a.profile = os.path.join(corpus, "profile.ini")
    a.jobs = os.path.join(corpus, "jobs.jsonl")
    for p in (a.profile, a.jobs):
        if not os.path.isfile(p):
            sys.exit(f"scale: {p}: missing (not a bench/arc_dsl_corpus.py directory?)")
    manifest = {}
    if os.path.isfile(os.path.join(corpus, "corpus.json")):
        with open(os.path.join(corpus, "corpus.json")) as f:
            manifest = json.load(f)
    if a.limit:
        limited = os.path.join(a.out, f"jobs.first{a.limit}.jsonl")
        with open(a.jobs) as f, open(limited, "w") as g:
            for i, line in enumerate(f):
                if i >= a.limit:
                    break
                g.write(line)
        a.jobs = limited
        manifest["limit"] = a.limit
    with open(a.jobs) as f:
        manifest["predictions"] = sum(1 for line in f if line.strip())
    return manifest


def cmd_run(a):
    os.makedirs(a.out, exist_ok=True)
    a.out = os.path.abspath(a.out)
    corpus = prepare_corpus(a)
    a.fitrun = os.path.abspath(a.fitrun or pc.find_fitrun())
    a.profile_interpreter = pc.read_profile(a.profile)["interpreter"]
    a.python = a.python or (a.profile_interpreter if os.access(a.profile_interpreter, os.X_OK)
                            else sys.executable)
    a.perf_path = perf_works() if a.perf != "off" else None
    if a.perf == "on" and not a.perf_path:
        sys.exit("scale: --perf on, but `perf stat` does not work here")
    usable = len(os.sched_getaffinity(0))
    workers = [int(w) for w in a.workers.split(",")] if a.workers else \
        [w for w in (1, 2, 4, 8, 16) if w <= usable]
    a.baseline = os.path.abspath(a.baseline) if a.baseline else None
    runners = (a.runners or ",".join(DEFAULT_RUNNERS + (("fitrun-base",) if a.baseline else ()))).split(",")
    if any(r.startswith("fitrun-base") for r in runners) and not a.baseline:
        sys.exit("scale: the fitrun-base runners need --baseline FITRUN")
    for r in runners:
        if r not in RUNNERS:
            sys.exit(f"scale: unknown runner '{r}' (known: {', '.join(RUNNERS)})")
    notes = []
    if max(workers) > usable:
        notes.append(f"{max(workers)} workers on {usable} usable CPUs: oversubscribed.")
    machine = describe_machine(a)
    print(f"scale: {machine['cpu_model']}, {usable} CPUs, Linux {machine['kernel']}, "
          f"Python {machine['python_version']}; {corpus['predictions']} predictions; "
          f"workers {workers}; runners {runners}; {a.rounds} rounds; launcher CPU by "
          f"{'perf' if a.perf_path else '/proc'}", file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix="fitrun-scale-", dir=a.out)
    try:
        if "fitrun-reuse" in runners:
            ok, why = reuse_supported(a, tmp)
            if not ok:
                runners.remove("fitrun-reuse")
                notes.append(f"fitrun-reuse skipped: this fitrun does not run "
                             f"`--set runtime.isolation=reuse` ({why}).")
                print(f"scale: {notes[-1]}", file=sys.stderr)
        if a.warmup:
            warm = dict_ns(a, jobs=os.path.join(tmp, "warm.jsonl"))
            with open(a.jobs) as f, open(warm.jobs, "w") as g:
                for i, line in enumerate(f):
                    if i >= 200:
                        break
                    g.write(line)
            for name in runners:
                measure(runner_argv(name, warm, min(workers), os.path.join(tmp, "warm.out")))
        reference, records, early = None, [], []
        with open(os.path.join(a.out, "scale.jsonl"), "w") as log:
            for rnd in range(a.rounds):
                order = runners[rnd % len(runners):] + runners[:rnd % len(runners)]
                for w in workers:
                    for name in order:
                        out = os.path.join(tmp, f"{name}.{w}.{rnd}.jsonl")
                        errf = os.path.join(a.out, f"stderr.{name}.{w}.{rnd}.txt")
                        m = measure(runner_argv(name, a, w, out),
                                    a.perf_path if name.startswith("fitrun") else None, errf)
                        rec = dict(m, round=rnd, runner=name, workers=w, n=corpus["predictions"])
                        if m["rc"] == 0:
                            v = verdicts(out)
                            if name == "sequential":
                                # The start-up (the prelude) once, then the
                                # jobs scheduled onto w workers.
                                times = job_times(out)
                                rec["scheduled_wall_s"] = m["wall_s"] - sum(times) / 1e6 + \
                                    scheduled_makespan(times, w)
                            os.unlink(out)
                            rec["results"] = len(v)
                            if name == "pool" and reference is None:
                                reference = v
                            if reference is not None:
                                rec["differ"] = len(arc_compare.compare(reference, v, {}))
                            else:
                                early.append((rec, v))
                            os.unlink(errf)
                        else:
                            kept = os.path.join(a.out, f"results.{name}.{w}.{rnd}.jsonl")
                            if os.path.exists(out):
                                os.replace(out, kept)
                            print(f"scale: {name} {w} workers exited {m['rc']}: see {errf} "
                                  f"and {kept}", file=sys.stderr)
                        records.append(rec)
                        log.write(json.dumps(rec) + "\n")
                        log.flush()
                        print(f"scale: round {rnd + 1}/{a.rounds} {name:13} {w:3d} workers "
                              f"{rec['n'] / m['wall_s']:8.1f}/s  launcher "
                              f"{fmt_num(m['launcher_s'], '.3f')} s ({m['launcher_method']})  "
                              f"tree {m['tree_s']:.2f} s  rc {m['rc']}  ≠pool {rec.get('differ')}",
                              file=sys.stderr)
        # Runs made before the first Pool run are compared with it now.
        for rec, v in early:
            if reference is not None:
                rec["differ"] = len(arc_compare.compare(reference, v, {}))
        with open(os.path.join(a.out, "scale.jsonl"), "w") as log:
            for rec in records:
                log.write(json.dumps(rec) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    meta = {"machine": machine, "corpus": corpus, "rounds": a.rounds, "workers": workers,
            "runners": runners, "notes": notes, "load_end": os.getloadavg(),
            "command": " ".join(shlex.quote(x) for x in sys.argv)}
    with open(os.path.join(a.out, "machine.json"), "w") as f:
        json.dump(meta, f, indent=1)
    report(a.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="measure")
    r.add_argument("--corpus", help="a bench/arc_dsl_corpus.py output directory")
    r.add_argument("--arc-dsl", help="generate the corpus from this arc-dsl checkout ...")
    r.add_argument("--tasks", help="... and these ARC training tasks (into OUT/corpus)")
    r.add_argument("--fitrun", help="the fitrun binary (default: $FITRUN, else build/fitrun)")
    r.add_argument("--python", help="interpreter of the peers and of fitrun's runtime "
                                    "(default: the profile's, else this one)")
    r.add_argument("--workers", help="comma-separated worker counts (default: 1,2,4,8,16 up to "
                                     "the usable CPUs)")
    r.add_argument("--runners", help=f"default {','.join(DEFAULT_RUNNERS)} (+ fitrun-base with --baseline)")
    r.add_argument("--baseline", help="another fitrun binary (e.g. a build of main), run interleaved "
                                      "as the runner fitrun-base (fork isolation): before/after")
    r.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    r.add_argument("--limit", type=int, help="only the first N predictions")
    r.add_argument("--perf", choices=("auto", "on", "off"), default="auto",
                   help="fitrun's own CPU by perf stat --no-inherit (auto: when it works)")
    r.add_argument("--no-warmup", dest="warmup", action="store_false",
                   help="skip the untimed warm-up run of each runner on 200 predictions")
    r.add_argument("--out", default="scale-out", help="output directory (default ./scale-out)")
    p = sub.add_parser("plot", help="table, projection and PNG again from a run's directory")
    p.add_argument("dir")
    j = sub.add_parser("project", help="the ceiling of one launcher")
    j.add_argument("--launcher-us", type=float, required=True, help="launcher CPU per prediction (µs)")
    j.add_argument("--per-worker", type=float, required=True, help="predictions/s of one worker")
    j.add_argument("--cores", type=int, default=256)
    a = ap.parse_args()
    if a.cmd == "run":
        cmd_run(a)
    elif a.cmd == "plot":
        report(a.dir)
    else:
        print("\n".join(projection(a.launcher_us, a.per_worker, a.cores)))


if __name__ == "__main__":
    main()
