/* kill.c — the processes out of a cgroup fitrun made, before it is
 * removed: at the end of a run (tree.c) and in a dead run's leftovers
 * (stale.c). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/pidfd.h>
#include <unistd.h>
#include <time.h>

#include "fitrun/common.h"
#include "internal.h"

void cg_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

bool cg_populated(const struct fr_cgroup_hier *h, const char *dir)
{
    char path[CG_PATH];
    if (h->version == 2) {
        /* cgroup.events: libcgroup 2.0.2 does not read it. */
        if (!fr_dir_file(path, sizeof path, dir, "cgroup.events"))
            return false;
        char *text = fr_read_file(path, 4096, NULL);
        uint64_t v = 0;
        bool pop = text && cg_key_u64(text, "populated", &v) && v;
        free(text);
        return pop;
    }
    pid_t *pids;
    int n;
    if (cg_lib_procs(h, dir, &pids, &n) < 0)
        return false;
    free(pids);
    return n > 0;
}

static bool listed(const pid_t *pids, int n, pid_t pid)
{
    for (int i = 0; i < n; i++)
        if (pids[i] == pid)
            return true;
    return false;
}

/* SIGKILL the processes cgroup.procs of dir lists. A listed process may
 * exit and be reaped (by its parent: a job's relay) before the signal,
 * and its pid be handed to a process elsewhere (another run's): so each is
 * opened as a pidfd first, and signalled through it only if its pid is
 * still listed after the opening (the pidfd is then that process's, not a
 * newcomer's elsewhere). A pid this namespace cannot name is skipped. */
static void kill_listed(const struct fr_cgroup_hier *h, const char *dir)
{
    pid_t *pids, *again;
    int n, m;
    if (cg_lib_procs(h, dir, &pids, &n) < 0)
        return;
    int *fds = n > 0 ? malloc((size_t)n * sizeof *fds) : NULL;
    for (int i = 0; fds && i < n; i++)
        fds[i] = pids[i] > 0 ? pidfd_open(pids[i], 0) : -1;
    if (fds && cg_lib_procs(h, dir, &again, &m) == 0) {
        for (int i = 0; i < n; i++)
            if (fds[i] >= 0 && listed(again, m, pids[i]))
                (void)pidfd_send_signal(fds[i], SIGKILL, NULL, 0);
        free(again);
    }
    for (int i = 0; fds && i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
    free(pids);
}

/* SIGKILL every process in dir and below and wait (bounded) until they
 * are gone: v2 with cgroup.kill (Linux 5.14; libcgroup has no call for
 * it), else one by one from cgroup.procs (kill_listed), again until none
 * is left (a process can fork while it is being killed). */
void cg_kill_all(const struct fr_cgroup_hier *h, const char *dir)
{
    char path[CG_PATH];
    bool kill_file = h->version == 2 && fr_dir_file(path, sizeof path, dir, "cgroup.kill") && cg_write(path, "1") == 0;
    for (int waited = 0; waited < CG_EMPTY_WAIT_MS; waited++) {
        if (!kill_file)
            kill_listed(h, dir);
        if (!cg_populated(h, dir))
            return;
        cg_sleep_ms(1);
    }
}
