/* exec.c — the exec runtime: one fork + sandbox + execvp per job.
 *
 * Job: {"id": "a1", "argv": ["python3", "-c", "print(1)"], "stdin": "text"}
 *
 * Per job the parent prepares everything (argv and envp arrays, pipes for
 * stdout/stderr/stdin, the sandbox report pipe, an exec-status pipe), forks,
 * and watches the child's pidfd and pipes through the pool's epoll. The
 * child only makes syscalls:
 *   setsid()                 own session and process group: the whole job
 *                            is killed with one killpg(), and orphans that
 *                            stay in the session are attributed to it
 *   PR_SET_PDEATHSIG         SIGKILL if fitrun dies (checked against a race
 *                            with getppid()); the sandbox's relay takes over
 *                            from there and kills the job's whole process
 *                            group when fitrun is gone
 *   signal mask/dispositions back to default (the pool blocks SIGCHLD,
 *                            SIGINT, SIGTERM, SIGHUP and ignores SIGPIPE)
 *   dup2 stdin/stdout/stderr; every other fd is marked close-on-exec
 *   fr_cgroup_join()         into the slot's cgroups, when fitrun has its
 *                            own (fitrun/cgroup.h): the relay and the job
 *                            live there, the job's memory limit is the
 *                            cgroup's and every process of it is counted
 *   fr_policy_apply_slot()   becomes the relay; the job (its child) gets
 *                            rlimits (RLIMIT_CPU included), no_new_privs,
 *                            capabilities, the slot's uid, Landlock, seccomp —
 *                            built once, in the parent
 *   execvpe()                on failure: errno to the status pipe, a message
 *                            on stderr, exit 127 (not found) or 126
 *
 * The job is over when its process has exited (pidfd readable; killpg
 * first, while the zombie still pins the pid, then wait4 for status and
 * rusage) and both output pipes reached EOF. Output beyond the cap: the job
 * is killed and the pipe closed.
 *
 * CPU time. wait4's rusage counts the relay and what it reaped. When fitrun
 * kills the job (wall, CPU, output limit, interrupt) the relay dies before
 * it reaps the job, so just before the kill the CPU clocks of the whole
 * tree are read (fr_tree_cpu_ns) and the
 * result reports the larger of the two: the job's own CPU, in every
 * preset. */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fitrun/runtime.h"
#include "fitrun/common.h"

extern char **environ;

#define READ_CHUNK (64u << 10)
#define READS_PER_EVENT 4 /* then let other slots have a turn */
#define MAX_ARGV 65536
#define MEMORY_TAIL 4096 /* how much of stderr the memory heuristic reads */

/* What the child reports when it could not get to exec. */
enum { STAGE_SANDBOX = 1, STAGE_EXEC = 2, STAGE_CGROUP = 3 };
struct exec_status {
    int stage;
    int err;
};

struct buf {
    char *data;
    size_t len;
};

struct eslot {
    bool busy;
    pid_t pid;
    uint64_t killed_cpu_ns; /* the tree's CPU read just before fitrun killed it */
    int pidfd, out_fd, err_fd, in_fd, report_fd, status_fd;
    struct buf out, err;
    json_t *in_json; /* the job's "stdin" string, while it is written */
    const char *in_data;
    size_t in_len, in_off;
    bool exited;
    int wstatus;
    struct rusage ru;
    bool output_exceeded;
};

struct exec_rt {
    int nslots;
    struct eslot *slots;
    int devnull;
};

/* ---- checking jobs ------------------------------------------------------ */

/* The value of a job's member as a tree (only "argv" and "stdin" are ever
 * read this way: the job line itself is never one), NULL when absent. */
static json_t *member_json(const struct fr_job *job, const char *key)
{
    const struct fr_json_member *m = fr_job_member(job, key);
    return m ? json_loadb(m->value.p, m->value.n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL) : NULL;
}

static int check_argv(const json_t *argv, char *err, size_t errlen)
{
    if (!json_is_array(argv) || json_array_size(argv) == 0) {
        snprintf(err, errlen, "\"argv\" must be a non-empty array of strings");
        return -1;
    }
    if (json_array_size(argv) > MAX_ARGV) {
        snprintf(err, errlen, "\"argv\" has more than %d elements", MAX_ARGV);
        return -1;
    }
    size_t i;
    json_t *a;
    json_array_foreach(argv, i, a)
    {
        if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a)) {
            snprintf(err, errlen, "\"argv\"[%zu] must be a string without NUL bytes", i);
            return -1;
        }
    }
    if (!json_string_length(json_array_get(argv, 0))) {
        snprintf(err, errlen, "\"argv\"[0] (the command) is empty");
        return -1;
    }
    return 0;
}

