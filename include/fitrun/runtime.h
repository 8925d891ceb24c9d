/* fitrun/runtime.h — how the pool drives a runtime.
 *
 * The pool (launcher/pool/) owns everything that is the same for every
 * kind of job: reading jobs, slots, the event loop, wall-time deadlines and
 * CPU-time checks, killing on interrupt, classification (fr_classify),
 * writing results, the crash/retry policy, orphan reaping, progress and the
 * summary. A runtime owns how one job is started, observed and collected:
 *
 *   exec   (launcher/runtime/exec.c)   fork + sandbox + execvp per job
 *   python (launcher/runtime/python/)  one warm interpreter, long-lived
 *           workers forked from it (one per slot), each forking a
 *           sandboxed child per job; fitrun exchanges the job, the outputs
 *           and the captured streams with that child directly, and its
 *           worker, the child's sandbox supervisor, only reports the
 *           facts the child cannot forge (wait status, rusage, the
 *           denied call)
 *
 * Everything runs in the pool's single thread. A runtime never blocks: it
 * registers file descriptors with the host (fr_host_watch) and is called
 * back (ops->event) when one is ready. The life of one job in slot s:
 *
 *   ops->check(job)             may refuse a job before it is scheduled
 *                               (missing/ill-typed fields) -> `invalid`
 *   ops->begin(s, job)          start it; register fds; return 0
 *   ops->event(s, fd, events)   ... any number of times ...
 *   fr_host_complete(h, s, raw) exactly once per successful begin(), from
 *                               inside ops->event or ops->abort (never
 *                               from inside begin)
 *
 * and possibly, while it runs,
 *
 *   ops->abort(s, why)          the pool wants it dead (wall time, CPU
 *                               time, interrupt): kill it; completion
 *                               still follows (immediately, or when the
 *                               kill has been observed).
 *
 * Slots are numbered 0..nslots-1 and are the `worker` field of results; a
 * slot runs one job at a time. A python worker belongs to one slot.
 *
 * Crashes. If the machinery itself fails (a worker dies mid-job, fork
 * fails, a protocol line is garbage), complete the job with kind
 * FR_RAW_CRASHED and a message: the pool starts the job once more (on any
 * slot) and reports `crash` if it crashes again. Replacing a dead worker
 * is the runtime's job; if it cannot (the interpreter is gone), call
 * fr_host_fail(): the run stops with status 125 and jobs without a result
 * are simply not written, so `--resume` completes them later.
 *
 * Processes. The pool is a child subreaper (PR_SET_CHILD_SUBREAPER): any
 * process orphaned below it is re-parented to fitrun. Its reaper kills and
 * reaps every child of fitrun that is neither registered with
 * fr_host_own() (the processes a runtime waits for itself: exec job
 * leaders, python workers) nor in the session of a running job
 * (fr_host_session()). So a job's escaped descendants die at the latest
 * when its session is released. A python worker should itself be a
 * subreaper for its job children and kill their whole tree before it
 * reports, so that per-job accounting stays with the worker.
 *
 * A slot's cgroups (fitrun/cgroup.h). A job's processes join them after
 * ops->begin. Between a completion and the slot's next begin a runtime
 * puts no process there, except the job's own that runs the next job
 * (lives_on) and the one started in its place (replaced): the pool takes
 * the next job's baselines from this job's counters otherwise
 * (fr_raw_slot_idle). */
#ifndef FITRUN_RUNTIME_H
#define FITRUN_RUNTIME_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h> /* EPOLLIN, EPOLLOUT: the events of fr_host_watch() */
#include <sys/resource.h>
#include <sys/types.h>

#include "fitrun/cgroup.h"
#include "fitrun/jobs.h"
#include "fitrun/profile.h"
#include "fitrun/sandbox.h"

struct fr_host; /* the pool, as a runtime sees it */

/* What a runtime gets to work with; valid from ops->start to ops->stop. */
struct fr_runtime_config {
    const struct fr_profile *profile;     /* [runtime] interpreter/prelude/entry, limits */
    const struct fr_policy *policy;       /* built once from [sandbox]; fr_policy_apply() in each job's child */
    char *const *envp;                    /* environment of every job: fitrun's own, plus thread variables,
                                           FITRUN_CPUS/WORKERS and the profile's [env] (fr_env_build_envp) */
    uint64_t output_cap;                  /* bytes kept per stream (stdout, stderr); more = output_limit */
    const char *self_exe;                 /* absolute path of the running fitrun (to find share/fitrun/) */
    const struct fr_cgroup_tree *cgroups; /* fitrun's own cgroups (NULL = none): the process that runs a
                                             job joins its slot's (fr_cgroup_slot_fds, fr_cgroup_join)
                                             before the sandbox is applied */
};

