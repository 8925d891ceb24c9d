/* channel.c — a worker's channel (SOCK_SEQPACKET, native byte order, no
 * padding; fitrun_runtime.py's MSG_* structs): PIPES and RUN out (with
 * the child's four pipe ends, or RUN without), STARTED, EXITED and FAILED
 * in. docs/python-runtime.md has the layouts. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "fitrun/common.h"
#include "internal.h"

static uint32_t rd32(const char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static int64_t rd64(const char *p)
{
    int64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

int py_send_run(int chan, uint32_t seq, unsigned flags, const int *fds, int nfds)
{
    char m[FR_PY_MSG_RUN_LEN] = {'R', (char)(unsigned char)flags};
    memcpy(m + 4, &seq, sizeof seq);
    if (nfds != 0 && nfds != FR_PY_RUN_FDS) {
        errno = EINVAL;
        return -1;
    }
    return fr_send_fds(chan, m, sizeof m, fds, nfds, MSG_NOSIGNAL | MSG_DONTWAIT);
}

int py_send_pipes(int chan, const int fds[4])
{
    const char m[FR_PY_MSG_PIPES_LEN] = {'P'};
    return fr_send_fds(chan, m, sizeof m, fds, FR_PY_RUN_FDS, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void py_msg_decode(const char *m, size_t len, struct py_msg *out)
{
    out->kind = len ? m[0] : '\0';
    out->seq = len >= 8 ? rd32(m + 4) : 0;
    out->well_formed = false;
    if (out->kind == 'S' && len == FR_PY_MSG_STARTED_LEN) {
        out->pid = (pid_t)rd32(m + 8);
        out->cpu_base_ns = rd64(m + 12);
        out->well_formed = out->cpu_base_ns >= 0;
    } else if (out->kind == 'E' && len >= FR_PY_MSG_EXITED_LEN && len <= FR_PY_MSG_EXITED_LEN + PY_REPLACED_MAX) {
        out->facts = (struct exit_facts){
            .wstatus = (int)rd32(m + 8),
            .violation_nr = (int)rd32(m + 12),
            .applied = (unsigned char)m[1] & FR_PY_EXITED_APPLIED,
            .utime_us = rd64(m + 16),
            .stime_us = rd64(m + 24),
            .max_rss_kb = rd64(m + 32),
            .wall_us = rd64(m + 40),
            .fork_us = rd64(m + 48),
        };
        memcpy(out->facts.replaced, m + FR_PY_MSG_EXITED_LEN, len - FR_PY_MSG_EXITED_LEN);
        out->facts.replaced[len - FR_PY_MSG_EXITED_LEN] = '\0';
        /* Times and sizes the kernel never reports below 0: the worker's
         * word is not trusted (rusage with a negative tv_usec, a max RSS
         * printed as a huge count). */
        const struct exit_facts *f = &out->facts;
        out->well_formed =
            f->utime_us >= 0 && f->stime_us >= 0 && f->max_rss_kb >= 0 && f->wall_us >= 0 && f->fork_us >= 0;
    } else if (out->kind == 'F' && len >= FR_PY_MSG_FAILED_MIN) {
        out->why = m + 8;
        out->why_len = len - 8;
        out->well_formed = true;
    }
}

/* The descriptor that came with a received message (SCM_RIGHTS), or -1. */
static int received_fd(struct msghdr *mh)
{
    int fd = -1;
    return fr_received_fds(mh, &fd, 1) ? fd : -1;
}

int py_recv_status(int sock, struct py_msg *out, char (*bufs)[PY_STATUS_MSG_MAX], int max)
{
    enum { BATCH = PY_STATUS_BATCH_MAX };
    struct mmsghdr mm[BATCH];
    struct iovec iov[BATCH];
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u[BATCH];
    if (max > BATCH)
        max = BATCH;
    for (int i = 0; i < max; i++) {
        iov[i] = (struct iovec){bufs[i], PY_STATUS_MSG_MAX};
        mm[i] = (struct mmsghdr){
            .msg_hdr = {
                .msg_iov = &iov[i], .msg_iovlen = 1, .msg_control = u[i].buf, .msg_controllen = sizeof u[i].buf}};
    }
    int n;
    do
        n = recvmmsg(sock, mm, (unsigned)max, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, NULL);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    if (n == 0 || mm[0].msg_len == 0)
        return -1; /* EOF: the worker is gone */
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].fd = received_fd(&mm[i].msg_hdr);
        out[i].len = mm[i].msg_len;
        py_msg_decode(bufs[i], out[i].len, &out[i]);
    }
    return n;
}

int py_recv(int chan, char *buf, size_t n, struct py_msg *out)
{
    memset(out, 0, sizeof *out);
    out->fd = -1;
    for (;;) {
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } u;
        struct iovec iov = {buf, n};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
        ssize_t r = recvmsg(chan, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (r <= 0)
            return -1;
        out->fd = received_fd(&mh);
        out->len = (size_t)r;
        py_msg_decode(buf, out->len, out);
        return 1;
    }
}
