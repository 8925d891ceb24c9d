/* test_cgroup_stale.c — which fitrun-<pid> sub-trees a starting fitrun
 * takes for a dead run's and removes (launcher/cgroup/stale.c), in real
 * cgroups (skipped where they are not delegated: not root, cgroups off).
 *
 * The test moves itself into a cgroup of its own below the one it starts
 * in (stale-test-<pid>, in each hierarchy fitrun would use), so that the
 * remover it calls sees only the trees the test makes, never a live
 * neighbour's; it moves back and removes that cgroup at the end. Each tree
 * is named after a pid that is dead (a reaped child's), as a run in
 * another pid namespace names its tree with a pid that means nothing
 * here; what tells the remover that the run is alive is its launcher
 * cgroup: a process in it, seen (this pid namespace) or not (a reader in
 * a child pid namespace, to which v1's cgroup.procs does not list it). */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../launcher/cgroup/internal.h"
#include "fitrun/cgroup.h"
#include "fitrun/detect.h"
#include "holder.h"

static struct fr_cgroup_probe probe;       /* the probe in our own cgroup */
static char home[FR_CG_HIER_MAX][CG_PATH]; /* where the test started, per hierarchy */
static char mine[FR_CG_HIER_MAX][CG_PATH]; /* stale-test-<pid> below it */
static int nmine;
static bool ready;
static pid_t holders[16]; /* the holders a failed case left, ended by teardown */
static int nholders;

static void probe_here(struct fr_cgroup_probe *p)
{
    static struct fr_resources res;
    struct fr_detect_opts dopts = {0};
    fr_detect(&dopts, &res);
    fr_cgroup_probe(&res, FR_CGROUPS_AUTO, p);
}

static int write_text(const char *dir, const char *file, const char *text)
{
    char path[CG_PATH + 32];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t w = write(fd, text, strlen(text));
    close(fd);
    return w == (ssize_t)strlen(text) ? 0 : -1;
}

static int setup(void **state)
{
    (void)state;
    static struct fr_cgroup_probe start;
    if (geteuid() != 0)
        return 0;
    probe_here(&start);
    if (!start.delegated)
        return 0;
    for (int i = 0; i < start.nhier; i++) {
        snprintf(home[i], sizeof home[i], "%s", start.hier[i].own);
        if (snprintf(mine[i], sizeof mine[i], "%s/stale-test-%d", strcmp(home[i], "/") ? home[i] : "", (int)getpid()) >=
            (int)sizeof mine[i]) {
            fprintf(stderr, "test_cgroup_stale: cgroup path too long below %s\n", home[i]);
            return -1;
        }
        if (mkdir(mine[i], 0755) < 0) {
            fprintf(stderr, "test_cgroup_stale: cannot create cgroup %s: %s\n", mine[i], strerror(errno));
            return -1;
        }
        nmine = i + 1;
        if (write_text(mine[i], "cgroup.procs", "0") < 0) {
            fprintf(stderr, "test_cgroup_stale: cannot move into %s: %s\n", mine[i], strerror(errno));
            return -1;
        }
    }
    probe_here(&probe);
    ready = probe.delegated && probe.nhier == start.nhier;
    return 0;
}

/* Remove dir and the cgroups below it, deepest first: what a failed case
 * left (its processes die with the test: PR_SET_PDEATHSIG). */
static void remove_all(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char child[CG_PATH + 256];
        if (e->d_type == DT_DIR && strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            snprintf(child, sizeof child, "%s/%s", dir, e->d_name) < (int)sizeof child) {
            remove_all(child);
            for (int tries = 0; rmdir(child) < 0 && errno == EBUSY && tries < 200; tries++)
                cg_sleep_ms(10);
        }
    }
    if (d)
        closedir(d);
}

static int teardown(void **state)
{
    (void)state;
    /* Our children, not reaped yet: their pids are still theirs. */
    for (int k = 0; k < nholders; k++)
        if (holders[k] > 0 && kill(holders[k], SIGKILL) == 0)
            waitpid(holders[k], NULL, 0);
    for (int i = 0; i < nmine; i++) {
        if (write_text(home[i], "cgroup.procs", "0") < 0)
            fprintf(stderr, "test_cgroup_stale: cannot move back into %s: %s\n", home[i], strerror(errno));
        remove_all(mine[i]);
        if (rmdir(mine[i]) < 0)
            fprintf(stderr, "test_cgroup_stale: cannot remove cgroup %s: %s\n", mine[i], strerror(errno));
    }
    return 0;
}