enum fr_abort_reason {
    FR_ABORT_WALL = 1,  /* the job's wall-time deadline passed: reported as timeout (wall) */
    FR_ABORT_CPU,       /* the pool read the CPU clock of the pid given to fr_host_watch_cpu()
                               above the limit: reported as timeout (cpu) */
    FR_ABORT_INTERRUPT, /* SIGINT/SIGTERM/SIGHUP or a fatal error: the result is discarded
                               (not written, so --resume runs the job again) */
};

enum fr_raw_kind {
    FR_RAW_FINISHED = 0, /* the job's process ran and was waited for: wstatus (and rusage) are valid */
    FR_RAW_CRASHED,      /* the machinery failed; the job's outcome is unknown (retried once) */
    FR_RAW_REJECTED,     /* the runtime refused the job after all: status invalid, message required */
};

/* Raw facts about one finished job; the pool classifies them. Pointers are
 * borrowed for the duration of fr_host_complete() only. */
struct fr_raw {
    enum fr_raw_kind kind;
    int wstatus;      /* from wait4() on the job's process */
    struct rusage ru; /* from the same wait4() */
    bool has_rusage;
    uint64_t wall_ms;     /* the job's own wall time; 0 = the pool's begin->complete time */
    int violation_nr;     /* the sandbox supervisor's (fr_report_read, fr_notify_read); -1 = none */
    bool output_exceeded; /* a stream went over output_cap; the job was killed */
    bool memory_hint;     /* the job itself reported an allocation failure (MemoryError, ENOMEM) */
    bool oom_killed;      /* a memory cgroup OOM-killed it */
    bool cpu_exceeded;    /* the runtime itself killed it for CPU time */
    bool cpu_timer;       /* it died of a CPU-limit signal (RLIMIT_CPU's SIGXCPU, or the
                                   runtime's own timer: python's SIGPROF) and rusage holds the
                                   job's CPU (the exec relay's: it reaped the job): a timeout only
                                   if the budget was spent (fitrun/verdict.h); without it,
                                   SIGXCPU is a timeout (fr_classify) */
    bool wall_exceeded;   /* the runtime itself killed it for wall time */
    const char *out;      /* captured stdout (at most output_cap bytes, any bytes) */
    size_t out_len;
    const char *err; /* captured stderr */
    size_t err_len;
    int status;                /* -1 = classify; or an enum fr_status that wins for a job that exited by
                                   itself (python: a prediction that raised is FR_STATUS_ERROR, though
                                   its process exited 0) */
    const char *error_type;    /* NULL = derived by the pool ("exit 1", "SIGSEGV", "CPUTimeout", ...) */
    const char *error_message; /* NULL = derived (last stderr line, ...); required for CRASHED/REJECTED */
    size_t error_message_len;  /* it may hold NUL bytes: its length; 0 = strlen */
    /* A runtime whose jobs produce outputs (python) sets has_outputs: the
     * result then has "outputs" and, when the job has "expected", "passed"
     * (scored by the pool: fitrun/verdict.h). */
    bool has_outputs;
    const char *outputs; /* a JSON array checked with fr_json_value(FR_JSON_STRICT); NULL = null */
    size_t outputs_len;
    long error_line; /* > 0: "error_line", the line of the job's code that raised */
    /* python, isolation = reuse: why the process that ran this job was
     * replaced after it ("worker_replaced", UTF-8); NULL = it was not.
     * Its replacement may join the slot's cgroups before the next job. */
    const char *replaced;
    /* python, isolation = reuse: the job's process was not replaced and
     * runs the slot's next job, so the pool leaves its cgroup's processes
     * alone. */
    bool lives_on;
};

/* Reset *raw to "nothing known": status -1, violation_nr -1, rest zero. */
static inline void fr_raw_init(struct fr_raw *raw)
{
    memset(raw, 0, sizeof *raw);
    raw->status = -1;
    raw->violation_nr = -1;
}

/* Does no process join the slot's cgroups between this completion and
 * the slot's next begin (the contract above)? */
static inline bool fr_raw_slot_idle(const struct fr_raw *raw)
{
    return !raw->lives_on && !raw->replaced;
}

struct fr_runtime;

