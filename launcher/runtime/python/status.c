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
 * long) and when it kills the child. A STARTED not there when it is
 * needed is waited for (the socket is watched until it comes). The CPU
 * check is timed from the job's start, not from STARTED (pool timers.c),
 * so taking it late loses nothing.
 *
 * A pidfd comes with the STARTED of a new process only: every job's under
 * fork isolation; under reuse, the first job's of each process, which
 * runs the next ones. fitrun keeps it as the slot's (proc_fd) until that
 * process is known gone. The other STARTEDs say only the pid and the CPU
 * base, and are read at a job's end only every PY_STATUS_BATCH jobs, in
 * one recvmmsg(2), or when one may carry a pidfd. */
#include <errno.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

static void started(struct fr_runtime *rt, int slot, const struct py_msg *m)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    s->child = m->pid;
    s->child_fd = s->proc_fd; /* the slot's, not the job's: closed when its process is known gone */
    fr_host_watch_cpu_since(rt->host, slot, s->child, s->child_fd, m->cpu_base_ns);
    if (s->kill != PY_KILL_NONE && pidfd_send_signal(s->child_fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
        fr_warn("python runtime: cannot kill the prediction of worker %d: %s", slot, strerror(errno));
}

static void proc_forget(struct pyslot *s)
{
    if (s->proc_fd >= 0)
        close(s->proc_fd);
    s->proc_fd = -1;
    s->proc_pid = 0;
}

/* Everything the status socket holds, in order: a pidfd that comes is the
 * slot's process's from then on; the current job's STARTED, when there,
 * goes to *cur. True when it was there. */
static bool read_status(struct fr_runtime *rt, int slot, struct py_msg *cur)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    bool found = false;
    int n = PY_STATUS_BATCH_MAX;
    while (s->status >= 0 && n == PY_STATUS_BATCH_MAX) {
        struct py_msg m[PY_STATUS_BATCH_MAX];
        char bufs[PY_STATUS_BATCH_MAX][PY_STATUS_MSG_MAX];
        n = py_recv_status(s->status, m, bufs, PY_STATUS_BATCH_MAX);
        for (int i = 0; i < n; i++) {
            if (m[i].kind != 'S' || !m[i].well_formed) {
                fr_warn("python worker %d sent an unexpected status message ('%c', %zu bytes): ignored", slot,
                        m[i].len ? (m[i].kind >= 0x20 && m[i].kind < 0x7f ? m[i].kind : '?') : '-', m[i].len);
                if (m[i].fd >= 0)
                    close(m[i].fd);
                continue;
            }
            if (m[i].fd >= 0) {
                proc_forget(s);
                s->proc_fd = m[i].fd;
                s->proc_pid = m[i].pid;
            }
            if (s->job && m[i].seq == s->seq) {
                *cur = m[i];
                found = true;
            }
        }
    }
    s->queued = 0;
    return found;
}

bool py_take_started(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    struct py_msg cur;
    if (s->child_fd < 0 && s->job && read_status(rt, slot, &cur)) {
        if (s->proc_fd >= 0 && s->proc_pid == cur.pid)
            started(rt, slot, &cur);
        else
            fr_warn("python worker %d: STARTED names pid %d, of which it sent no pidfd: ignored", slot, (int)cur.pid);
    }
    bool want = s->job && s->child_fd < 0 && s->status >= 0;
    if (want && !s->status_watched && fr_host_watch(rt->host, s->status, EPOLLIN, slot) == 0)
        s->status_watched = true;
    else if (!want && s->status_watched) {
        fr_host_unwatch(rt->host, s->status);
        s->status_watched = false;
    }
    return s->child_fd >= 0;
}

void py_status_end(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    bool lives_on = PY(rt)->reuse && s->exited && !s->facts.replaced[0];
    struct py_msg cur;
    /* The job's STARTED is read now when it may carry a pidfd: the
     * process is new (none known yet), or will not run the next job (its
     * pidfd is closed); else every PY_STATUS_BATCH jobs, in one call. */
    if (!lives_on || s->proc_fd < 0 || ++s->queued >= PY_STATUS_BATCH)
        (void)read_status(rt, slot, &cur);
    if (s->status_watched) {
        fr_host_unwatch(rt->host, s->status);
        s->status_watched = false;
    }
    if (!lives_on)
        proc_forget(s);
}

void py_status_close(struct fr_runtime *rt, struct pyslot *s)
{
    proc_forget(s);
    s->queued = 0;
    if (s->status < 0)
        return;
    if (s->status_watched)
        fr_host_unwatch(rt->host, s->status);
    close(s->status);
    s->status = -1;
    s->status_watched = false;
}

void py_job_asleep(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    s->awake = false;
    fr_host_wake_at(rt->host, slot, s->begin_ns + (uint64_t)PY_WAKE_MS * 1000000u);
}

void py_job_wake(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (s->awake || !s->job)
        return;
    s->awake = true;
    py_take_started(rt, slot);
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
    py_status_end(rt, slot);
}
