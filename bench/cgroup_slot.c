/* cgroup_slot — what fitrun's own cgroups (fitrun/cgroup.h) add to one
 * prediction: the child's join, and the pool's reads around the job.
 *
 *   build/bench/cgroup_slot [-n ROUNDS]
 *
 * Makes the tree `fitrun run` makes (one slot, memory 256M, pids 64) below
 * this process's own cgroups, where they are delegated. Every round runs
 * one fork .. waitpid cycle of each mode, in a rotating order
 * (interleaved: background load hits every mode alike):
 *   bare     fork, the child _exits, waitpid (the peer: any
 *            fork-per-prediction design pays it)
 *   cgroup   fr_cgroup_slot_begin (the peak restarted; the other
 *            baselines are the previous cycle's end: the slot was left
 *            empty), fork, the child joins the slot's cgroups
 *            (fr_cgroup_join) and _exits, waitpid, fr_cgroup_slot_end
 *            (OOM counter, peak, CPU and pids.current read; v2 cgroup.kill)
 * Per mode, median and p90 of the cycle in microseconds, and "extra" =
 * the difference of medians: the cost of cgroups per prediction. The
 * child writes one byte to a pipe before it exits, in both modes, so the
 * parent's wait covers the same work.
 *
 * The machine is shared and noisy: read medians, run it twice. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fitrun/cgroup.h"
#include "fitrun/common.h"
#include "fitrun/detect.h"

enum { BARE, CGROUP, NMODES };
static const char *const names[NMODES] = {"bare fork+exit+wait", "cgroup join+counters"};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One cycle of mode m; its duration in ns, or 0 on failure. */
static uint64_t cycle(int m, struct fr_cgroup_tree *t)
{
    int fds[FR_CG_HIER_MAX];
    int n = m == CGROUP ? fr_cgroup_slot_fds(t, 0, fds, FR_CG_HIER_MAX) : 0;
    uint64_t t0 = now_ns();
    if (m == CGROUP)
        fr_cgroup_slot_begin(t, 0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 0;
    }
    if (pid == 0)
        _exit(fr_cgroup_join(fds, n) < 0 ? 1 : 0);
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
        fprintf(stderr, "cgroup_slot: the child failed (mode %s)\n", names[m]);
        return 0;
    }
    if (m == CGROUP) {
        struct fr_cgroup_usage u;
        fr_cgroup_slot_kill(t, 0);
        fr_cgroup_slot_end(t, 0, FR_CG_END_IDLE, &u); /* nothing joins before the next begin */
    }
    return now_ns() - t0;
}

int main(int argc, char **argv)
{
    int rounds = 2000;
    if (argc == 3 && !strcmp(argv[1], "-n"))
        rounds = atoi(argv[2]);
    if (rounds < 10) {
        fprintf(stderr, "usage: cgroup_slot [-n ROUNDS >= 10]\n");
        return 2;
    }
    static struct fr_resources res;
    static struct fr_cgroup_probe probe;
    struct fr_detect_opts dopts = {0};
    fr_detect(&dopts, &res);
    fr_cgroup_probe(&res, FR_CGROUPS_REQUIRE, &probe);
    struct fr_cgroup_limits lim = {.memory = 256u << 20, .pids = 64};
    struct fr_cgroup_tree *t = NULL;
    char err[2048];
    if (fr_cgroup_tree_create(&probe, &lim, 1, &t, err, sizeof err) < 0) {
        fprintf(stderr, "cgroup_slot: %s\n", err);
        return 1;
    }
    char line[1024];
    printf("%s\n", fr_cgroup_tree_summary(t, line, sizeof line));
    uint64_t *ns[NMODES];
    for (int m = 0; m < NMODES; m++)
        ns[m] = calloc((size_t)rounds, sizeof(uint64_t));
    int rc = 0;
    for (int r = 0; r < rounds && !rc; r++)
        for (int k = 0; k < NMODES && !rc; k++) {
            int m = (r + k) % NMODES;
            if (!(ns[m][r] = cycle(m, t)))
                rc = 1;
        }
    fr_cgroup_tree_destroy(t);
    if (rc)
        return 1;
    double med[NMODES];
    printf("%-24s %10s %10s %8s\n", "mode", "median us", "p90 us", "vs bare");
    for (int m = 0; m < NMODES; m++) {
        qsort(ns[m], (size_t)rounds, sizeof(uint64_t), cmp_u64);
        med[m] = ns[m][rounds / 2] / 1e3;
        printf("%-24s %10.1f %10.1f %8.2f\n", names[m], med[m], ns[m][rounds * 9 / 10] / 1e3, med[m] / med[BARE]);
    }
    printf("extra per prediction: %.1f us (difference of medians, %d rounds)\n", med[CGROUP] - med[BARE], rounds);
    for (int m = 0; m < NMODES; m++)
        free(ns[m]);
    return 0;
}
