/* test_envexport.c — the export list is a pure function of (resources,
 * plan, threads, envp, forced, options): drive it with literal inputs.
 * Only the last tests touch the file system (fr_env_make_dirs, in a fresh
 * temporary directory). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fitrun/envexport.h"

static const char *const thread_names[] = {
    "OMP_NUM_THREADS",        "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",   "NUMEXPR_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS",     "RAYON_NUM_THREADS", "GOMAXPROCS",
    "JULIA_NUM_THREADS",      "LOKY_MAX_CPU_COUNT",   "PYTHON_CPU_COUNT",
};
#define NTHREAD_NAMES (sizeof thread_names / sizeof thread_names[0])

static struct fr_resources res_with_cpus(double eff)
{
    struct fr_resources r;
    memset(&r, 0, sizeof r);
    r.cpu_online = 8;
    r.cpu_affinity = 8;
    snprintf(r.cpu_affinity_source, sizeof r.cpu_affinity_source, "sched_getaffinity");
    r.cpu_effective = eff;
    if (eff < 8) {
        r.cpu_quota.known = true;
        r.cpu_quota.value = eff;
        snprintf(r.cpu_quota.source, sizeof r.cpu_quota.source, "/sys/fs/cgroup/cpu.max");
    }
    return r;
}

/* The plan of r (fr_plan_make, the one place threads are counted), with
 * `workers` workers. */
static struct fr_plan plan_with(const struct fr_resources *r, int workers, enum fr_rounding rounding)
{
    struct fr_plan p;
    struct fr_plan_opts o = {.rounding = rounding, .workers_override = workers};
    fr_plan_make(r, &o, &p);
    return p;
}

static const struct fr_env_entry *must_find(const struct fr_env_export *ex, const char *name)
{
    const struct fr_env_entry *e = fr_env_find(ex, name);
    if (!e)
        fail_msg("no entry for %s", name);
    return e;
}

static void assert_entry(const struct fr_env_export *ex, const char *name, enum fr_env_action action, const char *value)
{
    const struct fr_env_entry *e = must_find(ex, name);
    if (e->action != action)
        fail_msg("%s: action %s, expected %s", name, fr_env_action_name(e->action), fr_env_action_name(action));
    assert_string_equal(e->value, value);
    assert_true(e->reason[0] != '\0');
}

static void test_defaults_export_everything(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(2);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    char *envp[] = {"PATH=/usr/bin", NULL};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, envp, NULL, NULL, &ex), 0);
    for (size_t i = 0; i < NTHREAD_NAMES; i++)
        assert_entry(&ex, thread_names[i], FR_ENV_SET, "2");
    assert_entry(&ex, "FITRUN_CPUS", FR_ENV_SET, "2");
    assert_entry(&ex, "FITRUN_WORKERS", FR_ENV_SET, "2");
    assert_entry(&ex, "FITRUN_MEMORY_LIMIT", FR_ENV_SKIPPED, "");
    assert_entry(&ex, "JOBLIB_TEMP_FOLDER", FR_ENV_SKIPPED, "");
    /* The reason names the deciding limit and where it came from. */
    const struct fr_env_entry *omp = must_find(&ex, "OMP_NUM_THREADS");
    assert_non_null(strstr(omp->reason, "cgroup CPU quota /sys/fs/cgroup/cpu.max"));
    assert_non_null(strstr(omp->reason, "OpenMP"));
    assert_null(fr_env_find(&ex, "PATH"));
    fr_env_free(&ex);
}

static void test_affinity_reason(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(8); /* no quota: affinity decides */
    struct fr_plan p = plan_with(&r, 8, FR_ROUND_FLOOR);
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, NULL, NULL, NULL, &ex), 0);
    assert_entry(&ex, "GOMAXPROCS", FR_ENV_SET, "8");
    assert_non_null(strstr(must_find(&ex, "GOMAXPROCS")->reason, "CPU affinity sched_getaffinity"));
    fr_env_free(&ex);
}

