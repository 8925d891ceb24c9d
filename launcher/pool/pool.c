/* pool.c — the event loop of `fitrun run`. See include/fitrun/pool.h and
 * include/fitrun/runtime.h (the division of labour with runtimes).
 *
 * One thread, one epoll set over:
 *   - the job input, when it is a pipe/tty (streamed: a line is started as
 *     soon as it is complete and a slot is free, its result written the
 *     moment it is known, while the writer keeps the pipe open). A regular
 *     file cannot be polled; it is read in chunks whenever there is room;
 *   - a signalfd for SIGCHLD (orphan reaping), SIGINT, SIGTERM, SIGHUP;
 *   - whatever the runtime registers (exec: each job's pidfd, stdout,
 *     stderr and stdin pipes).
 * Deadlines (wall time, CPU-clock checks, progress) become the epoll
 * timeout, computed in ms from CLOCK_MONOTONIC.
 *
 * Backpressure: at most `workers` parsed jobs wait for a slot; beyond that
 * the input is not read (the pipe fills, the writer blocks), so memory stays
 * bounded on any input size and a streaming caller is never ahead of us by
 * more than a pipe's worth.
 *
 * Results are written with blocking write(2)s, one per line, straight to
 * the output fd (no stdio buffer: "flushed as soon as known"). A slow
 * reader of `--out -` therefore slows the pool down instead of growing a
 * queue. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fitrun/pool.h"
#include "fitrun/common.h"
#include "fitrun/verdict.h"
#include "internal.h"

#define MAX_EVENTS 64
#define NS_PER_MS 1000000ull
#define FINAL_REAP_MS 5000

struct slot {
    bool busy;
    struct fr_job job;
    uint64_t start_ns;
    uint64_t deadline_ns;           /* wall time; 0 = none */
    enum fr_abort_reason aborted;   /* 0 = not aborted */
    bool completing;                /* inside fr_host_complete: not to be aborted */
    pid_t sid;                      /* the job's session (orphans in it are spared) */
    pid_t cpu_pid;                  /* CPU clock watched; 0 = none */
    int cpu_pidfd;                  /* confirms cpu_pid is still that process; -1 = it is our child */
    uint64_t cpu_seen_ns;           /* the last CPU time read from it */
    uint64_t cpu_check_ns;
};

struct watch {
    bool used;
    int slot;
    uint32_t gen;   /* guards against a stale event for a closed and reused fd */
};

struct fr_host {
    struct fr_host_base base;   /* first: the table runtimes call through (runtime.h) */
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
    bool in_watched;        /* registered with epoll (pipes, while we want jobs) */
    bool in_done;           /* no more lines will come */

    struct fr_job *pending; /* FIFO ring of parsed jobs waiting for a slot */
    int pend_head, npending;
    struct fr_job *retry;   /* crashed once, run again first */
    int nretry;

    struct fr_idset *seen;  /* ids of this run (and of resumed results) */
    struct reaper reaper;
    struct stats stats;
    long invalid;
    long ncpus;
    struct fr_oom oom;      /* OOM kills of our memory cgroup (oom.c) */

    bool stopping;
    int stop_signal;
    bool failed;
};

/* ---- small helpers -------------------------------------------------------- */

const struct fr_runtime_ops *fr_runtime_ops_for(enum fr_runtime_kind kind)
{
    return kind == FR_RUNTIME_PYTHON ? &fr_runtime_python_ops : &fr_runtime_exec_ops;
}

static void say(struct fr_host *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct fr_host *h, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    progress_clear(&h->stats);
    fr_warn("%s", msg);
}

static uint64_t ms_between(uint64_t from_ns, uint64_t to_ns)
{
    uint64_t d = to_ns > from_ns ? to_ns - from_ns : 0;
    return d / NS_PER_MS + (d % NS_PER_MS != 0);
}

/* Durations are checked when parsed, but any accepted value must work:
 * instants and budgets in ns saturate instead of wrapping. */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t ms_to_ns(uint64_t ms)
{
    return ms > UINT64_MAX / NS_PER_MS ? UINT64_MAX : ms * NS_PER_MS;
}

static uint64_t tv_ms(const struct timeval *tv)
{
    return (uint64_t)tv->tv_sec * 1000u + (uint64_t)tv->tv_usec / 1000u;
}

/* ---- writing results -------------------------------------------------- */

static void interrupt(struct fr_host *h, int sig);

static void write_all(struct fr_host *h, const char *buf, size_t len)
{
    if (h->failed)
        return;
    while (len) {
        ssize_t w = write(h->o->out_fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            fr_host_fail(h, "cannot write results to %s: %s", h->o->out_name, strerror(errno));
            return;
        }
        buf += w;
        len -= (size_t)w;
    }
}

