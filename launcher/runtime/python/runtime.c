/* runtime.c — the python runtime's ops (include/fitrun/runtime.h): start
 * the zygote and its workers, run a job, collect it, stop. See internal.h
 * for who holds what; docs/python-runtime.md for the protocol.
 *
 * Kills. fitrun kills a prediction's child itself, through the pidfd its
 * worker sent: at the CPU budget (the pool reads the child's CPU clock),
 * at the wall deadline, and when stdout, stderr or the report go over
 * their caps. The worker then reports the death as usual. Only when that
 * report does not come within PY_ABORT_GRACE_MS is the worker killed (its
 * child dies with it, PR_SET_PDEATHSIG) and replaced by a fork of the warm
 * zygote.
 *
 * Start-up blocks (the pool's loop does not run yet) but notices a pending
 * SIGINT/SIGTERM/SIGHUP, so Ctrl-C during a slow prelude works. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

static void init_slot(struct pyslot *s)
{
    memset(s, 0, sizeof *s);
    s->chan = s->status = s->pidfd = s->job_w = s->child_fd = s->proc_fd = -1;
    s->out.fd = s->err.fd = s->rep.fd = -1;
    s->pipes = (struct slot_pipes){-1, -1, -1, -1, -1};
}

/* ---- the end of a job ----------------------------------------------------- */

/* A worker's own pipes after its job: nothing of the job is left in them
 * (what its child left unread of its job, which EXITED's poll found; all
 * of them when no EXITED came to read them to the end). EOF: the worker
 * is gone, its pipes with it. */
static void pipes_reset(struct fr_runtime *rt, struct pyslot *s)
{
    if (s->job_watched)
        fr_host_unwatch(rt->host, s->job_w);
    s->job_w = -1;
    s->job_watched = false;
    s->out.fd = s->err.fd = s->rep.fd = -1;
    unsigned which = s->exited ? s->leftover : PY_PIPES_ALL;
    s->leftover = 0;
    if (which && py_slot_pipes_ok(s) && py_slot_pipes_drain(s, which) < 0)
        py_slot_pipes_close(rt, s);
}

/* Close everything of the job in slot s; the slot is idle afterwards. */
static void job_reset(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (PY(rt)->persistent) {
        pipes_reset(rt, s);
    } else {
        if (s->job_w >= 0) {
            if (s->job_watched)
                fr_host_close(rt->host, s->job_w);
            else
                close(s->job_w);
            s->job_w = -1;
            s->job_watched = false;
        }
        py_stream_close(rt, &s->out);
        py_stream_close(rt, &s->err);
        py_stream_close(rt, &s->rep);
    }
    py_stream_trim(&s->out);
    py_stream_trim(&s->err);
    py_stream_trim(&s->rep);
    if (s->child_fd >= 0) {
        fr_host_watch_cpu_pidfd(rt->host, slot, 0, -1);
        s->child_fd = -1; /* the slot's pidfd: py_status_end decides */
    }
    free(s->message);
    s->message = NULL;
    s->child = 0;
    s->kill = PY_KILL_NONE;
    s->abort = 0;
    py_job_idle(rt, slot);
    s->exited = false;
    s->job = NULL;
}

static void complete(struct fr_runtime *rt, int slot, struct fr_raw *raw)
{
    fr_host_complete(rt->host, slot, raw);
    job_reset(rt, slot);
}

static void crashed(struct fr_runtime *rt, int slot, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void crashed(struct fr_runtime *rt, int slot, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct fr_raw raw;
    fr_raw_init(&raw);
    raw.kind = FR_RAW_CRASHED;
    raw.error_type = "WorkerCrash";
    raw.error_message = msg;
    complete(rt, slot, &raw);
}

/* Kill the worker of slot s (or see it dead) and, unless the run is
 * ending, ask for a fresh one. */
static void end_worker(struct fr_runtime *rt, int slot, bool replace)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    py_drop_channel(rt, s);
    py_slot_pipes_close(rt, s);
    py_kill_worker(py, s);
    if (replace && !py->stopping && py_spawn_worker(rt, slot, true) < 0)
        fr_host_fail(rt->host, "python runtime: cannot replace worker %d: %s", slot, strerror(errno));
}

static void replace_worker(struct fr_runtime *rt, int slot)
{
    end_worker(rt, slot, true);
}

/* The job ends without its worker's report: the worker is killed (its
 * child dies with it) and the job reported as killed. An interrupted run
 * gets no replacement worker (a later job asks for one). */
