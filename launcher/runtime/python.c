/* python.c — the warm Python runtime (kind = python): the C side.
 *
 * One interpreter per run, the "zygote" (launcher/runtime/python/
 * fitrun_runtime.py), is started by start(): it runs the profile's prelude
 * once, builds the sandbox policy once (libfitrun_sandbox.so through
 * ctypes) and then forks one worker per slot on request. A worker reads job
 * lines from its channel and forks a fresh sandboxed child per prediction;
 * it answers each job with one line of raw facts (wait status, rusage,
 * violation, captured output, outputs, the exception's type and text),
 * which this file turns into a struct fr_raw for the pool to classify.
 * docs/python-runtime.md is the protocol; keep the two in step.
 *
 *   fitrun ──control (SOCK_SEQPACKET, fd 3 in the zygote)── zygote
 *     │                                                     │ fork per slot
 *     └──channel k (SOCK_STREAM, passed by SCM_RIGHTS)───── worker k
 *                                                           │ fork per job
 *                                                           child: sandbox, exec(code), entry(input)...
 *
 * Why fitrun creates the channels and passes them over the control socket
 * (rather than inheriting 2N pipes at exec): a dead worker is replaced by
 * the same path that made it, at any time, with no fd numbers on a command
 * line to keep in step.
 *
 * The job line sent to a worker never contains "expected": `passed` is
 * computed here, so a prediction cannot find the answers in its own memory
 * (gc.get_objects() in a child sees everything the worker had parsed) —
 * LLM-written code has been seen to look for them.
 *
 * Timeouts. Each child arms ITIMER_PROF (ms-resolution CPU limit; SIGPROF's
 * default action kills it) and the sandbox sets RLIMIT_CPU as a backstop;
 * the worker enforces the wall time itself. The pool's own wall deadline
 * starts a little earlier (at begin), so it usually fires first: abort()
 * then asks the worker (SIGUSR1) to kill its child and report as usual, so
 * the result keeps the child's real CPU time and output and the worker
 * lives on; only if no report comes within PY_ABORT_GRACE_MS is the worker
 * killed (its child dies with it, PR_SET_PDEATHSIG) and replaced — a fork
 * of the warm zygote.
 *
 * Start-up blocks (the pool's loop does not run yet) but notices a pending
 * SIGINT/SIGTERM/SIGHUP, so Ctrl-C during a slow prelude works. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/timerfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/runtime.h"
#include "fitrun/util.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define PY_SCRIPT "fitrun_runtime.py"
#define PY_CONTROL_FD 3
/* Cap on the encoded outputs of one prediction (the worker kills a child
 * that writes more and reports output_limit). Far above any ARC grid. */
#define PY_RESULT_CAP (64ull << 20)
/* Start-up above this gets a warning naming the usual cause. */
#define PY_SLOW_START_MS 1000
#define PY_MSG_MAX 65536
/* After asking a worker to stop its job (SIGUSR1), how long its report may
 * take before the worker itself is killed. */
#define PY_ABORT_GRACE_MS 1000

struct pyslot {
    int chan;                   /* our end of the worker's channel; -1 = none */
    pid_t pid;                  /* the worker; 0 until its "spawned" event */
    int pidfd;                  /* the worker, for signals (it is not our child: its pid
                                   could be reused once the zygote has reaped it); -1 = none */
    unsigned token;             /* spawn token of the current worker */
    const struct fr_job *job;   /* in flight, or NULL */
    uint64_t begin_ns;
    char *wbuf;                 /* job line still to send */
    size_t wlen, woff;
    char *rbuf;                 /* result line being received */
    size_t rlen, rcap;
    int timer;                  /* timerfd: grace after an abort request; -1 = none yet */
    enum fr_abort_reason aborting; /* 0, or why the worker was asked to stop the job */
};

/* A worker abandoned (killed) before its pid was known: kill it as soon as
 * its "spawned" event names it. */
#define PY_MAX_DOOMED 64

struct pyrt {
    pid_t zygote;
    int ctl;
    int nslots;
    struct pyslot *slots;
    unsigned next_token;
    bool stopping;
    unsigned doomed[PY_MAX_DOOMED];
    int ndoomed;
    char script[PATH_MAX];
    char lib[PATH_MAX];
    char *policy_kv;
    size_t line_cap;            /* longest result line accepted */
};

static struct pyrt *PY(struct fr_runtime *rt)
{
    return rt->priv;
}

/* ---- finding our files --------------------------------------------------- */

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Directory of the running binary, e.g. "/usr/bin" or the build tree. */
static int exe_dir(const char *self_exe, char *buf, size_t n)
{
    char tmp[PATH_MAX];
    if (self_exe && *self_exe)
        snprintf(tmp, sizeof tmp, "%s", self_exe);
    else {
        ssize_t len = readlink("/proc/self/exe", tmp, sizeof tmp - 1);
        if (len < 0)
            return -1;
        tmp[len] = '\0';
    }
    char *slash = strrchr(tmp, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    snprintf(buf, n, "%s", *tmp ? tmp : "/");
    return 0;
}

/* fitrun_runtime.py: $FITRUN_PYTHON_DIR, else <bindir>/share/fitrun/python
 * (build tree: the binary sits at the top of it), else
 * <bindir>/../share/fitrun/python (installed). */
static int find_script(const char *self_exe, char *out, size_t n, char *err, size_t errlen)
{
    const char *env = getenv("FITRUN_PYTHON_DIR");
    if (env && *env) {
        int w = snprintf(out, n, "%s/%s", env, PY_SCRIPT);
        if (w > 0 && (size_t)w < n && is_file(out))
            return 0;
        snprintf(err, errlen, "FITRUN_PYTHON_DIR=%s: no %s there", env, PY_SCRIPT);
        return -1;
    }
    char dir[PATH_MAX];
    if (exe_dir(self_exe, dir, sizeof dir) < 0) {
        snprintf(err, errlen, "cannot locate the fitrun binary: %s", strerror(errno));
        return -1;
    }
    static const char *const rel[] = {"share/fitrun/python", "../share/fitrun/python"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        int w = snprintf(out, n, "%s/%s/%s", dir, rel[i], PY_SCRIPT);
        if (w > 0 && (size_t)w < n && is_file(out))
            return 0;
    }
    snprintf(err, errlen, "cannot find %s in %s/share/fitrun/python or %s/../share/fitrun/python "
             "(set FITRUN_PYTHON_DIR)", PY_SCRIPT, dir, dir);
    return -1;
}

/* libfitrun_sandbox.so: $FITRUN_SANDBOX_LIB, else <bindir>/lib (build tree),
 * else <prefix>/lib[/<multiarch>]/fitrun (CMake's install, whose LIBDIR
 * is lib/<multiarch> on Debian with prefix /usr and lib elsewhere). */
static int find_lib(const char *self_exe, char *out, size_t n, char *err, size_t errlen)
{
    const char *env = getenv("FITRUN_SANDBOX_LIB");
    if (env && *env) {
        snprintf(out, n, "%s", env);
        if (is_file(out))
            return 0;
        snprintf(err, errlen, "FITRUN_SANDBOX_LIB=%s: no such file", env);
        return -1;
    }
    char dir[PATH_MAX];
    if (exe_dir(self_exe, dir, sizeof dir) < 0) {
        snprintf(err, errlen, "cannot locate the fitrun binary: %s", strerror(errno));
        return -1;
    }
    int w = snprintf(out, n, "%s/lib/libfitrun_sandbox.so", dir);
    if (w > 0 && (size_t)w < n && is_file(out))
        return 0;
    static const char *const pats[] = {"/../lib/fitrun/libfitrun_sandbox.so",
                                       "/../lib*/*/fitrun/libfitrun_sandbox.so",
                                       "/../lib64/fitrun/libfitrun_sandbox.so"};
    for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++) {
        char pat[PATH_MAX + 64];
        snprintf(pat, sizeof pat, "%s%s", dir, pats[i]);
        glob_t g;
        if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
            snprintf(out, n, "%s", g.gl_pathv[0]);
            globfree(&g);
            return 0;
        }
        globfree(&g);
    }
    snprintf(err, errlen, "cannot find libfitrun_sandbox.so in %s/lib or %s/../lib/.../fitrun "
             "(set FITRUN_SANDBOX_LIB)", dir, dir);
    return -1;
}