static void emit(struct fr_host *h, const struct fr_result *r)
{
    size_t len;
    char *line = fr_result_line(r, &len);
    if (!line) {
        fr_host_fail(h, "out of memory formatting the result of line %ld", r->line);
        return;
    }
    write_all(h, line, len);
    free(line);
    if (h->failed)
        return;
    stats_add(&h->stats, r->status, r->error_type);
    progress_tick(&h->stats, fr_now_ns(), false);
}

static void emit_invalid(struct fr_host *h, const char *id, long line, const char *type, const char *msg)
{
    struct fr_result r = {0};
    r.id = id;
    r.status = FR_STATUS_INVALID;
    r.error_type = type;
    r.error_message = msg;
    r.worker = -1;
    r.line = line;
    h->invalid++;
    emit(h, &r);
}

/* ---- the result of a finished job ---------------------------------------- */

/* The runtime fields of a job with outputs: "outputs", "passed" (when the
 * job has "expected"; scored here, since only the pool holds it), and
 * "error_line". *passed is malloc'd (the caller frees it). */
static size_t output_fields(const struct fr_raw *raw, const json_t *job, enum fr_status status,
                            struct fr_result_field f[3], char **passed, char line_buf[32])
{
    size_t n = 0;
    *passed = NULL;
    if (!raw->has_outputs)
        return 0;
    f[n++] = raw->outputs ? (struct fr_result_field){"outputs", raw->outputs, raw->outputs_len}
                          : (struct fr_result_field){"outputs", "null", 4};
    const json_t *expected = json_object_get(job, "expected");
    size_t plen;
    if (json_is_array(expected) && (*passed = fr_passed_json(expected, raw->outputs, raw->outputs_len, status, &plen)))
        f[n++] = (struct fr_result_field){"passed", *passed, plen};
    if (raw->error_line > 0)
        f[n++] = (struct fr_result_field){"error_line", line_buf,
                                          (size_t)snprintf(line_buf, 32, "%ld", raw->error_line)};
    return n;
}

static void write_finished(struct fr_host *h, int s, const struct fr_raw *raw, uint64_t now)
{
    struct slot *sl = &h->slots[s];
    uint64_t cpu_ms = raw->has_rusage ? tv_ms(&raw->ru.ru_utime) + tv_ms(&raw->ru.ru_stime) : 0;
    /* A job killed mid-run may not have been waited for by its own parent
     * (the exec preset's relay dies with it), so rusage can miss its CPU
     * time; what the pool read last is a lower bound. */
    if (sl->cpu_seen_ns / NS_PER_MS > cpu_ms)
        cpu_ms = sl->cpu_seen_ns / NS_PER_MS;
    /* The slot is still busy, so nbusy counts this job among those that
     * may claim a kill (oom.c). */
    bool oom = raw->oom_killed ||
               (fr_verdict_unexplained_kill(raw, sl->aborted) && fr_oom_claim(&h->oom, h->nbusy));
    const struct fr_profile *p = h->o->rtcfg->profile;
    struct fr_verdict_in in = {
        .raw = raw,
        .aborted = sl->aborted,
        .oom_killed = oom,
        .cpu_ms = cpu_ms,
        .cpu_limit_ms = h->o->cpu_ms,
        .wall_limit_ms = h->o->wall_ms,
        .memory_limit = p ? p->memory : 0,
        .output_cap = h->o->rtcfg->output_cap,
        .oom_counter = h->oom.path,
    };
    struct fr_verdict v;
    fr_verdict_judge(&in, &v);

    struct fr_result r = {0};
    r.id = sl->job.id;
    r.status = v.status;
    r.timeout = v.timeout;
    r.has_exit = v.oc.signal == 0 && v.oc.exit_code >= 0;
    r.exit_code = v.oc.exit_code;
    r.signal = v.oc.signal_name[0] ? v.oc.signal_name : NULL;
    r.syscall = v.oc.syscall[0] ? v.oc.syscall : NULL;
    r.error_type = raw->error_type ? raw->error_type : v.type[0] ? v.type : NULL;
    r.error_message = raw->error_message ? raw->error_message : v.msg[0] ? v.msg : NULL;
    r.error_message_len = raw->error_message ? raw->error_message_len : 0;
    r.has_output = true;
    r.out = raw->out;
    r.out_len = raw->out_len;
    r.err = raw->err;
    r.err_len = raw->err_len;
    r.has_usage = true;
    r.cpu_ms = cpu_ms;
    r.wall_ms = raw->wall_ms ? raw->wall_ms : (now - sl->start_ns) / NS_PER_MS;
    r.max_rss_kb = raw->has_rusage ? (uint64_t)raw->ru.ru_maxrss : 0;
    r.worker = s;
    r.line = sl->job.line;
    r.attempts = sl->job.attempts;
    struct fr_result_field fields[3];
    char *passed, line_buf[32];
    r.fields = fields;
    r.nfields = output_fields(raw, sl->job.obj, v.status, fields, &passed, line_buf);
    emit(h, &r);
    free(passed);
}