static void kill_job(struct fr_runtime *rt, int slot, enum py_kill why, bool replace)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (s->child_fd >= 0)
        pidfd_send_signal(s->child_fd, SIGKILL, NULL, 0);
    end_worker(rt, slot, replace);
    struct fr_raw raw;
    fr_raw_init(&raw);
    raw.kind = FR_RAW_FINISHED;
    raw.wstatus = SIGKILL; /* what wait4() would say of a SIGKILLed process */
    raw.wall_exceeded = why == PY_KILL_WALL;
    raw.cpu_exceeded = why == PY_KILL_CPU;
    raw.output_exceeded = why == PY_KILL_OUTPUT || why == PY_KILL_RESULT;
    raw.has_outputs = true;
    raw.out = s->out.buf;
    raw.out_len = s->out.len;
    raw.err = s->err.buf;
    raw.err_len = s->err.len;
    complete(rt, slot, &raw);
}

/* Kill the job's child for `why` (the first reason stays): through its
 * pidfd now, or as soon as STARTED brings it (status.c); the slot's
 * wake-up then ends the grace for its EXITED. */
static void kill_child(struct fr_runtime *rt, int slot, enum py_kill why)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (s->kill != PY_KILL_NONE)
        return;
    s->kill = why;
    py_job_wake(rt, slot);
    if (s->child_fd >= 0 && pidfd_send_signal(s->child_fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
        fr_warn("python runtime: cannot kill the prediction of worker %d: %s", slot, strerror(errno));
    fr_host_wake_at(rt->host, slot, fr_now_ns() + (uint64_t)PY_ABORT_GRACE_MS * 1000000u);
}

/* EXITED: nothing more comes from the child, whatever is still buffered in
 * its pipes is there now. A worker's own pipes that one poll finds
 * readable are read to EAGAIN (no writer is left: that is all of the
 * job's), per-job pipes once more. */
static void finish(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    struct stream *streams[] = {&s->out, &s->err, &s->rep};
    const unsigned bits[] = {PY_PIPE_OUT, PY_PIPE_ERR, PY_PIPE_REPORT};
    unsigned ready = PY(rt)->persistent ? py_slot_pipes_ready(s) : 0;
    s->leftover = ready & PY_PIPE_JOB;
    bool gone = false;
    for (int i = 0; i < 3; i++)
        if (streams[i]->fd < 0)
            continue;
        else if (PY(rt)->persistent)
            gone |= (ready & bits[i]) && py_stream_drain(streams[i]) != 0;
        else if (py_stream_read(streams[i]) != 0)
            py_stream_close(rt, streams[i]);
    if (gone)
        py_slot_pipes_close(rt, s); /* EOF: the worker went; its channel's EOF replaces it */
    struct fr_raw raw;
    char msg[512];
    py_collect(rt, s, &raw, msg, sizeof msg);
    complete(rt, slot, &raw);
}

/* ---- the worker's messages ------------------------------------------------ */

static void exited(struct fr_runtime *rt, int slot, const struct py_msg *m)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    s->facts = m->facts;
    s->exited = true;
    finish(rt, slot);
}

/* One message from the worker of slot `slot`. */
static void channel_message(struct fr_runtime *rt, int slot, const struct py_msg *m)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    bool current = s->job && m->len >= 8 && m->seq == s->seq && m->well_formed;
    if (current && m->kind == 'E')
        exited(rt, slot, m);
    else if (current && m->kind == 'F')
        crashed(rt, slot, "python worker %d could not start the prediction: %.*s", slot,
                (int)(m->why_len > 300 ? 300 : m->why_len), m->why);
    else if (s->job && m->seq == s->seq && m->kind == 'E' && m->len >= FR_PY_MSG_EXITED_LEN &&
             m->len <= FR_PY_MSG_EXITED_LEN + PY_REPLACED_MAX) {
        /* The job's end, with figures no kernel gives: the worker is broken. */
        replace_worker(rt, slot);
        crashed(rt, slot, "python worker %d reported a negative CPU time or memory use for the job; replaced", slot);
    } else
        fr_warn("python worker %d sent an unexpected message ('%c', %zu bytes): ignored", slot,
                m->len ? (m->kind >= 0x20 && m->kind < 0x7f ? m->kind : '?') : '-', m->len);
    if (m->fd >= 0)
        close(m->fd);
}