struct fr_runtime_ops {
    const char *name;
    /* Processes a job's cgroup holds besides the job's own (exec: the
     * sandbox's relay): added to `processes` for pids.max. */
    int job_helpers;
    /* Before any job: allocate nslots slots, start long-lived processes
     * (python: the warm interpreter and its workers, running the prelude).
     * Return -1 with a message (the run stops with 125 before any job; a
     * prelude that fails reports here, once). */
    int (*start)(struct fr_runtime *rt, int nslots, char *err, size_t errlen);
    /* Is this job well-formed for this runtime? -1 + message -> `invalid`
     * with error_type "InvalidJob". Must not start anything. */
    int (*check)(struct fr_runtime *rt, const struct fr_job *job, char *err, size_t errlen);
    /* Start `job` in idle slot `slot`. The job stays valid until the slot
     * completes. Return -1 + message when it could not be started at all
     * (handled like FR_RAW_CRASHED; do not call fr_host_complete then). */
    int (*begin)(struct fr_runtime *rt, int slot, const struct fr_job *job, char *err, size_t errlen);
    /* A watched fd is ready (EPOLLIN/EPOLLOUT/EPOLLHUP/EPOLLERR bits).
     * slot is what was given to fr_host_watch (-1 for runtime-wide fds). */
    void (*event)(struct fr_runtime *rt, int slot, int fd, uint32_t events);
    /* Kill the job in `slot` (all its processes). Completion must follow:
     * from here, or from a later event. May be called more than once. */
    void (*abort)(struct fr_runtime *rt, int slot, enum fr_abort_reason why);
    /* The time the runtime gave fr_host_wake_at() for `slot` has come, its
     * job still running (also when it is being aborted). Optional. */
    void (*wake)(struct fr_runtime *rt, int slot);
    /* After the last job (every slot idle): stop and reap long-lived
     * processes, unwatch and close everything, free rt->priv. */
    void (*stop)(struct fr_runtime *rt);
};

struct fr_runtime {
    const struct fr_runtime_ops *ops;
    const struct fr_runtime_config *cfg;
    struct fr_host *host;
    void *priv; /* the runtime's own state */
    /* Set by start: no job can leave a process behind it (a python worker
     * kills its prediction's process group, and the policy lets no
     * prediction create processes). The pool then skips its orphan sweep
     * after each job; SIGCHLD (a worker's death) still sweeps. */
    bool contained;
};

extern const struct fr_runtime_ops fr_runtime_exec_ops;
extern const struct fr_runtime_ops fr_runtime_python_ops;
/* The ops for a profile's [runtime] kind. */
const struct fr_runtime_ops *fr_runtime_ops_for(enum fr_runtime_kind kind);

/* For `fitrun detect --profile` (kind = python): start the profile's
 * interpreter and prelude once, exactly as `fitrun run` does (sandbox
 * self-test included, no worker), and describe the start-up as a new JSON
 * object {"interpreter", "python" (version), "total_ms", "boot_ms",
 * "prelude_ms", "selftest_ms", "warning" (null unless slower than 1 s)};
 * or NULL with the error (a failing prelude, a missing interpreter) in
 * err. Blocking; the interpreter is killed and reaped before it returns.
 * self_exe: the running fitrun (to find share/fitrun/). Defined in
 * launcher/runtime/python/. */
json_t *fr_python_probe(const struct fr_profile *p, const char *self_exe, char *err, size_t errlen);

/* ---- the host: what the pool offers a runtime --------------------------- *
 *
 * A runtime reaches the pool only through these functions, which call
 * through the table the pool puts at the start of its struct fr_host: the
 * runtimes (a lower layer) never link against the pool. */

struct fr_host_ops {
    int (*watch)(struct fr_host *h, int fd, uint32_t events, int slot);
    int (*rewatch)(struct fr_host *h, int fd, uint32_t events);
    void (*unwatch)(struct fr_host *h, int fd);
    void (*close)(struct fr_host *h, int fd);
    void (*complete)(struct fr_host *h, int slot, struct fr_raw *raw);
    int (*own)(struct fr_host *h, pid_t pid);
    void (*disown)(struct fr_host *h, pid_t pid);
    void (*session)(struct fr_host *h, int slot, pid_t sid);
    void (*reap)(struct fr_host *h);
    void (*watch_cpu)(struct fr_host *h, int slot, pid_t pid, int pidfd, int64_t base_ns);
    void (*wake_at)(struct fr_host *h, int slot, uint64_t ns);
    void (*vfail)(struct fr_host *h, const char *fmt, va_list ap);
};

/* The first member of the pool's struct fr_host. */
struct fr_host_base {
    const struct fr_host_ops *ops;
};

static inline const struct fr_host_ops *fr_host_ops_of(struct fr_host *h)
{
    return ((const struct fr_host_base *)(const void *)h)->ops;
}