static void write_crash(struct fr_host *h, int s, const struct fr_raw *raw)
{
    struct slot *sl = &h->slots[s];
    struct fr_result r = {0};
    r.id = sl->job.id;
    r.status = raw->kind == FR_RAW_REJECTED ? FR_STATUS_INVALID : FR_STATUS_CRASH;
    r.error_type = raw->error_type ? raw->error_type : raw->kind == FR_RAW_REJECTED ? "InvalidJob" : "WorkerCrash";
    r.error_message = raw->error_message ? raw->error_message : "the worker died";
    r.error_message_len = raw->error_message ? raw->error_message_len : 0;
    r.has_output = raw->out || raw->err;
    r.out = raw->out;
    r.out_len = raw->out_len;
    r.err = raw->err;
    r.err_len = raw->err_len;
    r.worker = s;
    r.line = sl->job.line;
    r.attempts = sl->job.attempts;
    if (raw->kind == FR_RAW_REJECTED)
        h->invalid++;
    emit(h, &r);
}

/* ---- the host API ------------------------------------------------------- */

static bool valid_slot(const struct fr_host *h, int s)
{
    return s >= 0 && s < h->nslots;
}

static int host_watch(struct fr_host *h, int fd, uint32_t events, int slot)
{
    if (fd < 0) {
        errno = EBADF;
        return -1;
    }
    if ((size_t)fd >= h->nwatches) {
        size_t n = h->nwatches ? h->nwatches : 64;
        while (n <= (size_t)fd)
            n *= 2;
        struct watch *nw = realloc(h->watches, n * sizeof *nw);
        if (!nw) {
            errno = ENOMEM;
            return -1;
        }
        memset(nw + h->nwatches, 0, (n - h->nwatches) * sizeof *nw);
        h->watches = nw;
        h->nwatches = n;
    }
    if (++h->gen == 0)
        h->gen = 1; /* 0 marks the pool's own fds */
    struct epoll_event ev = {.events = events, .data.u64 = ((uint64_t)h->gen << 32) | (uint32_t)fd};
    if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -1;
    h->watches[fd] = (struct watch){.used = true, .slot = slot, .gen = h->gen};
    return 0;
}

static int host_rewatch(struct fr_host *h, int fd, uint32_t events)
{
    if (fd < 0 || (size_t)fd >= h->nwatches || !h->watches[fd].used) {
        errno = EBADF;
        return -1;
    }
    struct epoll_event ev = {.events = events, .data.u64 = ((uint64_t)h->watches[fd].gen << 32) | (uint32_t)fd};
    return epoll_ctl(h->epfd, EPOLL_CTL_MOD, fd, &ev);
}

static void host_unwatch(struct fr_host *h, int fd)
{
    if (fd < 0 || (size_t)fd >= h->nwatches || !h->watches[fd].used)
        return;
    epoll_ctl(h->epfd, EPOLL_CTL_DEL, fd, NULL);
    h->watches[fd].used = false;
}

static void host_close(struct fr_host *h, int fd)
{
    if (fd >= 0 && (size_t)fd < h->nwatches)
        h->watches[fd].used = false;
    if (fd >= 0)
        close(fd);
}

static int host_own(struct fr_host *h, pid_t pid)
{
    return reaper_own(&h->reaper, pid);
}

static void host_disown(struct fr_host *h, pid_t pid)
{
    reaper_disown(&h->reaper, pid);
}

static void host_session(struct fr_host *h, int slot, pid_t sid)
{
    if (valid_slot(h, slot))
        h->slots[slot].sid = sid;
}

static void host_reap(struct fr_host *h)
{
    pid_t sessions[h->nslots];
    for (int i = 0; i < h->nslots; i++)
        sessions[i] = h->slots[i].busy ? h->slots[i].sid : 0;
    reaper_sweep(&h->reaper, sessions, h->nslots);
}

static void host_watch_cpu_pidfd(struct fr_host *h, int slot, pid_t pid, int pidfd)
{
    if (!valid_slot(h, slot))
        return;
    struct slot *sl = &h->slots[slot];
    sl->cpu_pid = 0;
    sl->cpu_pidfd = -1;
    if (!pid || !h->o->cpu_ms)
        return;
    sl->cpu_pid = pid;
    sl->cpu_pidfd = pidfd;
    /* It cannot use more than ncpus CPU-seconds per second. */
    sl->cpu_check_ns = sat_add(fr_now_ns(), ms_to_ns(h->o->cpu_ms) / (uint64_t)h->ncpus);
}

static void host_vfail(struct fr_host *h, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    say(h, "%s", msg);
    h->failed = true;
    interrupt(h, 0);
}