/* The worker is gone (EOF on its channel). */
static void worker_died(struct fr_runtime *rt, int slot)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    pid_t pid = s->pid;
    if (s->job && s->kill != PY_KILL_NONE) {
        kill_job(rt, slot, s->kill, true); /* died while we were killing its job */
        return;
    }
    replace_worker(rt, slot);
    if (s->job)
        crashed(rt, slot, "python worker %d (pid %d) died while running the job", slot, (int)pid);
    else if (!py->stopping)
        fr_warn("python worker %d (pid %d) died while idle; replaced", slot, (int)pid);
}

static void channel_event(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    while (s->chan >= 0) {
        char buf[PY_MSG_MAX];
        struct py_msg m;
        int r = py_recv(s->chan, buf, sizeof buf, &m);
        if (r == 0)
            return;
        if (r < 0) {
            worker_died(rt, slot);
            return;
        }
        channel_message(rt, slot, &m);
        /* One EXITED per job: no need to ask again for one that cannot
         * be there yet. */
        if (m.kind == 'E')
            return;
    }
}

/* ---- ops ------------------------------------------------------------------ */

static void py_stop(struct fr_runtime *rt);

static int start_inner(struct fr_runtime *rt, int nslots, char *err, size_t errlen)
{
    const struct fr_runtime_config *cfg = rt->cfg;
    struct pyrt *py = calloc(1, sizeof *py);
    rt->priv = py;
    if (!py || !(py->slots = calloc((size_t)nslots, sizeof *py->slots))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* The worker kills its prediction's process group; only a prediction
     * that may create processes can leave one outside it, still holding a
     * pipe end: then each job gets pipes of its own. */
    struct fr_policy_info info;
    fr_policy_info(cfg->policy, &info);
    py->persistent = !info.processes;
    py->nslots = nslots;
    py->ctl = -1;
    py->next_token = 1;
    for (int i = 0; i < nslots; i++)
        init_slot(&py->slots[i]);
    uint64_t t0 = fr_now_ns();
    json_t *ready = py_zygote_start(py, cfg, err, errlen);
    if (!ready)
        return -1;
    char *buf = malloc(PY_MSG_MAX);
    int rc = -1;
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (fr_host_own(rt->host, py->zygote) < 0) {
        snprintf(err, errlen, "fr_host_own: %s", strerror(errno));
        goto out;
    }
    /* Every worker now, so that the total start-up is known before the
     * first job (and a fork failure stops the run here). */
    for (int i = 0; i < nslots; i++)
        if (py_spawn_worker(rt, i, true) < 0) {
            snprintf(err, errlen, "cannot ask the interpreter for worker %d: %s", i, strerror(errno));
            goto out;
        }
    for (int got_workers = 0; got_workers < nslots;) {
        ssize_t got = py_ctl_wait(py, buf, PY_MSG_MAX);
        if (got < 0 && errno == EINTR) {
            snprintf(err, errlen, "interrupted while the python workers were starting");
            goto out;
        }
        if (got <= 0) {
            snprintf(err, errlen, "%s %s exited while its workers were starting (its messages are above)",
                     py->interpreter, py->script);
            goto out;
        }
        json_t *m = json_loadb(buf, (size_t)got, 0, NULL);
        const char *ev = json_string_value(json_object_get(m, "event"));
        if (ev && !strcmp(ev, "spawned"))
            got_workers++;
        py_ctl_message(rt, buf, (size_t)got);
        json_decref(m);
    }
    if (fr_host_watch(rt->host, py->ctl, EPOLLIN, -1) < 0) {
        snprintf(err, errlen, "watching the control socket: %s", strerror(errno));
        goto out;
    }
    py_report_startup(py, ready, nslots, (fr_now_ns() - t0) / 1000000);
    rc = 0;
out:
    json_decref(ready);
    free(buf);
    return rc;
}

/* A failed start cleans up after itself (the interpreter, the workers
 * asked for so far) whether or not the pool calls stop() afterwards. */
static int py_start(struct fr_runtime *rt, int nslots, char *err, size_t errlen)
{
    if (start_inner(rt, nslots, err, errlen) == 0) {
        rt->contained = PY(rt)->persistent;
        PY(rt)->running = true;
        return 0;
    }
    py_stop(rt);
    return -1;
}

static void close_pipes(int p[4][2])
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            if (p[i][j] >= 0)
                close(p[i][j]);
}

enum { P_JOB, P_REPORT, P_OUT, P_ERR };

/* The job's pipes: the worker's own (RUN carries none), or four new ones
 * whose child ends go with RUN. The job is sent; -1 with err, the slot idle. */