/* ---- the policy, as text for fr_policy_build_kv() in the zygote ---------- */

static void kv_add(char *buf, size_t n, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void kv_add(char *buf, size_t n, size_t *len, const char *fmt, ...)
{
    if (*len >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *len, n - *len, fmt, ap);
    va_end(ap);
    if (w > 0)
        *len += (size_t)w;
}

static void kv_list(char *buf, size_t n, size_t *len, const char *key, char *const *names)
{
    if (!names[0])
        return;
    kv_add(buf, n, len, ";%s=", key);
    for (size_t i = 0; names[i]; i++)
        kv_add(buf, n, len, "%s%s", i ? "," : "", names[i]);
}

/* "preset=python;cpu_time=2000ms;memory=536870912;..." — only what the
 * profile sets (0 = inherited is left out). Pure. */
static char *policy_kv(const struct fr_profile *p)
{
    size_t n = 8192, len = 0;
    char *buf = malloc(n);
    if (!buf)
        return NULL;
    buf[0] = '\0';
    kv_add(buf, n, &len, "preset=%s", fr_preset_name(p->preset));
    if (p->cpu_time_ms)
        kv_add(buf, n, &len, ";cpu_time=%llums", (unsigned long long)p->cpu_time_ms);
    if (p->memory)
        kv_add(buf, n, &len, ";memory=%llu", (unsigned long long)p->memory);
    if (p->fsize)
        kv_add(buf, n, &len, ";fsize=%llu", (unsigned long long)p->fsize);
    if (p->nofile)
        kv_add(buf, n, &len, ";nofile=%llu", (unsigned long long)p->nofile);
    if (p->processes)
        kv_add(buf, n, &len, ";processes=%llu", (unsigned long long)p->processes);
    if (p->stack)
        kv_add(buf, n, &len, ";stack=%llu", (unsigned long long)p->stack);
    kv_list(buf, n, &len, "allow", p->allow);
    kv_list(buf, n, &len, "deny", p->deny);
    kv_list(buf, n, &len, "keep_caps", p->keep_caps);
    kv_add(buf, n, &len, ";spec_allow=%s", p->spec_allow ? "true" : "false");
    if (len >= n) {
        free(buf);
        errno = E2BIG;
        return NULL;
    }
    return buf;
}

/* ---- control socket ------------------------------------------------------ */

static int ctl_send(struct pyrt *py, const char *msg, int fd)
{
    struct iovec iov = {.iov_base = (void *)msg, .iov_len = strlen(msg)};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&u, 0, sizeof u);
        mh.msg_control = u.buf;
        mh.msg_controllen = sizeof u.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
    }
    ssize_t w;
    do
        w = sendmsg(py->ctl, &mh, MSG_NOSIGNAL);
    while (w < 0 && errno == EINTR);
    return w < 0 ? -1 : 0;
}

/* Ask the zygote for a worker for `slot`: a fresh channel, our end
 * non-blocking and watched (EPOLLIN: results, and EOF when it dies). */
static int spawn_worker(struct fr_runtime *rt, int slot, bool watch)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    /* Only our end is non-blocking: the worker reads with blocking I/O. */
    int fl = fcntl(sv[0], F_GETFL);
    if (fl < 0 || fcntl(sv[0], F_SETFL, fl | O_NONBLOCK) < 0)
        goto fail;
    unsigned token = py->next_token++;
    char msg[96];
    snprintf(msg, sizeof msg, "{\"op\":\"spawn\",\"slot\":%u}", token);
    if (ctl_send(py, msg, sv[1]) < 0)
        goto fail;
    close(sv[1]);
    if (watch && fr_host_watch(rt->host, sv[0], EPOLLIN, slot) < 0) {
        int e = errno;
        close(sv[0]);
        errno = e;
        return -1;
    }
    s->chan = sv[0];
    s->pid = 0;
    if (s->pidfd >= 0)
        close(s->pidfd);
    s->pidfd = -1;
    s->token = token;
    s->rlen = 0;
    return 0;
fail:;
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    errno = e;
    return -1;
}

static void drop_channel(struct fr_runtime *rt, struct pyslot *s)
{
    if (s->chan < 0)
        return;
    fr_host_unwatch(rt->host, s->chan);
    close(s->chan);
    s->chan = -1;
}

static int signal_worker(struct pyslot *s, int sig)
{
    if (s->pidfd >= 0)
        return pidfd_send_signal(s->pidfd, sig, NULL, 0);
    if (s->pid > 0)
        return kill(s->pid, sig);
    errno = ESRCH;
    return -1;
}

/* Kill the worker of slot s (its prediction child dies with it), now or as
 * soon as its pid is known. */
static void kill_worker(struct pyrt *py, struct pyslot *s)
{
    if (s->pid > 0)
        signal_worker(s, SIGKILL);
    else if (py->ndoomed < PY_MAX_DOOMED)
        py->doomed[py->ndoomed++] = s->token;
}