static int exec_check(struct fr_runtime *rt, const struct fr_job *job, char *err, size_t errlen)
{
    (void)rt;
    json_t *argv = member_json(job, "argv");
    int rc = check_argv(argv, err, errlen);
    json_decref(argv);
    if (rc < 0)
        return -1;
    const struct fr_json_member *in = fr_job_member(job, "stdin");
    if (in && in->value.p[0] != '"' && !(in->value.n == 4 && !memcmp(in->value.p, "null", 4))) {
        snprintf(err, errlen, "\"stdin\" must be a string");
        return -1;
    }
    return 0;
}

/* ---- start / stop ------------------------------------------------------- */

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int exec_start(struct fr_runtime *rt, int nslots, char *err, size_t errlen)
{
    struct exec_rt *x = calloc(1, sizeof *x);
    if (!x || !(x->slots = calloc((size_t)nslots, sizeof *x->slots))) {
        free(x);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    x->nslots = nslots;
    x->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (x->devnull < 0) {
        snprintf(err, errlen, "cannot open /dev/null: %s", strerror(errno));
        free(x->slots);
        free(x);
        return -1;
    }
    rt->priv = x;
    return 0;
}

static void exec_stop(struct fr_runtime *rt)
{
    struct exec_rt *x = rt->priv;
    if (!x)
        return;
    close_fd(&x->devnull);
    free(x->slots);
    free(x);
    rt->priv = NULL;
}

/* ---- begin -------------------------------------------------------------- */

/* envp for one job: the run's environment without FITRUN_JOB_ID/FITRUN_WORKER,
 * plus this job's. Strings of the base are shared, not copied. */
static char **job_envp(char *const *base, char **own, size_t nown)
{
    size_t n = 0;
    while (base[n])
        n++;
    char **envp = calloc(n + nown + 1, sizeof *envp);
    if (!envp)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(base[i], "FITRUN_JOB_ID=", 14) && strncmp(base[i], "FITRUN_WORKER=", 14))
            envp[o++] = base[i];
    for (size_t i = 0; i < nown; i++)
        envp[o++] = own[i];
    return envp;
}

/* In the child, after fork: never returns. Only async-signal-safe calls. */
static _Noreturn void child(const struct fr_runtime *rt, pid_t fitrun, int slot, int in_fd, int out_fd, int err_fd,
                            int report_fd, int status_fd, const int *cgfds, int ncg, char **argv, char **envp)
{
    struct exec_status st = {0, 0};
    setsid();
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != fitrun)
        _exit(FR_EXIT_USAGE); /* fitrun is gone already */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigaction(SIGPIPE, &dfl, NULL);
    if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
        _exit(FR_EXIT_USAGE);
    /* Descriptors fitrun inherited without O_CLOEXEC (a test harness's
     * fd 3, ...) must not reach the job. */
    close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
    int r = fr_cgroup_join(cgfds, ncg);
    for (int i = 0; i < ncg; i++)
        close(cgfds[i]);
    if (r < 0) {
        st = (struct exec_status){STAGE_CGROUP, -r};
        (void)!write(status_fd, &st, sizeof st);
        _exit(FR_EXIT_USAGE);
    }
    r = fr_policy_apply_slot(rt->cfg->policy, report_fd, slot);
    if (r < 0) {
        st = (struct exec_status){STAGE_SANDBOX, -r};
        (void)!write(status_fd, &st, sizeof st);
        _exit(FR_EXIT_USAGE);
    }
    execvpe(argv[0], argv, envp);
    st = (struct exec_status){STAGE_EXEC, errno};
    (void)!write(status_fd, &st, sizeof st);
    /* The parent is single-threaded, so strerror() is safe here. */
    const char *parts[] = {"fitrun: cannot execute '", argv[0], "': ", strerror(st.err), "\n"};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        (void)!write(2, parts[i], strlen(parts[i]));
    _exit(st.err == ENOENT || st.err == ENOTDIR ? FR_EXIT_NOT_FOUND : FR_EXIT_CANNOT_EXEC);
}

static int nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Pipes with O_CLOEXEC on both ends; the parent's end is made non-blocking
 * (the child's must stay blocking: a job writing to a full pipe waits). */
static int make_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    return 0;
}