static void release(struct fr_host *h, int s, bool free_job)
{
    struct slot *sl = &h->slots[s];
    if (free_job)
        fr_job_clear(&sl->job);
    memset(&sl->job, 0, sizeof sl->job);
    sl->busy = false;
    sl->completing = false;
    sl->sid = 0;
    sl->cpu_pid = 0;
    sl->cpu_pidfd = -1;
    sl->aborted = 0;
    h->nbusy--;
}

static void host_complete(struct fr_host *h, int s, struct fr_raw *raw)
{
    if (!valid_slot(h, s) || !h->slots[s].busy) {
        say(h, "runtime %s completed idle slot %d (ignored)", h->rt.ops->name, s);
        return;
    }
    struct slot *sl = &h->slots[s];
    uint64_t now = fr_now_ns();
    bool keep_job = false;
    /* Writing the result may fail and stop the run (interrupt()), which
     * must not abort the job being reported. */
    sl->completing = true;
    /* A worker that died mid-job may have been the OOM killer's victim
     * (python: the worker, not its child). Its kill must not be left as
     * credit for the next job that dies of an unrelated SIGKILL, so a crash
     * takes one too; it stays a crash (retried once). Crashes are rare:
     * one small read each. */
    if (raw->kind == FR_RAW_CRASHED)
        (void)fr_oom_claim(&h->oom, h->nbusy);
    if (sl->aborted == FR_ABORT_INTERRUPT) {
        /* Not a result: the job did not get to finish. --resume runs it. */
    } else if (raw->kind == FR_RAW_CRASHED && sl->job.attempts < 2 && !h->stopping) {
        /* Retry once: a crash is about the worker, not (yet) about the job. */
        say(h, "worker %d crashed running job %s (line %ld): %s; retrying it once", s, sl->job.id, sl->job.line,
            raw->error_message ? raw->error_message : "no reason given");
        h->retry[h->nretry++] = sl->job;
        keep_job = true;
    } else if (raw->kind != FR_RAW_FINISHED) {
        write_crash(h, s, raw);
    } else {
        write_finished(h, s, raw, now);
    }
    release(h, s, !keep_job);
    /* Escaped descendants of the finished job die now, not at the end. */
    fr_host_reap(h);
}

static const struct fr_host_ops host_ops = {
    .watch = host_watch,
    .rewatch = host_rewatch,
    .unwatch = host_unwatch,
    .close = host_close,
    .complete = host_complete,
    .own = host_own,
    .disown = host_disown,
    .session = host_session,
    .reap = host_reap,
    .watch_cpu = host_watch_cpu_pidfd,
    .vfail = host_vfail,
};

/* ---- jobs in ------------------------------------------------------------ */

static bool has_room(const struct fr_host *h)
{
    return !h->stopping && h->npending < h->nslots;
}

static void push_pending(struct fr_host *h, struct fr_job *job)
{
    int tail = (h->pend_head + h->npending) % h->nslots;
    h->pending[tail] = *job;
    h->npending++;
}

/* --resume: 1 = this line already has its result (skip it), 0 = run it;
 * a result there for another id stops the run (fr_resume_line). */
static int resumed(struct fr_host *h, long line, const char *text, size_t len)
{
    char err[1024];
    if (!h->o->resume)
        return 0;
    int r = fr_resume_line(h->o->resume, line, text, len, h->o->in_name, err, sizeof err);
    if (r < 0)
        fr_host_fail(h, "%s", err);
    return r != 0;
}

/* Take one input line: skip it, report it invalid, or queue it. */
static void handle_line(struct fr_host *h, const char *text, size_t len, long line)
{
    const struct fr_resume *res = h->o->resume;
    if (h->o->shard.enabled && !fr_shard_selects(&h->o->shard, line))
        return;
    if (line_is_blank(text, len) || resumed(h, line, text, len))
        return; /* blank, or has a result already (--resume) */
    struct fr_job job;
    const char *type = NULL;
    char err[1024];
    int r = fr_job_parse(text, len, line, &job, &type, err, sizeof err);
    if (r == 0 && res && fr_idset_has(res->noline, job.id) && !fr_idset_has(h->seen, job.id)) {
        /* Resumed from a results file without line numbers: by id. */
        if (fr_idset_add(h->seen, job.id) < 0)
            fr_host_fail(h, "out of memory");
        fr_job_clear(&job);
        return;
    }
    if (r < 0) {
        /* An invalid line that has an id still claims it: a later line
         * with the same id is a duplicate. */
        if (job.id && fr_idset_add(h->seen, job.id) < 0)
            fr_host_fail(h, "out of memory");
        emit_invalid(h, job.id, line, type, err);
        fr_job_clear(&job);
        return;
    }
    int added = fr_idset_add(h->seen, job.id);
    if (added < 0) {
        fr_job_clear(&job);
        fr_host_fail(h, "out of memory");
        return;
    }
    if (added == 0) {
        _Static_assert(sizeof err >= FR_DUPLICATE_MSG_MAX, "room for the DuplicateId message");
        fr_duplicate_message(err, line, job.id);
        emit_invalid(h, job.id, line, "DuplicateId", err);
        fr_job_clear(&job);
        return;
    }
    char cerr[512];
    if (h->rt.ops->check && h->rt.ops->check(&h->rt, &job, cerr, sizeof cerr) < 0) {
        snprintf(err, sizeof err, "line %ld: %s", line, cerr);
        emit_invalid(h, job.id, line, "InvalidJob", err);
        fr_job_clear(&job);
        return;
    }
    push_pending(h, &job);
}