static int send_run(struct fr_runtime *rt, int slot, char *err, size_t errlen)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    unsigned flags = s->fresh ? FR_PY_RUN_FRESH : 0;
    if (py->persistent) {
        s->seq++;
        if (py_send_run(s->chan, s->seq, flags, NULL, 0) < 0) {
            snprintf(err, errlen, "python worker %d: sending the job: %s", slot, strerror(errno));
            replace_worker(rt, slot);
            return -1;
        }
        s->fresh = false;
        s->job_w = s->pipes.job_w;
        s->out.fd = s->pipes.out;
        s->err.fd = s->pipes.err;
        s->rep.fd = s->pipes.rep;
        return 0;
    }
    /* Both ends non-blocking: ours must be; the child makes its own
     * blocking again (separate file descriptions). */
    int p[4][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    for (int i = 0; i < 4; i++)
        if (pipe2(p[i], O_CLOEXEC | O_NONBLOCK) < 0) {
            snprintf(err, errlen, "python runtime: pipe2: %s", strerror(errno));
            close_pipes(p);
            return -1;
        }
    s->seq++;
    const int theirs[4] = {p[P_JOB][0], p[P_REPORT][1], p[P_OUT][1], p[P_ERR][1]};
    if (py_send_run(s->chan, s->seq, flags, theirs, 4) < 0) {
        snprintf(err, errlen, "python worker %d: sending the job: %s", slot, strerror(errno));
        close_pipes(p);
        replace_worker(rt, slot);
        return -1;
    }
    s->fresh = false;
    for (int i = 0; i < 4; i++)
        close(theirs[i]);
    s->job_w = p[P_JOB][1];
    s->rep.fd = p[P_REPORT][0];
    s->out.fd = p[P_OUT][0];
    s->err.fd = p[P_ERR][0];
    struct stream *streams[] = {&s->out, &s->err, &s->rep};
    for (int i = 0; i < 3; i++)
        if (fr_host_watch(rt->host, streams[i]->fd, EPOLLIN, slot) < 0) {
            snprintf(err, errlen, "python runtime: watching a pipe: %s", strerror(errno));
            for (int j = i; j < 3; j++) {
                close(streams[j]->fd);
                streams[j]->fd = -1;
            }
            replace_worker(rt, slot); /* its child must not run unwatched */
            return -1;
        }
    return 0;
}

/* A worker's own pipe between its jobs: an event of stdout or stderr
 * (usually of the job that just ended, read to EAGAIN since: its EXITED
 * came first in the same turn), or the report pipe, which is unwatched
 * then and checked before each job. Nothing of a job can write now
 * (internal.h); should anything, it is no job's, and dropped. */
static void drop_stray(struct fr_runtime *rt, int slot, int fd)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (fd < 0 || (fd != s->pipes.out && fd != s->pipes.err && fd != s->pipes.rep))
        return;
    size_t dropped = 0;
    int r = py_fd_discard(fd, 4, &dropped);
    if (r == 1) {
        py_slot_pipes_close(rt, s);
    } else if (dropped && !s->stray_warned) {
        s->stray_warned = true;
        fr_warn("python worker %d: bytes in its pipes between jobs: dropped", slot);
    }
}

static int py_begin(struct fr_runtime *rt, int slot, const struct fr_job *job, char *err, size_t errlen)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    /* Between jobs the report pipe is unwatched: checked now under
     * reuse, where the process that wrote it lives on. Under fork no
     * process of a job outlives its EXITED, and finish read what the pipe
     * held then: nothing can be there (the worker's EOF shows on the
     * stdout and stderr pipes, which are watched). A worker whose pipes
     * went is replaced before its job. */
    if (s->chan >= 0 && py->persistent && py->reuse)
        drop_stray(rt, slot, s->pipes.rep);
    if (s->chan >= 0 && py->persistent && !py_slot_pipes_ok(s))
        replace_worker(rt, slot);
    if (s->chan < 0 && py_spawn_worker(rt, slot, true) < 0) {
        snprintf(err, errlen, "python worker %d cannot be started: %s", slot, strerror(errno));
        return -1;
    }
    if (py_job_spans(s, job, err, errlen) < 0)
        return -1;
    s->job = job;
    s->begin_ns = fr_now_ns();
    if (send_run(rt, slot, err, errlen) < 0) {
        job_reset(rt, slot);
        return -1;
    }
    py_stream_open(&s->rep, s->rep.fd, py->result_cap + PY_REPORT_SLACK);
    py_stream_open(&s->out, s->out.fd, rt->cfg->output_cap);
    py_stream_open(&s->err, s->err.fd, rt->cfg->output_cap);
    if (py_job_flush(rt, s) < 0) {
        snprintf(err, errlen, "python runtime: sending the job to the prediction: %s", strerror(errno));
        replace_worker(rt, slot);
        job_reset(rt, slot);
        return -1;
    }
    py_job_asleep(rt, slot);
    return 0;
}

