/* violation.c — the relay's report record, and dying by a given signal.
 *
 * The relay (relay.c) writes one fixed-size record naming the denied call
 * to the report descriptor, which only it holds: the caller closed its copy
 * of the write end after forking, and the job closed its own before
 * anything untrusted ran. A job therefore cannot write a record, and a
 * record means a notification really reached the relay. The parent takes
 * the last well-formed record (fr_report_read).
 *
 * Why a record and not a wait status: the number of the denied call is in
 * no wait status, and /proc/<pid>/syscall is gone once the task is dead. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static uint32_t record_check(uint32_t arch, int32_t nr)
{
    return ~FR_REPORT_MAGIC ^ arch ^ (uint32_t)nr;
}

int fr_report_write(int fd, uint32_t arch, int nr)
{
    struct fr_report_record r = {
        .magic = FR_REPORT_MAGIC,
        .arch = arch,
        .nr = nr,
        .check = record_check(arch, nr),
    };
    ssize_t n = write(fd, &r, sizeof r);
    if (n < 0)
        return -errno;
    return n == (ssize_t)sizeof r ? 0 : -EIO;
}

_Noreturn void fr_die_by_signal(int sig)
{
    /* SIGKILL and SIGSTOP cannot have a handler: nothing to reset. */
    if (sig != SIGKILL && sig != SIGSTOP) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        (void)sigaction(sig, &dfl, NULL);
    }
    (void)syscall(SYS_tgkill, getpid(), gettid(), sig);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    (void)sigprocmask(SIG_UNBLOCK, &set, NULL);
    _exit(128 + sig);
}

/* ---- parent side -------------------------------------------------------------- */

/* The last well-formed record in buf[0..n). Returns the violation number
 * or -1. */
static int last_record(const unsigned char *buf, size_t n)
{
    if (n < sizeof(struct fr_report_record))
        return -1;
    for (size_t off = n - sizeof(struct fr_report_record) + 1; off-- > 0;) {
        struct fr_report_record r;
        memcpy(&r, buf + off, sizeof r);
        if (r.magic == FR_REPORT_MAGIC && r.check == record_check(r.arch, r.nr))
            return fr_violation_nr(r.arch, r.nr, seccomp_arch_native());
    }
    return -1;
}

int fr_report_read(int report_fd)
{
    if (report_fd < 0)
        return -1;
    /* The relay writes one record; read what is there without blocking. */
    unsigned char buf[8192];
    size_t have = 0;
    for (int rounds = 0; rounds < 64; rounds++) {
        struct pollfd pfd = {.fd = report_fd, .events = POLLIN};
        if (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & (POLLIN | POLLHUP)))
            break;
        if (have == sizeof buf) { /* keep the last record-sized tail */
            size_t keep = sizeof(struct fr_report_record) - 1;
            memmove(buf, buf + have - keep, keep);
            have = keep;
        }
        ssize_t got = read(report_fd, buf + have, sizeof buf - have);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        have += (size_t)got;
    }
    return last_record(buf, have);
}