/* Turn buffered (and, for files, freshly read) input into jobs while there
 * is room. Pipes are read only from the epoll event (one read per
 * readiness, so a blocking fd never blocks us). */
static void intake(struct fr_host *h, bool readable)
{
    while (has_room(h) && !h->in_done) {
        const char *text;
        size_t len;
        long line;
        switch (input_next(&h->in, &text, &len, &line)) {
        case INPUT_LINE:
            handle_line(h, text, len, line);
            continue;
        case INPUT_TOO_LONG: {
            if ((h->o->shard.enabled && !fr_shard_selects(&h->o->shard, line)) || resumed(h, line, NULL, 0))
                continue;
            char msg[128];
            snprintf(msg, sizeof msg, "line %ld: longer than %u MiB", line, FR_JOB_MAX_LINE >> 20);
            emit_invalid(h, NULL, line, "InvalidJSON", msg);
            continue;
        }
        case INPUT_END:
            h->in_done = true;
            continue;
        case INPUT_MORE:
            break;
        }
        if (h->in.pollable && !readable)
            return;
        readable = false;
        if (input_fill(&h->in) < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            fr_host_fail(h, "cannot read jobs from %s: %s", h->in.name, strerror(errno));
            return;
        }
    }
}

/* Watch the input only while we want more jobs. Registration is dropped
 * (not just muted) meanwhile: a pipe whose writer has gone reports EPOLLHUP
 * whatever the event mask, which would spin the loop. */
static void input_interest(struct fr_host *h)
{
    if (!h->in.pollable)
        return;
    bool want = has_room(h) && !h->in_done;
    if (want == h->in_watched)
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint32_t)h->in.fd};
    if (epoll_ctl(h->epfd, want ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, h->in.fd, &ev) == 0)
        h->in_watched = want;
    else if (want)
        fr_host_fail(h, "cannot watch %s: %s", h->in.name, strerror(errno));
}

/* ---- slots ---------------------------------------------------------------- */

static void launch(struct fr_host *h, int s, struct fr_job *job)
{
    struct slot *sl = &h->slots[s];
    uint64_t now = fr_now_ns();
    sl->job = *job;
    sl->job.attempts++;
    sl->busy = true;
    sl->start_ns = now;
    sl->deadline_ns = h->o->wall_ms ? sat_add(now, ms_to_ns(h->o->wall_ms)) : 0;
    sl->aborted = 0;
    sl->sid = 0;
    sl->cpu_pid = 0;
    sl->cpu_pidfd = -1;
    sl->cpu_seen_ns = 0;
    h->nbusy++;
    char err[512] = "";
    if (h->rt.ops->begin(&h->rt, s, &sl->job, err, sizeof err) < 0) {
        struct fr_raw raw;
        fr_raw_init(&raw);
        raw.kind = FR_RAW_CRASHED;
        raw.error_message = err[0] ? err : "the job could not be started";
        fr_host_complete(h, s, &raw);
    }
}

static void dispatch(struct fr_host *h)
{
    for (int s = 0; s < h->nslots && !h->stopping; s++) {
        if (h->slots[s].busy)
            continue;
        struct fr_job job;
        if (h->nretry)
            job = h->retry[--h->nretry];
        else if (h->npending) {
            job = h->pending[h->pend_head];
            h->pend_head = (h->pend_head + 1) % h->nslots;
            h->npending--;
        } else
            return;
        launch(h, s, &job);
    }
}

/* Stop taking jobs and kill the running ones; their results are dropped. */
static void interrupt(struct fr_host *h, int sig)
{
    if (!h->stopping) {
        h->stopping = true;
        h->stop_signal = sig;
    }
    for (int i = 0; i < h->npending; i++)
        fr_job_clear(&h->pending[(h->pend_head + i) % h->nslots]);
    h->npending = 0;
    for (int i = 0; i < h->nretry; i++)
        fr_job_clear(&h->retry[i]);
    h->nretry = 0;
    for (int s = 0; s < h->nslots; s++) {
        struct slot *sl = &h->slots[s];
        if (sl->busy && !sl->completing && sl->aborted != FR_ABORT_INTERRUPT) {
            sl->aborted = FR_ABORT_INTERRUPT;
            h->rt.ops->abort(&h->rt, s, FR_ABORT_INTERRUPT);
        }
    }
}