static void stream_event(struct fr_runtime *rt, int slot, struct stream *st, enum py_kill why)
{
    int r = py_stream_read(st);
    if (r == 0)
        return;
    if (r < 0)
        fr_warn("python runtime: reading the prediction of worker %d: %s", slot, strerror(errno));
    if (!PY(rt)->persistent)
        py_stream_close(rt, st);
    else if (r != 2) /* EOF: the worker went; its channel's EOF replaces it */
        py_slot_pipes_close(rt, &PY(rt)->slots[slot]);
    if (r == 2)
        kill_child(rt, slot, why);
}

/* The slot's wake-up (the pool's, fr_host_wake_at): the job's (status.c),
 * or, once its child was killed, the end of the grace for its EXITED. */
static void py_wake(struct fr_runtime *rt, int slot)
{
    struct pyrt *py = PY(rt);
    if (slot < 0 || slot >= py->nslots || !py->slots[slot].job)
        return;
    struct pyslot *s = &py->slots[slot];
    if (s->kill == PY_KILL_NONE) {
        py_job_wake(rt, slot);
    } else {
        fr_warn("python worker %d did not report job %s within %d ms of its kill: killing the worker", slot,
                s->job->id ? s->job->id : "?", PY_ABORT_GRACE_MS);
        kill_job(rt, slot, s->kill, true);
    }
}

static void py_event(struct fr_runtime *rt, int slot, int fd, uint32_t events)
{
    struct pyrt *py = PY(rt);
    if (fd == py->ctl) {
        py_ctl_event(rt, events);
        return;
    }
    if (slot < 0 || slot >= py->nslots)
        return;
    struct pyslot *s = &py->slots[slot];
    if (fd == s->status)
        py_take_started(rt, slot);
    else if (fd == s->chan)
        channel_event(rt, slot);
    else if (!s->job)
        drop_stray(rt, slot, fd);
    else if (fd == s->job_w) {
        if (py_job_flush(rt, s) < 0)
            fr_warn("python runtime: sending job %s: %s", s->job->id, strerror(errno));
    } else if (fd == s->out.fd)
        stream_event(rt, slot, &s->out, PY_KILL_OUTPUT);
    else if (fd == s->err.fd)
        stream_event(rt, slot, &s->err, PY_KILL_OUTPUT);
    else if (fd == s->rep.fd)
        stream_event(rt, slot, &s->rep, PY_KILL_RESULT);
}

static void py_abort(struct fr_runtime *rt, int slot, enum fr_abort_reason why)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    if (!s->job)
        return;
    if (why == FR_ABORT_INTERRUPT || py->stopping) {
        kill_job(rt, slot,
                 why == FR_ABORT_CPU    ? PY_KILL_CPU
                 : why == FR_ABORT_WALL ? PY_KILL_WALL
                                        : PY_KILL_NONE,
                 false);
        return;
    }
    s->abort = why;
    kill_child(rt, slot, why == FR_ABORT_CPU ? PY_KILL_CPU : PY_KILL_WALL);
}

static void py_stop(struct fr_runtime *rt)
{
    struct pyrt *py = PY(rt);
    if (!py)
        return;
    py->stopping = true;
    for (int i = 0; py->slots && i < py->nslots; i++) {
        struct pyslot *s = &py->slots[i];
        if (s->job)
            job_reset(rt, i);
        py_drop_channel(rt, s);
        py_slot_pipes_close(rt, s);
        if (s->pidfd >= 0)
            close(s->pidfd);
        free(s->out.buf);
        free(s->err.buf);
        free(s->rep.buf);
    }
    py_ctl_close(rt);
    if (py->zygote > 0) {
        /* Every slot is idle: nothing of value runs in the group any more. */
        pid_t z = py->zygote;
        py_zygote_end(py);
        fr_host_disown(rt->host, z);
        fr_host_reap(rt->host);
    }
    free(py->slots);
    free(py);
    rt->priv = NULL;
}

const struct fr_runtime_ops fr_runtime_python_ops = {
    .name = "python",
    .start = py_start,
    .check = py_check,
    .begin = py_begin,
    .event = py_event,
    .abort = py_abort,
    .wake = py_wake,
    .stop = py_stop,
};