static bool take_doomed(struct pyrt *py, unsigned token)
{
    for (int i = 0; i < py->ndoomed; i++)
        if (py->doomed[i] == token) {
            py->doomed[i] = py->doomed[--py->ndoomed];
            return true;
        }
    return false;
}

static struct pyslot *slot_of_token(struct pyrt *py, unsigned token)
{
    for (int i = 0; i < py->nslots; i++)
        if (py->slots[i].chan >= 0 && py->slots[i].token == token)
            return &py->slots[i];
    return NULL;
}

/* One control message from the zygote (after start-up). */
static void ctl_message(struct fr_runtime *rt, const char *msg, size_t len)
{
    struct pyrt *py = PY(rt);
    json_error_t jerr;
    json_t *m = json_loadb(msg, len, 0, &jerr);
    const char *ev = m ? json_string_value(json_object_get(m, "event")) : NULL;
    json_int_t token = m ? json_integer_value(json_object_get(m, "slot")) : -1;
    json_int_t pid = m ? json_integer_value(json_object_get(m, "pid")) : 0;
    if (!ev) {
        fr_warn("python runtime: unreadable control message '%.*s'", (int)(len > 200 ? 200 : len), msg);
    } else if (!strcmp(ev, "spawned")) {
        struct pyslot *s = slot_of_token(py, (unsigned)token);
        if (take_doomed(py, (unsigned)token) && pid > 0) {
            kill((pid_t)pid, SIGKILL); /* just forked: it cannot have been reaped yet */
        } else if (s && pid > 0) {
            s->pid = (pid_t)pid;
            s->pidfd = pidfd_open(s->pid, 0); /* -1 if it died already: EOF will say so */
        }
    } else if (!strcmp(ev, "worker_exit")) {
        /* Deaths are noticed (and handled) by EOF on the channel; this only
         * says how it died, for the user. */
        json_t *sig = json_object_get(m, "signal");
        if (!py->stopping && json_is_integer(sig) && json_integer_value(sig) != SIGKILL)
            fr_warn("python worker (pid %lld) was killed by signal %lld",
                    (long long)pid, (long long)json_integer_value(sig));
    } else if (!strcmp(ev, "error")) {
        fr_warn("python runtime: %s", json_string_value(json_object_get(m, "message")));
    }
    json_decref(m);
}

static void ctl_event(struct fr_runtime *rt, uint32_t events)
{
    struct pyrt *py = PY(rt);
    char *buf = malloc(PY_MSG_MAX);
    if (!buf) {
        fr_host_fail(rt->host, "python runtime: out of memory");
        return;
    }
    for (;;) {
        ssize_t r = recv(py->ctl, buf, PY_MSG_MAX, MSG_DONTWAIT);
        if (r > 0) {
            ctl_message(rt, buf, (size_t)r);
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && !(events & (EPOLLHUP | EPOLLERR)))
            break;
        /* EOF: the interpreter is gone; no worker can be replaced now. */
        fr_host_unwatch(rt->host, py->ctl);
        close(py->ctl);
        py->ctl = -1;
        if (!py->stopping)
            fr_host_fail(rt->host, "python runtime: the interpreter (pid %d) exited during the run",
                         (int)py->zygote);
        break;
    }
    free(buf);
}

/* ---- start-up ------------------------------------------------------------ */

/* A stop signal is waiting. The pool blocks SIGINT/SIGTERM/SIGHUP (it
 * reads them from a signalfd in its loop, which does not run yet while we
 * start), so a long prelude would otherwise ignore Ctrl-C. */
static bool stop_pending(void)
{
    sigset_t set;
    return sigpending(&set) == 0 &&
           (sigismember(&set, SIGINT) == 1 || sigismember(&set, SIGTERM) == 1 || sigismember(&set, SIGHUP) == 1);
}

/* Wait (blocking, only during start) for the next control message.
 * Returns its length, 0 at EOF, -1 with errno (EINTR: a stop signal is
 * pending; it is left pending for the pool). */
static ssize_t ctl_wait(struct pyrt *py, char *buf, size_t n)
{
    for (;;) {
        if (stop_pending()) {
            errno = EINTR;
            return -1;
        }
        struct pollfd pfd = {.fd = py->ctl, .events = POLLIN};
        int r = poll(&pfd, 1, 200);
        if (r == 0 || (r < 0 && errno == EINTR))
            continue;
        if (r < 0)
            return -1;
        ssize_t got = recv(py->ctl, buf, n, MSG_DONTWAIT);
        if (got < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        return got;
    }
}

/* The child side of fork(): become the zygote. Only async-signal-safe calls. */
static _Noreturn void exec_zygote(int ctl, int errfd, pid_t parent, char *const argv[], char *const envp[])
{
    setpgid(0, 0); /* its own group: stop() kills the zygote and its workers at once */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        _exit(127);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    /* fd 0 = /dev/null; fd 1 = our stderr (a prelude's print must never
     * reach fitrun's stdout, which may carry results); fd 3 = control. */
    if (null < 0 || dup2(null, 0) < 0 || dup2(2, 1) < 0 || dup2(ctl, PY_CONTROL_FD) < 0) {
        int e = errno;
        (void)!write(errfd, &e, sizeof e);
        _exit(127);
    }
    /* Nothing else of fitrun's reaches the interpreter, even an fd someone
     * opened without O_CLOEXEC (best effort: needs Linux 5.11). */
    (void)close_range(PY_CONTROL_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC);
    execve(argv[0], argv, envp);
    int e = errno;
    (void)!write(errfd, &e, sizeof e);
    _exit(127);
}

static int fork_zygote(struct pyrt *py, const struct fr_runtime_config *cfg, char *err, size_t errlen)
{
    const struct fr_profile *p = cfg->profile;
    char cpu[32], wall[32], ocap[32], rcap[32];
    snprintf(cpu, sizeof cpu, "%llu", (unsigned long long)p->cpu_time_ms);
    snprintf(wall, sizeof wall, "%llu", (unsigned long long)p->wall_time_ms);
    snprintf(ocap, sizeof ocap, "%llu", (unsigned long long)cfg->output_cap);
    snprintf(rcap, sizeof rcap, "%llu", PY_RESULT_CAP);
    char *const argv[] = {(char *)p->interpreter, py->script, "--control-fd", "3",
                          "--prelude", (char *)p->prelude, "--entry", (char *)p->entry,
                          "--sandbox-lib", py->lib, "--policy", py->policy_kv,
                          "--cpu-ms", cpu, "--wall-ms", wall, "--output-cap", ocap,
                          "--result-cap", rcap, NULL};
    extern char **environ;
    char *const *envp = cfg->envp ? cfg->envp : environ;

    int sv[2], ep[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, errlen, "socketpair: %s", strerror(errno));
        return -1;
    }
    if (pipe2(ep, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe2: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        exec_zygote(sv[1], ep[1], parent, argv, envp);
    int fork_errno = errno;
    close(sv[1]);
    close(ep[1]);
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(fork_errno));
        close(sv[0]);
        close(ep[0]);
        return -1;
    }
    setpgid(pid, pid); /* also here: no window where a kill of the group misses it */
    int child_errno = 0;
    ssize_t r;
    do
        r = read(ep[0], &child_errno, sizeof child_errno);
    while (r < 0 && errno == EINTR);
    close(ep[0]);
    py->zygote = pid;
    py->ctl = sv[0];
    if (r == (ssize_t)sizeof child_errno) {
        snprintf(err, errlen, "cannot execute %s: %s", p->interpreter, strerror(child_errno));
        return -1;
    }
    return 0;
}

