/* notify.c — getting a denied call's name to someone the job cannot reach.
 *
 * Every filter answers a denied call with SECCOMP_RET_USER_NOTIF. The
 * kernel then parks the calling thread and queues a notification (syscall
 * number, architecture, pid) on the filter's listener, a descriptor that
 * seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER) returns to the process that
 * installs the filter — the job itself. So the job hands it over at once,
 * before any untrusted code runs, and closes its own copy:
 *
 *   job: seccomp(..., NEW_LISTENER) = L          the filter is in force from here
 *        sendmsg(sock, SCM_RIGHTS L)             allowed: the filter lets sendmsg
 *                                                through on `sock` only (a patched
 *                                                placeholder, like the pid rules)
 *        close(L), close(sock)
 *   supervisor: recvmsg(sock) = L; poll(L); SECCOMP_IOCTL_NOTIF_RECV; kill
 *
 * The supervisor is the relay (relay.c) or the caller of
 * fr_policy_apply_notify (the Python worker). Nothing of this depends on
 * ptrace rights (pidfd_getfd would: Yama ptrace_scope >= 2 breaks it), on
 * the job's signal mask, or on the job's cooperation after the hand-off:
 * a notification cannot be written, only caused by making the call. The
 * supervisor never answers: the job's thread stays in the denied call
 * until it is killed. */
#include <errno.h>
#include <linux/seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* The one data byte of a hand-off message. */
#define FR_HANDOFF_LISTENER 'L'
#define FR_HANDOFF_NONE 'N'

/* The control message that carries one descriptor, aligned for cmsghdr. */
union one_fd {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
};

int fr_notify_send(int sock, int listener)
{
    char tag = listener >= 0 ? FR_HANDOFF_LISTENER : FR_HANDOFF_NONE;
    struct iovec iov = {.iov_base = &tag, .iov_len = 1};
    union one_fd ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (listener >= 0) {
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof ctl.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &listener, sizeof(int));
    }
    /* The raw call keeps the socket argument a clean 64-bit value, which is
     * what the filter's sendmsg rule compares. MSG_NOSIGNAL: a supervisor
     * that is gone is an error, not a SIGPIPE death. */
    for (;;) {
        long n = syscall(SYS_sendmsg, (long)sock, &msg, (long)MSG_NOSIGNAL);
        if (n == 1)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 ? -errno : -EIO;
    }
}

int fr_notify_receive(int notify_sock)
{
    char tag = 0;
    struct iovec iov = {.iov_base = &tag, .iov_len = 1};
    union one_fd ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
    ssize_t n;
    while ((n = recvmsg(notify_sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (n < 0)
        return -errno;
    if (n == 0)
        return -EPIPE;
    int fd = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
    if (tag == FR_HANDOFF_LISTENER && fd >= 0 && !(msg.msg_flags & MSG_CTRUNC))
        return fd;
    if (fd >= 0)
        close(fd);
    return tag == FR_HANDOFF_NONE ? -ENODATA : -EPROTO;
}

int fr_violation_nr(uint32_t arch, int nr, uint32_t native_arch)
{
    /* x32 calls arrive with the x86_64 audit arch and bit 30 set in nr. */
    if (arch != native_arch || nr < 0 || (nr & 0x40000000))
        return FR_VIOLATION_FOREIGN;
    return nr;
}

int fr_notify_read(int listener, int *nr, int *pid)
{
    struct seccomp_notif req;
    memset(&req, 0, sizeof req); /* the kernel insists on a zeroed buffer */
    while (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
        if (errno != EINTR)
            return -errno;
        memset(&req, 0, sizeof req);
    }
    if (nr)
        *nr = fr_violation_nr(req.data.arch, req.data.nr, seccomp_arch_native());
    if (pid)
        *pid = (int)req.pid;
    return 0;
}
