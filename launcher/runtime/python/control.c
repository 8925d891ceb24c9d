/* control.c — the zygote's control socket: asking it for workers (a
 * channel each, passed with SCM_RIGHTS), killing them, and its events
 * ("spawned", "worker_exit", "error"). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

/* msg with fds[0..nfds) attached (SCM_RIGHTS). */
static int ctl_send(struct pyrt *py, const char *msg, const int *fds, int nfds)
{
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = strlen(msg)};
    union {
        char buf[CMSG_SPACE(sizeof(int) * PY_SPAWN_FDS_MAX)];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > PY_SPAWN_FDS_MAX) {
        errno = EINVAL;
        return -1;
    }
    if (nfds > 0) {
        memset(&u, 0, sizeof u);
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
    }
    ssize_t w;
    do
        w = sendmsg(py->ctl, &mh, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    return w < 0 ? -1 : 0;
}

int py_spawn_worker(struct fr_runtime *rt, int slot, bool watch)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    int sv[2], st[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    /* Only our ends are non-blocking: the worker reads with blocking I/O. */
    int fl = fcntl(sv[0], F_GETFL);
    if (fl < 0 || fcntl(sv[0], F_SETFL, fl | O_NONBLOCK) < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, st) < 0 || (fl = fcntl(st[0], F_GETFL)) < 0 ||
        fcntl(st[0], F_SETFL, fl | O_NONBLOCK) < 0)
        goto fail;
    /* Its own pipes, if any, are its first message: before the zygote
     * hears of the channel, so that a failure here leaves nothing behind. */
    py_slot_pipes_close(rt, s);
    if (py->persistent && py_slot_pipes_open(rt, slot, sv[0]) < 0)
        goto fail;
    unsigned token = py->next_token++;
    /* The channel, the status socket, then the slot's cgroup.procs files
     * (fitrun/cgroup.h): each prediction's child joins its slot's cgroups
     * with them. */
    int fds[PY_SPAWN_FDS_MAX] = {sv[1], st[1]};
    int ncg = fr_cgroup_slot_fds(rt->cfg->cgroups, slot, fds + 2, PY_SPAWN_FDS_MAX - 2);
    char msg[128];
    snprintf(msg, sizeof msg, "{\"op\":\"spawn\",\"slot\":%u,\"worker\":%d,\"cgroups\":%d}", token, slot, ncg);
    /* A dead interpreter (its socket closed, or gone before its EOF was
     * read) is started again once here, and asked again. */
    if (ctl_send(py, msg, fds, 2 + ncg) < 0 && (!(errno == EPIPE || errno == ECONNRESET || errno == EBADF) ||
                                                py_zygote_restart(rt) < 0 || ctl_send(py, msg, fds, 2 + ncg) < 0))
        goto fail;
    close(sv[1]);
    close(st[1]);
    if (watch && fr_host_watch(rt->host, sv[0], EPOLLIN, slot) < 0) {
        int e = errno;
        py_slot_pipes_close(rt, s);
        close(sv[0]);
        close(st[0]);
        errno = e;
        return -1;
    }
    py_status_close(rt, s);
    s->chan = sv[0];
    s->status = st[0];
    s->fresh = false; /* a new worker starts a new process anyway */
    s->pid = 0;
    if (s->pidfd >= 0)
        close(s->pidfd);
    s->pidfd = -1;
    s->token = token;
    return 0;
fail:;
    int e = errno;
    py_slot_pipes_close(rt, s);
    close(sv[0]);
    close(sv[1]);
    if (st[0] >= 0) {
        close(st[0]);
        close(st[1]);
    }
    errno = e;
    return -1;
}

void py_drop_channel(struct fr_runtime *rt, struct pyslot *s)
{
    py_status_close(rt, s);
    if (s->chan < 0)
        return;
    fr_host_unwatch(rt->host, s->chan);
    close(s->chan);
    s->chan = -1;
}

/* A worker is the interpreter's child, not ours: it is signalled only
 * through a pidfd, never by pid (once the interpreter has reaped it, its
 * pid may be any process's). A worker whose pidfd could not be opened had
 * died already: the EOF of its channel says so. */