/* "prelude /x/arc_prelude.py:3: ModuleNotFoundError: No module named 'foo'" */
static void fatal_message(json_t *m, const struct fr_profile *p, char *err, size_t errlen)
{
    const char *stage = json_string_value(json_object_get(m, "stage"));
    const char *type = json_string_value(json_object_get(m, "error_type"));
    const char *msg = json_string_value(json_object_get(m, "message"));
    const char *file = json_string_value(json_object_get(m, "file"));
    json_t *line = json_object_get(m, "line");
    char where[PATH_MAX + 32] = "";
    if (file && json_is_integer(line))
        snprintf(where, sizeof where, "%s:%lld: ", file, (long long)json_integer_value(line));
    else if (file)
        snprintf(where, sizeof where, "%s: ", file);
    if (stage && !strcmp(stage, "prelude"))
        snprintf(err, errlen, "prelude failed: %s%s: %s", where[0] ? where : p->prelude,
                 type ? type : "Error", msg ? msg : "");
    else
        snprintf(err, errlen, "%s: %s%s: %s", stage ? stage : "start", where, type ? type : "Error",
                 msg ? msg : "");
}

/* Why the zygote went away before it was ready. */
static void early_exit_message(struct pyrt *py, const struct fr_profile *p, char *err, size_t errlen)
{
    int st = 0;
    pid_t r;
    do
        r = waitpid(py->zygote, &st, 0);
    while (r < 0 && errno == EINTR);
    py->zygote = 0;
    if (r > 0 && WIFSIGNALED(st))
        snprintf(err, errlen, "%s %s was killed by signal %d before it was ready",
                 p->interpreter, py->script, WTERMSIG(st));
    else
        snprintf(err, errlen, "%s %s exited with status %d before it was ready "
                 "(its messages are above)", p->interpreter, py->script, r > 0 ? WEXITSTATUS(st) : -1);
}

/* Network filesystems are the usual reason a start-up is slow. */
static const char *fs_name(const char *path)
{
    struct statfs sf;
    if (!*path || statfs(path, &sf) < 0)
        return NULL;
    switch ((unsigned long)sf.f_type) {
    case 0x6969UL: return "NFS";
    case 0xFF534D42UL: return "CIFS";
    case 0xFE534D42UL: return "SMB2";
    case 0x517BUL: return "SMB";
    case 0x0BD00BD0UL: return "Lustre";
    case 0x47504653UL: return "GPFS";
    case 0x00C36400UL: return "CephFS";
    case 0x65735546UL: return "FUSE";
    case 0x01021997UL: return "9p";
    case 0x5346414FUL: return "AFS";
    case 0x013111A8UL: return "IBRIX";
    case 0x19830326UL: return "BeeGFS";
    default: return NULL;
    }
}

/* The warning for a slow start-up (> PY_SLOW_START_MS), or "" when it was
 * not slow. Names the filesystem when it is a network one: the usual cause,
 * and the cure (a local copy) is the same for the interpreter and prelude. */
static void startup_warning(const struct fr_profile *p, double prelude_ms, uint64_t total_ms, char *buf, size_t n)
{
    buf[0] = '\0';
    if (total_ms <= PY_SLOW_START_MS)
        return;
    const char *fs = fs_name(p->interpreter), *pfs = fs_name(p->prelude);
    char where[PATH_MAX + 64] = "";
    if (fs || pfs)
        snprintf(where, sizeof where, "%s is on %s; ", fs ? p->interpreter : p->prelude, fs ? fs : pfs);
    bool in_prelude = prelude_ms > total_ms / 2.0;
    snprintf(buf, n, "python start-up took %.1f s%s: %scopy the interpreter (or venv) and the packages it "
             "imports to a local disk if they are on a network filesystem",
             total_ms / 1000.0, in_prelude ? ", most of it importing the prelude's modules" : "", where);
}

static void report_startup(const struct fr_profile *p, json_t *ready, int nslots, uint64_t total_ms)
{
    json_t *v;
    double boot = json_is_number(v = json_object_get(ready, "boot_ms")) ? json_number_value(v) : -1;
    double prelude = json_number_value(json_object_get(ready, "prelude_ms"));
    const char *version = json_string_value(json_object_get(ready, "python"));
    fr_info("python: %s %s started once with %d worker%s in %.2f s (interpreter %.2f s, prelude %.2f s)",
            p->interpreter, version ? version : "", nslots, nslots == 1 ? "" : "s", total_ms / 1000.0,
            boot >= 0 ? boot / 1000.0 : 0.0, prelude / 1000.0);
    char warning[PATH_MAX + 512];
    startup_warning(p, prelude, total_ms, warning, sizeof warning);
    if (warning[0])
        fr_warn("%s", warning);
}

static json_t *or_null(json_t *v)
{
    return v ? v : json_null();
}

/* Wait for "ready" (returned, a new reference) or fail with the message
 * the user sees: the prelude's error, or why the interpreter went away. */
static json_t *wait_ready(struct pyrt *py, const struct fr_profile *p, char *buf, char *err, size_t errlen)
{
    ssize_t got = ctl_wait(py, buf, PY_MSG_MAX);
    if (got < 0 && errno == EINTR) {
        snprintf(err, errlen, "interrupted while %s was starting", p->interpreter);
        return NULL;
    }
    if (got <= 0) {
        early_exit_message(py, p, err, errlen);
        return NULL;
    }
    json_t *m = json_loadb(buf, (size_t)got, 0, NULL);
    const char *ev = json_string_value(json_object_get(m, "event"));
    if (ev && !strcmp(ev, "ready"))
        return m;
    if (ev && !strcmp(ev, "fatal"))
        fatal_message(m, p, err, errlen);
    else
        snprintf(err, errlen, "unexpected message from the interpreter '%.*s'", (int)(got > 200 ? 200 : got), buf);
    json_decref(m);
    return NULL;
}

