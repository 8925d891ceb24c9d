/* valgrind_probes.c — an LD_PRELOAD library for bench/launcher_instructions.sh.
 *
 * Valgrind 3.19 (Debian 12) has no seccomp(2) or landlock_*(2): the
 * launcher's probes of both fail under it, and the profile check refuses
 * the sandbox. This answers the probes the launcher makes through
 * syscall(3) as a Linux 6 kernel does (seccomp's filter flags and actions
 * supported; Landlock absent, so no ruleset is built) and passes every
 * other call on; glibc's pidfd_send_signal(), whose system call valgrind
 * does not know either, signals the pid that /proc/self/fdinfo gives. Only the launcher runs under valgrind
 * (--trace-children=no): its Python processes exec'ed from it run
 * natively and apply their real seccomp filter. For measuring only. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <unistd.h>

/* kill(2) to the process of pidfd fd: what pidfd_send_signal does, but for
 * the race with the pid's reuse, which a measurement can afford. */
static long pidfd_kill(int fd, int sig)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return -1;
    ssize_t n = read(f, buf, sizeof buf - 1);
    int saved = errno;
    if (close(f) < 0 && n >= 0)
        return -1;
    if (n < 0) {
        errno = saved;
        return -1;
    }
    buf[n] = '\0';
    const char *p = strstr(buf, "Pid:");
    long pid = p ? strtol(p + 4, NULL, 10) : -1;
    if (pid <= 0) {
        errno = ESRCH;
        return -1;
    }
    return kill((pid_t)pid, sig);
}

int pidfd_send_signal(int fd, int sig, siginfo_t *info, unsigned int flags)
{
    if (info || flags) {
        errno = EINVAL;
        return -1;
    }
    return (int)pidfd_kill(fd, sig);
}

long syscall(long nr, ...)
{
    va_list ap;
    va_start(ap, nr);
    long a[6];
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (nr == SYS_seccomp) {
        switch (a[0]) {
        case SECCOMP_SET_MODE_STRICT: errno = EINVAL; return -1; /* the "is seccomp(2) there" probe */
        case SECCOMP_SET_MODE_FILTER:
            if (!a[2]) {
                errno = EFAULT; /* a flag probe: the flag is known */
                return -1;
            }
            break;
        case SECCOMP_GET_ACTION_AVAIL: return 0;
        case SECCOMP_GET_NOTIF_SIZES: {
            struct seccomp_notif_sizes *s = (void *)a[2];
            s->seccomp_notif = 80;
            s->seccomp_notif_resp = 24;
            s->seccomp_data = 64;
            return 0;
        }
        }
    }
    if (nr == SYS_landlock_create_ruleset) {
        errno = ENOSYS;
        return -1;
    }
    static long (*next)(long, ...);
    if (!next && !(next = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall"))) {
        errno = ENOSYS;
        return -1;
    }
    return next(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
