/* sandbox_apply — what fr_policy_apply costs in a freshly forked child.
 *
 *   build/bench/sandbox_apply [-n ITERATIONS]
 *
 * For each mode, N times: fork, (apply), _exit, waitpid. Two numbers per
 * mode, median and p99 in microseconds:
 *   apply     measured inside the child around fr_policy_apply alone
 *   cycle     fork .. waitpid as the parent sees it
 * and the cycle's ratio to the peer: a bare fork + _exit + waitpid.
 * "compile in child" is the naive alternative (fr_policy_build_kv +
 * apply in every child, i.e. libseccomp compiling per job) to show what
 * preparing once in the parent saves. The exec row includes the relay's
 * own fork (the job returns from apply in a grandchild).
 *
 * The machine is shared and noisy: compare the rows with each other, run
 * it twice, and read medians. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/sandbox.h"
#include "fitrun/util.h"

struct mode {
    const char *label;
    const char *kv;       /* NULL: bare fork, nothing applied */
    bool compile_in_child;
    bool prepared_worker; /* fr_policy_prepare_worker in a forked "worker" first */
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_us(uint64_t *ns, int n, double pct)
{
    qsort(ns, (size_t)n, sizeof ns[0], cmp_u64);
    int i = (int)(pct / 100.0 * (n - 1) + 0.5);
    return (double)ns[i] / 1000.0;
}

/* One fork..waitpid cycle; *apply_ns is what the child measured. */
static void cycle(const struct mode *m, const struct fr_policy *pol, uint64_t *cycle_ns, uint64_t *apply_ns)
{
    int out[2], rep[2];
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0)
        fr_die_errno(1, "sandbox_apply: pipe2");
    uint64_t t0 = fr_now_ns();
    pid_t pid = fork();
    if (pid < 0)
        fr_die_errno(1, "sandbox_apply: fork");
    if (pid == 0) {
        uint64_t a = fr_now_ns();
        int rc = 0;
        if (m->compile_in_child) {
            char err[256];
            struct fr_policy *p;
            rc = fr_policy_build_kv(m->kv, &p, err, sizeof err) < 0 ? -1 : fr_policy_apply(p, rep[1]);
        } else if (pol) {
            rc = fr_policy_apply(pol, rep[1]);
        }
        uint64_t b = fr_now_ns() - a;
        (void)!write(out[1], &b, sizeof b);
        _exit(rc < 0 ? 125 : 0);
    }
    close(out[1]);
    close(rep[1]);
    int st;
    if (waitpid(pid, &st, 0) != pid)
        fr_die_errno(1, "sandbox_apply: waitpid");
    *cycle_ns = fr_now_ns() - t0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fr_die(1, "sandbox_apply: %s: child ended with status 0x%x", m->label, st);
    if (read(out[0], apply_ns, sizeof *apply_ns) != (ssize_t)sizeof *apply_ns)
        fr_die(1, "sandbox_apply: %s: no timing from the child", m->label);
    close(out[0]);
    close(rep[0]);
}

int main(int argc, char **argv)
{
    int n = 2000;
    if (argc == 3 && strcmp(argv[1], "-n") == 0)
        n = atoi(argv[2]);
    if (n < 10)
        fr_die(2, "usage: sandbox_apply [-n ITERATIONS>=10]");
    static const struct mode modes[] = {
        { "bare fork+exit (peer)", NULL, false, false },
        { "none (rlimits+caps)", "preset=none;cpu_time=10s;memory=1G;nofile=256", false, false },
        { "python", "preset=python;cpu_time=10s;memory=1G;nofile=256", false, false },
        { "python spec_allow", "preset=python;cpu_time=10s;memory=1G;nofile=256;spec_allow=yes", false, false },
        { "exec (relay fork)", "preset=exec;cpu_time=10s;memory=1G;nofile=256", false, false },
        { "python, compile in child", "preset=python;cpu_time=10s;memory=1G;nofile=256", true, false },
        { "python, prepared worker", "preset=python;cpu_time=10s;memory=1G;nofile=256", false, true },
    };
    uint64_t *cyc = calloc((size_t)n, sizeof *cyc), *app = calloc((size_t)n, sizeof *app);
    if (!cyc || !app)
        fr_die(1, "sandbox_apply: out of memory");
    printf("fr_policy_apply cost, %d iterations per row (microseconds)\n", n);
    printf("%-26s %10s %10s %10s %10s %8s\n", "mode", "apply p50", "apply p99", "cycle p50", "cycle p99",
           "x bare");
    fflush(stdout);
    double bare = 0;
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        /* A prepared worker changes its own bounding set for good: do it
         * in a forked "worker" so the other rows are unaffected. */
        pid_t worker = modes[m].prepared_worker ? fork() : 0;
        if (worker < 0)
            fr_die_errno(1, "sandbox_apply: fork");
        if (worker > 0) {
            int st;
            if (waitpid(worker, &st, 0) != worker || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                fr_die(1, "sandbox_apply: %s: worker failed", modes[m].label);
            continue;
        }
        struct fr_policy *pol = NULL;
        char err[256];
        if (modes[m].kv && !modes[m].compile_in_child && fr_policy_build_kv(modes[m].kv, &pol, err, sizeof err) < 0)
            fr_die(1, "sandbox_apply: %s", err);
        if (modes[m].prepared_worker && fr_policy_prepare_worker(pol) < 0)
            fr_die(1, "sandbox_apply: fr_policy_prepare_worker failed");
        for (int i = 0; i < n; i++)
            cycle(&modes[m], pol, &cyc[i], &app[i]);
        double c50 = pct_us(cyc, n, 50), c99 = pct_us(cyc, n, 99);
        double a50 = pct_us(app, n, 50), a99 = pct_us(app, n, 99);
        if (m == 0)
            bare = c50;
        printf("%-26s %10.1f %10.1f %10.1f %10.1f %8.2f\n", modes[m].label, a50, a99, c50, c99, c50 / bare);
        fflush(stdout);
        fr_policy_free(pol);
        if (modes[m].prepared_worker)
            _exit(0);
    }
    free(cyc);
    free(app);
    return 0;
}
