/* sandbox_apply — what applying a policy costs in a freshly forked child.
 *
 *   build/bench/sandbox_apply [-n ROUNDS] [--prepared]
 *
 * Every round runs one fork .. waitpid cycle of each mode, in a rotating
 * order (interleaved: background load hits every mode alike). Per mode, in
 * microseconds, median and p90 of:
 *   apply   measured inside the child around the apply call (for a relay
 *           mode: from before the relay's fork to the job's return)
 *   cycle   fork .. waitpid as the parent sees it, the supervisor's side
 *           included (receiving the listener)
 * and the cycle's ratio to the peer, a bare fork + _exit + waitpid.
 *
 * The modes come in pairs: a base (seccomp, rlimits, caps) and the same with
 * least privilege added (Landlock with the runtime's base set, the slot's
 * uid, or both); "+LP" is the difference of medians, the cost of least
 * privilege per prediction. python rows use fr_policy_apply_notify (the
 * warm runtime's worker as the supervisor), except "python relay"
 * (fr_policy_apply with a report descriptor, which forks a relay); exec
 * rows the relay.
 * --prepared: the bench process first drops its own bounding set
 * (fr_policy_prepare_worker), as a warm worker may: every row then skips
 * the ~40 bounding-set drops.
 *
 * The machine is shared and noisy: read medians, run it twice. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fitrun/sandbox.h"
#include "fitrun/sandbox_keys.h"
#include "fitrun/common.h"

enum how { BARE, NOTIFY, RELAY, KILL };

struct mode {
    const char *label;
    const char *kv;
    enum how how;
    int base;  /* index of the mode this one adds least privilege to, -1 = none */
    bool slot; /* apply with slot 0 (per-slot uid) */
    bool needs_root;
    struct fr_policy *pol;
    uint64_t *cyc, *app;
};

#define LIMITS "cpu_time=10s;memory=1G;nofile=256"

static struct mode g_modes[] = {
    {"bare fork+exit (peer)", NULL, BARE, -1, false, false, NULL, NULL, NULL},
    {"python, no supervisor (kill)", "preset=python;" LIMITS, KILL, -1, false, false, NULL, NULL, NULL},
    {"python notify", "preset=python;" LIMITS, NOTIFY, -1, false, false, NULL, NULL, NULL},
    {"python notify +landlock", "preset=python;fs=libs;read=/usr;" LIMITS, NOTIFY, 2, false, false, NULL, NULL, NULL},
    {"python notify +uid", "preset=python;user=slot;slots=1;uid_base=61900;" LIMITS, NOTIFY, 2, true, true, NULL, NULL,
     NULL},
    {"python notify +landlock +uid", "preset=python;fs=libs;read=/usr;user=slot;slots=1;uid_base=61900;" LIMITS, NOTIFY,
     2, true, true, NULL, NULL, NULL},
    {"python relay", "preset=python;" LIMITS, RELAY, -1, false, false, NULL, NULL, NULL},
    {"exec relay", "preset=exec;" LIMITS, RELAY, -1, false, false, NULL, NULL, NULL},
    {"exec relay +landlock +uid", "preset=exec;fs=system;user=slot;slots=1;uid_base=61900;" LIMITS, RELAY, 7, true,
     true, NULL, NULL, NULL},
};
#define NMODES (sizeof g_modes / sizeof g_modes[0])

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

static int child_apply(const struct mode *m, int sock)
{
    int slot = m->slot ? 0 : -1;
    switch (m->how) {
    case BARE: return 0;
    case NOTIFY: return fr_policy_apply_notify(m->pol, sock, slot);
    case RELAY: return fr_policy_apply_slot(m->pol, sock, slot); /* sock: a pipe's write end, the report fd */
    case KILL: return fr_policy_apply_slot(m->pol, -1, slot);
    }
    return -1;
}