/* Watch fd (level-triggered) for `events` (EPOLLIN and/or EPOLLOUT; hang-up
 * and errors are always reported). fr_host_rewatch changes the events (0 =
 * keep registered, report nothing). Unwatch before closing. Return 0 or -1
 * (errno). */
static inline int fr_host_watch(struct fr_host *h, int fd, uint32_t events, int slot)
{
    return fr_host_ops_of(h)->watch(h, fd, events, slot);
}
static inline int fr_host_rewatch(struct fr_host *h, int fd, uint32_t events)
{
    return fr_host_ops_of(h)->rewatch(h, fd, events);
}
static inline void fr_host_unwatch(struct fr_host *h, int fd)
{
    fr_host_ops_of(h)->unwatch(h, fd);
}
/* Unwatch and close fd in one call and one system call: the registration
 * goes with the open file. Only for an fd that is the sole descriptor of
 * its open file (a pipe end the runtime created and never passed on). */
static inline void fr_host_close(struct fr_host *h, int fd)
{
    fr_host_ops_of(h)->close(h, fd);
}

/* The job in `slot` is over. Copies what it needs; *raw may be freed when
 * this returns, and the slot may be given a new job right after the
 * current event callback returns. */
static inline void fr_host_complete(struct fr_host *h, int slot, struct fr_raw *raw)
{
    fr_host_ops_of(h)->complete(h, slot, raw);
}

/* Processes the runtime waits for itself (never killed or reaped by the
 * pool's orphan reaper). Disown after reaping. */
static inline int fr_host_own(struct fr_host *h, pid_t pid)
{
    return fr_host_ops_of(h)->own(h, pid);
}
static inline void fr_host_disown(struct fr_host *h, pid_t pid)
{
    fr_host_ops_of(h)->disown(h, pid);
}

/* The session id of the job running in `slot` (exec: the job's pid, it
 * calls setsid()); 0 = none. Orphans in a registered session are left
 * alone; releasing it (0) lets the reaper kill them. */
static inline void fr_host_session(struct fr_host *h, int slot, pid_t sid)
{
    fr_host_ops_of(h)->session(h, slot, sid);
}
/* Run the orphan reaper now (after killing a job's process group). */
static inline void fr_host_reap(struct fr_host *h)
{
    fr_host_ops_of(h)->reap(h);
}

/* Call ops->wake for the job in `slot` once CLOCK_MONOTONIC (fr_now_ns)
 * reaches ns; a later call replaces the time, 0 cancels it, and the job's
 * completion ends it. A deadline of the pool's loop: no system call. */
static inline void fr_host_wake_at(struct fr_host *h, int slot, uint64_t ns)
{
    fr_host_ops_of(h)->wake_at(h, slot, ns);
}

/* Enforce the profile's cpu_time on the job in `slot`, whose process is
 * `pid`, by reading CPU clocks: ms resolution, where RLIMIT_CPU has 1 s
 * granularity. Counted: every process of the job together — the slot's
 * cgroup CPU counter where fitrun has its own cgroups; else the process
 * (all threads), all its descendants with what each reaped, and the
 * orphans of the job's session (the exec preset's relay runs the job as
 * its child; `sh -c` wrappers and jobs spread over processes go deeper).
 * 0 = stop. */
static inline void fr_host_watch_cpu(struct fr_host *h, int slot, pid_t pid)
{
    fr_host_ops_of(h)->watch_cpu(h, slot, pid, -1, 0);
}
/* The same for a process that is not fitrun's child (python: a worker's
 * child), whose pid another process could get once its parent has reaped
 * it. pidfd (pidfd_open of it, kept open by the caller while watched)
 * confirms after each clock read that the clock read was that process's:
 * a CPU kill can never be decided on a stranger's clock. */
static inline void fr_host_watch_cpu_pidfd(struct fr_host *h, int slot, pid_t pid, int pidfd)
{
    fr_host_ops_of(h)->watch_cpu(h, slot, pid, pidfd, 0);
}
/* The same for a process that ran earlier jobs (python, isolation =
 * reuse): the job's CPU time is its clock minus base_ns, the clock's
 * reading when the job began. */
static inline void fr_host_watch_cpu_since(struct fr_host *h, int slot, pid_t pid, int pidfd, int64_t base_ns)
{
    fr_host_ops_of(h)->watch_cpu(h, slot, pid, pidfd, base_ns);
}

/* Fatal runtime error: the pool kills running jobs (their results are
 * discarded), prints the message and the summary, and exits 125. */
static inline void fr_host_fail(struct fr_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void fr_host_fail(struct fr_host *h, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fr_host_ops_of(h)->vfail(h, fmt, ap);
    va_end(ap);
}

#endif
