/* worker.c — fork isolation's worker (the warm Python runtime's `isolation
 * = fork`): a loop that forks one child per RUN, supervises it and reports
 * how it ended, and, in each child, the set-up before its code runs.
 *
 *   worker (this loop, never Python again)      child (returns 1 to the interpreter)
 *   ------------------------------------------  ---------------------------------------
 *   recvmsg RUN (+ 4 fds, or its own pipes)
 *   socketpair = ours, theirs
 *   before_fork (PyOS_BeforeFork); fork() --->  join the slot's cgroups
 *   after_fork_parent
 *                                               after_fork (PyOS_AfterFork_Child)
 *                                               setpgid; PDEATHSIG = SIGKILL
 *                                               0 null 1 out 2 err 3 report 4 theirs 5 job,
 *                                               the rest closed (the ruleset kept)
 *                                               read the job from 5, close it
 *                                               ITIMER_PROF backstop; return 1: the
 *                                               interpreter decodes the job, then
 *   STARTED + pidfd on the status socket        fr_policy_apply_notify(4): listener ->
 *   fr_notify_receive(ours) = L  <-------------  the prediction runs
 *   poll(pidfd, L): a denied call kills it
 *   killpg; wait4; EXITED
 *
 * Why C: after every fork each page of the worker is copy-on-write again,
 * and a Python loop between two forks writes hundreds of them (reference
 * counts, the allocator's pools, frames): each first write is a page
 * fault, which a hypervisor that shadows page tables makes cost 15-60 µs.
 * This loop writes its stack, and the interpreter's fork handlers (below)
 * what little they write (the zygote's flush of its streams, a few
 * pages). The child's set-up is
 * system calls here too (docs/python-runtime.md, "The prediction's
 * child", says what each step is for).
 *
 * Around each fork the interpreter's own fork work runs as os.fork() runs
 * it (before_fork, after_fork_parent, after_fork in the child): its
 * handlers, and its import lock, which a child's after-fork work expects
 * held (Python 3.13 unlocks it there). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "fitrun/pyproto.h"
#include "internal.h"

/* The messages fitrun sends a worker are 8 bytes at most; a longer one is
 * read this far and refused. */
#define MSG_CAP 64
/* setitimer overflows beyond about 31 years; no budget is that long. */
#define ITIMER_MAX_S 1000000000ull