/* One fork..waitpid cycle; *apply_ns is what the child measured. */
static void cycle(const struct mode *m, uint64_t *cycle_ns, uint64_t *apply_ns)
{
    int out[2], rep[2];
    if (pipe2(out, O_CLOEXEC) < 0)
        fr_die_errno(1, "sandbox_apply: pipe2");
    if ((m->how == NOTIFY ? socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rep) : pipe2(rep, O_CLOEXEC)) < 0)
        fr_die_errno(1, "sandbox_apply: socketpair/pipe2");
    uint64_t t0 = fr_now_ns();
    pid_t pid = fork();
    if (pid < 0)
        fr_die_errno(1, "sandbox_apply: fork");
    if (pid == 0) {
        close(rep[0]);
        uint64_t a = fr_now_ns();
        int rc = child_apply(m, rep[1]);
        uint64_t b = fr_now_ns() - a;
        (void)!write(out[1], &b, sizeof b);
        _exit(rc < 0 ? 125 : 0);
    }
    close(out[1]);
    close(rep[1]);
    if (m->how == NOTIFY) {
        int l = fr_notify_receive(rep[0]);
        if (l >= 0)
            close(l);
    }
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
    int n = 1000;
    bool prepared = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--prepared"))
            prepared = true;
        else
            n = 0;
    }
    if (n < 10)
        fr_die(2, "usage: sandbox_apply [-n ROUNDS>=10] [--prepared]");
    bool root = geteuid() == 0;
    int landlock = fr_landlock_abi(NULL);
    for (size_t m = 0; m < NMODES; m++) {
        char err[512];
        if (g_modes[m].kv && fr_sandbox_text_build(g_modes[m].kv, NULL, &g_modes[m].pol, err, sizeof err) < 0)
            fr_die(1, "sandbox_apply: %s: %s", g_modes[m].label, err);
        if (!(g_modes[m].cyc = calloc((size_t)n, sizeof(uint64_t))) ||
            !(g_modes[m].app = calloc((size_t)n, sizeof(uint64_t))))
            fr_die(1, "sandbox_apply: out of memory");
    }
    /* Every policy records the bounding set left (the first call drops it). */
    for (size_t m = 0; prepared && m < NMODES; m++)
        if (g_modes[m].pol && fr_policy_prepare_worker(g_modes[m].pol) < 0)
            fr_die(1, "sandbox_apply: fr_policy_prepare_worker failed");
    for (int r = 0; r < n; r++)
        for (size_t k = 0; k < NMODES; k++) {
            struct mode *m = &g_modes[(k + (size_t)r) % NMODES];
            if (m->needs_root && !root)
                continue;
            cycle(m, &m->cyc[r], &m->app[r]);
        }
    printf("policy apply cost, %d interleaved rounds, %s, Landlock ABI %d, %s (microseconds)\n", n,
           prepared ? "prepared worker (bounding set dropped once)" : "bounding set dropped per job", landlock,
           root ? "root" : "not root: no per-slot uid rows");
    printf("%-30s %9s %9s %9s %9s %7s %8s\n", "mode", "apply p50", "apply p90", "cycle p50", "cycle p90", "x bare",
           "+LP p50");
    double bare = 0, a50[NMODES], c50[NMODES];
    for (size_t m = 0; m < NMODES; m++) {
        struct mode *md = &g_modes[m];
        if (md->needs_root && !root)
            continue;
        a50[m] = pct_us(md->app, n, 50);
        double a90 = pct_us(md->app, n, 90);
        c50[m] = pct_us(md->cyc, n, 50);
        double c90 = pct_us(md->cyc, n, 90);
        if (m == 0)
            bare = c50[m];
        char lp[32] = "";
        if (md->base >= 0)
            snprintf(lp, sizeof lp, "%+.1f", c50[m] - c50[md->base]);
        printf("%-30s %9.1f %9.1f %9.1f %9.1f %7.2f %8s\n", md->label, a50[m], a90, c50[m], c90, c50[m] / bare, lp);
        fr_policy_free(md->pol);
        free(md->cyc);
        free(md->app);
    }
    return 0;
}