/* CPU time of a process (all its threads), in ns; -1 when it is gone. */
static int64_t cpu_clock_ns(pid_t pid)
{
    clockid_t cid;
    struct timespec ts;
    if (clock_getcpuclockid(pid, &cid) != 0 || clock_gettime(cid, &ts) < 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* CPU time of the watched process and of its direct children. Children
 * count because the process we fork is not always the one that computes:
 * the exec sandbox preset runs the job under a small relay process, and
 * many jobs are `sh -c ...` wrappers. */
static int64_t job_cpu_ns(pid_t pid)
{
    int64_t total = cpu_clock_ns(pid);
    if (total < 0)
        return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    char *kids = fr_read_file(path, 1 << 16, NULL);
    for (char *s = kids, *end; s && *s; s = end) {
        long child = strtol(s, &end, 10);
        if (end == s)
            break;
        int64_t c = cpu_clock_ns((pid_t)child);
        if (c > 0)
            total += c;
    }
    free(kids);
    return total;
}

/* Has the process of this pidfd exited? (-1: never asked.) */
static bool exited(int pidfd)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    return pidfd >= 0 && poll(&p, 1, 0) != 0;
}

/* Wall deadlines and CPU clocks. */
static void timers(struct fr_host *h, uint64_t now)
{
    for (int s = 0; s < h->nslots; s++) {
        struct slot *sl = &h->slots[s];
        if (!sl->busy || sl->aborted)
            continue;
        if (sl->deadline_ns && now >= sl->deadline_ns) {
            sl->aborted = FR_ABORT_WALL;
            h->rt.ops->abort(&h->rt, s, FR_ABORT_WALL);
            continue;
        }
        if (!sl->cpu_pid || now < sl->cpu_check_ns)
            continue;
        int64_t used = job_cpu_ns(sl->cpu_pid);
        if (used < 0 || exited(sl->cpu_pidfd)) {
            sl->cpu_pid = 0; /* gone (and its pid maybe another's): its exit is on the way */
            continue;
        }
        uint64_t limit = ms_to_ns(h->o->cpu_ms);
        sl->cpu_seen_ns = (uint64_t)used;
        if ((uint64_t)used >= limit) {
            sl->aborted = FR_ABORT_CPU;
            h->rt.ops->abort(&h->rt, s, FR_ABORT_CPU);
            continue;
        }
        /* Nothing can burn more than ncpus CPU-seconds per second. */
        uint64_t wait = (limit - (uint64_t)used) / (uint64_t)h->ncpus;
        sl->cpu_check_ns = sat_add(now, wait < NS_PER_MS ? NS_PER_MS : wait);
    }
}

/* epoll timeout in ms: the nearest deadline, -1 = none. */
static int next_timeout(const struct fr_host *h, uint64_t now)
{
    if (!h->in.pollable && has_room(h) && !h->in_done)
        return 0;
    uint64_t next = UINT64_MAX;
    for (int s = 0; s < h->nslots; s++) {
        const struct slot *sl = &h->slots[s];
        if (!sl->busy || sl->aborted)
            continue;
        if (sl->deadline_ns && sl->deadline_ns < next)
            next = sl->deadline_ns;
        if (sl->cpu_pid && sl->cpu_check_ns < next)
            next = sl->cpu_check_ns;
    }
    if (h->stats.mode != FR_PROGRESS_NONE && h->nbusy && h->stats.next_ns < next)
        next = h->stats.next_ns;
    if (next == UINT64_MAX)
        return -1;
    uint64_t ms = ms_between(now, next);
    return ms > 60000 ? 60000 : (int)ms;
}

static void on_signals(struct fr_host *h)
{
    struct signalfd_siginfo si;
    bool chld = false;
    for (;;) {
        ssize_t r = read(h->sigfd, &si, sizeof si);
        if (r != (ssize_t)sizeof si)
            break;
        if (si.ssi_signo == SIGCHLD)
            chld = true;
        else {
            if (!h->stopping)
                say(h, "SIG%s: stopping; running jobs are killed and will run again with --resume",
                    sigabbrev_np((int)si.ssi_signo) ? sigabbrev_np((int)si.ssi_signo) : "?");
            interrupt(h, (int)si.ssi_signo);
        }
    }
    if (chld)
        fr_host_reap(h);
}

/* ---- set-up and tear-down ---------------------------------------------- */

static int setup(struct fr_host *h, char *err, size_t errlen)
{
    h->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (h->epfd < 0) {
        snprintf(err, errlen, "epoll_create1: %s", strerror(errno));
        return -1;
    }
    /* SIGCHLD must not be ignored (inherited SIG_IGN would auto-reap the
     * jobs and steal their exit status); SIGPIPE is ignored so a job that
     * closes its stdin early gives EPIPE, not a dead fitrun. */
    struct sigaction dfl = {.sa_handler = SIG_DFL}, ign = {.sa_handler = SIG_IGN};
    sigaction(SIGCHLD, &dfl, &h->old_chld);
    sigaction(SIGPIPE, &ign, &h->old_pipe);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    if (sigprocmask(SIG_BLOCK, &set, &h->oldmask) < 0) {
        snprintf(err, errlen, "sigprocmask: %s", strerror(errno));
        return -1;
    }
    h->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint32_t)h->sigfd};
    if (h->sigfd < 0 || epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->sigfd, &ev) < 0) {
        snprintf(err, errlen, "signalfd: %s", strerror(errno));
        return -1;
    }
    int was = 0;
    prctl(PR_GET_CHILD_SUBREAPER, &was, 0, 0, 0);
    h->was_subreaper = was;
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        snprintf(err, errlen, "prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
        return -1;
    }
    /* The pool holds every job line, expected answers included. A job
     * without CAP_SYS_PTRACE (the sandbox drops it) cannot open
     * /proc/<fitrun>/{mem,fd,environ,...} of a non-dumpable process. */
    h->was_dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
        snprintf(err, errlen, "prctl(PR_SET_DUMPABLE): %s", strerror(errno));
        return -1;
    }
    /* Pipes and ttys are polled; epoll refuses regular files (EPERM). */
    input_init(&h->in, h->o->in_fd, h->o->in_name);
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = (uint32_t)h->o->in_fd};
    if (epoll_ctl(h->epfd, EPOLL_CTL_ADD, h->o->in_fd, &ev) == 0) {
        h->in.pollable = h->in_watched = true;
    } else if (errno != EPERM) {
        snprintf(err, errlen, "cannot watch %s: %s", h->o->in_name, strerror(errno));
        return -1;
    }
    h->nslots = h->o->workers;
    /* Each running exec job holds about six descriptors here (pidfd, four
     * pipe ends, /dev/null shared); with hundreds of workers the usual soft
     * limit of 1024 is too low. Raise it just enough, never above the hard
     * limit (jobs inherit it unless [sandbox] nofile is set). */
    struct rlimit nofile;
    rlim_t need = (rlim_t)h->nslots * 8 + 64;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < need) {
        nofile.rlim_cur = need < nofile.rlim_max ? need : nofile.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &nofile) < 0)
            fr_warn("cannot raise the open-file limit to %llu: %s", (unsigned long long)need, strerror(errno));
    }
    h->slots = calloc((size_t)h->nslots, sizeof *h->slots);
    h->pending = calloc((size_t)h->nslots, sizeof *h->pending);
    h->retry = calloc((size_t)h->nslots, sizeof *h->retry);
    h->seen = fr_idset_new();
    if (!h->slots || !h->pending || !h->retry || !h->seen) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    h->ncpus = n > 0 ? n : 1;
    return 0;
}

