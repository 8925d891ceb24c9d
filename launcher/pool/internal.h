/* internal.h — pieces of the pool shared between its files (not an API).
 *
 *   pool.c     the event loop and fr_pool_run
 *   setup.c    the process state a run needs (epoll, signals, limits)
 *   intake.c   job lines in: shard, resume, duplicates, checks, queue
 *   slots.c    queued jobs into free slots; interrupting
 *   host.c     the host API runtimes call (fitrun/runtime.h)
 *   results.c  result lines out, through the verdict
 *   timers.c   wall deadlines and CPU clocks
 *   input.c    reading lines; reap.c orphans; report.c counts, progress,
 *              summary; oom.c OOM kills; resume.c --resume; ready.c the
 *              ready record */
#ifndef FITRUN_POOL_INTERNAL_H
#define FITRUN_POOL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <signal.h>

#include "fitrun/jobs.h"
#include "fitrun/pool.h"
#include "fitrun/runtime.h"
#include "fitrun/sandbox.h"

/* ---- input.c: jobs, line by line, from a pipe or a file ----------------- */

struct input {
    int fd;
    const char *name;
    bool pollable; /* pipe/tty/socket: read when epoll says so; else always ready */
    bool eof;
    char *buf; /* unconsumed bytes are buf[off, len) */
    size_t off, len, cap;
    long line;      /* physical lines handed out so far */
    bool skipping;  /* inside an over-long line: drop bytes up to its '\n' */
    bool use_pread; /* read a regular file at pread_pos, leaving the descriptor's offset alone */
    off_t pread_pos;
};

enum input_next { INPUT_LINE, INPUT_MORE, INPUT_END, INPUT_TOO_LONG };

void input_init(struct input *in, int fd, const char *name);
void input_free(struct input *in);
/* The next complete line (without '\n'; valid until the next call) and its
 * number. INPUT_MORE: call input_fill() first. INPUT_TOO_LONG: line *lineno
 * exceeded FR_JOB_MAX_LINE and is being skipped. */
enum input_next input_next(struct input *in, const char **text, size_t *len, long *lineno);
/* One read(2). Returns > 0 bytes, 0 at end of input, -1 with errno
 * (EAGAIN: nothing yet). */
ssize_t input_fill(struct input *in);
/* Lines a regular file will produce for this shard that are neither blank
 * nor already done (for the progress total), read with pread() from the
 * start; -1 when unknown (pipes). */
long input_count(int fd, const struct fr_shard *shard, const struct fr_resume *resume);
bool line_is_blank(const char *s, size_t n);

/* ---- reap.c: the orphan reaper ------------------------------------------ */

struct reaper {
    pid_t *owned;
    size_t n, cap;
    pid_t keep; /* a child that is no job's and outlives the pool (the cgroup tree's janitor); 0 = none */
};

int reaper_own(struct reaper *r, pid_t pid);
void reaper_disown(struct reaper *r, pid_t pid);
/* Kill (SIGKILL) and reap every child of this process that is not owned,
 * not `keep` and not in one of `sessions` (n of them, 0 entries ignored). */
void reaper_sweep(struct reaper *r, const pid_t *sessions, int n);
/* CPU time (ns, fr_tree_cpu_ns) of the orphans of session sid: the
 * children of this process in it that it does not own (re-parented to
 * it, the subreaper), with their trees; while their job runs, also those
 * that exited (the sweep spares them: their zombies keep their CPU). */
uint64_t reaper_session_cpu_ns(const struct reaper *r, pid_t sid);
/* At the end: kill and reap every child but `keep`, owned or not, until
 * none is left or timeout_ms passed. Returns the number still there. */
int reaper_final(struct reaper *r, int timeout_ms);
void reaper_free(struct reaper *r);

/* ---- report.c: counts, progress, summary -------------------------------- */

#define STATUS_COUNT (FR_STATUS_CRASH + 1)

struct error_count {
    char *type;
    long n;
};

struct stats {
    uint64_t start_ns;
    int workers;
    long counts[STATUS_COUNT];
    long done;    /* results written by this run */
    long total;   /* expected results of this run; -1 = unknown (streamed input) */
    long skipped; /* already in the results file (--resume) */
    struct error_count *types;
    size_t ntypes, captypes;
    enum fr_progress mode; /* resolved: BAR, PLAIN or NONE */
    uint64_t next_ns;      /* next progress output */
    bool drawn;            /* a bar is on screen */
};