/* Kill the zygote's process group and reap the zygote. */
static void end_zygote(struct pyrt *py)
{
    if (py->zygote <= 0)
        return;
    kill(-py->zygote, SIGKILL);
    pid_t r;
    do
        r = waitpid(py->zygote, NULL, 0);
    while (r < 0 && errno == EINTR);
    py->zygote = 0;
}

/* For `fitrun detect --profile`: start the profile's interpreter and
 * prelude once, exactly as `fitrun run` does (sandbox self-test included,
 * no worker), and describe the start-up as a JSON object (new reference):
 *   {"interpreter", "python", "total_ms", "boot_ms", "prelude_ms",
 *    "selftest_ms", "warning" (null unless slower than 1 s)}
 * or NULL with the error (a failing prelude, a missing interpreter) in err.
 * Blocking; the interpreter is killed before returning. Declared in
 * include/fitrun/runtime.h. */
json_t *fr_python_probe(const struct fr_profile *p, const char *self_exe, char *err, size_t errlen)
{
    extern char **environ;
    struct pyrt py = {.ctl = -1};
    struct fr_runtime_config cfg = {.profile = p, .envp = environ, .output_cap = p->output, .self_exe = self_exe};
    json_t *out = NULL, *ready = NULL;
    char *buf = NULL;
    if (find_script(self_exe, py.script, sizeof py.script, err, errlen) < 0 ||
        find_lib(self_exe, py.lib, sizeof py.lib, err, errlen) < 0)
        return NULL;
    if (access(p->interpreter, X_OK) < 0) {
        snprintf(err, errlen, "python interpreter %s: %s", p->interpreter, strerror(errno));
        return NULL;
    }
    if (!(py.policy_kv = policy_kv(p)) || !(buf = malloc(PY_MSG_MAX))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    uint64_t t0 = fr_now_ns();
    if (fork_zygote(&py, &cfg, err, errlen) < 0 || !(ready = wait_ready(&py, p, buf, err, errlen)))
        goto done;
    uint64_t total_ms = (fr_now_ns() - t0) / 1000000;
    char warning[PATH_MAX + 512];
    startup_warning(p, json_number_value(json_object_get(ready, "prelude_ms")), total_ms, warning, sizeof warning);
    out = json_pack("{s:s, s:O, s:I, s:O, s:O, s:O, s:o}", "interpreter", p->interpreter,
                    "python", or_null(json_object_get(ready, "python")), "total_ms", (json_int_t)total_ms,
                    "boot_ms", or_null(json_object_get(ready, "boot_ms")),
                    "prelude_ms", or_null(json_object_get(ready, "prelude_ms")),
                    "selftest_ms", or_null(json_object_get(ready, "selftest_ms")),
                    "warning", warning[0] ? json_string(warning) : json_null());
    if (!out)
        snprintf(err, errlen, "out of memory");
done:
    json_decref(ready);
    free(buf);
    free(py.policy_kv);
    if (py.ctl >= 0)
        close(py.ctl);
    end_zygote(&py);
    return out;
}

static void py_stop(struct fr_runtime *rt);

static int start_inner(struct fr_runtime *rt, int nslots, char *err, size_t errlen)
{
    const struct fr_runtime_config *cfg = rt->cfg;
    const struct fr_profile *p = cfg->profile;
    struct pyrt *py = calloc(1, sizeof *py);
    rt->priv = py;
    if (!py || !(py->slots = calloc((size_t)nslots, sizeof *py->slots))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    py->nslots = nslots;
    py->ctl = -1;
    py->next_token = 1;
    py->line_cap = PY_RESULT_CAP + 8 * cfg->output_cap + (1u << 20);
    for (int i = 0; i < nslots; i++)
        py->slots[i].chan = py->slots[i].timer = py->slots[i].pidfd = -1;
    if (find_script(cfg->self_exe, py->script, sizeof py->script, err, errlen) < 0 ||
        find_lib(cfg->self_exe, py->lib, sizeof py->lib, err, errlen) < 0)
        return -1;
    if (access(p->interpreter, X_OK) < 0) {
        snprintf(err, errlen, "python interpreter %s: %s", p->interpreter, strerror(errno));
        return -1;
    }
    if (!(py->policy_kv = policy_kv(p))) {
        snprintf(err, errlen, "sandbox policy too long for the python runtime");
        return -1;
    }
    uint64_t t0 = fr_now_ns();
    if (fork_zygote(py, cfg, err, errlen) < 0)
        return -1;
    if (fr_host_own(rt->host, py->zygote) < 0) {
        snprintf(err, errlen, "fr_host_own: %s", strerror(errno));
        return -1;
    }
    char *buf = malloc(PY_MSG_MAX);
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = -1;
    json_t *ready = wait_ready(py, p, buf, err, errlen);
    if (!ready)
        goto out;
    /* Every worker now, so that the total start-up is known before the
     * first job (and a fork failure stops the run here). */
    for (int i = 0; i < nslots; i++)
        if (spawn_worker(rt, i, true) < 0) {
            snprintf(err, errlen, "cannot ask the interpreter for worker %d: %s", i, strerror(errno));
            goto out;
        }
    for (int got_workers = 0; got_workers < nslots;) {
        ssize_t got = ctl_wait(py, buf, PY_MSG_MAX);
        if (got < 0 && errno == EINTR) {
            snprintf(err, errlen, "interrupted while the python workers were starting");
            goto out;
        }
        if (got <= 0) {
            early_exit_message(py, p, err, errlen);
            goto out;
        }
        json_t *m = json_loadb(buf, (size_t)got, 0, NULL);
        const char *ev = json_string_value(json_object_get(m, "event"));
        if (ev && !strcmp(ev, "spawned"))
            got_workers++;
        ctl_message(rt, buf, (size_t)got);
        json_decref(m);
    }
    if (fr_host_watch(rt->host, py->ctl, EPOLLIN, -1) < 0) {
        snprintf(err, errlen, "watching the control socket: %s", strerror(errno));
        goto out;
    }
    report_startup(p, ready, nslots, (fr_now_ns() - t0) / 1000000);
    rc = 0;
out:
    json_decref(ready);
    free(buf);
    return rc;
}

/* A failed start cleans up after itself (the interpreter, the workers
 * asked for so far) whether or not the pool calls stop() afterwards. */
static int py_start(struct fr_runtime *rt, int nslots, char *err, size_t errlen)
{
    if (start_inner(rt, nslots, err, errlen) == 0)
        return 0;
    py_stop(rt);
    return -1;
}

/* ---- jobs ---------------------------------------------------------------- */

static bool is_identifier(const char *s)
{
    if (!*s || (*s >= '0' && *s <= '9'))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              (unsigned char)*s >= 0x80))
            return false;
    return true;
}

