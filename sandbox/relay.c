/* relay.c — a supervisor between the caller and the job (fr_policy_apply
 * with a report descriptor).
 *
 * The job's filter notifies denied calls to a listener (notify.c); someone
 * the job cannot reach must hold it. For a program that execs (the exec
 * runtime) that cannot be the job itself, and the caller (fitrun) should
 * not have to be a seccomp supervisor. So the caller's child becomes a
 * small relay and forks the job:
 *
 *   caller's child = relay (the pid the caller knows)   the job (its child)
 *   ---------------------------------------------------  -------------------------------
 *   setpgid(0, 0); socketpair; save interval timers
 *   _Fork() ------------------------------------------->  PDEATHSIG=SIGKILL (relay)
 *                                                          interval timers restored
 *                                                          rlimits ... Landlock (apply.c)
 *                                                          seccomp(NEW_LISTENER) = L
 *   recvmsg = L  <--------------- SCM_RIGHTS -------------  sendmsg(L); close(L)
 *   pidfd(parent), then PDEATHSIG cleared                  return 0 -> exec / the job
 *   close everything else; no_new_privs, no caps,
 *   not dumpable
 *   poll(L, job's pidfd, parent's pidfd):
 *     notification: record it, SIGKILL the caller of the denied call and
 *                   the job (a blocked call never returns)
 *     parent gone:  SIGKILL our process group — the job and everything it
 *                   started (the presets deny setsid/setpgid, so nothing
 *                   leaves it) — and ourselves with it
 *     job exited:   write the record (if any) to report_fd and die of
 *                   SIGSYS, else mirror the job: same exit code or the
 *                   same fatal signal, so the caller's wait4 sees the job.
 *
 * The caller's wait4 rusage includes the job's (the relay reaps it). If the
 * relay is killed (a wall timeout), PR_SET_PDEATHSIG takes the job with it.
 * The relay closes every descriptor it does not need (stdio included) so
 * readers of the job's output see EOF when the job exits.
 *
 * What the job can do to the relay: nothing that changes a verdict. The
 * report descriptor and the listener never exist in the job after it
 * returns from apply; the relay keeps the caller's uid while the job may
 * run under a slot uid; the relay is not dumpable (no ptrace, no
 * /proc/<pid>/mem, no pidfd_getfd of its descriptors); with Landlock the
 * job cannot signal outside its domain, and the presets only let it signal
 * itself unless signals are confined. A job that kills or stops its relay
 * only ends or stalls itself (a `signal` or a wall `timeout`, never a
 * violation). A job that raises SIGSYS is mirrored as that signal.
 *
 * Fallback: a process already under a filter with a listener (EBUSY: a
 * fitrun job running fitrun) installs the filter without one; violations
 * then kill with an unnamed SIGSYS.
 *
 * Everything here is async-signal-safe (system calls only). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

/* Interval timers are not inherited by fork; the job gets the caller's. */
static const int g_timers[3] = {ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF};

/* ---- the job ------------------------------------------------------------------ */

static int job_side(const struct fr_policy *p, int report_fd, pid_t relay, int sock, int slot,
                    const struct itimerval *timers)
{
    /* The job does not report anything itself; not holding the report
     * descriptor also means it cannot forge a record. */
    close(report_fd);
    int rc = 0;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        rc = -errno;
    else if (getppid() != relay)
        rc = -ESRCH; /* the relay died before PDEATHSIG was armed */
    for (int i = 0; !rc && i < 3; i++)
        if ((timers[i].it_value.tv_sec || timers[i].it_value.tv_usec) && setitimer(g_timers[i], &timers[i], NULL) < 0)
            rc = -errno;
    if (!rc)
        rc = fr_apply_steps(p, slot);
    int listener = -1;
    if (!rc && p->filter.mode != FR_FILTER_OFF) {
        listener = fr_filter_install(&p->filter, getpid(), sock, true);
        if (listener == -EBUSY) {
            listener = -1;
            rc = fr_filter_install(&p->filter, getpid(), sock, false);
        } else if (listener < 0) {
            rc = listener;
            listener = -1;
        }
    }
    /* From here on the filter may be installed: only read, write, close,
     * sendmsg on sock and exit (reserved in filter.c) until we return. A
     * failure sends nothing: the relay sees EOF and mirrors our exit. */
    if (!rc)
        rc = fr_notify_send(sock, listener);
    if (listener >= 0)
        close(listener);
    close(sock);
    return rc;
}

/* ---- the relay ------------------------------------------------------------------ */

static void sort3(int v[3])
{
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2 - i; j++)
            if (v[j] > v[j + 1]) {
                int t = v[j];
                v[j] = v[j + 1];
                v[j + 1] = t;
            }
}

/* Close every descriptor except the three given (best effort). */
static void close_all_except(int a, int b, int c)
{
    int keep[3] = {a, b, c};
    sort3(keep);
    unsigned int from = 0;
    for (int i = 0; i < 3; i++) {
        if (keep[i] < 0 || (unsigned int)keep[i] < from)
            continue;
        if ((unsigned int)keep[i] > from)
            (void)close_range(from, (unsigned int)keep[i] - 1, 0);
        from = (unsigned int)keep[i] + 1;
    }
    (void)close_range(from, ~0u, 0);
}