static void need_cgroups(void)
{
    if (!ready)
        skip();
}

/* A pid that names no process now: a reaped child's. */
static pid_t dead_pid(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    return pid;
}

/* <own>/<name>[/rel] in hierarchy i. */
static void path_of(int i, const char *name, const char *rel, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s%s%s", probe.hier[i].own, name, rel ? "/" : "", rel ? rel : "");
}

/* fitrun-<pid> with launcher, jobs and jobs/worker-0, in every hierarchy. */
static void make_tree(const char *name)
{
    static const char *const rels[] = {NULL, CG_LAUNCHER, CG_JOBS, CG_JOBS "/" CG_WORKER "0"};
    char dir[CG_PATH + 64];
    for (int i = 0; i < probe.nhier; i++)
        for (size_t r = 0; r < sizeof rels / sizeof *rels; r++) {
            path_of(i, name, rels[r], dir, sizeof dir);
            assert_int_equal(mkdir(dir, 0755), 0);
        }
}

static bool tree_exists(const char *name)
{
    char dir[CG_PATH + 64];
    for (int i = 0; i < probe.nhier; i++) {
        path_of(i, name, NULL, dir, sizeof dir);
        if (access(dir, F_OK) == 0)
            return true;
    }
    return false;
}

/* Where a holder goes: <name>/<rel> in every hierarchy. */
struct place {
    const char *name, *rel;
};

static bool join_place(const void *arg)
{
    const struct place *at = arg;
    char dir[CG_PATH + 64];
    for (int i = 0; i < probe.nhier; i++) {
        path_of(i, at->name, at->rel, dir, sizeof dir);
        if (write_text(dir, "cgroup.procs", "0") < 0)
            return false;
    }
    return true;
}

/* A process in <name>/<rel> in every hierarchy, waiting to be killed. */
static pid_t holder(const char *name, const char *rel)
{
    struct place at = {name, rel};
    pid_t pid = hold(join_place, &at);
    if (nholders < (int)(sizeof holders / sizeof *holders))
        holders[nholders++] = pid;
    return pid;
}

/* Is pid (our child) still running? */
static bool running(pid_t pid)
{
    siginfo_t si = {0};
    assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT), 0);
    return si.si_pid == 0;
}

/* Reap holder pid (its status in *status) and forget it: once reaped, its
 * pid may be another process's, never to be signalled. */
static void reap_holder(pid_t pid, int *status)
{
    assert_int_equal(waitpid(pid, status, 0), pid);
    for (int k = 0; k < nholders; k++)
        if (holders[k] == pid)
            holders[k] = 0;
}

static void end_holder(pid_t pid)
{
    kill(pid, SIGKILL);
    reap_holder(pid, NULL);
}

/* Remove the tree the test made (its processes ended), deepest first. */
static void remove_tree(const char *name)
{
    static const char *const rels[] = {CG_JOBS "/" CG_WORKER "0", CG_JOBS, CG_LAUNCHER, NULL};
    char dir[CG_PATH + 64];
    for (int i = 0; i < probe.nhier; i++)
        for (size_t r = 0; r < sizeof rels / sizeof *rels; r++) {
            path_of(i, name, rels[r], dir, sizeof dir);
            for (int tries = 0; rmdir(dir) < 0 && errno == EBUSY && tries < 200; tries++)
                cg_sleep_ms(10); /* a killed process is leaving */
        }
    assert_false(tree_exists(name));
}

static int remove_stale(void)
{
    char note[1024];
    return fr_cgroup_remove_stale(&probe, note, sizeof note);
}

/* A dead run's tree: the process its job left is killed and the tree is
 * removed in every hierarchy. */