static int py_check(struct fr_runtime *rt, const struct fr_job *job, char *err, size_t errlen)
{
    (void)rt;
    json_t *o = job->obj;
    json_t *code = json_object_get(o, "code"), *inputs = json_object_get(o, "inputs");
    json_t *entry = json_object_get(o, "entry"), *expected = json_object_get(o, "expected");
    if (!json_is_string(code)) {
        snprintf(err, errlen, "python job needs \"code\" (a string)");
        return -1;
    }
    if (!json_is_array(inputs)) {
        snprintf(err, errlen, "python job needs \"inputs\" (an array of arguments for the entry function)");
        return -1;
    }
    if (entry && !json_is_null(entry) && (!json_is_string(entry) || !is_identifier(json_string_value(entry)))) {
        snprintf(err, errlen, "\"entry\" must be the name of a Python function");
        return -1;
    }
    if (expected && !json_is_null(expected) &&
        (!json_is_array(expected) || json_array_size(expected) != json_array_size(inputs))) {
        snprintf(err, errlen, "\"expected\" must be an array as long as \"inputs\" (%zu)",
                 json_array_size(inputs));
        return -1;
    }
    return 0;
}

/* Send what is pending of the job line; watch for room when it is not all
 * gone. Returns 0, or -1 when the worker is gone. */
static int flush_job(struct fr_runtime *rt, struct pyslot *s)
{
    while (s->woff < s->wlen) {
        ssize_t w = send(s->chan, s->wbuf + s->woff, s->wlen - s->woff, MSG_NOSIGNAL);
        if (w > 0) {
            s->woff += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return fr_host_rewatch(rt->host, s->chan, EPOLLIN | EPOLLOUT);
        return -1;
    }
    free(s->wbuf);
    s->wbuf = NULL;
    s->wlen = s->woff = 0;
    return fr_host_rewatch(rt->host, s->chan, EPOLLIN);
}

static int py_begin(struct fr_runtime *rt, int slot, const struct fr_job *job, char *err, size_t errlen)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    if (s->chan < 0 && spawn_worker(rt, slot, true) < 0) {
        snprintf(err, errlen, "python worker %d cannot be started: %s", slot, strerror(errno));
        return -1;
    }
    /* Forward only what the worker needs; never "expected" (see the top). */
    json_t *o = job->obj, *line = json_object();
    json_t *entry = json_object_get(o, "entry");
    if (!line || json_object_set(line, "id", json_object_get(o, "id")) < 0 ||
        json_object_set(line, "code", json_object_get(o, "code")) < 0 ||
        json_object_set(line, "inputs", json_object_get(o, "inputs")) < 0 ||
        (json_is_string(entry) && json_object_set(line, "entry", entry) < 0)) {
        json_decref(line);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char *text = json_dumps(line, JSON_COMPACT);
    json_decref(line);
    size_t n = text ? strlen(text) : 0;
    char *buf = text ? realloc(text, n + 2) : NULL;
    if (!buf) {
        free(text);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    buf[n] = '\n';
    buf[n + 1] = '\0';
    s->wbuf = buf;
    s->wlen = n + 1;
    s->woff = 0;
    s->rlen = 0;
    s->job = job;
    s->begin_ns = fr_now_ns();
    if (flush_job(rt, s) < 0) {
        snprintf(err, errlen, "python worker %d: sending the job: %s", slot, strerror(errno));
        s->job = NULL;
        free(s->wbuf);
        s->wbuf = NULL;
        drop_channel(rt, s);
        kill_worker(py, s);
        return -1;
    }
    return 0;
}

/* Numbers compare by value (1 == 1.0); everything else structurally. */
static bool json_same(json_t *a, json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    if (json_is_array(a) && json_is_array(b)) {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!json_same(json_array_get(a, i), json_array_get(b, i)))
                return false;
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b))
            return false;
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v) {
            json_t *w = json_object_get(b, k);
            if (!w || !json_same(v, w))
                return false;
        }
        return true;
    }
    return json_equal(a, b);
}

/* passed[i] = outputs[i] == expected[i]; null where expected[i] is null
 * (unknown, e.g. an ARC test output) or when there are no outputs. */
static json_t *passed_of(json_t *outputs, json_t *expected)
{
    json_t *passed = json_array();
    for (size_t i = 0; passed && i < json_array_size(expected); i++) {
        json_t *e = json_array_get(expected, i), *o = json_array_get(outputs, i);
        json_t *v = json_is_null(e) || !json_is_array(outputs) ? json_null()
                                                               : json_boolean(o && !json_is_null(o) && json_same(o, e));
        json_array_append_new(passed, v);
    }
    return passed;
}

static uint64_t ms_field(json_t *f, const char *key)
{
    double v = json_number_value(json_object_get(f, key));
    return v > 0 ? (uint64_t)(v + 0.5) : 0;
}

static void set_timeval(struct timeval *tv, double ms)
{
    if (ms < 0)
        ms = 0;
    tv->tv_sec = (time_t)(ms / 1000.0);
    tv->tv_usec = (suseconds_t)((ms - tv->tv_sec * 1000.0) * 1000.0);
}

/* Raw facts -> struct fr_raw. What the pool cannot know from the wait
 * status alone is decided here through raw.status (see runtime.h). */