struct relay_result {
    int status; /* the job's wait status */
    int nr;     /* first violation, -1 = none */
    uint32_t arch;
};

/* Our parent (fitrun, a worker) is gone: nobody will kill the job's tree
 * for us. Everything it started is in our process group. */
static _Noreturn void parent_gone(void)
{
    (void)kill(0, SIGKILL);
    fr_die_by_signal(SIGKILL);
}

/* Wait for the job, turning every notification into a kill. */
static void supervise(pid_t job, int pidfd, int listener, int parentfd, struct relay_result *res)
{
    res->nr = -1;
    while (pidfd >= 0) {
        struct pollfd fds[3] = {
            {.fd = pidfd, .events = POLLIN}, {.fd = parentfd, .events = POLLIN}, {.fd = listener, .events = POLLIN}};
        if (poll(fds, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[1].revents & (POLLIN | POLLHUP | POLLERR))
            parent_gone();
        if (fds[2].revents & POLLIN) {
            int nr, who;
            if (fr_notify_read(listener, &nr, &who) == 0) {
                if (res->nr < 0)
                    res->nr = nr;
                /* The caller of the denied call may be a descendant of the
                 * job; it is parked in the call, so its pid is still its. */
                if (who > 0)
                    (void)kill(who, SIGKILL);
                (void)kill(job, SIGKILL); /* our unreaped child: the pid cannot be reused */
            }
        } else if (fds[2].revents & (POLLHUP | POLLERR | POLLNVAL)) {
            close(listener);
            listener = -1; /* poll ignores negative descriptors */
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))
            break;
    }
    while (waitpid(job, &res->status, 0) < 0) {
        if (errno != EINTR) {
            res->status = 125 << 8; /* cannot happen: the job is our child */
            break;
        }
    }
}

static _Noreturn void relay_side(const struct fr_policy *p, int report_fd, pid_t job, int sock, pid_t parent)
{
    /* Watch the parent before giving up the death signal the caller may
     * have armed: from here on its pidfd says when it is gone, and the
     * relay, unlike a SIGKILLed one, can take the job's tree with it. */
    int parentfd = pidfd_open(parent, 0);
    if (parentfd >= 0)
        (void)prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
    if (getppid() != parent)
        parent_gone();
    close_all_except(report_fd, sock, parentfd);
    /* We re-raise the job's fatal signal on ourselves: no core of the relay,
     * and no death by SIGPIPE if the caller closed the report pipe. */
    struct rlimit nocore = {0, 0};
    (void)setrlimit(RLIMIT_CORE, &nocore);
    (void)signal(SIGPIPE, SIG_IGN);
    struct itimerval off;
    memset(&off, 0, sizeof off);
    for (int i = 0; i < 3; i++)
        (void)setitimer(g_timers[i], &off, NULL);

    int pidfd = pidfd_open(job, 0);
    int listener = fr_notify_receive(sock);
    close(sock);
    /* The relay only runs this file's code, but it lives as long as the job:
     * give up every capability but CAP_KILL (a job under a slot's uid is
     * not ours to kill without it; errors ignored: nothing else depends on
     * it), and be non-dumpable — its memory is a copy of the caller's, and
     * a job of the same uid must not read it through /proc/<ppid>/mem. */
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    (void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    (void)fr_caps_relay(&p->caps);

    struct relay_result res;
    supervise(job, pidfd, listener, parentfd, &res);
    if (res.nr >= 0) {
        /* The record keeps the number as the relay got it (the native arch
         * for FR_VIOLATION_FOREIGN's own sentinel). */
        (void)fr_report_write(report_fd, p->filter.arch, res.nr);
        fr_die_by_signal(SIGSYS);
    }
    if (WIFEXITED(res.status))
        _exit(WEXITSTATUS(res.status));
    if (WIFSIGNALED(res.status))
        fr_die_by_signal(WTERMSIG(res.status));
    _exit(125);
}

int fr_relay_apply(const struct fr_policy *p, int report_fd, int slot)
{
    pid_t parent = getppid();
    /* The job's tree must be ours alone to kill: lead a process group
     * (a session leader already does; then this fails, harmlessly). */
    if (getpgid(0) != getpid())
        (void)setpgid(0, 0);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return -errno;
    struct itimerval timers[3];
    for (int i = 0; i < 3; i++)
        if (getitimer(g_timers[i], &timers[i]) < 0)
            memset(&timers[i], 0, sizeof timers[i]);
    pid_t relay = getpid();
    /* _Fork, not fork: async-signal-safe, and it does not run the
     * pthread_atfork handlers of whatever the caller has loaded. */
    pid_t job = _Fork();
    if (job < 0) {
        int rc = -errno;
        close(sv[0]);
        close(sv[1]);
        return rc;
    }
    if (job == 0) {
        close(sv[0]);
        return job_side(p, report_fd, relay, sv[1], slot, timers);
    }
    close(sv[1]);
    relay_side(p, report_fd, job, sv[0], parent);
}
