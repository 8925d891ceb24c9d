/* host.c — the host API runtimes call (fitrun/runtime.h): watching
 * descriptors in the pool's epoll set, owning and reaping processes,
 * completing a job, failing the run. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "fitrun/verdict.h"
#include "internal.h"

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

/* A released session's orphans are killed by the next sweep: their CPU,
 * which no rusage of the job holds (fitrun, their new parent, reaps them),
 * is read first and is the job's. */
static void host_session(struct fr_host *h, int slot, pid_t sid)
{
    if (!pool_valid_slot(h, slot))
        return;
    struct slot *sl = &h->slots[slot];
    if (!sid && sl->sid)
        sl->orphan_cpu_ns = reaper_session_cpu_ns(&h->reaper, sl->sid);
    sl->sid = sid;
}

static void host_reap(struct fr_host *h)
{
    pid_t sessions[h->nslots];
    for (int i = 0; i < h->nslots; i++)
        sessions[i] = h->slots[i].busy ? h->slots[i].sid : 0;
    reaper_sweep(&h->reaper, sessions, h->nslots);
}

__attribute__((format(printf, 2, 0))) static void host_vfail(struct fr_host *h, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    pool_say(h, "%s", msg);
    h->failed = true;
    pool_interrupt(h, 0);
}

static void host_complete(struct fr_host *h, int s, struct fr_raw *raw)
{
    if (!pool_valid_slot(h, s) || !h->slots[s].busy) {
        pool_say(h, "runtime %s completed idle slot %d (ignored)", h->rt.ops->name, s);
        return;
    }
    struct slot *sl = &h->slots[s];
    uint64_t now = fr_now_ns();
    bool keep_job = false;
    /* Writing the result may fail and stop the run (interrupt()), which
     * must not abort the job being reported. */
    sl->completing = true;
    /* The job's cgroup: what is left of the job dies now (not a reused
     * process that lives on for the next job), and its counters are the
     * job's (results.c). */
    if (!raw->lives_on)
        fr_cgroup_slot_kill(h->o->cgroups, s);
    unsigned how = (fr_raw_slot_idle(raw) ? FR_CG_END_IDLE : 0) | (fr_verdict_oom_possible(raw) ? 0 : FR_CG_END_NO_OOM);
    fr_cgroup_slot_end(h->o->cgroups, s, how, &sl->cg);
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
        pool_say(h, "worker %d crashed running job %s (line %ld): %s; retrying it once", s, sl->job.id, sl->job.line,
                 raw->error_message ? raw->error_message : "no reason given");
        h->retry[h->nretry++] = sl->job;
        keep_job = true;
    } else if (raw->kind != FR_RAW_FINISHED) {
        pool_write_crash(h, s, raw);
    } else {
        pool_write_finished(h, s, raw, now);
    }
    pool_release(h, s, !keep_job);
    /* Escaped descendants of the finished job die now, not at the end. */
    if (!h->rt.contained)
        fr_host_reap(h);
}

const struct fr_host_ops pool_host_ops = {
    .watch = host_watch,
    .rewatch = host_rewatch,
    .unwatch = host_unwatch,
    .close = host_close,
    .complete = host_complete,
    .own = host_own,
    .disown = host_disown,
    .session = host_session,
    .reap = host_reap,
    .watch_cpu = pool_watch_cpu,
    .wake_at = pool_wake_at,
    .vfail = host_vfail,
};
