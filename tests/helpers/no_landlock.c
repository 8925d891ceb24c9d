/* no_landlock — run a command as if on a host without Landlock.
 *
 *   no_landlock [--errno ENOSYS|EPERM|EOPNOTSUPP] CMD [ARG...]
 *
 * Installs a default-allow seccomp filter that answers the three Landlock
 * system calls with the given errno (ENOSYS by default: what an old kernel
 * says, and what container runtimes' seccomp profiles answered before they
 * allowed Landlock; EPERM: a profile that denies it; EOPNOTSUPP: Landlock
 * built in but not enabled), then execs CMD. The filter is inherited by
 * everything CMD starts. */
#include <errno.h>
#include <seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "fitrun/common.h"

int main(int argc, char **argv)
{
    int err = ENOSYS, i = 1;
    if (argc > 2 && !strcmp(argv[1], "--errno")) {
        err = !strcmp(argv[2], "EPERM") ? EPERM : !strcmp(argv[2], "EOPNOTSUPP") ? EOPNOTSUPP : ENOSYS;
        i = 3;
    }
    if (i >= argc)
        fr_die(2, "usage: no_landlock [--errno ENOSYS|EPERM|EOPNOTSUPP] CMD [ARG...]");
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        fr_die(2, "no_landlock: seccomp_init failed");
    static const char *const calls[] = {"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self"};
    for (size_t c = 0; c < 3; c++) {
        int nr = seccomp_syscall_resolve_name(calls[c]);
        int rc = nr < 0 ? -EINVAL : seccomp_rule_add(ctx, SCMP_ACT_ERRNO((unsigned)err), nr, 0);
        if (rc < 0)
            fr_die(2, "no_landlock: seccomp_rule_add(%s): %s", calls[c], strerror(-rc));
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        fr_die_errno(2, "no_landlock: PR_SET_NO_NEW_PRIVS");
    int rc = seccomp_load(ctx);
    if (rc < 0)
        fr_die(2, "no_landlock: seccomp_load: %s", strerror(-rc));
    seccomp_release(ctx);
    execvp(argv[i], argv + i);
    fr_die_errno(127, "no_landlock: %s", argv[i]);
}
