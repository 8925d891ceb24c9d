/* zygote.c — the interpreter started once per run ("zygote"): start-up,
 * its control socket, and the workers it forks on request. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* ---- the policy, packed for the zygote ------------------------------------ */

/* The profile's spec (the one map, fitrun/sandbox_keys.h) as the zygote
 * builds it: RLIMIT_CPU is the backstop (py_cpu_backstop_ms), since fitrun
 * kills at the budget itself; one per-slot uid per worker. Packed into a
 * sealed memfd the interpreter reads (its descriptor, O_CLOEXEC), or -1
 * with err. */
static int policy_memfd(const struct fr_profile *p, int nslots, char *err, size_t errlen)
{
    struct fr_policy_spec spec;
    fr_profile_policy_spec(p, &spec);
    spec.cpu_ms = py_cpu_backstop_ms(p->cpu_time_ms);
    spec.slots = nslots > 0 ? nslots : 1;
    long len = fr_policy_spec_pack(&spec, NULL, 0);
    void *buf = len > 0 ? malloc((size_t)len) : NULL;
    if (!buf || fr_policy_spec_pack(&spec, buf, (size_t)len) != len) {
        snprintf(err, errlen, "packing the sandbox policy for the interpreter: %s", strerror(len < 0 ? errno : ENOMEM));
        free(buf);
        return -1;
    }
    int fd = memfd_create("fitrun-policy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ssize_t w = fd < 0 ? -1 : 0;
    for (size_t done = 0; fd >= 0 && done < (size_t)len; done += (size_t)w) {
        w = write(fd, (char *)buf + done, (size_t)len - done);
        if (w < 0 && errno == EINTR)
            w = 0;
        else if (w <= 0)
            break;
    }
    int e = errno;
    free(buf);
    if (fd < 0 || w < 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0) {
        if (fd >= 0)
            e = errno ? errno : e;
        snprintf(err, errlen, "a memfd for the sandbox policy: %s", strerror(e));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
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

int py_spawn_worker(struct fr_runtime *rt, int slot, bool watch)
{
    struct pyrt *py = PY(rt);
    struct pyslot *s = &py->slots[slot];
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return -1;
    /* Only our end is non-blocking: the worker reads with blocking I/O. */
    int fl = fcntl(sv[0], F_GETFL);
    if (fl < 0 || fcntl(sv[0], F_SETFL, fl | O_NONBLOCK) < 0)
        goto fail;
    unsigned token = py->next_token++;
    char msg[96];
    snprintf(msg, sizeof msg, "{\"op\":\"spawn\",\"slot\":%u,\"worker\":%d}", token, slot);
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
    return 0;
fail:;
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    errno = e;
    return -1;
}

void py_drop_channel(struct fr_runtime *rt, struct pyslot *s)
{
    if (s->chan < 0)
        return;
    fr_host_unwatch(rt->host, s->chan);
    close(s->chan);
    s->chan = -1;
}

void py_kill_worker(struct pyrt *py, struct pyslot *s)
{
    if (s->pidfd >= 0)
        pidfd_send_signal(s->pidfd, SIGKILL, NULL, 0);
    else if (s->pid > 0)
        kill(s->pid, SIGKILL);
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

void py_ctl_message(struct fr_runtime *rt, const char *msg, size_t len)
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
            fr_warn("python worker (pid %lld) was killed by signal %lld", (long long)pid,
                    (long long)json_integer_value(sig));
    } else if (!strcmp(ev, "error")) {
        fr_warn("python runtime: %s", json_string_value(json_object_get(m, "message")));
    }
    json_decref(m);
}

void py_ctl_event(struct fr_runtime *rt, uint32_t events)
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
            py_ctl_message(rt, buf, (size_t)r);
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

ssize_t py_ctl_wait(struct pyrt *py, char *buf, size_t n)
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

/* Above the descriptors the zygote gets (0-PY_POLICY_FD), so that laying
 * them out never overwrites a source. */
#define PY_FIRST_FREE_FD 16

/* The child side of fork(): become the zygote. Only async-signal-safe calls. */
static _Noreturn void exec_zygote(int ctl, int policy, int errfd, pid_t parent, char *const argv[],
                                  char *const envp[])
{
    setpgid(0, 0); /* its own group: stop() kills the zygote and its workers at once */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        _exit(127);
    /* fd 0 = /dev/null; fd 1 = our stderr (a prelude's print must never
     * reach fitrun's stdout, which may carry results); fd 3 = control;
     * fd 4 = the packed policy. Every source first moves above them. */
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    errfd = fcntl(errfd, F_DUPFD_CLOEXEC, PY_FIRST_FREE_FD);
    int src[3] = {null, ctl, policy}, dst[3] = {0, PY_CONTROL_FD, PY_POLICY_FD};
    int e = null < 0 || errfd < 0 ? errno : 0;
    for (int i = 0; !e && i < 3; i++)
        if ((src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, PY_FIRST_FREE_FD)) < 0)
            e = errno;
    for (int i = 0; !e && i < 3; i++)
        if (dup2(src[i], dst[i]) < 0)
            e = errno;
    if (!e && dup2(2, 1) < 0)
        e = errno;
    if (e) {
        if (errfd >= 0)
            (void)!write(errfd, &e, sizeof e);
        _exit(127);
    }
    /* Nothing else of fitrun's reaches the interpreter, even an fd someone
     * opened without O_CLOEXEC (best effort: needs Linux 5.11). */
    (void)close_range(PY_POLICY_FD + 1, ~0U, CLOSE_RANGE_CLOEXEC);
    execve(argv[0], argv, envp);
    e = errno;
    (void)!write(errfd, &e, sizeof e);
    _exit(127);
}

static int fork_zygote(struct pyrt *py, const struct fr_runtime_config *cfg, char *err, size_t errlen)
{
    const struct fr_profile *p = cfg->profile;
    char cpu[32], rcap[32], nest[16], pfd[16];
    snprintf(cpu, sizeof cpu, "%llu", (unsigned long long)py_cpu_backstop_ms(p->cpu_time_ms));
    snprintf(rcap, sizeof rcap, "%llu", (unsigned long long)(py->result_cap + PY_REPORT_SLACK));
    snprintf(nest, sizeof nest, "%d", PY_MAX_NESTING);
    snprintf(pfd, sizeof pfd, "%d", PY_POLICY_FD);
    char *const argv[] = {py->interpreter, py->script, "--control-fd", "3",
                          "--prelude", (char *)p->prelude, "--entry", (char *)p->entry,
                          "--sandbox-lib", py->lib, "--policy-fd", pfd,
                          "--cpu-backstop-ms", cpu, "--report-cap", rcap, "--max-nesting", nest, NULL};
    extern char **environ;
    char *const *envp = cfg->envp ? cfg->envp : environ;

    int policy = policy_memfd(p, py->nslots, err, errlen);
    if (policy < 0)
        return -1;
    int sv[2], ep[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(err, errlen, "socketpair: %s", strerror(errno));
        close(policy);
        return -1;
    }
    if (pipe2(ep, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe2: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        close(policy);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        exec_zygote(sv[1], policy, ep[1], parent, argv, envp);
    int fork_errno = errno;
    close(sv[1]);
    close(ep[1]);
    close(policy);
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
        snprintf(err, errlen, "cannot execute %s: %s", py->interpreter, strerror(child_errno));
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
static void early_exit_message(struct pyrt *py, char *err, size_t errlen)
{
    int st = 0;
    pid_t r;
    do
        r = waitpid(py->zygote, &st, 0);
    while (r < 0 && errno == EINTR);
    py->zygote = 0;
    if (r > 0 && WIFSIGNALED(st))
        snprintf(err, errlen, "%s %s was killed by signal %d before it was ready", py->interpreter, py->script,
                 WTERMSIG(st));
    else
        snprintf(err, errlen, "%s %s exited with status %d before it was ready (its messages are above)",
                 py->interpreter, py->script, r > 0 ? WEXITSTATUS(st) : -1);
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
static void startup_warning(const char *interpreter, const char *prelude, double prelude_ms, uint64_t total_ms,
                            char *buf, size_t n)
{
    buf[0] = '\0';
    if (total_ms <= PY_SLOW_START_MS)
        return;
    const char *fs = fs_name(interpreter), *pfs = fs_name(prelude);
    char where[PATH_MAX + 64] = "";
    if (fs || pfs)
        snprintf(where, sizeof where, "%s is on %s; ", fs ? interpreter : prelude, fs ? fs : pfs);
    bool in_prelude = prelude_ms > total_ms / 2.0;
    snprintf(buf, n, "python start-up took %.1f s%s: %scopy the interpreter (or venv) and the packages it "
             "imports to a local disk if they are on a network filesystem",
             total_ms / 1000.0, in_prelude ? ", most of it importing the prelude's modules" : "", where);
}

void py_report_startup(const struct pyrt *py, json_t *ready, int nslots, uint64_t total_ms)
{
    json_t *v;
    double boot = json_is_number(v = json_object_get(ready, "boot_ms")) ? json_number_value(v) : -1;
    double prelude = json_number_value(json_object_get(ready, "prelude_ms"));
    const char *version = json_string_value(json_object_get(ready, "python"));
    fr_info("python: %s %s started once with %d worker%s in %.2f s (interpreter %.2f s, prelude %.2f s)",
            py->interpreter, version ? version : "", nslots, nslots == 1 ? "" : "s", total_ms / 1000.0,
            boot >= 0 ? boot / 1000.0 : 0.0, prelude / 1000.0);
    char warning[PATH_MAX + 512];
    json_t *pre = json_object_get(ready, "prelude");
    startup_warning(py->interpreter, json_is_string(pre) ? json_string_value(pre) : "", prelude, total_ms, warning,
                    sizeof warning);
    if (warning[0])
        fr_warn("%s", warning);
}

/* Wait for "ready" (returned, a new reference) or fail with the message
 * the user sees: the prelude's error, or why the interpreter went away. */
static json_t *wait_ready(struct pyrt *py, const struct fr_profile *p, char *err, size_t errlen)
{
    char *buf = malloc(PY_MSG_MAX);
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    json_t *m = NULL;
    ssize_t got = py_ctl_wait(py, buf, PY_MSG_MAX);
    if (got < 0 && errno == EINTR)
        snprintf(err, errlen, "interrupted while %s was starting", py->interpreter);
    else if (got <= 0)
        early_exit_message(py, err, errlen);
    else {
        m = json_loadb(buf, (size_t)got, 0, NULL);
        const char *ev = json_string_value(json_object_get(m, "event"));
        if (!ev || strcmp(ev, "ready")) {
            if (ev && !strcmp(ev, "fatal"))
                fatal_message(m, p, err, errlen);
            else
                snprintf(err, errlen, "unexpected message from the interpreter '%.*s'", (int)(got > 200 ? 200 : got),
                         buf);
            json_decref(m);
            m = NULL;
        } else {
            /* The start-up warning names the prelude's filesystem. */
            json_object_set_new(m, "prelude", json_string(p->prelude));
        }
    }
    free(buf);
    return m;
}

void py_zygote_end(struct pyrt *py)
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

json_t *py_zygote_start(struct pyrt *py, const struct fr_runtime_config *cfg, char *err, size_t errlen)
{
    const struct fr_profile *p = cfg->profile;
    extern char **environ;
    py->result_cap = p->result;
    if (py_find_script(cfg->self_exe, py->script, sizeof py->script, err, errlen) < 0 ||
        py_find_lib(cfg->self_exe, py->lib, sizeof py->lib, err, errlen) < 0 ||
        py_find_interpreter(p->interpreter, cfg->envp ? cfg->envp : environ, py->interpreter,
                            sizeof py->interpreter, err, errlen) < 0)
        return NULL;
    if (fork_zygote(py, cfg, err, errlen) < 0)
        return NULL;
    return wait_ready(py, p, err, errlen);
}

static json_t *or_null(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return v ? v : json_null();
}

/* For `fitrun detect --profile`: the same start-up as `fitrun run` (sandbox
 * self-test included, no worker), described as a JSON object. Declared in
 * include/fitrun/runtime.h. */
json_t *fr_python_probe(const struct fr_profile *p, const char *self_exe, char *err, size_t errlen)
{
    extern char **environ;
    struct pyrt py = {.ctl = -1, .nslots = 1};
    struct fr_runtime_config cfg = {.profile = p, .envp = environ, .output_cap = p->output, .self_exe = self_exe};
    uint64_t t0 = fr_now_ns();
    json_t *out = NULL, *ready = py_zygote_start(&py, &cfg, err, errlen);
    if (ready) {
        uint64_t total_ms = (fr_now_ns() - t0) / 1000000;
        char warning[PATH_MAX + 512];
        startup_warning(py.interpreter, p->prelude, json_number_value(json_object_get(ready, "prelude_ms")),
                        total_ms, warning, sizeof warning);
        out = json_pack("{s:s, s:O, s:I, s:O, s:O, s:O, s:o}", "interpreter", py.interpreter, "python",
                        or_null(ready, "python"), "total_ms", (json_int_t)total_ms, "boot_ms", or_null(ready, "boot_ms"),
                        "prelude_ms", or_null(ready, "prelude_ms"), "selftest_ms", or_null(ready, "selftest_ms"),
                        "warning", warning[0] ? json_string(warning) : json_null());
        if (!out)
            snprintf(err, errlen, "out of memory");
    }
    json_decref(ready);
    if (py.ctl >= 0)
        close(py.ctl);
    py_zygote_end(&py);
    return out;
}