static void facts_to_raw(const struct fr_profile *p, json_t *f, struct fr_raw *raw, char *msg, size_t msglen)
{
    raw->kind = FR_RAW_FINISHED;
    raw->wstatus = (int)json_integer_value(json_object_get(f, "wstatus"));
    raw->has_rusage = true;
    set_timeval(&raw->ru.ru_utime, json_number_value(json_object_get(f, "utime_ms")));
    set_timeval(&raw->ru.ru_stime, json_number_value(json_object_get(f, "stime_ms")));
    raw->ru.ru_maxrss = (long)json_integer_value(json_object_get(f, "max_rss_kb"));
    raw->wall_ms = ms_field(f, "wall_ms");
    raw->violation_nr = json_is_integer(json_object_get(f, "violation_nr"))
                            ? (int)json_integer_value(json_object_get(f, "violation_nr")) : -1;
    const char *exceeded = json_string_value(json_object_get(f, "output_exceeded"));
    raw->output_exceeded = exceeded != NULL;
    raw->wall_exceeded = json_is_true(json_object_get(f, "wall_expired"));
    raw->memory_hint = json_is_true(json_object_get(f, "memory"));
    json_t *o = json_object_get(f, "stdout"), *e = json_object_get(f, "stderr");
    raw->out = json_string_value(o);
    raw->out_len = json_string_length(o);
    raw->err = json_string_value(e);
    raw->err_len = json_string_length(e);
    int ws = raw->wstatus;
    /* SIGPROF is our CPU timer (ITIMER_PROF in the child), SIGXCPU the
     * RLIMIT_CPU backstop; a SIGPROF the code sent itself early stays a signal. */
    if (WIFSIGNALED(ws) && (WTERMSIG(ws) == SIGXCPU ||
                            (WTERMSIG(ws) == SIGPROF && p->cpu_time_ms &&
                             ms_field(f, "cpu_ms") * 10 >= p->cpu_time_ms * 9)))
        raw->cpu_exceeded = true;
    if (exceeded && !strcmp(exceeded, "result")) {
        snprintf(msg, msglen, "the outputs exceed %llu bytes once encoded", PY_RESULT_CAP);
        raw->error_message = msg;
    }
    if (!WIFEXITED(ws) || raw->violation_nr >= 0 || raw->output_exceeded || raw->wall_exceeded)
        return; /* the pool classifies (signal, violation, timeout, output_limit) */
    json_t *sandbox_error = json_object_get(f, "sandbox_error");
    if (json_is_integer(sandbox_error)) {
        raw->status = FR_STATUS_CRASH;
        raw->error_type = "SandboxError";
        snprintf(msg, msglen, "applying the sandbox in the prediction's child failed: %s",
                 strerror((int)json_integer_value(sandbox_error)));
        raw->error_message = msg;
    } else if (!json_is_true(json_object_get(f, "reported"))) {
        raw->status = FR_STATUS_CRASH;
        raw->error_type = "NoResult";
        snprintf(msg, msglen, "the prediction's process exited with status %d without a result "
                 "(os._exit, or a C extension calling exit)", WEXITSTATUS(ws));
        raw->error_message = msg;
    } else if (raw->memory_hint) {
        raw->status = FR_STATUS_MEMORY;
        raw->error_type = json_string_value(json_object_get(f, "error_type"));
        raw->error_message = json_string_value(json_object_get(f, "error_message"));
    } else if (json_is_string(json_object_get(f, "error_type"))) {
        raw->status = FR_STATUS_ERROR;
        raw->error_type = json_string_value(json_object_get(f, "error_type"));
        raw->error_message = json_string_value(json_object_get(f, "error_message"));
        if (!raw->error_message)
            raw->error_message = "";
    } else {
        raw->status = FR_STATUS_OK;
    }
}

/* Can the pool still call this job ok or error, i.e. did the prediction run
 * to its end? Only then is `passed` reported; when the sandbox or the
 * runtime ended it (memory, timeout, violation, signal, output_limit,
 * crash) it is null, so a MemoryError caught in time and an OOM kill of the
 * same prediction give the same (status, passed). The pool applies the
 * same rule to the final status (launcher/pool/pool.c, ran_to_end_only). */
static bool ran_to_end(const struct fr_raw *raw)
{
    if (raw->status >= 0)
        return raw->status == FR_STATUS_OK || raw->status == FR_STATUS_ERROR;
    return WIFEXITED(raw->wstatus) && !raw->output_exceeded && !raw->wall_exceeded;
}

/* outputs, passed (when the job has expected), error_line. */
static json_t *extra_fields(json_t *f, json_t *job, const struct fr_raw *raw)
{
    json_t *extra = json_object();
    if (!extra)
        return NULL;
    json_t *outputs = json_object_get(f, "outputs");
    json_object_set(extra, "outputs", json_is_array(outputs) ? outputs : json_null());
    json_t *expected = json_object_get(job, "expected");
    if (json_is_array(expected))
        json_object_set_new(extra, "passed",
                            json_is_array(outputs) && ran_to_end(raw) ? passed_of(outputs, expected) : json_null());
    json_t *line = json_object_get(f, "error_line");
    if (json_is_integer(line))
        json_object_set(extra, "error_line", line);
    return extra;
}

static void disarm(struct pyslot *s)
{
    struct itimerspec off = {0};
    if (s->timer >= 0)
        timerfd_settime(s->timer, 0, &off, NULL);
}

static void finish(struct fr_runtime *rt, int slot, struct fr_raw *raw)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (s->aborting) {
        /* The pool knows why it aborted; say it too, in case the report
         * raced the request (the child had just finished). */
        if (s->aborting == FR_ABORT_WALL)
            raw->wall_exceeded = true;
        s->aborting = 0;
        disarm(s);
    }
    s->job = NULL;
    free(s->wbuf);
    s->wbuf = NULL;
    s->wlen = s->woff = 0;
    s->rlen = 0;
    fr_host_complete(rt->host, slot, raw);
}

static void crashed(struct fr_runtime *rt, int slot, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void crashed(struct fr_runtime *rt, int slot, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct fr_raw raw;
    fr_raw_init(&raw);
    raw.kind = FR_RAW_CRASHED;
    raw.error_type = "WorkerCrash";
    raw.error_message = msg;
    finish(rt, slot, &raw);
}

static void result_line(struct fr_runtime *rt, int slot, const char *text, size_t len)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (!s->job) {
        fr_warn("python worker %d sent a line with no job running: ignored", slot);
        return;
    }
    json_error_t jerr;
    json_t *f = json_loadb(text, len, 0, &jerr);
    if (!json_is_object(f)) {
        json_decref(f);
        /* Our own protocol is broken: treat it like a crash of the worker. */
        drop_channel(rt, s);
        kill_worker(PY(rt), s);
        if (spawn_worker(rt, slot, true) < 0)
            fr_host_fail(rt->host, "python runtime: cannot replace worker %d: %s", slot, strerror(errno));
        crashed(rt, slot, "python worker %d sent an unreadable result (%s)", slot, jerr.text);
        return;
    }
    struct fr_raw raw;
    fr_raw_init(&raw);
    char msg[256];
    const char *werr = json_string_value(json_object_get(f, "worker_error"));
    if (werr) {
        raw.kind = FR_RAW_REJECTED;
        raw.error_message = werr;
    } else {
        facts_to_raw(rt->cfg->profile, f, &raw, msg, sizeof msg);
        raw.extra = extra_fields(f, s->job->obj, &raw);
    }
    finish(rt, slot, &raw);
    json_decref(f);
}

static void kill_job(struct fr_runtime *rt, int slot, enum fr_abort_reason why);
static void timer_event(struct fr_runtime *rt, int slot);