void stats_init(struct stats *s, enum fr_progress mode, int workers, long total, long skipped);
void stats_free(struct stats *s);
void stats_add(struct stats *s, enum fr_status st, const char *error_type);
/* Draw the bar / print a plain line if it is time (or `force`). */
void progress_tick(struct stats *s, uint64_t now_ns, bool force);
/* At the end: draw the bar one last time and keep it. */
void progress_finish(struct stats *s);
/* Erase the bar before printing anything else on stderr. */
void progress_clear(struct stats *s);
/* The end-of-run table on stderr. `interrupted`: jobs were left unrun. */
void summary_print(struct stats *s, const char *how);

/* ---- the pool's state (pool.c runs it; the files below act on it) ------- */

#define NS_PER_MS 1000000ull

struct slot {
    bool busy;
    struct fr_job job;
    uint64_t start_ns;
    uint64_t deadline_ns;         /* wall time; 0 = none */
    enum fr_abort_reason aborted; /* 0 = not aborted */
    bool completing;              /* inside fr_host_complete: not to be aborted */
    pid_t sid;                    /* the job's session (orphans in it are spared) */
    pid_t cpu_pid;                /* CPU clock watched; 0 = none */
    int cpu_pidfd;                /* confirms cpu_pid is still that process; -1 = it is our child */
    uint64_t cpu_seen_ns;         /* the last CPU time read from it (since cpu_base_ns) */
    int64_t cpu_base_ns;          /* its clock when the job began: 0, or a reused process's earlier jobs */
    uint64_t cpu_check_ns;
    uint64_t orphan_cpu_ns;    /* the CPU of the job's orphans as its session was released */
    uint64_t wake_ns;          /* the runtime's ops->wake is due (fr_host_wake_at); 0 = none */
    struct fr_cgroup_usage cg; /* what the slot's cgroups counted for the job (read at completion) */
};

struct watch {
    bool used;
    int slot;
    uint32_t gen; /* guards against a stale event for a closed and reused fd */
};

struct fr_host {
    struct fr_host_base base; /* first: the table runtimes call through (runtime.h) */
    const struct fr_pool_opts *o;
    struct fr_runtime rt;
    int epfd, sigfd;
    sigset_t oldmask;
    struct sigaction old_pipe, old_chld;
    bool was_subreaper;
    int was_dumpable;

    struct slot *slots;
    int nslots, nbusy;
    struct watch *watches;
    size_t nwatches;
    uint32_t gen;

    struct input in;
    bool in_watched; /* registered with epoll (pipes, while we want jobs) */
    bool in_done;    /* no more lines will come */

    struct fr_job *pending; /* FIFO ring of parsed jobs waiting for a slot */
    int pend_head, npending;
    struct fr_job *retry; /* crashed once, run again first */
    int nretry;

    struct fr_idset *seen; /* ids of this run (and of resumed results) */
    struct reaper reaper;
    struct stats stats;
    long invalid;
    long ncpus;
    struct fr_oom oom; /* OOM kills of our memory cgroup (oom.c) */

    /* Result lines not written yet (results.c): to a pipe, socket or tty
     * those of one loop iteration, written before the loop waits; to a
     * regular file (out_hold) up to POOL_RESULTS_BATCH bytes or
     * POOL_RESULTS_AGE_MS old, across iterations. */
    char *outbuf;
    size_t outlen, outcap;
    uint64_t out_since_ns; /* when the oldest held line was added */
    bool out_hold;         /* the output is a regular file */
    bool out_broken;       /* writing results failed: nothing more is written */

    bool stopping;
    int stop_signal;
    bool failed;
};

static inline bool pool_valid_slot(const struct fr_host *h, int s)
{
    return s >= 0 && s < h->nslots;
}

/* Room for another parsed job: not stopping, and fewer waiting than slots. */
static inline bool pool_has_room(const struct fr_host *h)
{
    return !h->stopping && h->npending < h->nslots;
}

/* Time in ns and ms. Durations are checked when parsed, but any accepted
 * value must work: instants and budgets in ns saturate instead of
 * wrapping. */
