/* reaper.c — reap zombies, watch the main child's process group. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "fitrun/init.h"
#include "fitrun/common.h"
#include "internal.h"

int fr_subreaper_enable(void)
{
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

int fr_reap_all(struct fr_main_child *m)
{
    int n = 0;
    for (;;) {
        int st;
        /* __WALL: also reap children whose exit signal is not SIGCHLD
         * (clone() users); they would otherwise stay zombies forever. */
        pid_t pid = waitpid(-1, &st, WNOHANG | __WALL);
        if (pid > 0) {
            n++;
            if (pid == m->pid) {
                m->done = true;
                m->wstatus = st;
            }
            continue;
        }
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0 && errno != ECHILD)
            fr_warn("waitpid: %s", strerror(errno));
        /* ECHILD while the main child was never reaped can only mean that
         * someone else reaped it; report fitrun's own error rather than
         * waiting forever. */
        if (pid < 0 && errno == ECHILD && !m->done) {
            fr_warn("main child %d vanished without an exit status", (int)m->pid);
            m->done = true;
            m->wstatus = FR_EXIT_USAGE << 8;
        }
        return n;
    }
}

bool fr_group_alive(pid_t pgid)
{
    /* Signal 0 checks existence only. EPERM means members exist that
     * fitrun may not signal: it could not kill them either, so waiting for
     * them would only delay the exit — count the group as gone. */
    return kill(-pgid, 0) == 0;
}