static void reset_slot(struct eslot *e)
{
    memset(e, 0, sizeof *e);
    e->pidfd = e->out_fd = e->err_fd = e->in_fd = e->report_fd = e->status_fd = -1;
}

static void close_all(struct fr_host *h, struct eslot *e)
{
    int *fds[] = {&e->pidfd, &e->out_fd, &e->err_fd, &e->in_fd, &e->report_fd, &e->status_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
        fr_host_unwatch(h, *fds[i]);
        close_fd(fds[i]);
    }
}

static int exec_begin(struct fr_runtime *rt, int slot, const struct fr_job *job, char *err, size_t errlen)
{
    struct exec_rt *x = rt->priv;
    struct eslot *e = &x->slots[slot];
    reset_slot(e);
    json_t *jargv = member_json(job, "argv");
    json_t *jin = member_json(job, "stdin");
    size_t argc = json_array_size(jargv);
    char **argv = calloc(argc + 1, sizeof *argv);
    char own_id[64 + 4096], own_worker[64];
    snprintf(own_id, sizeof own_id, "FITRUN_JOB_ID=%s", job->id);
    snprintf(own_worker, sizeof own_worker, "FITRUN_WORKER=%d", slot);
    char *own[] = {own_id, own_worker};
    char **envp = job_envp(rt->cfg->envp ? rt->cfg->envp : environ, own, 2);
    int pout[2] = {-1, -1}, perr[2] = {-1, -1}, pin[2] = {-1, -1}, prep[2] = {-1, -1}, pst[2] = {-1, -1};
    int rc = -1;
    if (!argv || !envp || !jargv) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < argc; i++)
        argv[i] = (char *)json_string_value(json_array_get(jargv, i));
    if (make_pipe(pout) < 0 || make_pipe(perr) < 0 || make_pipe(prep) < 0 || make_pipe(pst) < 0 ||
        (json_is_string(jin) && make_pipe(pin) < 0)) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto out;
    }
    int cgfds[FR_CG_HIER_MAX];
    int ncg = fr_cgroup_slot_fds(rt->cfg->cgroups, slot, cgfds, FR_CG_HIER_MAX);
    pid_t self = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0)
        child(rt, self, slot, pin[0] >= 0 ? pin[0] : x->devnull, pout[1], perr[1], prep[1], pst[1], cgfds, ncg, argv,
              envp);

    e->busy = true;
    e->pid = pid;
    e->out_fd = pout[0], pout[0] = -1;
    e->err_fd = perr[0], perr[0] = -1;
    e->report_fd = prep[0], prep[0] = -1;
    e->status_fd = pst[0], pst[0] = -1;
    e->in_fd = pin[1], pin[1] = -1;
    if (json_is_string(jin)) {
        e->in_json = json_incref(jin);
        e->in_data = json_string_value(jin);
        e->in_len = json_string_length(jin);
    }
    fr_host_own(rt->host, pid);
    fr_host_session(rt->host, slot, pid);
    e->pidfd = pidfd_open(pid, 0);
    if (e->pidfd < 0 || nonblock(e->out_fd) < 0 || nonblock(e->err_fd) < 0 || nonblock(e->report_fd) < 0 ||
        nonblock(e->status_fd) < 0 || (e->in_fd >= 0 && nonblock(e->in_fd) < 0) ||
        fr_host_watch(rt->host, e->pidfd, EPOLLIN, slot) < 0 || fr_host_watch(rt->host, e->out_fd, EPOLLIN, slot) < 0 ||
        fr_host_watch(rt->host, e->err_fd, EPOLLIN, slot) < 0 ||
        (e->in_fd >= 0 && e->in_len && fr_host_watch(rt->host, e->in_fd, EPOLLOUT, slot) < 0)) {
        snprintf(err, errlen, "cannot watch job process %d: %s", (int)pid, strerror(errno));
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        fr_host_disown(rt->host, pid);
        fr_host_session(rt->host, slot, 0);
        close_all(rt->host, e);
        json_decref(e->in_json);
        e->in_json = NULL;
        e->busy = false;
        goto out;
    }
    if (e->in_fd >= 0 && !e->in_len)
        close_fd(&e->in_fd); /* "stdin": "" is an immediate EOF */
    fr_host_watch_cpu(rt->host, slot, pid);
    rc = 0;
out:
    close_fd(&pout[0]), close_fd(&pout[1]), close_fd(&perr[0]), close_fd(&perr[1]);
    close_fd(&pin[0]), close_fd(&pin[1]), close_fd(&prep[0]), close_fd(&prep[1]);
    close_fd(&pst[0]), close_fd(&pst[1]);
    free(argv);
    free(envp);
    json_decref(jargv);
    json_decref(jin);
    return rc;
}

