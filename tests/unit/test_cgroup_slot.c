/* test_cgroup_slot.c — a slot's counters around its jobs
 * (launcher/cgroup/slot.c), in real cgroups below this process's own
 * (skipped where they are not delegated: not root, cgroups off).
 *
 * What one job's end read is the next job's baseline only while nothing
 * can count in the slot's cgroup in between: the caller says no process
 * joins it (idle) and the cgroup is empty. Each case puts CPU time, an
 * OOM kill or a leftover process between two jobs, or into the first,
 * and checks that the second job is charged with its own only. CPU is
 * burnt by the child's own CPU clock, so the amounts do not depend on
 * the machine's load. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../launcher/cgroup/internal.h"
#include "fitrun/cgroup.h"
#include "fitrun/detect.h"

#define BURN_US 30000u       /* CPU time a busy process uses */
#define LITTLE_US 15000u     /* more than a fork and an _exit ever take */
#define PIDS_LIMIT 16u       /* the slot's pids.max */
#define MEMORY (32ull << 20) /* the slot's memory limit */

static struct fr_cgroup_tree *tree;

/* The tree `fitrun run` makes, with one slot. */
static int setup(void **state)
{
    (void)state;
    static struct fr_resources res;
    static struct fr_cgroup_probe probe;
    struct fr_detect_opts dopts = {0};
    char err[2048];
    if (geteuid() != 0)
        return 0;
    fr_detect(&dopts, &res);
    fr_cgroup_probe(&res, FR_CGROUPS_AUTO, &probe);
    if (!probe.delegated)
        return 0;
    struct fr_cgroup_limits lim = {.memory = MEMORY, .pids = PIDS_LIMIT};
    if (fr_cgroup_tree_create(&probe, &lim, 1, &tree, err, sizeof err) < 0) {
        fprintf(stderr, "test_cgroup_slot: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fr_cgroup_tree_destroy(tree);
    tree = NULL;
    return 0;
}

/* What a case needs of the slot: its CPU counter (v1 cpuacct, v2
 * cpu.stat), pids.current (the proof that it is empty), a pids limit,
 * its OOM counter. */
enum { CPU = 1, PIDS = 2, PIDS_MAX = 4, OOM = 8 };

static void need(unsigned what)
{
    const struct cg_slot *s = tree ? &tree->slots[0] : NULL;
    if (!s || ((what & CPU) && s->cpu < 0) || ((what & PIDS) && s->pids_cur < 0) ||
        ((what & PIDS_MAX) && s->pids_max < 0) || ((what & OOM) && s->events < 0))
        skip();
}

static uint64_t cpu_clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* us of CPU time from now on (in the slot's cgroup: the fork and the
 * join before it are charged to the parent's). */
static void burn(unsigned us)
{
    uint64_t end = cpu_clock_us() + us;
    while (cpu_clock_us() < end)
        ;
}

enum work { NOTHING, BURN, EAT, WAIT_THEN_BURN };

/* A child in the slot's cgroups that does w and exits; WAIT_THEN_BURN
 * returns once it is in them, and waits for a byte on *go (the write end
 * is returned there) before it burns. */
static pid_t child(enum work w, int *go)
{
    int fds[FR_CG_HIER_MAX], p[2] = {-1, -1}, joined[2] = {-1, -1};
    int n = fr_cgroup_slot_fds(tree, 0, fds, FR_CG_HIER_MAX);
    if (w == WAIT_THEN_BURN)
        assert_true(pipe(p) == 0 && pipe(joined) == 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (fr_cgroup_join(fds, n) < 0)
            _exit(1);
        char c;
        if (w == WAIT_THEN_BURN) {
            close(p[1]);
            close(joined[0]);
            if (write(joined[1], "j", 1) != 1 || read(p[0], &c, 1) != 1)
                _exit(1);
        }
        if (w == BURN || w == WAIT_THEN_BURN)
            burn(BURN_US);
        if (w == EAT) {
            /* Beyond the slot's memory limit: its OOM killer's victim. */
            size_t len = 4 * MEMORY;
            char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED)
                _exit(1);
            for (size_t i = 0; i < len; i += 4096)
                m[i] = 1;
        }
        _exit(0);
    }
    if (w == WAIT_THEN_BURN) {
        char c;
        close(p[0]);
        close(joined[1]);
        assert_int_equal(read(joined[0], &c, 1), 1);
        close(joined[0]);
        *go = p[1];
    }
    return pid;
}

static int reap(pid_t pid)
{
    int st;
    pid_t r;
    while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
        ;
    assert_int_equal(r, pid);
    return st;
}

/* One job in slot 0: begin, a child doing w, reaped, end(how). */
static struct fr_cgroup_usage job_how(enum work w, unsigned how, int *status)
{
    struct fr_cgroup_usage u;
    fr_cgroup_slot_begin(tree, 0);
    int st = reap(child(w, NULL));
    if (status)
        *status = st;
    fr_cgroup_slot_kill(tree, 0);
    fr_cgroup_slot_end(tree, 0, how, &u);
    assert_true(u.valid);
    return u;
}

static struct fr_cgroup_usage job(enum work w, bool idle, int *status)
{
    return job_how(w, idle ? FR_CG_END_IDLE : 0, status);
}

static uint64_t pids_max(void)
{
    char path[CG_PATH + 64];
    uint64_t v = 0;
    int i = cg_hier_of(&tree->p, FR_CG_PIDS);
    snprintf(path, sizeof path, "%s/" CG_JOBS "/" CG_WORKER "0/pids.max", tree->base[i]);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%" SCNu64, &v), 1);
    fclose(f);
    return v;
}

/* An empty, idle slot: the second job's baseline is the first's end, and
 * the first job's CPU is not the second's. */
static void test_idle_slot_next_job_own_cpu(void **state)
{
    (void)state;
    need(CPU | PIDS);
    struct fr_cgroup_usage a = job(BURN, true, NULL);
    assert_true(a.has_cpu);
    assert_true(a.cpu_us >= BURN_US);
    assert_true(tree->slots[0].idle); /* the next begin reads no baseline */
    struct fr_cgroup_usage b = job(NOTHING, true, NULL);
    assert_true(b.has_cpu);
    assert_true(b.cpu_us < LITTLE_US);
    struct fr_cgroup_usage c = job(BURN, true, NULL);
    assert_true(c.cpu_us >= BURN_US);
}

/* Not idle (a process that lives on, or its replacement, joins the slot
 * between jobs): what runs there before the next begin is no job's. */
static void test_not_idle_between_jobs_is_no_jobs(void **state)
{
    (void)state;
    need(CPU | PIDS);
    (void)job(NOTHING, false, NULL);
    assert_false(tree->slots[0].idle);
    assert_int_equal(reap(child(BURN, NULL)), 0); /* joins, burns, leaves before the next begin */
    struct fr_cgroup_usage b = job(NOTHING, true, NULL);
    assert_true(b.has_cpu);
    assert_true(b.cpu_us < LITTLE_US);
}

/* Idle, but a process of the job is still in the cgroup at its end: the
 * next begin reads the baselines again (and the allowance counts it). */
static void test_occupied_slot_rereads(void **state)
{
    (void)state;
    need(CPU | PIDS);
    struct fr_cgroup_usage u;
    int go = -1;
    fr_cgroup_slot_begin(tree, 0);
    pid_t late = child(WAIT_THEN_BURN, &go);
    assert_int_equal(reap(child(NOTHING, NULL)), 0);
    /* no cgroup.kill here: as on v1, where the pool's reaper kills it later */
    fr_cgroup_slot_end(tree, 0, FR_CG_END_IDLE, &u);
    assert_false(tree->slots[0].idle);
    assert_int_equal(write(go, "x", 1), 1);
    close(go);
    assert_int_equal(reap(late), 0); /* it burnt after the job's end */
    struct fr_cgroup_usage b = job(NOTHING, true, NULL);
    assert_true(b.has_cpu);
    assert_true(b.cpu_us < LITTLE_US);
}

/* A zombie left at the end counts in pids.current: the next job gets its
 * allowance on top of it, and the whole allowance back once it is gone
 * (also when that next begin takes its baselines from an idle end). */
static void test_pids_allowance_follows_leftovers(void **state)
{
    (void)state;
    need(PIDS | PIDS_MAX);
    struct fr_cgroup_usage u;
    fr_cgroup_slot_begin(tree, 0);
    pid_t zombie = child(NOTHING, NULL);
    assert_int_equal(reap(child(NOTHING, NULL)), 0);
    siginfo_t si;
    assert_int_equal(waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOWAIT), 0); /* exited, not reaped */
    fr_cgroup_slot_end(tree, 0, FR_CG_END_IDLE, &u);
    assert_false(tree->slots[0].idle);
    fr_cgroup_slot_begin(tree, 0);
    assert_int_equal(pids_max(), PIDS_LIMIT + 1);
    assert_int_equal(reap(zombie), 0);
    assert_int_equal(reap(child(NOTHING, NULL)), 0);
    fr_cgroup_slot_end(tree, 0, FR_CG_END_IDLE, &u);
    assert_true(tree->slots[0].idle);
    fr_cgroup_slot_begin(tree, 0);
    assert_int_equal(pids_max(), PIDS_LIMIT);
    assert_int_equal(reap(child(NOTHING, NULL)), 0);
    fr_cgroup_slot_end(tree, 0, FR_CG_END_IDLE, &u);
}

/* An OOM kill is its job's only, with the next baseline from an idle end. */
static void test_oom_kill_is_its_jobs(void **state)
{
    (void)state;
    need(PIDS | OOM);
    int st = 0;
    struct fr_cgroup_usage a = job(EAT, true, &st);
    if (!a.oom_file[0])
        skip(); /* a kernel without an oom_kill count */
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    assert_true(a.oom_kills >= 1); /* v2 memory.oom.group: the victim counts once more in the group's kill */
    assert_true(tree->slots[0].idle);
    struct fr_cgroup_usage b = job(NOTHING, true, &st);
    assert_int_equal(st, 0);
    assert_int_equal(b.oom_kills, 0);
    assert_string_equal(b.oom_file, a.oom_file);
}

/* A job whose verdict no OOM kill can change (FR_CG_END_NO_OOM): its
 * count is not read, nor reported; an idle end still takes it as the next
 * job's baseline, so that job is charged with its own kills only. */
static void test_no_oom_count_when_it_cannot_matter(void **state)
{
    (void)state;
    need(PIDS | OOM);
    int st = 0;
    struct fr_cgroup_usage a = job_how(EAT, FR_CG_END_NO_OOM, &st);
    if (!a.oom_file[0])
        skip();
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    assert_int_equal(a.oom_kills, 0);
    assert_false(tree->slots[0].idle);
    struct fr_cgroup_usage b = job(EAT, false, &st); /* begin read the baseline again */
    assert_true(b.oom_kills >= 1);
    struct fr_cgroup_usage c = job_how(EAT, FR_CG_END_IDLE | FR_CG_END_NO_OOM, &st);
    assert_int_equal(c.oom_kills, 0);
    assert_true(tree->slots[0].idle);
    struct fr_cgroup_usage d = job(NOTHING, true, &st);
    assert_int_equal(st, 0);
    assert_int_equal(d.oom_kills, 0);
    struct fr_cgroup_usage e = job(EAT, true, &st);
    assert_true(e.oom_kills >= 1);
}

/* No job can fork and the runtime measures every process's CPU itself:
 * the counter is read no more, pids.max is no longer written (a leftover
 * zombie leaves it as it was), and an empty slot still carries its other
 * baselines over. Last: the tree keeps no CPU counter afterwards. */
static void test_contained(void **state)
{
    (void)state;
    need(CPU | PIDS);
    bool had_max = tree->slots[0].pids_max >= 0;
    fr_cgroup_tree_contained(tree);
    struct fr_cgroup_usage a = job(BURN, true, NULL);
    assert_false(a.has_cpu);
    assert_int_equal(a.cpu_us, 0);
    assert_int_equal(tree->slots[0].cpu, -1);
    assert_int_equal(tree->slots[0].pids_max, -1);
    assert_true(tree->slots[0].idle);
    if (had_max) {
        uint64_t before = pids_max();
        struct fr_cgroup_usage u;
        fr_cgroup_slot_begin(tree, 0);
        pid_t zombie = child(NOTHING, NULL);
        siginfo_t si;
        assert_int_equal(waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOWAIT), 0);
        fr_cgroup_slot_end(tree, 0, FR_CG_END_IDLE, &u);
        fr_cgroup_slot_begin(tree, 0); /* not idle: a zombie is left */
        assert_int_equal(pids_max(), before);
        assert_int_equal(reap(zombie), 0);
        fr_cgroup_slot_end(tree, 0, FR_CG_END_IDLE, &u);
    }
    fr_cgroup_tree_contained(tree); /* twice: nothing left to close */
    assert_false(job(NOTHING, true, NULL).has_cpu);
}