static void test_user_values_are_kept(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(2);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    /* An empty value is still the user's decision. A longer name sharing
     * the prefix is a different variable. */
    char *envp[] = {"OMP_NUM_THREADS=8", "MKL_NUM_THREADS=", "GOMAXPROCSX=5", "FITRUN_WORKERS=7", NULL};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, envp, NULL, NULL, &ex), 0);
    assert_entry(&ex, "OMP_NUM_THREADS", FR_ENV_KEPT, "8");
    assert_entry(&ex, "MKL_NUM_THREADS", FR_ENV_KEPT, "");
    assert_entry(&ex, "GOMAXPROCS", FR_ENV_SET, "2");
    assert_entry(&ex, "FITRUN_WORKERS", FR_ENV_KEPT, "7");
    assert_non_null(strstr(must_find(&ex, "OMP_NUM_THREADS")->reason, "already set"));
    assert_non_null(strstr(must_find(&ex, "OMP_NUM_THREADS")->reason, "would export 2"));
    fr_env_free(&ex);
}

static void test_forced_wins(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(2);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    char *envp[] = {"OMP_NUM_THREADS=8", "FOO=user", NULL};
    char *names[] = {"OMP_NUM_THREADS", "FOO", "GOMAXPROCS", "EXTRA"};
    char *values[] = {"3", "profile", "2", "x=y"};
    struct fr_env_forced f = {.n = 4, .name = names, .value = values, .origin = "profile t.ini"};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, envp, &f, NULL, &ex), 0);
    assert_entry(&ex, "OMP_NUM_THREADS", FR_ENV_FORCED, "3");
    assert_entry(&ex, "FOO", FR_ENV_FORCED, "profile");
    assert_entry(&ex, "GOMAXPROCS", FR_ENV_FORCED, "2");
    assert_entry(&ex, "EXTRA", FR_ENV_FORCED, "x=y");
    assert_non_null(strstr(must_find(&ex, "OMP_NUM_THREADS")->reason, "profile t.ini [env]"));
    assert_non_null(strstr(must_find(&ex, "OMP_NUM_THREADS")->reason, "the environment had '8'"));
    assert_entry(&ex, "MKL_NUM_THREADS", FR_ENV_SET, "2");
    fr_env_free(&ex);
}

static void test_forced_invalid_name(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(2);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    char *bad[][1] = {{"A=B"}, {""}};
    char *values[] = {"1"};
    for (size_t i = 0; i < 2; i++) {
        struct fr_env_forced f = {.n = 1, .name = bad[i], .value = values};
        struct fr_env_export ex;
        errno = 0;
        assert_int_equal(fr_env_compute(&r, &p, 0, NULL, &f, NULL, &ex), -1);
        assert_int_equal(errno, EINVAL);
        fr_env_free(&ex);
    }
}

static void test_forced_too_many(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(2);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    enum { N = FR_ENV_MAX };
    static char bufs[N][16];
    char *names[N], *values[N];
    for (int i = 0; i < N; i++) {
        snprintf(bufs[i], sizeof bufs[i], "V%d", i);
        names[i] = bufs[i];
        values[i] = "1";
    }
    struct fr_env_forced f = {.n = N, .name = names, .value = values};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, NULL, &f, NULL, &ex), -1);
    assert_int_equal(errno, E2BIG);
    fr_env_free(&ex);
}

static void check_rounding(double eff, enum fr_rounding rnd, const char *threads, const char *cpus)
{
    struct fr_resources r = res_with_cpus(eff);
    struct fr_plan p = plan_with(&r, 1, rnd);
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, NULL, NULL, NULL, &ex), 0);
    assert_entry(&ex, "OMP_NUM_THREADS", FR_ENV_SET, threads);
    assert_entry(&ex, "FITRUN_CPUS", FR_ENV_SET, cpus);
    fr_env_free(&ex);
}

static void test_rounding(void **state)
{
    (void)state;
    check_rounding(1.5, FR_ROUND_FLOOR, "1", "1.5");
    check_rounding(1.5, FR_ROUND_CEIL, "2", "1.5");
    check_rounding(1.5, FR_ROUND_NEAREST, "2", "1.5");
    check_rounding(2.4, FR_ROUND_NEAREST, "2", "2.4");
    check_rounding(0.25, FR_ROUND_FLOOR, "1", "0.25"); /* never 0 threads */
    check_rounding(3.0, FR_ROUND_CEIL, "3", "3");
}

/* The wrapper's thread count is the plan's (threads_whole), for every
 * rounding, also where a double's error sits right at the edge: the plan
 * rounds and counts, the export only exports. */
