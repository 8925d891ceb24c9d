/* wrap_sigrecorder — records every signal it receives, one number per line.
 *
 *   wrap_sigrecorder [--fork] [--exit-after N] FILE
 *
 * Installs a handler for every catchable signal (so SIGTERM, SIGINT,
 * SIGTSTP, ... are recorded instead of acting), appends "<signo>\n" to FILE
 * for each delivery, and creates FILE.ready once the handlers are in place.
 * With --fork, a child in the same process group does the same into
 * FILE.child (and FILE.child.ready): a second member of the group, for
 * --forward-to-group. With --exit-after N, each process exits 0 after N
 * recorded signals; otherwise it runs until killed. Used by
 * tests/cli/wrap_signals.bats. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int out_fd = -1;
static volatile sig_atomic_t recorded;
static long limit; /* --exit-after; 0 = none */

/* Async-signal-safe: format the number by hand, one write per line. Once
 * the limit is reached nothing more is recorded: the process is on its
 * way out, and what arrives then (the wrapper's cleanup of the group, our
 * own child's SIGCHLD) is not part of the test. */
static void record(int sig)
{
    if (limit > 0 && recorded >= limit)
        return;
    char buf[16];
    int n = 0;
    char tmp[12];
    int t = 0;
    do
        tmp[t++] = (char)('0' + sig % 10);
    while ((sig /= 10) > 0);
    while (t > 0)
        buf[n++] = tmp[--t];
    buf[n++] = '\n';
    int saved = errno;
    if (write(out_fd, buf, (size_t)n) < 0) {
        /* nothing sensible to do inside a handler */
    }
    errno = saved;
    recorded++;
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = record;
    sigemptyset(&sa.sa_mask);
    for (int s = 1; s < NSIG; s++) {
        if (s == SIGKILL || s == SIGSTOP)
            continue;
        /* glibc refuses its two internal real-time signals (EINVAL): fine. */
        sigaction(s, &sa, NULL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static void open_out(const char *path)
{
    out_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (out_fd < 0) {
        fprintf(stderr, "wrap_sigrecorder: cannot open %s: %s\n", path, strerror(errno));
        exit(2);
    }
}

static void mark_ready(const char *path)
{
    char ready[4096];
    snprintf(ready, sizeof ready, "%s.ready", path);
    int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "wrap_sigrecorder: cannot create %s: %s\n", ready, strerror(errno));
        exit(2);
    }
    close(fd);
}

/* Sleep until enough signals were recorded (forever when limit <= 0). */
static void wait_for(void)
{
    sigset_t none;
    sigemptyset(&none);
    for (;;) {
        sigset_t all, old;
        sigfillset(&all);
        sigprocmask(SIG_BLOCK, &all, &old);
        if (limit > 0 && recorded >= limit) {
            sigprocmask(SIG_SETMASK, &old, NULL);
            return;
        }
        sigsuspend(&none); /* atomically unblock and wait: no lost wakeup */
        sigprocmask(SIG_SETMASK, &old, NULL);
    }
}

int main(int argc, char **argv)
{
    int do_fork = 0;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--fork"))
            do_fork = 1;
        else if (!strcmp(argv[i], "--exit-after") && i + 1 < argc)
            limit = strtol(argv[++i], NULL, 10);
        else
            break;
    }
    if (i + 1 != argc) {
        fprintf(stderr, "usage: wrap_sigrecorder [--fork] [--exit-after N] FILE\n");
        return 2;
    }
    const char *path = argv[i];
    install();
    if (do_fork) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("wrap_sigrecorder: fork");
            return 2;
        }
        if (pid == 0) {
            char cpath[4096];
            snprintf(cpath, sizeof cpath, "%s.child", path);
            open_out(cpath);
            mark_ready(cpath);
            wait_for();
            return 0;
        }
        /* The parent does not wait for its child: the child's fate is the
         * wrapper's business (cleanup of the group). */
        open_out(path);
        mark_ready(path);
        wait_for();
        return 0;
    }
    open_out(path);
    mark_ready(path);
    wait_for();
    return 0;
}