static inline uint64_t ms_between(uint64_t from_ns, uint64_t to_ns)
{
    uint64_t d = to_ns > from_ns ? to_ns - from_ns : 0;
    return d / NS_PER_MS + (d % NS_PER_MS != 0);
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static inline uint64_t ms_to_ns(uint64_t ms)
{
    return ms > UINT64_MAX / NS_PER_MS ? UINT64_MAX : ms * NS_PER_MS;
}

/* A warning on stderr that first clears the progress bar (report.c). */
void pool_say(struct fr_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- results.c: writing result lines ------------------------------------- */

/* Write every held result line now (one write(2) unless the output takes
 * less at a time): at the end of a run, whatever ended it. */
void pool_flush_results(struct fr_host *h);
/* Before the loop waits: write the held lines unless the output is a
 * regular file and they are younger than POOL_RESULTS_AGE_MS. */
void pool_flush_due(struct fr_host *h, uint64_t now);
/* Decide how results are written: held across iterations when the output
 * is a regular file. */
void pool_results_setup(struct fr_host *h);
/* Without --resume: truncate the results file, once the runtime is up and
 * before the first job (a FIFO or a device is left as it is); failing, the
 * run stops with 125. */
void pool_replace_results(struct fr_host *h);
/* When pool_flush_due will write the held lines; UINT64_MAX = nothing
 * held back across a wait. */
uint64_t pool_results_due(const struct fr_host *h);
/* An `invalid` result for input line `line` (id may be NULL). */
void pool_emit_invalid(struct fr_host *h, const char *id, long line, const char *type, const char *msg);
/* The result of slot s's job, which ran to a verdict (FR_RAW_FINISHED). */
void pool_write_finished(struct fr_host *h, int s, const struct fr_raw *raw, uint64_t now);
/* The result of slot s's job whose worker crashed or which the runtime
 * rejected. */
void pool_write_crash(struct fr_host *h, int s, const struct fr_raw *raw);

/* ---- host.c: the table runtimes call (fitrun/runtime.h) ----------------- */

extern const struct fr_host_ops pool_host_ops;

/* ---- slots.c: jobs into slots, and out ---------------------------------- */

/* Start queued jobs (retries first) in every free slot. */
void pool_dispatch(struct fr_host *h);
/* Slot s is free again (its job cleared unless kept for a retry). */
void pool_release(struct fr_host *h, int s, bool free_job);
/* Drop every queued job (pending and retries). */
void pool_drop_queued(struct fr_host *h);
/* Stop taking jobs and kill the running ones; their results are dropped.
 * sig: the signal that asked (0 = an error). */
void pool_interrupt(struct fr_host *h, int sig);

/* ---- intake.c: job lines in --------------------------------------------- */

/* Turn buffered (and, for files, freshly read) input into jobs while there
 * is room; `readable`: epoll said the input pipe has data. */
void pool_intake(struct fr_host *h, bool readable);
/* Watch the input only while more jobs are wanted. */
void pool_input_interest(struct fr_host *h);

/* ---- timers.c: wall deadlines and CPU clocks ------------------------------ */

/* Abort the jobs whose wall time or CPU time is spent. */
void pool_timers(struct fr_host *h, uint64_t now);
/* The epoll timeout in ms: the nearest deadline, -1 = none. */
int pool_next_timeout(const struct fr_host *h, uint64_t now);
/* Watch pid's CPU clock for slot `slot` (pidfd confirms it; -1: our child). */
void pool_watch_cpu(struct fr_host *h, int slot, pid_t pid, int pidfd, int64_t base_ns);
void pool_wake_at(struct fr_host *h, int slot, uint64_t ns);

/* ---- setup.c: the process state a run needs, and its restoration --------- */

/* epoll, signals (signalfd), subreaper, non-dumpable, the input, slots and
 * queues, the open-file limit. Returns 0, or -1 with err. */
int pool_setup(struct fr_host *h, char *err, size_t errlen);
/* The OOM-kill counter of our memory cgroup, with its baseline. */
void pool_oom_setup(struct fr_host *h);
/* Free everything and restore what setup changed. */
void pool_teardown(struct fr_host *h);

/* ---- ready.c: the ready record (--ready-fd) ------------------------------- */

/* Write the ready record to o->ready_fd (if any) and close it. */
void pool_ready(struct fr_host *h);

#endif