static void test_dead_tree_is_removed(void **state)
{
    (void)state;
    need_cgroups();
    char name[32];
    snprintf(name, sizeof name, CG_PREFIX "%d", (int)dead_pid());
    make_tree(name);
    pid_t job = holder(name, CG_JOBS "/" CG_WORKER "0");
    assert_int_equal(remove_stale(), probe.nhier);
    assert_false(tree_exists(name));
    int status;
    reap_holder(job, &status);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* A process in the launcher cgroup keeps the tree, whatever its name's pid
 * says: nothing of it is killed or removed. */
static void test_listed_launcher_keeps_tree(void **state)
{
    (void)state;
    need_cgroups();
    char name[32];
    snprintf(name, sizeof name, CG_PREFIX "%d", (int)dead_pid());
    make_tree(name);
    pid_t run = holder(name, CG_LAUNCHER);
    pid_t job = holder(name, CG_JOBS "/" CG_WORKER "0");
    assert_int_equal(remove_stale(), 0);
    assert_true(running(run));
    assert_true(running(job));
    char dir[CG_PATH + 64];
    path_of(0, name, CG_JOBS "/" CG_WORKER "0", dir, sizeof dir);
    assert_int_equal(access(dir, F_OK), 0);
    end_holder(run);
    end_holder(job);
    remove_tree(name);
}

/* The same seen from a child pid namespace, which the launcher's process
 * is not in: v1's cgroup.procs does not list it there, and the kernel's
 * refusal to remove its cgroup keeps the tree; an empty slot of it is not
 * removed either. The remover runs as pid 1 of a new pid namespace. */
static void test_invisible_launcher_keeps_tree(void **state)
{
    (void)state;
    need_cgroups();
    char name[32], dir[CG_PATH + 64];
    snprintf(name, sizeof name, CG_PREFIX "%d", (int)dead_pid());
    make_tree(name);
    pid_t run = holder(name, CG_LAUNCHER);
    pid_t outer = fork();
    assert_true(outer >= 0);
    if (outer == 0) {
        if (unshare(CLONE_NEWPID) < 0)
            _exit(100);
        pid_t inner = fork();
        if (inner < 0)
            _exit(101);
        if (inner == 0) {
            pid_t *pids = NULL;
            int n = -1;
            path_of(0, name, CG_LAUNCHER, dir, sizeof dir);
            /* v1 lists no process this namespace cannot see (v2 lists it
             * as 0): what this case is about. */
            if (probe.hier[0].version == 1 &&
                (cg_lib_init(dir, sizeof dir) < 0 || cg_lib_procs(&probe.hier[0], dir, &pids, &n) < 0 || n != 0))
                _exit(102);
            free(pids);
            _exit(remove_stale());
        }
        int status;
        if (waitpid(inner, &status, 0) != inner || !WIFEXITED(status))
            _exit(103);
        _exit(WEXITSTATUS(status));
    }
    int status;
    assert_int_equal(waitpid(outer, &status, 0), outer);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0); /* nothing removed */
    assert_true(running(run));
    path_of(0, name, CG_JOBS "/" CG_WORKER "0", dir, sizeof dir);
    assert_int_equal(access(dir, F_OK), 0);
    end_holder(run);
    remove_tree(name);
}

/* fitrun-<pid>-<k>: the name a run takes where fitrun-<pid> was taken; a
 * dead one's tree is removed as well. */
static void test_suffixed_dead_tree_is_removed(void **state)
{
    (void)state;
    need_cgroups();
    char name[48];
    snprintf(name, sizeof name, CG_PREFIX "%d-3", (int)dead_pid());
    make_tree(name);
    pid_t job = holder(name, CG_JOBS "/" CG_WORKER "0");
    assert_int_equal(remove_stale(), probe.nhier);
    assert_false(tree_exists(name));
    reap_holder(job, NULL);
}

/* A live tree already named after our pid (a run that has our pid in its
 * own pid namespace) is neither removed nor shared: ours is
 * fitrun-<pid>-1, and the other is untouched when ours is gone. */
static void test_taken_name_is_not_shared(void **state)
{
    (void)state;
    need_cgroups();
    char name[48], dir[CG_PATH + 64], err[2048];
    snprintf(name, sizeof name, CG_PREFIX "%d", (int)getpid());
    make_tree(name);
    pid_t other = holder(name, CG_LAUNCHER);
    struct fr_cgroup_limits lim = {.memory = 64ull << 20, .pids = 16};
    struct fr_cgroup_tree *t = NULL;
    assert_int_equal(fr_cgroup_tree_create(&probe, &lim, 1, &t, err, sizeof err), 0);
    for (int i = 0; i < probe.nhier; i++) {
        snprintf(dir, sizeof dir, "%s/" CG_PREFIX "%d-1", probe.hier[i].own, (int)getpid());
        assert_string_equal(t->base[i], dir);
    }
    fr_cgroup_tree_destroy(t);
    assert_true(running(other));
    path_of(0, name, CG_JOBS "/" CG_WORKER "0", dir, sizeof dir);
    assert_int_equal(access(dir, F_OK), 0);
    end_holder(other);
    remove_tree(name);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_tree_is_removed),          cmocka_unit_test(test_listed_launcher_keeps_tree),
        cmocka_unit_test(test_invisible_launcher_keeps_tree), cmocka_unit_test(test_suffixed_dead_tree_is_removed),
        cmocka_unit_test(test_taken_name_is_not_shared),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
