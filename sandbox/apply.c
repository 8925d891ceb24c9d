/* apply.c — the child's entry points: fr_policy_apply (in process, or
 * through a relay with a report descriptor) and fr_policy_apply_notify
 * (the caller is the supervisor). Each runs the steps before the filter
 * (steps.c), then installs the filter last: it denies most of what the
 * steps use. With a supervisor, the filter's listener is handed over
 * (notify.c) and closed before this returns. With a report descriptor,
 * relay.c forks the job first and the job runs the same steps with the
 * relay as its supervisor.
 *
 * Async-signal-safe, as everything on the child side (internal.h). */
#include <errno.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "internal.h"

int fr_policy_apply_slot(const struct fr_policy *p, int report_fd, int slot)
{
    if (!p)
        return -EINVAL;
    if (report_fd >= 0)
        return fr_relay_apply(p, report_fd, slot);
    int rc = fr_apply_steps(p, slot);
    if (rc < 0 || p->filter.mode == FR_FILTER_OFF)
        return rc;
    /* No one to name the syscall to: notify becomes a plain kill. */
    return fr_filter_install(&p->filter, getpid(), -1, false);
}

int fr_policy_apply(const struct fr_policy *p, int report_fd)
{
    return fr_policy_apply_slot(p, report_fd, -1);
}

int fr_policy_apply_notify(const struct fr_policy *p, int notify_sock, int slot)
{
    if (!p || notify_sock < 0)
        return -EINVAL;
    int rc = fr_apply_steps(p, slot);
    if (rc < 0)
        return rc;
    int listener = -1;
    if (p->filter.mode != FR_FILTER_OFF) {
        listener = fr_filter_install(&p->filter, getpid(), notify_sock, true);
        if (listener < 0)
            return listener;
    }
    /* The filter is in force: only read, write, close, sendmsg on
     * notify_sock and exit are sure to pass from here on. */
    rc = fr_notify_send(notify_sock, listener);
    if (listener >= 0)
        close(listener);
    close(notify_sock);
    return rc;
}