/* The OOM-kill counter of our memory cgroup, located by detection
 * (cmd_run's, or our own when the caller has none), with its baseline. */
static void oom_setup(struct fr_host *h)
{
    const struct fr_resources *res = h->o->resources;
    struct fr_resources *own = NULL;
    if (!res) {
        struct fr_detect_opts dopts = {.sysroot = NULL};
        own = malloc(sizeof *own); /* ~15 KiB: not on the stack */
        if (!own) {
            say(h, "out of memory detecting the memory cgroup; OOM kills are reported as signal");
            return;
        }
        fr_detect(&dopts, own);
        res = own;
    }
    char err[FR_OOM_PATH_MAX + 256];
    if (fr_oom_init(&h->oom, &res->cgroup[FR_CTL_MEMORY], NULL, err, sizeof err) < 0)
        say(h, "%s; OOM kills are reported as signal", err);
    free(own);
}

static void teardown(struct fr_host *h)
{
    for (int i = 0; i < h->npending; i++)
        fr_job_clear(&h->pending[(h->pend_head + i) % h->nslots]);
    for (int i = 0; i < h->nretry; i++)
        fr_job_clear(&h->retry[i]);
    for (int s = 0; s < h->nslots && h->slots; s++)
        fr_job_clear(&h->slots[s].job);
    free(h->pending);
    free(h->retry);
    free(h->slots);
    free(h->watches);
    fr_idset_free(h->seen);
    input_free(&h->in);
    reaper_free(&h->reaper);
    stats_free(&h->stats);
    if (h->sigfd >= 0)
        close(h->sigfd);
    if (h->epfd >= 0)
        close(h->epfd);
    prctl(PR_SET_CHILD_SUBREAPER, h->was_subreaper, 0, 0, 0);
    if (h->was_dumpable > 0)
        prctl(PR_SET_DUMPABLE, h->was_dumpable, 0, 0, 0);
    sigprocmask(SIG_SETMASK, &h->oldmask, NULL);
    sigaction(SIGPIPE, &h->old_pipe, NULL);
    sigaction(SIGCHLD, &h->old_chld, NULL);
}

