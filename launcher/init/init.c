/* init.c — start the main child and supervise it: forward signals, reap
 * zombies, clean up its process group, hand the terminal over and back.
 * See fitrun/init.h for the behaviour; signals.c and reaper.c hold the
 * pieces. */
#include "fitrun/init.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "fitrun/common.h"
#include "internal.h"

int fr_exit_status(int wstatus)
{
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return FR_EXIT_USAGE; /* stopped/continued are never passed here */
}

int fr_exec_failure_status(int err)
{
    /* The shell's convention: 127 "command not found", 126 "found but
     * cannot be executed" (EACCES, EISDIR, ETXTBSY, ...). execvpe runs a
     * file the kernel refuses with ENOEXEC (no #! line) under /bin/sh, as
     * execvp, env(1) and tini do, so ENOEXEC only gets here when /bin/sh
     * itself cannot be run. */
    return err == ENOENT || err == ENOTDIR ? FR_EXIT_NOT_FOUND : FR_EXIT_CANNOT_EXEC;
}

static void report_exec_failure(const char *cmd, int err)
{
    fr_warn("cannot run '%s': %s%s", cmd, strerror(err),
            err == ENOENT && !strchr(cmd, '/') ? " (not found in PATH)" : "");
}

int fr_exec_replace(char *const *argv, char *const *envp)
{
    execvpe(argv[0], argv, envp);
    int err = errno;
    report_exec_failure(argv[0], err);
    return fr_exec_failure_status(err);
}

/* The controlling terminal, when fitrun's process group is its foreground
 * group (fitrun started in the background, or without a terminal, must not
 * grab one). Returns a CLOEXEC descriptor or -1.
 *
 * Both process-group ids read as 0 when the groups lie outside fitrun's PID
 * namespace (`unshare --pid --fork fitrun`: fitrun is PID 1, its group is
 * unshare's): then the terminal is taken when it is foreground for that
 * outside group too, as far as one can tell, but cannot be handed back by
 * number — *restore is set false and the starting shell takes it back. */
static int foreground_tty(bool *restore)
{
    int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    pid_t mine = getpgrp();
    if (tcgetpgrp(fd) != mine) {
        close(fd);
        return -1;
    }
    *restore = mine > 0;
    return fd;
}

/* The forked child: own process group, the terminal if fitrun had it,
 * original signal state, exec. On failure the errno goes to the parent
 * through the CLOEXEC pipe (nothing is written when exec succeeds). */
_Noreturn static void child(const struct fr_init_opts *o, const struct fr_sigstate *st, int tty, int errfd)
{
    /* Failures of setpgid/tcsetpgrp are not fatal: the program still runs,
     * only job control is degraded; the group ops below then miss. */
    (void)setpgid(0, 0);
    if (tty >= 0)
        (void)tcsetpgrp(tty, getpid()); /* SIGTTOU is still ignored here */
    fr_signals_restore(st);
    execvpe(o->argv[0], o->argv, o->envp);
    int err = errno;
    ssize_t w;
    do
        w = write(errfd, &err, sizeof err);
    while (w < 0 && errno == EINTR);
    _exit(fr_exec_failure_status(err));
}

/* Fork the child and learn whether its exec worked. Returns 0 with *pid
 * set and *exec_err = 0 (running) or the exec errno (child already
 * reaped); -1 when fitrun itself failed (message printed). */
static int spawn(const struct fr_init_opts *o, const struct fr_sigstate *st, int tty, pid_t *pid, int *exec_err)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        fr_warn("cannot create the exec-status pipe: %s", strerror(errno));
        return -1;
    }
    *pid = fork();
    if (*pid < 0) {
        fr_warn("cannot fork to run '%s': %s", o->argv[0], strerror(errno));
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (*pid == 0) {
        close(p[0]);
        child(o, st, tty, p[1]);
    }
    close(p[1]);
    int err = 0;
    ssize_t r;
    do
        r = read(p[0], &err, sizeof err);
    while (r < 0 && errno == EINTR);
    close(p[0]);
    *exec_err = r == (ssize_t)sizeof err ? err : 0;
    if (*exec_err) {
        int ws;
        while (waitpid(*pid, &ws, 0) < 0 && errno == EINTR)
            ;
    }
    return 0;
}

