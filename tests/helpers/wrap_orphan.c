/* wrap_orphan — make orphans that die as zombies, and check that whoever
 * inherited them (PID 1 or the nearest subreaper) reaped them.
 *
 *   wrap_orphan [--self-subreaper] N [TIMEOUT_S]
 *
 * For each of N rounds: fork an intermediate process that forks a
 * grandchild and exits at once; the grandchild waits until it has been
 * re-parented (orphaned), then exits — becoming a zombie of its new parent.
 * Then wait up to TIMEOUT_S seconds (default 10) for every grandchild to
 * vanish from /proc. Exit 0 when all were reaped, 1 when a zombie is left
 * (its pid is printed), 2 on a setup error.
 *
 * --self-subreaper makes this process the subreaper, and it never reaps the
 * grandchildren: the control case, which must report the zombies (so the
 * check can fail). Used by tests/cli/wrap_reap.bats. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ORPHANS 64

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* 'Z' for a zombie, 0 when the pid is gone, another state letter otherwise. */
static char proc_state(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')'); /* comm may contain spaces */
    return rp && rp[1] == ' ' ? rp[2] : '?';
}

/* One round: returns the grandchild's pid, or -1. */
static pid_t make_orphan(void)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    pid_t mid = fork();
    if (mid < 0)
        return -1;
    if (mid == 0) {
        pid_t me = getpid();
        pid_t gc = fork();
        if (gc == 0) {
            /* Wait to be orphaned, so we die as someone else's zombie. */
            while (getppid() == me)
                sleep_ms(1);
            _exit(0);
        }
        if (write(p[1], &gc, sizeof gc) != (ssize_t)sizeof gc)
            _exit(2);
        _exit(gc > 0 ? 0 : 2);
    }
    close(p[1]);
    pid_t gc = -1;
    if (read(p[0], &gc, sizeof gc) != (ssize_t)sizeof gc)
        gc = -1;
    close(p[0]);
    int st;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
        ;
    return gc;
}

int main(int argc, char **argv)
{
    int i = 1, self_subreaper = 0;
    if (i < argc && !strcmp(argv[i], "--self-subreaper")) {
        self_subreaper = 1;
        i++;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: wrap_orphan [--self-subreaper] N [TIMEOUT_S]\n");
        return 2;
    }
    int n = atoi(argv[i]);
    long timeout_ms = i + 1 < argc ? atol(argv[i + 1]) * 1000 : 10000;
    if (n < 1 || n > MAX_ORPHANS) {
        fprintf(stderr, "wrap_orphan: N must be 1..%d\n", MAX_ORPHANS);
        return 2;
    }
    if (self_subreaper && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        perror("wrap_orphan: prctl(PR_SET_CHILD_SUBREAPER)");
        return 2;
    }
    pid_t gc[MAX_ORPHANS];
    for (int k = 0; k < n; k++)
        if ((gc[k] = make_orphan()) < 0) {
            perror("wrap_orphan: fork");
            return 2;
        }
    int left = n;
    for (long waited = 0; left > 0 && waited < timeout_ms; waited += 10) {
        left = 0;
        for (int k = 0; k < n; k++)
            if (gc[k] > 0 && proc_state(gc[k]) == 0)
                gc[k] = 0; /* reaped; never look at a reused pid again */
            else if (gc[k] > 0)
                left++;
        if (left)
            sleep_ms(10);
    }
    int zombies = 0;
    for (int k = 0; k < n; k++)
        if (gc[k] > 0) {
            char s = proc_state(gc[k]);
            printf("orphan %d still present (state %c)\n", (int)gc[k], s ? s : '-');
            zombies += s == 'Z';
        }
    printf("%d of %d orphans reaped (%d left as zombies)\n", n - left, n, zombies);
    return left ? 1 : 0;
}