/* ---- events ------------------------------------------------------------- */

/* What the reaped rusage misses of the tree's CPU goes to user time (the
 * clocks do not split user from system). */
static void add_unreaped_cpu(struct rusage *ru, uint64_t tree_ns)
{
    uint64_t had_user_us = fr_timeval_us(&ru->ru_utime);
    uint64_t have_us = had_user_us + fr_timeval_us(&ru->ru_stime);
    uint64_t tree_us = tree_ns / 1000u;
    if (tree_us <= have_us)
        return;
    uint64_t user_us = had_user_us + (tree_us - have_us);
    ru->ru_utime.tv_sec = (time_t)(user_us / 1000000u);
    ru->ru_utime.tv_usec = (suseconds_t)(user_us % 1000000u);
}

/* Did the job say it ran out of memory? (RLIMIT_AS makes malloc fail; the
 * process then exits with an error rather than a signal.) */
static bool says_out_of_memory(const struct buf *err)
{
    static const char *const marks[] = {"MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory",
                                        "Out of memory"};
    size_t from = err->len > MEMORY_TAIL ? err->len - MEMORY_TAIL : 0;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (memmem(err->data + from, err->len - from, marks[i], strlen(marks[i])))
            return true;
    return false;
}

static void finish(struct fr_runtime *rt, int slot)
{
    struct exec_rt *x = rt->priv;
    struct eslot *e = &x->slots[slot];
    struct fr_raw raw;
    fr_raw_init(&raw);
    raw.kind = FR_RAW_FINISHED;
    raw.wstatus = e->wstatus;
    raw.ru = e->ru;
    raw.has_rusage = true;
    add_unreaped_cpu(&raw.ru, e->killed_cpu_ns);
    /* The relay reaped the job before mirroring its signal: its rusage
     * holds the job's CPU, so a SIGXCPU the job sent itself before its
     * budget was spent is a signal, not a timeout (fitrun/verdict.h). */
    raw.cpu_timer = WIFSIGNALED(e->wstatus) && WTERMSIG(e->wstatus) == SIGXCPU;
    raw.violation_nr = e->report_fd >= 0 ? fr_report_read(e->report_fd) : -1;
    raw.output_exceeded = e->output_exceeded;
    raw.out = e->out.data;
    raw.out_len = e->out.len;
    raw.err = e->err.data;
    raw.err_len = e->err.len;
    if (WIFEXITED(e->wstatus) && WEXITSTATUS(e->wstatus) != 0 && e->err.len)
        raw.memory_hint = says_out_of_memory(&e->err);

    struct exec_status st;
    char msg[256];
    if (e->status_fd >= 0 && read(e->status_fd, &st, sizeof st) == (ssize_t)sizeof st) {
        if (st.stage == STAGE_EXEC) {
            raw.error_type = st.err == ENOENT || st.err == ENOTDIR ? "ExecNotFound"
                             : st.err == EACCES                    ? "ExecPermission"
                                                                   : "ExecFailed";
            snprintf(msg, sizeof msg, "cannot execute the command: %s", strerror(st.err));
        } else if (st.stage == STAGE_CGROUP) {
            raw.error_type = "SandboxFailed";
            snprintf(msg, sizeof msg, "the job could not join its cgroup: %s", strerror(st.err));
        } else {
            raw.error_type = "SandboxFailed";
            snprintf(msg, sizeof msg, "the sandbox could not be applied: %s", strerror(st.err));
        }
        raw.error_message = msg;
    }
    close_all(rt->host, e);
    json_decref(e->in_json);
    e->in_json = NULL;
    e->in_data = NULL;
    e->busy = false;
    fr_host_complete(rt->host, slot, &raw);
    free(e->out.data);
    free(e->err.data);
    e->out.data = e->err.data = NULL;
}

static void maybe_finish(struct fr_runtime *rt, int slot)
{
    struct eslot *e = &((struct exec_rt *)rt->priv)->slots[slot];
    if (e->busy && e->exited && e->out_fd < 0 && e->err_fd < 0)
        finish(rt, slot);
}

/* Kill the job's process group. Only while the leader is not reaped: its
 * zombie pins the pid, so the group id cannot belong to anyone else.
 * sample: read the tree's CPU first (fitrun's own kills). */