static void forward(int sig, const struct fr_main_child *m, bool group)
{
    /* Once the main child is reaped its pid may be reused: only its
     * process group (kept alive by its remaining members) is addressed. */
    pid_t target = group || m->done ? -m->pid : m->pid;
    if (kill(target, sig) < 0 && errno != ESRCH)
        fr_warn("cannot forward signal %d to %s %d: %s", sig, target < 0 ? "process group" : "process", (int)m->pid,
                strerror(errno));
}

static struct timespec ms_to_ts(uint64_t ms)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
    return ts;
}

/* The phase after the main child exits. */
struct cleanup {
    bool started;
    bool killed;
    uint64_t deadline_ns; /* TERM → KILL, then KILL → give up */
    uint64_t poll_ms;     /* back-off for groups whose members are not our children */
};

static void cleanup_start(struct cleanup *c, const struct fr_main_child *m, uint64_t grace_ms)
{
    c->started = true;
    c->poll_ms = 1;
    c->deadline_ns = fr_now_ns() + grace_ms * 1000000ull;
    if (kill(-m->pid, SIGTERM) == 0)
        (void)kill(-m->pid, SIGCONT); /* a stopped member cannot act on SIGTERM */
}

/* Advance the cleanup; returns true when fitrun may exit. Otherwise sets
 * *wait to how long to sleep in sigtimedwait. */
static bool cleanup_step(struct cleanup *c, const struct fr_main_child *m, struct timespec *wait)
{
    if (!fr_group_alive(m->pid))
        return true;
    uint64_t now = fr_now_ns();
    if (now >= c->deadline_ns) {
        if (c->killed) {
            fr_warn("process group %d survived SIGKILL for %d ms (uninterruptible sleep?): exiting anyway", (int)m->pid,
                    FR_INIT_KILL_WAIT_MS);
            return true;
        }
        fr_info("process group %d still running after the grace period: sending SIGKILL", (int)m->pid);
        (void)kill(-m->pid, SIGKILL);
        c->killed = true;
        c->poll_ms = 1;
        c->deadline_ns = now + FR_INIT_KILL_WAIT_MS * 1000000ull;
    }
    uint64_t left_ms = (c->deadline_ns - now + 999999) / 1000000;
    *wait = ms_to_ts(c->poll_ms < left_ms ? c->poll_ms : left_ms);
    if (c->poll_ms < 100)
        c->poll_ms *= 2;
    return false;
}

static int supervise(const struct fr_init_opts *o, const struct fr_sigstate *st, pid_t pid)
{
    struct fr_main_child m = {.pid = pid};
    struct cleanup c = {0};
    for (;;) {
        struct timespec wait, *tp = NULL;
        if (m.done) {
            if (!c.started)
                cleanup_start(&c, &m, o->grace_ms);
            if (cleanup_step(&c, &m, &wait))
                break;
            tp = &wait;
        }
        siginfo_t info;
        int sig = sigtimedwait(&st->waited, &info, tp);
        if (sig < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            fr_warn("sigtimedwait: %s", strerror(errno));
            return FR_EXIT_USAGE;
        }
        if (sig == SIGCHLD)
            fr_reap_all(&m);
        else if (fr_signal_forwarded(st, sig))
            forward(sig, &m, o->forward_to_group);
    }
    fr_reap_all(&m); /* the last zombies of the group */
    return fr_exit_status(m.wstatus);
}

int fr_init_run(const struct fr_init_opts *o, const struct fr_sigstate *st)
{
    if (o->subreaper && fr_subreaper_enable() < 0) {
        fr_warn("cannot become a child subreaper (prctl PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
        return FR_EXIT_USAGE;
    }
    bool restore = false;
    int tty = foreground_tty(&restore);
    pid_t pid;
    int exec_err, status;
    if (spawn(o, st, tty, &pid, &exec_err) < 0)
        status = FR_EXIT_USAGE;
    else if (exec_err) {
        report_exec_failure(o->argv[0], exec_err);
        status = fr_exec_failure_status(exec_err);
    } else
        status = supervise(o, st, pid);
    if (tty >= 0) {
        /* Take the terminal back for whoever started fitrun (its shell);
         * works from the background because SIGTTOU is ignored. */
        if (restore && tcsetpgrp(tty, getpgrp()) < 0 && errno != ENOTTY && errno != EIO)
            fr_warn("cannot restore the terminal's foreground process group: %s", strerror(errno));
        close(tty);
    }
    return status;
}