static void test_threads_are_the_plans(void **state)
{
    (void)state;
    const double effective[] = {0.25, 1, 1.4999999999, 1.5, 2.4999999999, 2.5, 2.9999999999, 3.0000000001, 7.5};
    const enum fr_rounding roundings[] = {FR_ROUND_FLOOR, FR_ROUND_CEIL, FR_ROUND_NEAREST};
    for (size_t i = 0; i < sizeof effective / sizeof effective[0]; i++)
        for (size_t k = 0; k < 3; k++) {
            struct fr_resources r = res_with_cpus(effective[i]);
            struct fr_plan p;
            struct fr_plan_opts o = {.rounding = roundings[k]};
            fr_plan_make(&r, &o, &p);
            struct fr_env_export ex;
            assert_int_equal(fr_env_compute(&r, &p, 0, NULL, NULL, NULL, &ex), 0);
            char want[16];
            snprintf(want, sizeof want, "%d", p.threads_whole);
            assert_true(p.threads_whole >= 1);
            if (strcmp(must_find(&ex, "OMP_NUM_THREADS")->value, want) || ex.threads != p.threads_whole)
                fail_msg("%g CPUs, %s: exported %s threads, the plan says %s", effective[i],
                         fr_rounding_name(roundings[k]), must_find(&ex, "OMP_NUM_THREADS")->value, want);
            fr_env_free(&ex);
        }
    /* Without a plan there is nothing to export. */
    struct fr_resources r = res_with_cpus(2);
    struct fr_env_export ex;
    errno = 0;
    assert_int_equal(fr_env_compute(&r, NULL, 0, NULL, NULL, NULL, &ex), -1);
    assert_int_equal(errno, EINVAL);
    fr_env_free(&ex);
}

static void test_pool_worker_threads(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(6);
    struct fr_plan p = plan_with(&r, 3, FR_ROUND_FLOOR);
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 2, NULL, NULL, NULL, &ex), 0);
    for (size_t i = 0; i < NTHREAD_NAMES; i++)
        assert_entry(&ex, thread_names[i], FR_ENV_SET, "2");
    assert_entry(&ex, "FITRUN_CPUS", FR_ENV_SET, "2");
    assert_entry(&ex, "FITRUN_WORKERS", FR_ENV_SET, "3");
    assert_non_null(strstr(must_find(&ex, "OMP_NUM_THREADS")->reason, "per pool worker"));
    fr_env_free(&ex);
}

static void test_memory_limit(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(2);
    r.mem_limit.known = true;
    r.mem_limit.value = 2147483648.0;
    snprintf(r.mem_limit.source, sizeof r.mem_limit.source, "/sys/fs/cgroup/memory.max");
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, NULL, NULL, NULL, &ex), 0);
    assert_entry(&ex, "FITRUN_MEMORY_LIMIT", FR_ENV_SET, "2147483648");
    assert_non_null(strstr(must_find(&ex, "FITRUN_MEMORY_LIMIT")->reason, "2.0 GiB"));
    assert_non_null(strstr(must_find(&ex, "FITRUN_MEMORY_LIMIT")->reason, "memory.max"));
    fr_env_free(&ex);
}

static struct fr_resources res_with_shm(uint64_t shm)
{
    struct fr_resources r = res_with_cpus(2);
    r.shm_size.known = true;
    r.shm_size.value = (double)shm;
    snprintf(r.shm_size.source, sizeof r.shm_size.source, "statvfs(/dev/shm)");
    return r;
}

static void check_shm(uint64_t shm, uint64_t threshold, char *const *envp, enum fr_env_action action, const char *value,
                      bool make_dir)
{
    struct fr_resources r = res_with_shm(shm);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    struct fr_env_opts o = {.shm_threshold = threshold, .uid = 1234};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, envp, NULL, &o, &ex), 0);
    assert_entry(&ex, "JOBLIB_TEMP_FOLDER", action, value);
    assert_int_equal(must_find(&ex, "JOBLIB_TEMP_FOLDER")->make_dir, make_dir);
    fr_env_free(&ex);
}