static void kill_tree(struct eslot *e, bool sample)
{
    if (!e->exited && e->pid > 0) {
        if (sample) {
            uint64_t ns = fr_tree_cpu_ns(e->pid);
            if (ns > e->killed_cpu_ns)
                e->killed_cpu_ns = ns;
        }
        kill(-e->pid, SIGKILL);
        kill(e->pid, SIGKILL);
    }
}

static void on_exit_event(struct fr_runtime *rt, int slot, struct eslot *e)
{
    kill_tree(e, false); /* the rest of the group, before reaping the leader */
    pid_t r;
    do
        r = wait4(e->pid, &e->wstatus, WNOHANG, &e->ru);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return; /* spurious */
    if (r < 0)
        e->wstatus = W_EXITCODE(FR_EXIT_USAGE, 0); /* cannot happen: it is our child */
    e->exited = true;
    fr_host_unwatch(rt->host, e->pidfd);
    close_fd(&e->pidfd);
    fr_host_disown(rt->host, e->pid);
    fr_host_watch_cpu(rt->host, slot, 0);
    /* Release the session: orphans the job left behind are now fair game. */
    fr_host_session(rt->host, slot, 0);
    fr_host_reap(rt->host);
    maybe_finish(rt, slot);
}

static void stop_reading(struct fr_runtime *rt, int *fd)
{
    fr_host_unwatch(rt->host, *fd);
    close_fd(fd);
}

static void on_output(struct fr_runtime *rt, int slot, struct eslot *e, int *fd, struct buf *b)
{
    uint64_t cap = rt->cfg->output_cap;
    char chunk[READ_CHUNK];
    for (int i = 0; i < READS_PER_EVENT; i++) {
        ssize_t n = read(*fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) { /* EOF (or an error: treat alike) */
            stop_reading(rt, fd);
            maybe_finish(rt, slot);
            return;
        }
        size_t room = b->len < cap ? (size_t)(cap - b->len) : 0;
        size_t take = (size_t)n < room ? (size_t)n : room;
        if (take) {
            char *nd = realloc(b->data, b->len + take);
            if (!nd) {
                fr_host_fail(rt->host, "out of memory capturing the output of job %d", (int)e->pid);
                return;
            }
            b->data = nd;
            memcpy(b->data + b->len, chunk, take);
            b->len += take;
        }
        if ((size_t)n > take) {
            /* Over the cap: what we have is kept, the job dies. */
            e->output_exceeded = true;
            kill_tree(e, true);
            stop_reading(rt, fd);
            maybe_finish(rt, slot);
            return;
        }
    }
}

static void on_stdin(struct fr_runtime *rt, struct eslot *e)
{
    while (e->in_off < e->in_len) {
        ssize_t w = write(e->in_fd, e->in_data + e->in_off, e->in_len - e->in_off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (w < 0)
            break; /* EPIPE: the job does not read its input; fine */
        e->in_off += (size_t)w;
    }
    stop_reading(rt, &e->in_fd);
}

static void exec_event(struct fr_runtime *rt, int slot, int fd, uint32_t events)
{
    (void)events;
    struct exec_rt *x = rt->priv;
    if (slot < 0 || slot >= x->nslots)
        return;
    struct eslot *e = &x->slots[slot];
    if (!e->busy)
        return;
    if (fd == e->pidfd)
        on_exit_event(rt, slot, e);
    else if (fd == e->out_fd)
        on_output(rt, slot, e, &e->out_fd, &e->out);
    else if (fd == e->err_fd)
        on_output(rt, slot, e, &e->err_fd, &e->err);
    else if (fd == e->in_fd)
        on_stdin(rt, e);
}

static void exec_abort(struct fr_runtime *rt, int slot, enum fr_abort_reason why)
{
    (void)why;
    struct exec_rt *x = rt->priv;
    struct eslot *e = &x->slots[slot];
    if (!e->busy)
        return;
    if (!e->exited) {
        kill_tree(e, true); /* completion follows from the pidfd */
        return;
    }
    /* The leader is gone but something still holds the output pipes
     * (a descendant passed them on): stop waiting for EOF. */
    stop_reading(rt, &e->out_fd);
    stop_reading(rt, &e->err_fd);
    maybe_finish(rt, slot);
}

const struct fr_runtime_ops fr_runtime_exec_ops = {
    .name = "exec",
    .job_helpers = 1, /* the relay */
    .start = exec_start,
    .check = exec_check,
    .begin = exec_begin,
    .event = exec_event,
    .abort = exec_abort,
    .stop = exec_stop,
};
