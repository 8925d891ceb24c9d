/* steps.c — everything a child applies before the seccomp filter, in a
 * fixed order. Runs in a freshly forked child, possibly of a multithreaded
 * C parent or of a Python worker (through ctypes), so it is
 * async-signal-safe: only system calls (through thin libc/libcap wrappers
 * that do not allocate), no malloc, no stdio, no file access. Everything
 * was prepared by fr_policy_build in the parent.
 *
 * Order, and why:
 *  1. rlimits      first, while the process may still hold
 *                  CAP_SYS_RESOURCE, and because the filter denies
 *                  setrlimit/prlimit64 with a new limit. Before the uid
 *                  switch too: RLIMIT_NPROC is then checked against the
 *                  new uid's processes (setresuid's PF_NPROC_EXCEEDED).
 *  2. no_new_privs before any exec: setuid bits and file capabilities stop
 *                  working, so an exec can never regain what 3-5 drop; and
 *                  Landlock (7) and an unprivileged filter require it.
 *  3. bounding set needs CAP_SETPCAP, which 4 and 5 remove.
 *  4. identity     per-slot uid/gid (identity.c): needs CAP_SETUID/SETGID,
 *                  so before 5. The kernel clears PR_SET_PDEATHSIG on a uid
 *                  change: a death signal the caller armed is re-armed.
 *  5. capabilities ambient cleared, E/P/I set to the kept ones with one
 *                  capset, kept ones raised in the ambient set (after 4:
 *                  the uid change cleared effective and ambient).
 *  6. not dumpable (unless core files were asked for): other processes of
 *                  the same uid can then neither ptrace the job nor read
 *                  its memory through /proc/<pid>/mem.
 *  7. Landlock     restrict_self with the prepared ruleset; its descriptor
 *                  is closed.
 * The seccomp filter comes last, after these (apply.c, relay.c): it denies
 * most of what they use. */
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "internal.h"

/* 4, keeping the caller's death signal (see above). */
static int switch_identity(const struct fr_policy *p, int slot)
{
    if (!p->id.enabled || slot < 0)
        return 0;
    int pdeath = 0;
    if (prctl(PR_GET_PDEATHSIG, &pdeath, 0, 0, 0) < 0)
        return -errno;
    pid_t parent = getppid();
    int rc = fr_identity_apply(&p->id, slot);
    if (rc < 0 || !pdeath)
        return rc;
    if (prctl(PR_SET_PDEATHSIG, pdeath, 0, 0, 0) < 0)
        return -errno;
    return getppid() == parent ? 0 : -ESRCH; /* the parent died while it was unarmed */
}

int fr_apply_steps(const struct fr_policy *p, int slot)
{
    int rc = fr_rlimits_apply(&p->rl);
    if (rc < 0)
        return rc;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    if ((rc = fr_caps_drop_bounding(&p->caps)) < 0 || (rc = switch_identity(p, slot)) < 0 ||
        (rc = fr_caps_set(&p->caps)) < 0)
        return rc;
    if (!p->limits.core_bytes && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return -errno;
    return fr_landlock_apply(&p->ll);
}
