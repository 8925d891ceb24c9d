/* janitor.c — v2: the process that removes fitrun's sub-tree when fitrun
 * dies without doing it (SIGKILL, a crash).
 *
 * Why v2 needs one: while <own> passes controllers to its children (which
 * fitrun switches on for jobs/), the kernel puts no process into <own>
 * (EBUSY, the no-internal-process rule), so the next fitrun cannot even
 * start there to remove a dead run's leftovers (stale.c does that on v1).
 *
 * fitrun forks it right after moving into launcher, so it lives there,
 * beside fitrun. It keeps no descriptor of fitrun's but the read end of a
 * pipe whose write end only fitrun holds (stdin, stdout and stderr become
 * /dev/null: a client reading fitrun's output or --ready-fd to its end
 * never waits for the janitor, which is also why it says nothing), blocks
 * every signal, leaves fitrun's process group (a signal to the group does
 * not reach it; SIGKILL to the group leaves it to clean up), makes itself
 * non-dumpable (as fitrun does before it reads jobs), and waits.
 * fitrun is gone when that pipe reaches EOF (its last holder exited) or
 * when the janitor's parent is no longer fitrun (PR_SET_PDEATHSIG wakes
 * it; getppid() covers a fitrun that died before the prctl). Then it does
 * what fitrun's own end does (tree.c's undo, handed over as `end`): kill the jobs' cgroups,
 * remove them deepest first, switch off the controllers fitrun switched
 * on, move itself into <own>, remove launcher and fitrun-<pid>, and exit.
 *
 * At a normal end fitrun stops it (SIGKILL through its pidfd, then reaps
 * it) once fitrun has moved back into <own>, just before launcher goes:
 * the janitor covers fitrun's own clean-up too. It is fitrun's child, and
 * the pool's orphan reaper leaves it alone (fr_cgroup_tree_janitor). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

#ifndef P_PIDFD
#define P_PIDFD 3 /* waitid on a pidfd: Linux 5.4 (linux/wait.h; glibc 2.36 lacks the name) */
#endif

#define PARENT_GONE SIGUSR1 /* PR_SET_PDEATHSIG's signal: blocked, read from a signalfd */

pid_t fr_cgroup_tree_janitor(const struct fr_cgroup_tree *t)
{
    return t ? t->janitor.pid : 0;
}

/* Close every descriptor but keep; 0, 1 and 2 become /dev/null (closed
 * where it cannot be opened: nothing in the janitor writes to them). */
static void close_all_but(int keep)
{
    if (keep > 0 && close_range(0, (unsigned)keep - 1, 0) < 0) {
        for (int fd = 0; fd < keep; fd++)
            close(fd);
    }
    if (close_range((unsigned)keep + 1, ~0U, 0) < 0) {
        struct rlimit rl;
        int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 20) ? (int)rl.rlim_cur : 1 << 20;
        for (int fd = keep + 1; fd < max; fd++)
            close(fd);
    }
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; null >= 0 && fd <= 2; fd++)
        if (fd != null && dup2(null, fd) < 0)
            break;
    if (null > 2)
        close(null);
}

/* Wait until fitrun is gone: EOF on rd, or a parent other than fitrun. */
static void wait_for_end(pid_t fitrun, int rd)
{
    sigset_t gone;
    sigemptyset(&gone);
    sigaddset(&gone, PARENT_GONE);
    int sfd = signalfd(-1, &gone, SFD_CLOEXEC);
    if (prctl(PR_SET_PDEATHSIG, PARENT_GONE, 0, 0, 0) < 0 && sfd >= 0) {
        close(sfd); /* no wake-up from the signal: the pipe alone */
        sfd = -1;
    }
    while (getppid() == fitrun) {
        struct pollfd pf[2] = {{.fd = rd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(pf, sfd >= 0 ? 2 : 1, -1) < 0) {
            if (errno != EINTR)
                cg_sleep_ms(100); /* cannot wait on them: look at the parent now and then */
            continue;
        }
        if (pf[0].revents) {
            char buf[64];
            ssize_t r = read(rd, buf, sizeof buf);
            if (r == 0)
                break; /* no writer left: fitrun is exiting or gone */
            if (r < 0 && errno != EINTR)
                cg_sleep_ms(100);
        }
        if (sfd >= 0 && (pf[1].revents & POLLIN)) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) < 0 && errno != EINTR)
                cg_sleep_ms(100);
        }
    }
    if (sfd >= 0)
        close(sfd);
}

static _Noreturn void janitor(struct fr_cgroup_tree *t, void (*end)(struct fr_cgroup_tree *), pid_t fitrun, int rd)
{
    int keep = fcntl(rd, F_DUPFD_CLOEXEC, 3);
    if (keep < 0)
        keep = rd;
    close_all_but(keep);
    /* Like fitrun's pool: a job of the same uid cannot read this copy of
     * fitrun's memory (/proc/<pid>/mem, environ). Cannot fail for 0. */
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    (void)setpgid(0, 0); /* fails only for a session leader, which fitrun's child is not */
    wait_for_end(fitrun, keep);
    close(keep);
    end(t);
    _exit(0);
}

int cg_janitor_start(struct fr_cgroup_tree *t, void (*end)(struct fr_cgroup_tree *t), char *err, size_t errlen)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        fr_seterr(err, errlen, "cgroups: cannot make the pipe of the janitor of %s: %s", t->base[0], strerror(errno));
        return -1;
    }
    /* Blocked across fork: the child never runs one of fitrun's handlers. */
    sigset_t all, old;
    sigfillset(&all);
    if (sigprocmask(SIG_SETMASK, &all, &old) < 0) {
        fr_seterr(err, errlen, "cgroups: sigprocmask: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    pid_t fitrun = getpid();
    pid_t pid = fork();
    if (pid == 0)
        janitor(t, end, fitrun, fds[0]);
    int e = errno;
    (void)sigprocmask(SIG_SETMASK, &old, NULL); /* a mask it accepted a moment ago */
    close(fds[0]);
    if (pid < 0) {
        close(fds[1]);
        fr_seterr(err, errlen, "cgroups: cannot fork the janitor of %s: %s", t->base[0], strerror(e));
        return -1;
    }
    /* Our child, not yet reaped: its pid is still its own here. */
    int pidfd = pidfd_open(pid, 0);
    if (pidfd < 0) {
        fr_seterr(err, errlen, "cgroups: pidfd_open of the janitor of %s (pid %d): %s", t->base[0], (int)pid,
                  strerror(errno));
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        close(fds[1]);
        return -1;
    }
    t->janitor = (struct cg_janitor){.pid = pid, .pidfd = pidfd, .fd = fds[1]};
    return 0;
}

void cg_janitor_stop(struct fr_cgroup_tree *t)
{
    struct cg_janitor *j = &t->janitor;
    if (!j->pid)
        return;
    if (pidfd_send_signal(j->pidfd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
        fr_warn("cgroups: cannot stop the janitor of %s (pid %d): %s", t->base[0], (int)j->pid, strerror(errno));
    siginfo_t si;
    int r;
    while ((r = waitid(P_PIDFD, (id_t)j->pidfd, &si, WEXITED)) < 0 && errno == EINTR)
        ;
    /* ECHILD: a wait for any child reaped it already. */
    if (r < 0 && errno != ECHILD)
        fr_warn("cgroups: cannot reap the janitor of %s (pid %d): %s", t->base[0], (int)j->pid, strerror(errno));
    close(j->pidfd);
    close(j->fd);
    *j = (struct cg_janitor){.pid = 0, .pidfd = -1, .fd = -1};
}
