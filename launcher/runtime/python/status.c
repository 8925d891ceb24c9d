/* status.c — a job's STARTED and its wake-up.
 *
 * fitrun's own CPU per prediction is mostly the wake-ups of its loop, so a
 * short job wakes it once, for the worker's EXITED:
 *
 *   - the worker sends STARTED (the child's pid and pidfd) on its status
 *     socket, which fitrun does not watch;
 *   - in persistent mode the report pipe, which the child writes just
 *     before EXITED, is not watched while the job is young (stdout and
 *     stderr always are: a prediction that prints wakes fitrun as before).
 *
 * fitrun takes STARTED when it needs the child: at the job's wake-up,
 * PY_WAKE_MS after RUN (then the CPU clock is watched and the report pipe
 * read as it fills, so a report larger than the pipe waits at most that
 * long), when it kills the child, and at EXITED (then only to drop it).
 * A STARTED not there when it is needed is waited for (the socket is
 * watched until it comes). The CPU check is timed from the job's start,
 * not from STARTED (pool timers.c), so taking it late loses nothing. */
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

static void started(struct fr_runtime *rt, int slot, const struct py_msg *m)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    s->child = m->pid;
    s->child_fd = m->fd;
    fr_host_watch_cpu_since(rt->host, slot, s->child, s->child_fd, m->cpu_base_ns);
    if (s->kill != PY_KILL_NONE && pidfd_send_signal(s->child_fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
        fr_warn("python runtime: cannot kill the prediction of worker %d: %s", slot, strerror(errno));
}

bool py_take_started(struct fr_runtime *rt, int slot, bool use)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    while (s->status >= 0 && s->child_fd < 0) {
        char buf[64];
        struct py_msg m;
        int r = py_recv(s->status, buf, sizeof buf, &m);
        if (r <= 0)
            break; /* none yet; or the worker is gone, which its channel's EOF says */
        bool current = s->job && m.kind == 'S' && m.well_formed && m.seq == s->seq && m.fd >= 0;
        if (current && use) {
            started(rt, slot, &m);
            continue;
        }
        if (m.fd >= 0)
            close(m.fd);
        if (current)
            break; /* dropped at EXITED: the job is over */
        if (m.kind != 'S' || !m.well_formed)
            fr_warn("python worker %d sent an unexpected status message ('%c', %zu bytes): ignored", slot,
                    m.len ? (m.kind >= 0x20 && m.kind < 0x7f ? m.kind : '?') : '-', m.len);
    }
    if (use && s->child_fd < 0 && s->status >= 0 && !s->status_watched &&
        fr_host_watch(rt->host, s->status, EPOLLIN, slot) == 0)
        s->status_watched = true;
    if (s->status_watched && (s->child_fd >= 0 || !use)) {
        fr_host_unwatch(rt->host, s->status);
        s->status_watched = false;
    }
    return s->child_fd >= 0;
}

void py_status_close(struct fr_runtime *rt, struct pyslot *s)
{
    if (s->status < 0)
        return;
    if (s->status_watched)
        fr_host_unwatch(rt->host, s->status);
    close(s->status);
    s->status = -1;
    s->status_watched = false;
}

/* The slot's timerfd, made (and watched) on first use. */
static int slot_timer(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (s->timer >= 0)
        return 0;
    s->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (s->timer < 0)
        return -1;
    if (fr_host_watch(rt->host, s->timer, EPOLLIN, slot) < 0) {
        int e = errno;
        close(s->timer);
        s->timer = -1;
        errno = e;
        return -1;
    }
    return 0;
}

int py_timer_arm(struct fr_runtime *rt, int slot, uint64_t ms)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (slot_timer(rt, slot) < 0)
        return -1;
    struct itimerspec t = {.it_value = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L}};
    return timerfd_settime(s->timer, 0, &t, NULL);
}

int py_job_asleep(struct fr_runtime *rt, int slot)
{
    PY(rt)->slots[slot].awake = false;
    return py_timer_arm(rt, slot, PY_WAKE_MS);
}

void py_job_wake(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (s->awake || !s->job)
        return;
    s->awake = true;
    py_take_started(rt, slot, true);
    if (PY(rt)->persistent && s->pipes.rep >= 0 && fr_host_rewatch(rt->host, s->pipes.rep, EPOLLIN) < 0)
        fr_warn("python runtime: watching the report pipe of worker %d: %s", slot, strerror(errno));
}

void py_job_idle(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    /* Between jobs the report pipe is unwatched again: nothing of a job
     * can write to it then, and the next job's begin drops what should
     * be there (runtime.c). */
    if (PY(rt)->persistent && s->awake && s->pipes.rep >= 0)
        (void)fr_host_rewatch(rt->host, s->pipes.rep, 0);
    s->awake = false;
    py_take_started(rt, slot, false);
}