static bool finished(const struct fr_host *h)
{
    if (h->nbusy)
        return false;
    return h->stopping || (h->in_done && !h->npending && !h->nretry);
}

static void loop(struct fr_host *h)
{
    struct epoll_event evs[MAX_EVENTS];
    bool readable = false;
    for (;;) {
        intake(h, readable);
        readable = false;
        dispatch(h);
        if (finished(h))
            return;
        input_interest(h);
        uint64_t now = fr_now_ns();
        int n = epoll_wait(h->epfd, evs, MAX_EVENTS, next_timeout(h, now));
        if (n < 0 && errno != EINTR) {
            fr_host_fail(h, "epoll_wait: %s", strerror(errno));
            continue;
        }
        for (int i = 0; i < n; i++) {
            int fd = (int)(uint32_t)evs[i].data.u64;
            uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
            if (gen == 0 && fd == h->sigfd)
                on_signals(h);
            else if (gen == 0 && fd == h->in.fd)
                readable = true;
            else if ((size_t)fd < h->nwatches && h->watches[fd].used && h->watches[fd].gen == gen)
                h->rt.ops->event(&h->rt, h->watches[fd].slot, fd, evs[i].events);
        }
        now = fr_now_ns();
        timers(h, now);
        progress_tick(&h->stats, now, false);
    }
}

/* A runtime's start stops early when SIGINT/SIGTERM/SIGHUP is pending and
 * leaves it pending. Consume it here: the run then exits 128 + signal like
 * an interrupted pool, also when the signal was inherited as ignored
 * (unblocking would discard it and leave 125). 0 = none pending. */
static int start_interrupted(struct fr_host *h)
{
    struct signalfd_siginfo si;
    while (read(h->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
        if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM || si.ssi_signo == SIGHUP)
            return (int)si.ssi_signo;
    return 0;
}

int fr_pool_run(const struct fr_pool_opts *o)
{
    struct fr_host h = {.base = {&host_ops}, .o = o, .epfd = -1, .sigfd = -1};
    char err[1024] = "";
    long total = input_count(o->in_fd, &o->shard, o->resume);
    stats_init(&h.stats, o->quiet ? FR_PROGRESS_NONE : o->progress, o->workers, total,
               o->resume ? o->resume->results : 0);
    if (setup(&h, err, sizeof err) < 0) {
        fr_warn("%s", err);
        teardown(&h);
        return FR_EXIT_USAGE;
    }
    /* Ids that already have a result take part in duplicate detection. */
    if (o->resume && fr_idset_merge(h.seen, o->resume->ids) < 0) {
        fr_warn("out of memory");
        teardown(&h);
        return FR_EXIT_USAGE;
    }
    oom_setup(&h);
    h.rt = (struct fr_runtime){.ops = o->ops, .cfg = o->rtcfg, .host = &h};
    if (o->ops->start(&h.rt, h.nslots, err, sizeof err) < 0) {
        fr_warn("%s runtime: %s", o->ops->name, err);
        int sig = start_interrupted(&h);
        teardown(&h);
        return sig ? 128 + sig : FR_EXIT_USAGE;
    }
    loop(&h);
    h.rt.ops->stop(&h.rt);
    int left = reaper_final(&h.reaper, FINAL_REAP_MS);
    if (left)
        say(&h, "%d process%s of jobs could not be reaped", left, left == 1 ? "" : "es");
    if (!o->quiet) {
        progress_finish(&h.stats);
        char how[64];
        if (h.failed)
            snprintf(how, sizeof how, "stopped by an error");
        else if (h.stop_signal)
            snprintf(how, sizeof how, "interrupted by SIG%s", sigabbrev_np(h.stop_signal));
        else
            snprintf(how, sizeof how, "done");
        summary_print(&h.stats, how);
        if (h.stopping && h.stats.total >= 0 && h.stats.total > h.stats.done)
            fr_warn("%ld job%s without a result; run again with --resume to complete them",
                    h.stats.total - h.stats.done, h.stats.total - h.stats.done == 1 ? "" : "s");
    }
    int rc = h.failed ? FR_EXIT_USAGE : h.stop_signal ? 128 + h.stop_signal : h.invalid ? 1 : 0;
    teardown(&h);
    return rc;
}