static void close_fds(const int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* ---- messages ------------------------------------------------------------------ */

/* Send one message, with descriptor fd (>= 0) or none; blocking. 0, or -1
 * with errno (EPIPE: fitrun is gone). */
static int send_msg(int sock, const void *m, size_t len, int fd)
{
    return fr_send_fds(sock, m, len, &fd, fd >= 0, MSG_NOSIGNAL);
}

/* The next message of the channel into buf (MSG_CAP bytes), its
 * descriptors into fds (*nfds of them, at most FR_PY_RUN_FDS). Returns its
 * length (a truncated message or control data: MSG_CAP + 1, which no
 * layout has), 0 at EOF, -1 with errno. */
static ssize_t recv_msg(int chan, char *buf, int *fds, int *nfds)
{
    union {
        char buf[CMSG_SPACE(FR_PY_RUN_FDS * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct iovec iov = {buf, MSG_CAP};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t r;
    do
        r = recvmsg(chan, &mh, MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR);
    *nfds = 0;
    if (r < 0)
        return -1;
    *nfds = fr_received_fds(&mh, fds, FR_PY_RUN_FDS);
    if (r > 0 && mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
        return MSG_CAP + 1;
    return r;
}

static void put32(char *p, uint32_t v)
{
    memcpy(p, &v, sizeof v);
}

static void put64(char *p, int64_t v)
{
    memcpy(p, &v, sizeof v);
}

/* FAILED for job seq. Unanswered when fitrun is gone: the channel's EOF,
 * read next, ends the loop. */
static void send_failed(int chan, uint32_t seq, const char *why)
{
    char m[FR_PY_MSG_FAILED_MIN + FR_PY_FAILED_TEXT_MAX] = {'F'};
    put32(m + 4, seq);
    size_t n = strlen(why);
    if (n > FR_PY_FAILED_TEXT_MAX)
        n = FR_PY_FAILED_TEXT_MAX;
    memcpy(m + FR_PY_MSG_FAILED_MIN, why, n);
    (void)send_msg(chan, m, FR_PY_MSG_FAILED_MIN + n, -1);
}

/* ---- the child ------------------------------------------------------------------- */

/* Every source onto its target (0..5, in order), then everything else but
 * keep closed. Each source first moves above the targets, so that no dup2
 * overwrites a source; keep must be above them too. The targets are
 * inheritable (dup2), as a script's stdio is. 0, or -1. */
static int layout_fds(const int src[6], int keep)
{
    enum { TOP = 6 };
    int moved[6];
    if (keep >= 0 && keep < TOP)
        return -1;
    for (int i = 0; i < 6; i++)
        if ((moved[i] = fcntl(src[i], F_DUPFD_CLOEXEC, TOP)) < 0)
            return -1;
    for (int i = 0; i < 6; i++)
        if (dup2(moved[i], i) < 0)
            return -1;
    if (keep >= 0) {
        if (keep > TOP && close_range(TOP, (unsigned)keep - 1, 0) < 0)
            return -1;
        return close_range((unsigned)keep + 1, ~0u, 0);
    }
    return close_range(TOP, ~0u, 0);
}

/* n bytes of fd into buf. fd stays non-blocking: it is the description
 * fitrun reads too (to discard what a child left unread), and fitrun must
 * never block on it; so the child waits with poll. 0, or -1 with errno
 * (0: it ended first; *got says after how many). */
static int read_exactly(int fd, char *buf, size_t n, size_t *got)
{
    *got = 0;
    while (*got < n) {
        ssize_t r = read(fd, buf + *got, n - *got);
        if (r > 0) {
            *got += (size_t)r;
            continue;
        }
        if (r == 0) {
            errno = 0;
            return -1;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            return -1;
    }
    return 0;
}

/* The job fitrun framed on the job pipe: its length (u32), then that many
 * bytes; the pipe closed after. Into child, or child->error. */
static void read_job(struct fr_worker_child *child)
{
    uint32_t len;
    size_t got;
    int rc = read_exactly(FR_PY_CHILD_JOB_FD, (char *)&len, sizeof len, &got);
    size_t want = sizeof len;
    if (rc == 0) {
        want = len;
        child->job = malloc(len ? len : 1);
        if (!child->job) {
            snprintf(child->error, sizeof child->error, "no memory for a job of %u bytes", (unsigned)len);
            return;
        }
        rc = read_exactly(FR_PY_CHILD_JOB_FD, child->job, len, &got);
        child->job_len = got;
    }
    if (rc < 0 && errno == 0)
        snprintf(child->error, sizeof child->error, "the job pipe ended after %zu of %zu bytes", got, want);
    else if (rc < 0)
        snprintf(child->error, sizeof child->error, "reading the job: %s", strerror(errno));
    (void)close(FR_PY_CHILD_JOB_FD); /* nothing of the prediction ever holds it */
}

/* The CPU backstop: should fitrun be late to kill the child at its budget,
 * SIGPROF's default action ends it; RLIMIT_CPU (the policy's) is the last
 * resort when its code disarms the timer. */
static int arm_backstop(uint64_t ms)
{
    if (!ms)
        return 0;
    uint64_t s = ms / 1000u;
    struct itimerval it = {.it_value = {.tv_sec = (time_t)(s > ITIMER_MAX_S ? ITIMER_MAX_S : s),
                                        .tv_usec = (suseconds_t)(s > ITIMER_MAX_S ? 0 : (ms % 1000u) * 1000u)}};
    return setitimer(ITIMER_PROF, &it, NULL);
}

/* Write "0" (the writer itself) to each cgroup.procs file, so that all the
 * child allocates is charged to, and limited by, its slot. */
static void join_cgroups(const struct fr_worker_config *cfg)
{
    for (int i = 0; i < cfg->ncgroups; i++) {
        ssize_t w;
        do
            w = write(cfg->cgroup_fds[i], "0", 1);
        while (w < 0 && errno == EINTR);
        if (w != 1) {
            char msg[200];
            int n = snprintf(msg, sizeof msg, "fitrun python worker %d: cannot join its cgroup: %s\n", cfg->slot,
                             strerror(w < 0 ? errno : EIO));
            if (n > 0)
                (void)!write(STDERR_FILENO, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
            _exit(FR_PY_EXIT_CHILD_SETUP);
        }
    }
}

/* In the forked child: everything before its job is decoded and the
 * sandbox applied, which the caller does. Returns with the job read (or
 * child->error). */
static void child_side(const struct fr_worker_config *cfg, const int fds[FR_PY_RUN_FDS], int sock, pid_t worker,
                       struct fr_worker_child *child)
{
    join_cgroups(cfg);
    if (cfg->after_fork)
        cfg->after_fork();
    /* In its own group, so that the worker kills anything it leaves; and
     * dead with the worker, race-free: a worker dead before the prctl is
     * already not getppid(). */
    if (setpgid(0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
        _exit(FR_PY_EXIT_CHILD_SETUP);
    if (getppid() != worker)
        _exit(FR_PY_EXIT_ORPHANED);
    const int src[6] = {cfg->null_fd, fds[2], fds[3], fds[1], sock, fds[0]};
    if (layout_fds(src, cfg->policy ? fr_policy_fd(cfg->policy) : -1) < 0)
        _exit(FR_PY_EXIT_CHILD_SETUP);
    /* The write ends as its code must find them: blocking, and with no flag
     * a previous child of the same pipes left on their shared open files
     * (O_DIRECT: packet mode, which would cut what fitrun reads; O_ASYNC,
     * O_APPEND). fitrun's read ends are open files of their own. */
    for (int fd = STDOUT_FILENO; fd <= FR_PY_CHILD_REPORT_FD; fd++)
        if (fcntl(fd, F_SETFL, 0) < 0)
            _exit(FR_PY_EXIT_CHILD_SETUP);
    memset(child, 0, sizeof *child);
    read_job(child);
    if (!child->error[0] && arm_backstop(cfg->backstop_ms) < 0)
        _exit(FR_PY_EXIT_CHILD_SETUP);
}

/* ---- the worker ------------------------------------------------------------------- */

/* Until the child is gone: the first denied call its listener reports (-1:
 * none); each one kills the calling thread and the child (the call never
 * returns: nothing answers it). */
static int supervise(int pidfd, int listener)
{
    int violation = -1;
    struct pollfd p[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = listener, .events = POLLIN}};
    for (;;) {
        if (poll(p, listener >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            break; /* cannot wait: end the child (below) */
        }
        if (listener >= 0 && p[1].revents & POLLIN) {
            int nr = -1, who = 0;
            if (fr_notify_read(listener, &nr, &who) == 0) {
                if (violation < 0)
                    violation = nr;
                if (who > 0) /* parked in the call: its pid is still its own */
                    (void)kill(who, SIGKILL);
                (void)pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
            }
        } else if (listener >= 0 && p[1].revents) {
            listener = -1; /* hung up: no task is left under the filter */
        }
        if (p[0].revents)
            break;
    }
    return violation;
}

static int64_t tv_us(struct timeval tv)
{
    return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

/* Reap the child (our own: wait4 cannot fail but for EINTR); its wait
 * status, its usage into *ru. */
static int reap(pid_t pid, struct rusage *ru)
{
    int ws = 0;
    memset(ru, 0, sizeof *ru);
    while (wait4(pid, &ws, 0, ru) < 0 && errno == EINTR) {
    }
    return ws;
}

/* Reap the child; EXITED. 0, or -1 (fitrun is gone). */
static int report_exit(int chan, uint32_t seq, pid_t pid, bool applied, int violation, uint64_t t0, uint64_t t_fork)
{
    struct rusage ru;
    int ws = reap(pid, &ru);
    uint64_t t_end = fr_now_ns();
    char m[FR_PY_MSG_EXITED_LEN] = {'E', (char)(applied ? FR_PY_EXITED_APPLIED : 0)};
    put32(m + 4, seq);
    put32(m + 8, (uint32_t)ws);
    put32(m + 12, (uint32_t)violation);
    put64(m + 16, tv_us(ru.ru_utime));
    put64(m + 24, tv_us(ru.ru_stime));
    put64(m + 32, ru.ru_maxrss);
    put64(m + 40, (int64_t)((t_end - t0) / 1000u)); /* µs */
    put64(m + 48, (int64_t)((t_fork - t0) / 1000u));
    return send_msg(chan, m, sizeof m, -1);
}

/* The worker's side of one child (pid: ours, not reaped; sock: our end of
 * its socket): STARTED with its pidfd, supervision, EXITED. 0, or -1 when
 * fitrun is gone. */
static int watch_child(const struct fr_worker_config *cfg, uint32_t seq, pid_t pid, int sock, uint64_t t0,
                       uint64_t t_fork)
{
    char why[200];
    /* fitrun kills the child through this pidfd (CPU budget, wall time,
     * output caps): race-free, whatever becomes of the pid. Opened before
     * wait4, the pid is surely the child's. */
    int pidfd = pidfd_open(pid, 0);
    if (pidfd < 0) {
        snprintf(why, sizeof why, "pidfd_open: %s", strerror(errno));
        (void)kill(pid, SIGKILL); /* our child, not reaped yet: the pid is its own */
        (void)killpg(pid, SIGKILL);
        struct rusage ru;
        (void)reap(pid, &ru);
        send_failed(cfg->chan, seq, why);
        return 0;
    }
    char started[FR_PY_MSG_STARTED_LEN] = {'S'};
    put32(started + 4, seq);
    put32(started + 8, (uint32_t)pid);
    put64(started + 12, 0);
    if (send_msg(cfg->status, started, sizeof started, pidfd) < 0) {
        int e = errno;
        (void)pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
        (void)killpg(pid, SIGKILL);
        struct rusage ru;
        (void)reap(pid, &ru);
        close(pidfd);
        if (e == EPIPE || e == ECONNRESET)
            return -1;
        snprintf(why, sizeof why, "sending STARTED: %s", strerror(e));
        send_failed(cfg->chan, seq, why);
        return 0;
    }
    /* Blocks until the child applied the sandbox, or died (-EPIPE). */
    int listener = cfg->policy ? fr_notify_receive(sock) : -ENODATA;
    bool applied = listener >= 0 || listener == -ENODATA;
    int violation = supervise(pidfd, listener);
    if (listener >= 0)
        close(listener);
    /* Anything else in its process group goes too. Safe before wait4: the
     * zombie keeps the pid (and the group id) from being reused. */
    (void)killpg(pid, SIGKILL);
    int rc = report_exit(cfg->chan, seq, pid, applied, violation, t0, t_fork);
    close(pidfd);
    return rc;
}

/* One RUN. Returns 1 in the child, 0 in the worker when the job was
 * reported (or could not be started: FAILED), -1 when fitrun is gone. The
 * per-job descriptors (own false) are the child's: closed in the worker. */
static int run_one(const struct fr_worker_config *cfg, pid_t worker, uint32_t seq, const int fds[FR_PY_RUN_FDS],
                   bool own, struct fr_worker_child *child)
{
    char why[200];
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(why, sizeof why, "socketpair: %s", strerror(errno));
        send_failed(cfg->chan, seq, why);
        return 0;
    }
    uint64_t t0 = fr_now_ns();
    if (cfg->before_fork)
        cfg->before_fork();
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        child_side(cfg, fds, sv[1], worker, child);
        return 1;
    }
    int e = errno;
    if (cfg->after_fork_parent)
        cfg->after_fork_parent();
    uint64_t t_fork = fr_now_ns();
    close(sv[1]);
    if (!own)
        close_fds(fds, FR_PY_RUN_FDS); /* the child has them: fitrun sees EOF once it is done */
    if (pid < 0) {
        close(sv[0]);
        snprintf(why, sizeof why, "fork: %s", strerror(e));
        send_failed(cfg->chan, seq, why);
        return 0;
    }
    int rc = watch_child(cfg, seq, pid, sv[0], t0, t_fork);
    close(sv[0]);
    return rc;
}

int fr_worker_serve(const struct fr_worker_config *cfg, struct fr_worker_child *child)
{
    int own[FR_PY_RUN_FDS] = {-1, -1, -1, -1};
    bool have_own = false;
    pid_t worker = getpid();
    for (;;) {
        char m[MSG_CAP + 1];
        int fds[FR_PY_RUN_FDS];
        int nfds;
        ssize_t n = recv_msg(cfg->chan, m, fds, &nfds);
        if (n <= 0) {
            int e = errno;
            close_fds(fds, nfds);
            close_fds(own, FR_PY_RUN_FDS);
            errno = e;
            return n == 0 || e == ECONNRESET ? 0 : -1;
        }
        if (n == FR_PY_MSG_PIPES_LEN && m[0] == 'P' && nfds == FR_PY_RUN_FDS && !have_own) {
            memcpy(own, fds, sizeof own);
            have_own = true;
            continue;
        }
        if (n == FR_PY_MSG_RUN_LEN && m[0] == 'R' && (nfds == FR_PY_RUN_FDS || (nfds == 0 && have_own))) {
            uint32_t seq;
            memcpy(&seq, m + 4, sizeof seq);
            int r = run_one(cfg, worker, seq, nfds ? fds : own, nfds == 0, child);
            if (r == 1)
                return 1; /* the child: its layout closed everything else */
            if (r < 0) {
                close_fds(own, FR_PY_RUN_FDS);
                return 0; /* fitrun is gone */
            }
            continue;
        }
        char why[96];
        snprintf(why, sizeof why, "unreadable message of %zd bytes with %d fds", n > MSG_CAP ? (ssize_t)-1 : n, nfds);
        close_fds(fds, nfds);
        send_failed(cfg->chan, 0, why);
    }
}

void fr_worker_child_free(struct fr_worker_child *child)
{
    if (!child)
        return;
    free(child->job);
    child->job = NULL;
    child->job_len = 0;
}
