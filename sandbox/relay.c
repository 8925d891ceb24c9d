/* relay.c — naming violations of a program that execs (the exec preset).
 *
 * A SIGSYS handler does not survive execve (caught signals are reset to
 * SIG_DFL), so SECCOMP_RET_TRAP would kill an exec'd program with an
 * anonymous SIGSYS. Instead the exec preset's filter answers denied calls
 * with SECCOMP_RET_USER_NOTIF, and a small relay process reads the
 * notification, which carries the syscall number, from the filter's
 * listener descriptor:
 *
 *   caller's child (the pid the caller knows)      the job (its child)
 *   ---------------------------------------------  ---------------------------
 *   fr_relay_apply: pipes, _Fork() -------------->  PDEATHSIG=SIGKILL
 *                                                   rlimits, no_new_privs, caps
 *                                                   seccomp(NEW_LISTENER) = L
 *   pidfd_getfd(job, L) <-- "L" ------------------  write(L's number)
 *   ---------------------- ack ------------------>  close(L); return 0 -> exec
 *   poll(L, pidfd):
 *     notification: record nr, SIGKILL the job
 *     job exited: write the record (if any) to report_fd and die of
 *                 SIGSYS, else mirror the job: same exit code or the same
 *                 fatal signal, so the caller's wait4 sees what the job did.
 *
 * The caller's wait4 rusage includes the job's (the relay reaps it), so CPU
 * accounting and classification work unchanged. If the relay is killed (a
 * wall timeout), PR_SET_PDEATHSIG takes the job with it. The relay closes
 * every descriptor it does not need (stdio included) so readers of the
 * job's output see EOF when the job exits.
 *
 * Fallbacks: a kernel without listeners (< 5.0) or a process already under
 * a filter with a listener (EBUSY) gets the filter without one — violations
 * then kill with an unnamed SIGSYS. If the relay cannot take the listener
 * (pidfd_getfd needs ptrace access to the job: Yama ptrace_scope >= 2
 * without CAP_SYS_PTRACE), apply fails with that errno in the job rather
 * than run it with violations that would neither kill nor be reported.
 *
 * Everything here is async-signal-safe (system calls only). */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

static int read_int(int fd, int *v)
{
    for (;;) {
        ssize_t n = read(fd, v, sizeof *v);
        if (n == (ssize_t)sizeof *v)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        return -1;
    }
}

static void write_int(int fd, int v)
{
    while (write(fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
}

/* ---- the job ------------------------------------------------------------------ */

static int job_side(const struct fr_policy *p, int report_fd, pid_t relay, int up_w, int down_r)
{
    /* The job does not report anything itself; not holding the report
     * descriptor also means it cannot forge a record. */
    close(report_fd);
    int rc = 0;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        rc = -errno;
    else if (getppid() != relay)
        rc = -ESRCH; /* the relay died before PDEATHSIG was armed */
    if (!rc)
        rc = fr_apply_common(p);
    /* The relay takes the listener with pidfd_getfd, which needs ptrace
     * access to us: a caller that switched uid left us non-dumpable. The
     * execve that follows makes the job dumpable anyway (kernel rule for
     * an ordinary binary), so this exposes nothing the job would not. */
    if (!rc && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
        rc = -errno;
    int listener = -1;
    if (!rc) {
        listener = fr_filter_install(&p->filter, getpid(), true);
        if (listener == -EBUSY || listener == -EINVAL) {
            listener = -1;
            rc = fr_filter_install(&p->filter, getpid(), false);
        } else if (listener < 0) {
            rc = listener;
            listener = -1;
        }
    }
    /* From here on the filter may be installed: only read, write and close
     * (reserved in filter.c, so always allowed) until we return. */
    write_int(up_w, rc < 0 ? -1 : listener);
    if (listener >= 0) {
        int ack = -EPIPE;
        if (read_int(down_r, &ack) < 0 || ack < 0)
            rc = ack < 0 ? ack : -EPIPE;
        close(listener);
    }
    close(up_w);
    close(down_r);
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
    int keep[3] = { a, b, c };
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
    int status;     /* the job's wait status */
    int nr;         /* first violation, -1 = none */
    uint32_t arch;
};

/* Wait for the job, turning every notification into a kill. */
static void supervise(pid_t job, int pidfd, int listener, struct relay_result *res)
{
    res->nr = -1;
    while (pidfd >= 0) {
        struct pollfd fds[2] = { { .fd = pidfd, .events = POLLIN }, { .fd = listener, .events = POLLIN } };
        if (poll(fds, listener >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (listener >= 0 && (fds[1].revents & POLLIN)) {
            struct seccomp_notif req;
            memset(&req, 0, sizeof req); /* the kernel insists on a zeroed buffer */
            if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) == 0) {
                if (res->nr < 0) {
                    res->nr = req.data.nr;
                    res->arch = req.data.arch;
                }
                (void)kill(job, SIGKILL); /* our unreaped child: the pid cannot be reused */
            }
        } else if (listener >= 0 && (fds[1].revents & (POLLHUP | POLLERR | POLLNVAL))) {
            close(listener);
            listener = -1;
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

static _Noreturn void relay_side(const struct fr_policy *p, int report_fd, pid_t job, int up_r, int down_w)
{
    close_all_except(report_fd, up_r, down_w);
    /* We re-raise the job's fatal signal on ourselves: no core of the relay,
     * and no death by SIGPIPE if the caller closed the report pipe. */
    struct rlimit nocore = { 0, 0 };
    (void)setrlimit(RLIMIT_CORE, &nocore);
    (void)signal(SIGPIPE, SIG_IGN);

    int pidfd = pidfd_open(job, 0);
    int listener = -1, theirs;
    if (read_int(up_r, &theirs) == 0 && theirs >= 0) {
        listener = pidfd >= 0 ? pidfd_getfd(pidfd, theirs, 0) : -1;
        write_int(down_w, listener >= 0 ? 0 : -(errno ? errno : EPERM));
    }
    close(up_r);
    close(down_w);
    /* The relay only runs this file's code, but it lives as long as the job:
     * give up what the job gave up too (errors ignored: nothing depends on
     * it), and be non-dumpable — its memory is a copy of the caller's, and
     * the job (same uid) must not read it through /proc/<ppid>/mem. */
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    (void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    (void)fr_caps_apply(&p->caps);

    struct relay_result res;
    supervise(job, pidfd, listener, &res);
    if (res.nr >= 0) {
        (void)fr_report_write(report_fd, res.arch, res.nr);
        fr_die_by_signal(SIGSYS);
    }
    if (WIFEXITED(res.status))
        _exit(WEXITSTATUS(res.status));
    if (WIFSIGNALED(res.status))
        fr_die_by_signal(WTERMSIG(res.status));
    _exit(125);
}

int fr_relay_apply(const struct fr_policy *p, int report_fd)
{
    int up[2], down[2];
    if (pipe2(up, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(down, O_CLOEXEC) < 0) {
        int rc = -errno;
        close(up[0]);
        close(up[1]);
        return rc;
    }
    pid_t relay = getpid();
    /* _Fork, not fork: async-signal-safe, and it does not run the
     * pthread_atfork handlers of whatever the caller has loaded. */
    pid_t job = _Fork();
    if (job < 0) {
        int rc = -errno;
        close(up[0]);
        close(up[1]);
        close(down[0]);
        close(down[1]);
        return rc;
    }
    if (job == 0) {
        close(up[0]);
        close(down[1]);
        return job_side(p, report_fd, relay, up[1], down[0]);
    }
    close(up[1]);
    close(down[0]);
    relay_side(p, report_fd, job, up[0], down[1]);
}
