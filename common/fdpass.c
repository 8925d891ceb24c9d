/* fdpass.c — messages with descriptors over a unix socket (SCM_RIGHTS):
 * sent, and taken out of a received message, for the Python runtime's
 * channel (launcher/runtime/python/channel.c) and fork isolation's worker
 * (sandbox/worker.c). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fitrun/common.h"

int fr_send_fds(int sock, const void *msg, size_t len, const int *fds, int nfds, int flags)
{
    union {
        char buf[CMSG_SPACE(FR_SEND_FDS_MAX * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {(void *)msg, len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds < 0 || nfds > FR_SEND_FDS_MAX) {
        errno = EINVAL;
        return -1;
    }
    if (nfds) {
        size_t n = (size_t)nfds * sizeof(int);
        memset(&u, 0, sizeof u);
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE(n);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n);
        memcpy(CMSG_DATA(c), fds, n);
    }
    ssize_t w;
    do
        w = sendmsg(sock, &mh, flags);
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)len)
        return 0;
    if (w >= 0)
        errno = EMSGSIZE; /* a datagram is sent whole or not at all: not seen */
    return -1;
}

int fr_received_fds(struct msghdr *mh, int *fds, int max)
{
    int n = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (n < max)
                fds[n++] = fd;
            else
                close(fd);
        }
    }
    return n;
}