void py_kill_worker(struct pyrt *py, struct pyslot *s)
{
    if (s->pidfd >= 0)
        pidfd_send_signal(s->pidfd, SIGKILL, NULL, 0);
    else if (s->pid == 0 && py->ndoomed < PY_MAX_DOOMED)
        py->doomed[py->ndoomed++] = s->token;
}

/* The parent pid of process pid (PPid: of /proc/<pid>/status), 0 if
 * unknown. */
static pid_t parent_of(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    char *text = fr_read_file(path, 1 << 16, NULL);
    const char *line = text ? strstr(text, "\nPPid:") : NULL;
    pid_t ppid = line ? (pid_t)strtol(line + 6, NULL, 10) : 0;
    free(text);
    return ppid;
}

/* Kill a worker that was doomed before its "spawned" came: through a
 * pidfd opened while its pid is still the interpreter's child's (a worker
 * that died at once may have been reaped and its pid reused). */
static void kill_spawned(const struct pyrt *py, pid_t pid)
{
    int fd = pidfd_open(pid, 0);
    if (fd < 0)
        return; /* gone already */
    if (parent_of(pid) == py->zygote)
        pidfd_send_signal(fd, SIGKILL, NULL, 0);
    close(fd);
}

static bool take_doomed(struct pyrt *py, unsigned token)
{
    for (int i = 0; i < py->ndoomed; i++)
        if (py->doomed[i] == token) {
            py->doomed[i] = py->doomed[--py->ndoomed];
            return true;
        }
    return false;
}

static struct pyslot *slot_of_token(struct pyrt *py, unsigned token)
{
    for (int i = 0; i < py->nslots; i++)
        if (py->slots[i].chan >= 0 && py->slots[i].token == token)
            return &py->slots[i];
    return NULL;
}

void py_ctl_message(struct fr_runtime *rt, const char *msg, size_t len)
{
    struct pyrt *py = PY(rt);
    json_error_t jerr;
    json_t *m = json_loadb(msg, len, 0, &jerr);
    const char *ev = m ? json_string_value(json_object_get(m, "event")) : NULL;
    json_int_t token = m ? json_integer_value(json_object_get(m, "slot")) : -1;
    json_int_t pid = m ? json_integer_value(json_object_get(m, "pid")) : 0;
    if (!ev) {
        fr_warn("python runtime: unreadable control message '%.*s'", (int)(len > 200 ? 200 : len), msg);
    } else if (!strcmp(ev, "spawned")) {
        struct pyslot *s = slot_of_token(py, (unsigned)token);
        if (take_doomed(py, (unsigned)token) && pid > 0) {
            kill_spawned(py, (pid_t)pid);
        } else if (s && pid > 0) {
            s->pid = (pid_t)pid;
            s->pidfd = pidfd_open(s->pid, 0); /* -1 if it died already: EOF will say so */
        }
    } else if (!strcmp(ev, "worker_exit")) {
        /* Deaths are noticed (and handled) by EOF on the channel; this only
         * says how it died, for the user. */
        json_t *sig = json_object_get(m, "signal");
        if (!py->stopping && json_is_integer(sig) && json_integer_value(sig) != SIGKILL)
            fr_warn("python worker (pid %lld) was killed by signal %lld", (long long)pid,
                    (long long)json_integer_value(sig));
    } else if (!strcmp(ev, "error")) {
        fr_warn("python runtime: %s", json_string_value(json_object_get(m, "message")));
    }
    json_decref(m);
}

void py_ctl_event(struct fr_runtime *rt, uint32_t events)
{
    struct pyrt *py = PY(rt);
    char *buf = malloc(PY_MSG_MAX);
    if (!buf) {
        fr_host_fail(rt->host, "python runtime: out of memory");
        return;
    }
    for (;;) {
        ssize_t r = recv(py->ctl, buf, PY_MSG_MAX, MSG_DONTWAIT);
        if (r > 0) {
            py_ctl_message(rt, buf, (size_t)r);
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !(events & (EPOLLHUP | EPOLLERR)))
            break;
        /* EOF: the interpreter is gone, its workers with it. (Stopping:
         * its socket is closed, and that is all.) */
        if (py_zygote_restart(rt) < 0 && !py->stopping)
            fr_host_fail(rt->host, "python runtime: the interpreter exited during the run");
        break;
    }
    free(buf);
}