/* Read what the worker sent; complete on a full line; EOF = it died. */
static void channel_readable(struct fr_runtime *rt, int slot)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    for (;;) {
        if (s->rcap - s->rlen < 65536) {
            size_t cap = s->rcap ? s->rcap * 2 : 131072;
            char *nb = cap <= py->line_cap + 65536 ? realloc(s->rbuf, cap) : NULL;
            if (!nb) {
                drop_channel(rt, s);
                kill_worker(py, s);
                if (spawn_worker(rt, slot, true) < 0)
                    fr_host_fail(rt->host, "python runtime: cannot replace worker %d: %s", slot, strerror(errno));
                if (s->job)
                    crashed(rt, slot, "python worker %d sent a result longer than %zu bytes", slot, py->line_cap);
                return;
            }
            s->rbuf = nb;
            s->rcap = cap;
        }
        ssize_t r = recv(s->chan, s->rbuf + s->rlen, s->rcap - s->rlen, MSG_DONTWAIT);
        if (r > 0) {
            size_t old = s->rlen;
            s->rlen += (size_t)r;
            char *nl = memchr(s->rbuf + old, '\n', (size_t)r);
            if (nl) {
                size_t len = (size_t)(nl - s->rbuf);
                s->rlen = 0; /* one line per job: nothing may follow it */
                result_line(rt, slot, s->rbuf, len);
                return;
            }
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        /* EOF or error: the worker is gone. Replace it before completing,
         * since the pool may hand this slot a new job right away. */
        pid_t pid = s->pid;
        drop_channel(rt, s);
        if (!py->stopping && spawn_worker(rt, slot, true) < 0) {
            fr_host_fail(rt->host, "python runtime: cannot replace worker %d: %s", slot, strerror(errno));
            return;
        }
        if (s->job && s->aborting)
            kill_job(rt, slot, s->aborting); /* died while stopping it: the job was killed, not crashed */
        else if (s->job)
            crashed(rt, slot, "python worker %d (pid %d) died while running the job", slot, (int)pid);
        else if (!py->stopping)
            fr_warn("python worker %d (pid %d) died while idle; replaced", slot, (int)pid);
        return;
    }
}

static void py_event(struct fr_runtime *rt, int slot, int fd, uint32_t events)
{
    struct pyrt *py = PY(rt);
    if (fd == py->ctl) {
        ctl_event(rt, events);
        return;
    }
    if (slot < 0 || slot >= py->nslots)
        return;
    struct pyslot *s = &py->slots[slot];
    if (fd == s->timer) {
        timer_event(rt, slot);
        return;
    }
    if (fd != s->chan)
        return;
    if ((events & EPOLLOUT) && s->wbuf && flush_job(rt, s) < 0) {
        channel_readable(rt, slot); /* it will see the EOF/error */
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        channel_readable(rt, slot);
}

/* The prediction's child is not ours to kill: kill its worker, which
 * takes the child with it (PR_SET_PDEATHSIG), start a fresh one, and
 * complete the job as killed. */
static void kill_job(struct fr_runtime *rt, int slot, enum fr_abort_reason why)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    drop_channel(rt, s);
    kill_worker(py, s);
    if (why != FR_ABORT_INTERRUPT && !py->stopping && spawn_worker(rt, slot, true) < 0)
        fr_host_fail(rt->host, "python runtime: cannot replace worker %d: %s", slot, strerror(errno));
    struct fr_raw raw;
    fr_raw_init(&raw);
    raw.kind = FR_RAW_FINISHED;
    raw.wstatus = SIGKILL; /* what wait4() would say of a SIGKILLed process */
    raw.wall_exceeded = why == FR_ABORT_WALL;
    raw.cpu_exceeded = why == FR_ABORT_CPU;
    raw.wall_ms = (fr_now_ns() - s->begin_ns) / 1000000;
    s->aborting = 0;
    disarm(s);
    finish(rt, slot, &raw);
}

/* Ask the worker to kill its child and report as usual (SIGUSR1): the
 * result keeps the CPU time and output the child really had, and the
 * worker lives on. If no report comes within the grace period, kill_job(). */
static int request_stop(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    if (s->pid <= 0 || s->wbuf) /* not yet running it (or not all sent) */
        return -1;
    if (s->timer < 0) {
        s->timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (s->timer < 0)
            return -1;
        if (fr_host_watch(rt->host, s->timer, EPOLLIN, slot) < 0) {
            close(s->timer);
            s->timer = -1;
            return -1;
        }
    }
    struct itimerspec grace = {.it_value = {.tv_sec = PY_ABORT_GRACE_MS / 1000,
                                            .tv_nsec = (PY_ABORT_GRACE_MS % 1000) * 1000000L}};
    if (timerfd_settime(s->timer, 0, &grace, NULL) < 0 || signal_worker(s, SIGUSR1) < 0)
        return -1;
    return 0;
}

static void py_abort(struct fr_runtime *rt, int slot, enum fr_abort_reason why)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    if (!s->job || s->aborting == why)
        return;
    if (why != FR_ABORT_INTERRUPT && !py->stopping && request_stop(rt, slot) == 0) {
        s->aborting = why;
        return;
    }
    kill_job(rt, slot, why);
}

/* The grace period after an abort request is over. */
static void timer_event(struct fr_runtime *rt, int slot)
{
    struct pyslot *s = &PY(rt)->slots[slot];
    uint64_t ticks;
    while (read(s->timer, &ticks, sizeof ticks) < 0 && errno == EINTR)
        ;
    if (s->job && s->aborting) {
        fr_warn("python worker %d did not stop job %s within %d ms: killing it", slot,
                s->job->id ? s->job->id : "?", PY_ABORT_GRACE_MS);
        kill_job(rt, slot, s->aborting);
    }
}

static void py_stop(struct fr_runtime *rt)
{
    struct pyrt *py = PY(rt);
    if (!py)
        return;
    py->stopping = true;
    for (int i = 0; py->slots && i < py->nslots; i++) {
        drop_channel(rt, &py->slots[i]);
        if (py->slots[i].timer >= 0) {
            fr_host_unwatch(rt->host, py->slots[i].timer);
            close(py->slots[i].timer);
        }
        if (py->slots[i].pidfd >= 0)
            close(py->slots[i].pidfd);
        free(py->slots[i].wbuf);
        free(py->slots[i].rbuf);
    }
    if (py->ctl >= 0) {
        fr_host_unwatch(rt->host, py->ctl);
        close(py->ctl);
        py->ctl = -1;
    }
    if (py->zygote > 0) {
        /* Every slot is idle: nothing of value runs in the group any more. */
        pid_t z = py->zygote;
        end_zygote(py);
        fr_host_disown(rt->host, z);
        fr_host_reap(rt->host);
    }
    free(py->policy_kv);
    free(py->slots);
    free(py);
    rt->priv = NULL;
}

const struct fr_runtime_ops fr_runtime_python_ops = {
    .name = "python",
    .start = py_start,
    .check = py_check,
    .begin = py_begin,
    .event = py_event,
    .abort = py_abort,
    .stop = py_stop,
};
