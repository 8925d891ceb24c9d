/* pipes.c — a worker's own pipes (persistent mode, internal.h): created
 * with its channel, their child ends sent once with PIPES, fitrun's read
 * ends watched for the worker's whole life; closed when it goes.
 *
 * All ends are non-blocking (pipe2 makes both descriptions so). A child
 * makes its write ends blocking again (separate descriptions from
 * fitrun's read ends) but never its job end, which is the description of
 * fitrun's job_r: fitrun reads job_r only to discard what a child left
 * unread, and must never block on it. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "internal.h"

enum { P_JOB, P_REPORT, P_OUT, P_ERR };

static void close_all(int p[4][2])
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            if (p[i][j] >= 0)
                close(p[i][j]);
}

int py_slot_pipes_open(struct fr_runtime *rt, int slot, int chan)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    int p[4][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    for (int i = 0; i < 4; i++)
        if (pipe2(p[i], O_CLOEXEC | O_NONBLOCK) < 0)
            goto fail;
    const int theirs[4] = {p[P_JOB][0], p[P_REPORT][1], p[P_OUT][1], p[P_ERR][1]};
    if (py_send_pipes(chan, theirs) < 0)
        goto fail;
    /* The report pipe is watched only while a job is awake (status.c);
     * registered now so that the worker's death (EPOLLHUP) is seen on it. */
    int watched = 0;
    for (int i = P_REPORT; i <= P_ERR; i++, watched++)
        if (fr_host_watch(rt->host, p[i][0], i == P_REPORT ? 0 : EPOLLIN, slot) < 0)
            goto unwatch;
    for (int i = P_REPORT; i <= P_ERR; i++) {
        close(p[i][1]);
        p[i][1] = -1;
    }
    s->pipes = (struct slot_pipes){
        .job_w = p[P_JOB][1], .job_r = p[P_JOB][0], .rep = p[P_REPORT][0], .out = p[P_OUT][0], .err = p[P_ERR][0]};
    s->stray_warned = false;
    return 0;
unwatch:
    for (int i = P_REPORT; i < P_REPORT + watched; i++)
        fr_host_unwatch(rt->host, p[i][0]);
fail:;
    int e = errno;
    close_all(p);
    errno = e;
    return -1;
}

void py_slot_pipes_close(struct fr_runtime *rt, struct pyslot *s)
{
    struct slot_pipes *sp = &s->pipes;
    if (!PY(rt)->persistent)
        return; /* per-job pipes are the job's (runtime.c job_reset) */
    if (sp->job_w >= 0) {
        if (s->job_watched && s->job_w == sp->job_w)
            fr_host_close(rt->host, sp->job_w);
        else
            close(sp->job_w);
    }
    s->job_w = -1;
    s->job_watched = false;
    if (sp->job_r >= 0)
        close(sp->job_r);
    const int reads[3] = {sp->rep, sp->out, sp->err};
    for (int i = 0; i < 3; i++)
        if (reads[i] >= 0)
            fr_host_close(rt->host, reads[i]); /* our read ends: no other descriptor has them */
    *sp = (struct slot_pipes){-1, -1, -1, -1, -1};
    /* A job's streams read these very descriptors: none is read again. */
    s->out.fd = s->err.fd = s->rep.fd = -1;
}

bool py_slot_pipes_ok(const struct pyslot *s)
{
    const struct slot_pipes *sp = &s->pipes;
    return sp->job_w >= 0 && sp->job_r >= 0 && sp->rep >= 0 && sp->out >= 0 && sp->err >= 0;
}

unsigned py_slot_pipes_ready(const struct pyslot *s)
{
    const struct slot_pipes *sp = &s->pipes;
    struct pollfd p[4] = {{.fd = sp->job_r, .events = POLLIN},
                          {.fd = sp->rep, .events = POLLIN},
                          {.fd = sp->out, .events = POLLIN},
                          {.fd = sp->err, .events = POLLIN}};
    int n;
    do
        n = poll(p, 4, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return PY_PIPES_ALL; /* unknown: each is read to EAGAIN */
    unsigned ready = 0;
    for (int i = 0; i < 4; i++)
        if (p[i].revents)
            ready |= 1u << i;
    return ready;
}

int py_slot_pipes_drain(struct pyslot *s, unsigned which)
{
    const struct slot_pipes *sp = &s->pipes;
    const int fds[4] = {sp->job_r, sp->rep, sp->out, sp->err};
    int eof = 0;
    for (int i = 0; i < 4; i++)
        if (which & (1u << i))
            eof |= py_fd_discard(fds[i], 0, NULL) == 1;
    return eof ? -1 : 0;
}