static void test_shm_rule(void **state)
{
    (void)state;
    const uint64_t M = 1024 * 1024, G = 1024 * M;
    char *none[] = {NULL};
    char *tmpdir[] = {"TMPDIR=/scratch/me", NULL};
    char *reltmp[] = {"TMPDIR=relative", NULL};
    char *user[] = {"JOBLIB_TEMP_FOLDER=/data/jl", NULL};
    check_shm(64 * M, 0, none, FR_ENV_SET, "/var/tmp/fitrun-joblib-1234", true);
    check_shm(64 * M, 0, tmpdir, FR_ENV_SET, "/scratch/me/fitrun-joblib-1234", true);
    check_shm(64 * M, 0, reltmp, FR_ENV_SET, "/var/tmp/fitrun-joblib-1234", true);
    check_shm(64 * M, 0, user, FR_ENV_KEPT, "/data/jl", false);
    check_shm(2 * G, 0, none, FR_ENV_SKIPPED, "", false); /* not below the default 2 GiB */
    check_shm(2 * G - 1, 0, none, FR_ENV_SET, "/var/tmp/fitrun-joblib-1234", true);
    check_shm(8 * G, 0, user, FR_ENV_KEPT, "/data/jl", false);
    check_shm(64 * M, 32 * M, none, FR_ENV_SKIPPED, "", false);
    check_shm(64 * M, 128 * M, none, FR_ENV_SET, "/var/tmp/fitrun-joblib-1234", true);

    struct fr_resources r = res_with_shm(64 * M);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, NULL, NULL, NULL, &ex), 0);
    const char *why = must_find(&ex, "JOBLIB_TEMP_FOLDER")->reason;
    assert_non_null(strstr(why, "64.0 MiB"));
    assert_non_null(strstr(why, "2.0 GiB"));
    fr_env_free(&ex);
}

static void test_shm_forced(void **state)
{
    (void)state;
    struct fr_resources r = res_with_shm(64 * 1024 * 1024);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    char *names[] = {"JOBLIB_TEMP_FOLDER"};
    char *values[] = {"/fast/disk"};
    struct fr_env_forced f = {.n = 1, .name = names, .value = values};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, NULL, &f, NULL, &ex), 0);
    assert_entry(&ex, "JOBLIB_TEMP_FOLDER", FR_ENV_FORCED, "/fast/disk");
    assert_false(must_find(&ex, "JOBLIB_TEMP_FOLDER")->make_dir);
    fr_env_free(&ex);
}

static size_t count_prefix(char **envp, const char *prefix)
{
    size_t n = 0;
    for (char **p = envp; *p; p++)
        n += strncmp(*p, prefix, strlen(prefix)) == 0;
    return n;
}

static bool has(char **envp, const char *s)
{
    for (char **p = envp; *p; p++)
        if (!strcmp(*p, s))
            return true;
    return false;
}

static void test_build_envp(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(2);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    char *envp[] = {"PATH=/usr/bin", "OMP_NUM_THREADS=8", "MKL_NUM_THREADS=4", "OMP_NUM_THREADS=9", "HOME=/root", NULL};
    char *names[] = {"OMP_NUM_THREADS"};
    char *values[] = {"3"};
    struct fr_env_forced f = {.n = 1, .name = names, .value = values};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, envp, &f, NULL, &ex), 0);
    char **out = fr_env_build_envp(&ex, envp);
    assert_non_null(out);
    assert_true(has(out, "PATH=/usr/bin"));
    assert_true(has(out, "HOME=/root"));
    assert_true(has(out, "OMP_NUM_THREADS=3")); /* forced, both user copies gone */
    assert_int_equal(count_prefix(out, "OMP_NUM_THREADS="), 1);
    assert_true(has(out, "MKL_NUM_THREADS=4")); /* kept, exactly once */
    assert_int_equal(count_prefix(out, "MKL_NUM_THREADS="), 1);
    assert_true(has(out, "GOMAXPROCS=2"));
    assert_true(has(out, "FITRUN_CPUS=2"));
    assert_int_equal(count_prefix(out, "FITRUN_MEMORY_LIMIT="), 0); /* skipped */
    assert_int_equal(count_prefix(out, "JOBLIB_TEMP_FOLDER="), 0);
    /* The input array is untouched. */
    assert_string_equal(envp[1], "OMP_NUM_THREADS=8");
    fr_envp_free(out);
    fr_env_free(&ex);
}

