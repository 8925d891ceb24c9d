/* zygote.c — the interpreter started once per run (the "zygote"): its
 * start (fork, descriptors, exec), the wait for "ready" (or the message
 * that says why not), its end, and its start again when it died during
 * the run. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* Above the descriptors the zygote gets (0-PY_POLICY_FD), so that laying
 * them out never overwrites a source. */
#define PY_FIRST_FREE_FD 16

/* The child side of fork(): become the zygote. Only async-signal-safe calls. */
static _Noreturn void exec_zygote(int ctl, int policy, int errfd, pid_t parent, char *const argv[], char *const envp[])
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
    char cpu[32], rcap[32], nest[16], pfd[16], maxp[32], maxm[32], rcpu[32];
    if (fr_profile_reuse_check(p, err, errlen) < 0)
        return -1;
    snprintf(cpu, sizeof cpu, "%llu", (unsigned long long)fr_cpu_backstop_ms(p->cpu_time_ms));
    snprintf(maxp, sizeof maxp, "%llu", (unsigned long long)p->max_predictions);
    snprintf(maxm, sizeof maxm, "%llu", (unsigned long long)(fr_profile_max_memory(p) >> 10));
    snprintf(rcpu, sizeof rcpu, "%llu", (unsigned long long)(p->cpu_time_ms ? PY_REUSE_CPU_MS : 0));
    snprintf(rcap, sizeof rcap, "%llu", (unsigned long long)(py->result_cap + PY_REPORT_SLACK));
    snprintf(nest, sizeof nest, "%d", PY_MAX_NESTING);
    snprintf(pfd, sizeof pfd, "%d", PY_POLICY_FD);
    char *const argv[] = {py->interpreter,
                          py->script,
                          "--control-fd",
                          "3",
                          "--prelude",
                          (char *)p->prelude,
                          "--entry",
                          (char *)p->entry,
                          "--sandbox-lib",
                          py->lib,
                          "--policy-fd",
                          pfd,
                          "--cpu-backstop-ms",
                          cpu,
                          "--report-cap",
                          rcap,
                          "--max-nesting",
                          nest,
                          "--isolation",
                          p->reuse ? "reuse" : "fork",
                          "--max-predictions",
                          maxp,
                          "--max-memory-kb",
                          maxm,
                          "--reuse-cpu-ms",
                          rcpu,
                          NULL};
    extern char **environ;
    char *const *envp = cfg->envp ? cfg->envp : environ;

    int policy = py_policy_memfd(p, py->nslots, fr_cgroup_tree_ctls(cfg->cgroups), err, errlen);
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
        snprintf(err, errlen, "prelude failed: %s%s: %s", where[0] ? where : p->prelude, type ? type : "Error",
                 msg ? msg : "");
    else
        snprintf(err, errlen, "%s: %s%s: %s", stage ? stage : "start", where, type ? type : "Error", msg ? msg : "");
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
        } else if (json_integer_value(json_object_get(m, "protocol")) != PY_PROTOCOL) {
            snprintf(err, errlen,
                     "%s speaks protocol %lld, this fitrun %d: it is not the runtime script of this build "
                     "(FITRUN_PYTHON_DIR, or an install mixing two versions)",
                     py->script, (long long)json_integer_value(json_object_get(m, "protocol")), PY_PROTOCOL);
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
    py->reuse = p->reuse;
    if (py_find_script(cfg->self_exe, py->script, sizeof py->script, err, errlen) < 0 ||
        py_find_lib(cfg->self_exe, py->lib, sizeof py->lib, err, errlen) < 0 ||
        py_find_interpreter(p->interpreter, cfg->envp ? cfg->envp : environ, py->interpreter, sizeof py->interpreter,
                            err, errlen) < 0)
        return NULL;
    if (fork_zygote(py, cfg, err, errlen) < 0)
        return NULL;
    return wait_ready(py, p, err, errlen);
}

void py_ctl_close(struct fr_runtime *rt)
{
    struct pyrt *py = PY(rt);
    if (py->ctl < 0)
        return;
    fr_host_unwatch(rt->host, py->ctl); /* a no-op where it is not watched */
    close(py->ctl);
    py->ctl = -1;
}

int py_zygote_restart(struct fr_runtime *rt)
{
    struct pyrt *py = PY(rt);
    pid_t old = py->zygote;
    py_ctl_close(rt);
    if (py->stopping || !py->running)
        return -1;
    if (py->restarts >= PY_ZYGOTE_RESTARTS) {
        fr_warn("python runtime: the interpreter (pid %d) died during the run, %d times: not started again", (int)old,
                py->restarts + 1);
        errno = EPIPE;
        return -1;
    }
    /* Its group (workers, their children) goes; it is reaped here. */
    py_zygote_end(py);
    fr_host_disown(rt->host, old);
    py->ndoomed = 0; /* tokens of the old interpreter's workers */
    uint64_t t0 = fr_now_ns();
    char err[1024];
    json_t *ready = py_zygote_start(py, rt->cfg, err, sizeof err);
    bool started = ready != NULL;
    json_decref(ready);
    bool owned = started && fr_host_own(rt->host, py->zygote) == 0;
    if (!owned || fr_host_watch(rt->host, py->ctl, EPOLLIN, -1) < 0) {
        fr_warn("python runtime: the interpreter (pid %d) died during the run and could not be started again: %s",
                (int)old, started ? strerror(errno) : err);
        pid_t z = py->zygote;
        py_zygote_end(py);
        if (owned)
            fr_host_disown(rt->host, z);
        py_ctl_close(rt);
        errno = EPIPE;
        return -1;
    }
    py->restarts++;
    fr_warn("python runtime: the interpreter (pid %d) died during the run; started again (pid %d) in %.1f s, "
            "its workers' jobs retried",
            (int)old, (int)py->zygote, (double)(fr_now_ns() - t0) / 1e9);
    return 0;
}

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
