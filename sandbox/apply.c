/* apply.c — fr_policy_apply: the child side, in a fixed order.
 *
 * Runs in a freshly forked child, possibly of a multithreaded C parent or
 * of a Python worker (through ctypes), so it is async-signal-safe: only
 * system calls (through thin libc/libcap wrappers that do not allocate),
 * no malloc, no stdio, no file access. Everything was prepared by
 * fr_policy_build in the parent.
 *
 * Order, and why:
 *  1. rlimits      first, while the process may still hold
 *                  CAP_SYS_RESOURCE, and because the filter (5) denies
 *                  setrlimit/prlimit64 with a new limit.
 *  2. no_new_privs before the filter (the kernel requires it to install a
 *                  filter without CAP_SYS_ADMIN, and we drop that in 3) and
 *                  before any exec: setuid bits and file capabilities stop
 *                  working, so an exec can never regain what 3 drops.
 *  3. capabilities bounding set (needs CAP_SETPCAP, so before capset drops
 *                  it), ambient, then E/P/I with one capset.
 *     not dumpable (unless core files were asked for): other processes of
 *                  the same uid — other jobs included — can then neither
 *                  ptrace the job nor read its memory through
 *                  /proc/<pid>/mem (a read-only open the presets allow).
 *  4. SIGSYS handler (TRAP filters): before the filter, which denies
 *                  rt_sigaction(SIGSYS).
 *  5. seccomp      last: it denies most of what 1-4 used.
 * For the exec preset with a report descriptor, relay.c forks the job
 * first and the job runs 1-3 and 5 (with a notification listener). */
#include <errno.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "internal.h"

int fr_apply_common(const struct fr_policy *p)
{
    int rc = fr_rlimits_apply(&p->rl);
    if (rc < 0)
        return rc;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    return fr_caps_apply(&p->caps);
}

int fr_policy_apply(const struct fr_policy *p, int report_fd)
{
    if (!p)
        return -EINVAL;
    if (p->filter.mode == FR_FILTER_NOTIFY && report_fd >= 0)
        return fr_relay_apply(p, report_fd);
    int rc = fr_apply_common(p);
    if (rc < 0)
        return rc;
    if (!p->limits.core_bytes && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return -errno;
    switch (p->filter.mode) {
    case FR_FILTER_OFF:
        return 0;
    case FR_FILTER_TRAP:
        rc = fr_violation_arm(report_fd, p->filter.arch);
        if (rc < 0)
            return rc;
        return fr_filter_install(&p->filter, getpid(), false);
    case FR_FILTER_NOTIFY:
        /* No report descriptor, so no one to name the syscall to: the
         * notify action becomes a plain kill (fr_filter_install). */
        return fr_filter_install(&p->filter, getpid(), false);
    }
    return -EINVAL;
}