static void test_print(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(2);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    char *envp[] = {"BLIS_NUM_THREADS=5", NULL};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, envp, NULL, NULL, &ex), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    fr_env_print(&ex, f);
    assert_int_equal(fclose(f), 0);
    assert_non_null(strstr(buf, "set     OMP_NUM_THREADS=2  # OpenMP"));
    assert_non_null(strstr(buf, "kept    BLIS_NUM_THREADS=5  # already set"));
    assert_non_null(strstr(buf, "skipped FITRUN_MEMORY_LIMIT  # no memory limit"));
    free(buf);
    fr_env_free(&ex);
}

static void test_marker_records_what_fitrun_set(void **state)
{
    (void)state;
    struct fr_resources r = res_with_shm(1024);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    char *envp[] = {"MKL_NUM_THREADS=4", NULL};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, envp, NULL, NULL, &ex), 0);
    const struct fr_env_entry *m = must_find(&ex, "FITRUN_EXPORTED");
    assert_int_equal(m->action, FR_ENV_SET);
    assert_non_null(strstr(m->value, "OMP_NUM_THREADS=2 "));
    assert_non_null(strstr(m->value, "FITRUN_WORKERS=2"));
    assert_null(strstr(m->value, "MKL_NUM_THREADS"));    /* kept: the user's */
    assert_null(strstr(m->value, "JOBLIB_TEMP_FOLDER")); /* a path: not recorded */
    fr_env_free(&ex);
}

/* `fitrun -- fitrun run`: the outer wrapper exports the whole allocation;
 * the inner run must give each job its worker's share, yet still keep
 * what the user set in between. */
static void test_nested_fitrun_recomputes_outer_values(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(4);
    struct fr_plan p = plan_with(&r, 4, FR_ROUND_FLOOR);
    char *base[] = {"PATH=/bin", "GOMAXPROCS=16", NULL};
    struct fr_env_export outer, inner;
    assert_int_equal(fr_env_compute(&r, &p, 0, base, NULL, NULL, &outer), 0);
    char **env = fr_env_build_envp(&outer, base);
    assert_non_null(env);
    /* The user's script changes one of fitrun's values before the inner run. */
    for (char **e = env; *e; e++)
        if (!strncmp(*e, "BLIS_NUM_THREADS=", 17)) {
            free(*e);
            *e = strdup("BLIS_NUM_THREADS=3");
            assert_non_null(*e);
        }
    assert_int_equal(fr_env_compute(&r, &p, 1, env, NULL, NULL, &inner), 0);
    assert_entry(&inner, "OMP_NUM_THREADS", FR_ENV_SET, "1");
    assert_non_null(strstr(must_find(&inner, "OMP_NUM_THREADS")->reason, "outer fitrun"));
    assert_entry(&inner, "FITRUN_CPUS", FR_ENV_SET, "1");
    assert_entry(&inner, "BLIS_NUM_THREADS", FR_ENV_KEPT, "3"); /* changed by the user */
    assert_entry(&inner, "GOMAXPROCS", FR_ENV_KEPT, "16");      /* the user's from the start */
    /* The inner record replaces the outer one. */
    char **env2 = fr_env_build_envp(&inner, env);
    assert_int_equal(count_prefix(env2, "FITRUN_EXPORTED="), 1);
    assert_int_equal(count_prefix(env2, "OMP_NUM_THREADS="), 1);
    assert_true(has(env2, "OMP_NUM_THREADS=1"));
    fr_envp_free(env2);
    fr_envp_free(env);
    fr_env_free(&inner);
    fr_env_free(&outer);
}

/* --- fr_env_make_dirs: the one function with side effects --- */

static char tmproot[64];

static int make_tmproot(void **state)
{
    (void)state;
    snprintf(tmproot, sizeof tmproot, "/tmp/fitrun-test-envexport-XXXXXX");
    return mkdtemp(tmproot) ? 0 : -1;
}

static int remove_tmproot(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmproot);
    return system(cmd) == 0 ? 0 : -1;
}

static void compute_with_tmpdir(struct fr_env_export *ex)
{
    struct fr_resources r = res_with_shm(1024 * 1024);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    char tmpvar[128];
    snprintf(tmpvar, sizeof tmpvar, "TMPDIR=%s", tmproot);
    char *envp[] = {tmpvar, NULL};
    struct fr_env_opts o = {.uid = geteuid()};
    assert_int_equal(fr_env_compute(&r, &p, 0, envp, NULL, &o, ex), 0);
}

