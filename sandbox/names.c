/* names.c — what the sandbox's facts are called: a system call's name for
 * a violation number (libseccomp's table, native architecture) and a
 * signal's name for a wait status. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *fr_signal_name(int sig, char *buf, size_t n)
{
    const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;
    if (abbrev)
        snprintf(buf, n, "SIG%s", abbrev);
    else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
        snprintf(buf, n, "SIGRTMIN+%d", sig - SIGRTMIN);
    else
        snprintf(buf, n, "SIG%d", sig);
    return buf;
}

const char *fr_syscall_name(int nr, char *buf, size_t n)
{
    if (nr < 0) {
        snprintf(buf, n, "unknown");
        return buf;
    }
    if (nr == FR_VIOLATION_FOREIGN) {
        snprintf(buf, n, "foreign_abi");
        return buf;
    }
    char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (name)
        snprintf(buf, n, "%s", name);
    else
        snprintf(buf, n, "syscall_%d", nr);
    free(name);
    return buf;
}