/* Contained (after test_contained): a job that exited 0 was the slot's
 * only process and was not killed, so its OOM count cannot have moved
 * and is not read, even as the next baseline (the counter is swapped for
 * /dev/null here, which no read could take for a count); a job that died
 * still has its count read, and the next job is charged with its own. */
static void test_contained_exit0_keeps_oom_baseline(void **state)
{
    (void)state;
    need(PIDS | OOM);
    struct cg_slot *s = &tree->slots[0];
    int st = 0;
    struct fr_cgroup_usage a = job(EAT, true, &st);
    if (!a.oom_file[0])
        skip();
    assert_true(a.oom_kills >= 1);
    int events = s->events, null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    assert_true(null >= 0);
    s->events = null;
    struct fr_cgroup_usage b = job_how(NOTHING, FR_CG_END_IDLE | FR_CG_END_NO_OOM, &st);
    s->events = events;
    close(null);
    assert_int_equal(st, 0);
    assert_int_equal(b.oom_kills, 0);
    assert_true(s->idle); /* the count it did not read is still the baseline */
    struct fr_cgroup_usage c = job(EAT, true, &st);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    assert_true(c.oom_kills >= 1);
    struct fr_cgroup_usage d = job(NOTHING, true, &st);
    assert_int_equal(d.oom_kills, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_slot_next_job_own_cpu),
        cmocka_unit_test(test_not_idle_between_jobs_is_no_jobs),
        cmocka_unit_test(test_occupied_slot_rereads),
        cmocka_unit_test(test_pids_allowance_follows_leftovers),
        cmocka_unit_test(test_oom_kill_is_its_jobs),
        cmocka_unit_test(test_no_oom_count_when_it_cannot_matter),
        cmocka_unit_test(test_contained), /* makes the tree contained: last but one */
        cmocka_unit_test(test_contained_exit0_keeps_oom_baseline),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