static void test_make_dirs(void **state)
{
    (void)state;
    struct fr_env_export ex;
    compute_with_tmpdir(&ex);
    char err[512] = "";
    assert_int_equal(fr_env_make_dirs(&ex, err, sizeof err), 0);
    const struct fr_env_entry *e = must_find(&ex, "JOBLIB_TEMP_FOLDER");
    assert_int_equal(e->action, FR_ENV_SET);
    struct stat st;
    assert_int_equal(lstat(e->value, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);
    /* Again: the existing directory is reused, and a loose mode fixed. */
    assert_int_equal(chmod(e->value, 0755), 0);
    fr_env_free(&ex);
    compute_with_tmpdir(&ex);
    assert_int_equal(fr_env_make_dirs(&ex, err, sizeof err), 0);
    e = must_find(&ex, "JOBLIB_TEMP_FOLDER");
    assert_int_equal(lstat(e->value, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(rmdir(e->value), 0);
    fr_env_free(&ex);
}

static void test_make_dirs_refuses_symlink(void **state)
{
    (void)state;
    struct fr_env_export ex;
    compute_with_tmpdir(&ex);
    const char *path = must_find(&ex, "JOBLIB_TEMP_FOLDER")->value;
    assert_int_equal(symlink("/", path), 0);
    char err[512] = "";
    assert_int_equal(fr_env_make_dirs(&ex, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "refusing"));
    const struct fr_env_entry *e = must_find(&ex, "JOBLIB_TEMP_FOLDER");
    assert_int_equal(e->action, FR_ENV_SKIPPED);
    /* Everything else is still exported. */
    assert_int_equal(must_find(&ex, "OMP_NUM_THREADS")->action, FR_ENV_SET);
    char **out = fr_env_build_envp(&ex, NULL);
    assert_int_equal(count_prefix(out, "JOBLIB_TEMP_FOLDER="), 0);
    assert_int_equal(count_prefix(out, "OMP_NUM_THREADS="), 1);
    fr_envp_free(out);
    assert_int_equal(unlink(path), 0);
    fr_env_free(&ex);
}

static void test_make_dirs_missing_parent(void **state)
{
    (void)state;
    struct fr_resources r = res_with_shm(1024 * 1024);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    char tmpvar[160];
    snprintf(tmpvar, sizeof tmpvar, "TMPDIR=%s/does/not/exist", tmproot);
    char *envp[] = {tmpvar, NULL};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 0, envp, NULL, NULL, &ex), 0);
    char err[512] = "";
    assert_int_equal(fr_env_make_dirs(&ex, err, sizeof err), -1);
    assert_non_null(strstr(err, "does/not/exist"));
    assert_non_null(strstr(err, "No such file or directory"));
    assert_int_equal(must_find(&ex, "JOBLIB_TEMP_FOLDER")->action, FR_ENV_SKIPPED);
    fr_env_free(&ex);
}

/* The FITRUN_EXPORTED parser detection uses: exact NAME=VALUE entries. */
static void test_from_outer(void **state)
{
    (void)state;
    char *envp[] = {"FITRUN_CPUS=2", "FITRUN_EXPORTED=OMP_NUM_THREADS=2  FITRUN_CPUS=2 FITRUN_WORKERS=1", NULL};
    assert_true(fr_env_from_outer(envp, "FITRUN_CPUS", "2"));
    assert_true(fr_env_from_outer(envp, "OMP_NUM_THREADS", "2"));
    assert_true(fr_env_from_outer(envp, "FITRUN_WORKERS", "1"));
    assert_false(fr_env_from_outer(envp, "FITRUN_CPUS", "20")); /* a changed value is the user's */
    assert_false(fr_env_from_outer(envp, "FITRUN_CPUS", ""));
    assert_false(fr_env_from_outer(envp, "CPUS", "2")); /* whole names only */
    assert_false(fr_env_from_outer(envp, "GOMAXPROCS", "2"));
    assert_false(fr_env_from_outer(envp, NULL, "2"));
    assert_false(fr_env_from_outer(envp, "FITRUN_CPUS", NULL));
    char *none[] = {"FITRUN_CPUS=2", NULL};
    assert_false(fr_env_from_outer(none, "FITRUN_CPUS", "2"));
    assert_false(fr_env_from_outer(NULL, "FITRUN_CPUS", "2"));
    char *empty[] = {"FITRUN_EXPORTED=", NULL};
    assert_false(fr_env_from_outer(empty, "FITRUN_CPUS", "2"));
}

/* The job environment: only the allow-list, fitrun's variables, pass_env
 * and [env] reach a `fitrun run` job; the wrapper keeps everything. */
static void test_job_envp_is_scrubbed(void **state)
{
    (void)state;
    struct fr_resources r = res_with_cpus(2);
    struct fr_plan p = plan_with(&r, 2, FR_ROUND_FLOOR);
    char *envp[] = {"PATH=/usr/bin",
                    "AWS_SECRET_ACCESS_KEY=sekrit",
                    "HOME=/root",
                    "LANG=C.UTF-8",
                    "LC_ALL=C",
                    "LC_TIME=en_DK",
                    "LANGUAGEX=no",
                    "TZ=UTC",
                    "FITRUN_SEED=1",
                    "OMP_NUM_THREADS=3",
                    "JOBLIB_TEMP_FOLDER=/scratch/j",
                    "HF_TOKEN=hf",
                    "HF_TOKENS=no",
                    "MY_A=1",
                    "MY_B=2",
                    "MYC=no",
                    "PYTHONPATH=/opt/lib",
                    "VIRTUAL_ENV=/opt/venv",
                    "LD_LIBRARY_PATH=/opt/lib",
                    "SECRET=override me",
                    "not-a-variable",
                    NULL};
    char *names[] = {"SECRET", "GOMAXPROCS"};
    char *values[] = {"from the profile", "5"};
    struct fr_env_forced f = {.n = 2, .name = names, .value = values};
    char *pass[] = {"HF_TOKEN", "MY_*", NULL};
    struct fr_env_export ex;
    assert_int_equal(fr_env_compute(&r, &p, 1, envp, &f, NULL, &ex), 0);

    char **job = fr_env_build_job_envp(&ex, envp, pass);
    assert_non_null(job);
    const char *kept[] = {"PATH=/usr/bin",
                          "LANG=C.UTF-8",
                          "LC_ALL=C",
                          "LC_TIME=en_DK",
                          "TZ=UTC",
                          "FITRUN_SEED=1",
                          "OMP_NUM_THREADS=3", /* the user's own value: kept */
                          "JOBLIB_TEMP_FOLDER=/scratch/j",
                          "HF_TOKEN=hf",
                          "MY_A=1",
                          "MY_B=2",
                          "SECRET=from the profile",
                          "GOMAXPROCS=5", /* [env] wins */
                          "OPENBLAS_NUM_THREADS=1",
                          "FITRUN_CPUS=1",
                          "FITRUN_WORKERS=2"};
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (!has(job, kept[i]))
            fail_msg("the job lost %s", kept[i]);
    /* the caller's HOME is scrubbed; jobs get a neutral one */
    assert_true(has(job, "HOME=/nonexistent"));
    assert_int_equal(count_prefix(job, "HOME="), 1);
    const char *gone[] = {"AWS_SECRET_ACCESS_KEY=", "LANGUAGEX=",       "HF_TOKENS=",    "MYC=", "PYTHONPATH=",
                          "VIRTUAL_ENV=",           "LD_LIBRARY_PATH=", "not-a-variable"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        if (count_prefix(job, gone[i]))
            fail_msg("%s reached the job", gone[i]);
    assert_int_equal(count_prefix(job, "SECRET="), 1);
    assert_int_equal(count_prefix(job, "GOMAXPROCS="), 1);

    /* The same list, named, for detect and --explain. */
    char **scrubbed = fr_env_scrubbed(&ex, envp, pass);
    assert_non_null(scrubbed);
    const char *want[] = {"AWS_SECRET_ACCESS_KEY", "HOME",           "LANGUAGEX", "HF_TOKENS", "MYC", "PYTHONPATH",
                          "VIRTUAL_ENV",           "LD_LIBRARY_PATH"};
    size_t n = 0;
    for (char **g = scrubbed; *g; g++)
        n++;
    assert_int_equal(n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(scrubbed[i], want[i]);
    fr_envp_free(scrubbed);

    /* The wrapper is env(1): nothing is scrubbed. */
    char **wrap = fr_env_build_envp(&ex, envp);
    assert_true(has(wrap, "AWS_SECRET_ACCESS_KEY=sekrit"));
    assert_true(has(wrap, "HOME=/root"));
    fr_envp_free(wrap);
    fr_envp_free(job);

    /* HOME passed, or forced: that one, once. */
    char *pass_home[] = {"HOME", NULL};
    job = fr_env_build_job_envp(&ex, envp, pass_home);
    assert_true(has(job, "HOME=/root"));
    assert_int_equal(count_prefix(job, "HOME="), 1);
    fr_envp_free(job);
    fr_env_free(&ex);
    char *hname[] = {"HOME"}, *hvalue[] = {"/srv/home"};
    struct fr_env_forced fh = {.n = 1, .name = hname, .value = hvalue};
    assert_int_equal(fr_env_compute(&r, &p, 1, envp, &fh, NULL, &ex), 0);
    job = fr_env_build_job_envp(&ex, envp, NULL);
    assert_true(has(job, "HOME=/srv/home"));
    assert_int_equal(count_prefix(job, "HOME="), 1);
    fr_envp_free(job);
    fr_env_free(&ex);
}

static void test_job_keeps(void **state)
{
    (void)state;
    char *pass[] = {"A", "B_*", NULL};
    assert_int_equal(fr_env_job_keeps(NULL, "PATH", 4, NULL), FR_ENV_KEEP_ALLOWED);
    assert_int_equal(fr_env_job_keeps(NULL, "PATH=/bin", 4, NULL), FR_ENV_KEEP_ALLOWED);
    assert_int_equal(fr_env_job_keeps(NULL, "PATHS", 5, NULL), FR_ENV_KEEP_NONE);
    assert_int_equal(fr_env_job_keeps(NULL, "LC_", 3, NULL), FR_ENV_KEEP_ALLOWED);
    assert_int_equal(fr_env_job_keeps(NULL, "FITRUN_JOB_ID", 13, NULL), FR_ENV_KEEP_ALLOWED);
    assert_int_equal(fr_env_job_keeps(NULL, "PYTHON_CPU_COUNT", 16, NULL), FR_ENV_KEEP_FITRUN);
    assert_int_equal(fr_env_job_keeps(NULL, "A", 1, pass), FR_ENV_KEEP_PASSED);
    assert_int_equal(fr_env_job_keeps(NULL, "AB", 2, pass), FR_ENV_KEEP_NONE);
    assert_int_equal(fr_env_job_keeps(NULL, "B_", 2, pass), FR_ENV_KEEP_PASSED);
    assert_int_equal(fr_env_job_keeps(NULL, "B", 1, pass), FR_ENV_KEEP_NONE);
    assert_int_equal(fr_env_job_keeps(NULL, "HOME", 4, pass), FR_ENV_KEEP_NONE);
    const char *const *allowed = fr_env_job_allowed();
    assert_string_equal(allowed[0], "PATH");
    char buf[512];
    assert_non_null(strstr(fr_env_job_allowlist(buf, sizeof buf), "PATH, LANG, LANGUAGE, LC_*, TZ, FITRUN_*"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults_export_everything),
        cmocka_unit_test(test_affinity_reason),
        cmocka_unit_test(test_user_values_are_kept),
        cmocka_unit_test(test_forced_wins),
        cmocka_unit_test(test_forced_invalid_name),
        cmocka_unit_test(test_forced_too_many),
        cmocka_unit_test(test_rounding),
        cmocka_unit_test(test_threads_are_the_plans),
        cmocka_unit_test(test_pool_worker_threads),
        cmocka_unit_test(test_memory_limit),
        cmocka_unit_test(test_shm_rule),
        cmocka_unit_test(test_shm_forced),
        cmocka_unit_test(test_build_envp),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_marker_records_what_fitrun_set),
        cmocka_unit_test(test_nested_fitrun_recomputes_outer_values),
        cmocka_unit_test(test_make_dirs),
        cmocka_unit_test(test_make_dirs_refuses_symlink),
        cmocka_unit_test(test_make_dirs_missing_parent),
        cmocka_unit_test(test_from_outer),
        cmocka_unit_test(test_job_envp_is_scrubbed),
        cmocka_unit_test(test_job_keeps),
    };
    return cmocka_run_group_tests(tests, make_tmproot, remove_tmproot);
}
