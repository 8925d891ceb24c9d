/* test_detect_robust.c — detection never crashes and always answers
 * something sane, whatever the files contain.
 *
 * 1. Every pure parser gets a few thousand deterministic pseudo-random
 *    inputs (printable noise, digits and separators, long strings).
 * 2. Whole sysroots: a tree with every file detection reads is filled with
 *    random content again and again (seeded, so failures replay), and the
 *    result must keep its invariants: affinity >= 1, effective in
 *    (0, affinity], workers >= 1, notes bounded and NUL-terminated.
 * 3. Hand-made garbage trees the fuzzer (tests/fuzz) found mishandled.
 * Run under ASan/UBSan in CI, this is where an overflow would show. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../launcher/detect/internal.h"
#include "fitrun/detect.h"
#include "fitrun/plan.h"

static unsigned long long rng = 0x9e3779b97f4a7c15ull;

static unsigned rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

/* Noise biased towards what parsers look for. */
static void noise(char *buf, size_t cap)
{
    static const char alphabet[] = "0123456789-,:/ ()x=max\n\t\\040kKmMgG%.";
    size_t len = rnd() % (cap - 1);
    int mode = rnd() % 4;
    for (size_t i = 0; i < len; i++) {
        if (mode == 0)
            buf[i] = (char)(1 + rnd() % 255); /* any byte but NUL */
        else if (mode == 1)
            buf[i] = (char)(' ' + rnd() % 95);
        else
            buf[i] = alphabet[rnd() % (sizeof alphabet - 1)];
    }
    buf[len] = '\0';
}

static void test_parsers_on_noise(void **state)
{
    (void)state;
    char buf[512], copy[512], out[64];
    uint64_t mask[FR_MASK_WORDS], u;
    double d;
    bool extra;
    const char *why;
    for (int i = 0; i < 5000; i++) {
        noise(buf, sizeof buf);
        int n = fr_cpulist_parse(buf, mask, FR_CPU_BITS);
        assert_true(n >= -1 && n <= FR_CPU_BITS);
        if (n > 0) {
            char list[128];
            fr_cpulist_format(mask, FR_CPU_BITS, list, sizeof list);
            assert_true(strlen(list) < sizeof list);
        }
        int k = fr_parse_cpu_max(buf, &d, &extra, &why);
        assert_true(k >= -1 && k <= 1);
        if (k == 1)
            assert_true(d > 0);
        k = fr_parse_cfs(buf, buf, &d, &why);
        assert_true(k >= -1 && k <= 1);
        assert_true(fr_parse_limit_u64(buf, true, &u) >= -1);
        (void)fr_parse_meminfo_total(buf);
        (void)fr_parse_memory_stat_hier(buf, &u);
        assert_true(fr_parse_tmpfs_size(buf, 1 << 30, &u) >= -1);
        long c = fr_parse_slurm_cpus_per_node(buf, rnd() % 4);
        assert_true(c == -1 || c > 0);
        assert_true(fr_parse_classad_number(buf, "Cpus", &d) >= -1);
        (void)fr_proc_cgroup_find(NULL, buf, "cpu", out, sizeof out);
        (void)fr_proc_cgroup_find(NULL, buf, NULL, out, sizeof out);
        memcpy(copy, buf, sizeof buf);
        struct fr_mountinfo_entry e;
        if (fr_mountinfo_parse_line(copy, &e, &why) == 0)
            assert_true(e.root[0] == '/' && e.mountpoint[0] == '/');
        memcpy(copy, buf, sizeof buf);
        fr_unescape_octal(copy);
        assert_true(strlen(copy) <= strlen(buf));
        char translated[64];
        enum fr_translate t =
            fr_cgroup_translate("/sys/fs/cgroup", buf[0] == '/' ? buf : "/", "/a/b", translated, sizeof translated);
        assert_true(t == FR_TR_OK || t == FR_TR_OUTSIDE || t == FR_TR_TOOLONG);
    }
}

/* ---- random sysroots ---- */

static char root[] = "/tmp/fitrun-test-detect-robust-XXXXXX";

static const char *files[] = {
    "proc/self/mountinfo",
    "proc/self/cgroup",
    "proc/self/status",
    "proc/meminfo",
    "sys/devices/system/cpu/online",
    "sys/fs/cgroup/cgroup.controllers",
    "sys/fs/cgroup/a/cpu.max",
    "sys/fs/cgroup/a/b/cpu.max",
    "sys/fs/cgroup/a/memory.max",
    "sys/fs/cgroup/a/b/memory.max",
    "sys/fs/cgroup/a/b/memory.high",
    "sys/fs/cgroup/a/pids.max",
    "sys/fs/cgroup/a/pids.current",
    "sys/fs/cgroup/a/b/pids.max",
    "sys/fs/cgroup/a/b/pids.current",
    "sys/fs/cgroup/a/b/cpuset.cpus.effective",
    "sys/fs/cgroup/cpuset.cpus.effective",
    "sys/fs/cgroup/a/b/cpu.weight",
    "cg1/cpu/x/cpu.cfs_quota_us",
    "cg1/cpu/x/cpu.cfs_period_us",
    "cg1/cpu/x/cpu.shares",
    "cg1/mem/x/memory.limit_in_bytes",
    "cg1/mem/x/memory.stat",
    "cg1/cpuset/x/cpuset.cpus",
    "machine.ad",
};

/* Half the time a plausible skeleton (so the deeper code runs), then noise. */
static const char *plausible(const char *name)
{
    if (!strcmp(name, "proc/self/mountinfo"))
        return rnd() % 2
                   ? "1 0 0:1 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n2 0 0:2 / /dev/shm rw - tmpfs tmpfs rw,size=1k\n"
                   : "1 0 0:1 / /cg1/cpu rw - cgroup cgroup rw,cpu\n2 0 0:2 / /cg1/mem rw - cgroup cgroup rw,memory\n"
                     "3 0 0:3 / /cg1/cpuset rw - cgroup cgroup rw,cpuset\n";
    if (!strcmp(name, "proc/self/cgroup"))
        return "3:cpu:/x\n2:memory:/x\n1:cpuset:/x\n0::/a/b\n";
    static char buf[64];
    const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
    unsigned n = 1 + rnd() % 300000;
    if (!strcmp(base, "cpu.max"))
        snprintf(buf, sizeof buf, "%u 100000\n", n);
    else if (!strcmp(base, "cpu.cfs_quota_us") || !strcmp(base, "cpu.cfs_period_us"))
        snprintf(buf, sizeof buf, "%u\n", n);
    else if (!strncmp(base, "memory.", 7))
        snprintf(buf, sizeof buf, "%llu\n", (unsigned long long)n << 12);
    else if (!strncmp(base, "pids.", 5) || !strcmp(base, "cpu.shares") || !strcmp(base, "cpu.weight"))
        snprintf(buf, sizeof buf, "%u\n", n % 200);
    else if (!strncmp(base, "cpuset.", 7) || !strcmp(base, "online"))
        snprintf(buf, sizeof buf, "%u-%u\n", n % 4, 4 + n % 8);
    else if (!strcmp(base, "status"))
        snprintf(buf, sizeof buf, "Cpus_allowed_list:\t%u-%u\n", n % 3, 3 + n % 5);
    else if (!strcmp(base, "meminfo"))
        snprintf(buf, sizeof buf, "MemTotal: %u kB\n", n * 16);
    else if (!strcmp(base, "machine.ad"))
        snprintf(buf, sizeof buf, "Cpus = %u\nMemory = %u\n", n % 5, n % 3000);
    else
        return NULL;
    return buf;
}

static void write_noise(const char *rel)
{
    char path[512], buf[300];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
            fail_msg("mkdir %s: %s", path, strerror(errno));
        *p = '/';
    }
    if (rnd() % 5 == 0) { /* sometimes missing */
        unlink(path);
        return;
    }
    const char *p = rnd() % 2 ? plausible(rel) : NULL;
    if (p)
        snprintf(buf, sizeof buf, "%s", p);
    else
        noise(buf, sizeof buf);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(buf, f);
    assert_int_equal(fclose(f), 0);
}

static void test_random_sysroots(void **state)
{
    (void)state;
    /* An absolute ad path is read under the sysroot: that is root/machine.ad. */
    char *envp[] = {"SLURM_JOB_CPUS_PER_NODE=3(x2),1", "SLURM_NODEID=2", "_CONDOR_MACHINE_AD=/machine.ad", NULL};
    char *empty[] = {NULL};
    char **envs[] = {empty, envp, empty, empty};
    /* FITRUN_CPUS=0.75 as the user's, then as an outer fitrun's export: a bound, not an override. */
    const char *user[] = {NULL, "0.75", NULL, NULL}, *outer[] = {NULL, NULL, NULL, "0.75"};
    struct fr_resources *r = malloc(sizeof *r);
    struct fr_plan *plan = malloc(sizeof *plan);
    assert_non_null(r);
    assert_non_null(plan);
    for (int round = 0; round < 300; round++) {
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
            write_noise(files[i]);
        struct fr_detect_opts opts = {
            .sysroot = root, .envp = envs[round % 4], .cpus_env = user[round % 4], .cpus_outer = outer[round % 4]};
        assert_int_equal(fr_detect(&opts, r), 0);
        assert_true(r->cpu_affinity >= 1);
        assert_true(r->cpu_detected > 0 && r->cpu_detected <= r->cpu_affinity);
        /* An override sets the effective CPUs (above the detected ones too);
         * without one they are the detected ones. */
        if (round % 4 == 1) {
            assert_true(r->cpu_override.known && r->cpu_effective == 0.75);
        } else {
            assert_false(r->cpu_override.known);
            assert_true(r->cpu_effective == r->cpu_detected);
        }
        if (round % 4 == 3)
            assert_true(r->cpu_outer.known && r->cpu_detected <= 0.75);
        assert_true(r->nnotes >= 0 && r->nnotes <= FR_NOTES_MAX);
        for (int i = 0; i < r->nnotes; i++)
            assert_true(memchr(r->notes[i], '\0', FR_NOTE_MAX) != NULL);
        assert_true(r->cgroup_version >= 0 && r->cgroup_version <= 2);
        if (r->mem_limit.known)
            assert_true(r->mem_limit.value > 0);
        struct fr_plan_opts po = {.rounding = (enum fr_rounding)(round % 3),
                                  .memory_per_worker = (uint64_t)(rnd() % 3) << 28};
        fr_plan_make(r, &po, plan);
        assert_true(plan->workers >= 1 && plan->threads_per_worker >= 1);
        assert_true(plan->nreasons > 0 && plan->nreasons <= FR_REASONS_MAX);
        char line[512];
        fr_plan_summary(r, plan, line, sizeof line);
        assert_true(strlen(line) < sizeof line);
    }
    free(r);
    free(plan);
}

/* Cpuset levels that share no CPU (a child outside its parent: garbage a
 * kernel never writes) are ignored like an empty cpuset, and with nothing
 * else known the affinity is one CPU, never 0 (found by fuzz_detect: the
 * empty intersection was reported as a 0-CPU cpuset and the affinity fell
 * back to it). */
static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
            fail_msg("mkdir %s: %s", path, strerror(errno));
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
}

static void test_disjoint_cpusets(void **state)
{
    (void)state;
    put("proc/self/mountinfo", "1 0 0:1 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n");
    put("proc/self/cgroup", "1:cpuset:/job\n");
    put("sys/fs/cgroup/cpuset/cpuset.cpus", "0-1\n");
    put("sys/fs/cgroup/cpuset/job/cpuset.cpus", "2-3\n");
    char *empty[] = {NULL};
    struct fr_detect_opts opts = {.sysroot = root, .envp = empty};
    struct fr_resources *r = malloc(sizeof *r);
    assert_non_null(r);
    fr_detect(&opts, r);
    assert_false(r->cpu_cpuset.known);
    assert_int_equal(r->cpu_affinity, 1);
    assert_true(r->cpu_effective == 1);
    bool noted = false;
    for (int i = 0; i < r->nnotes; i++)
        noted |= strstr(r->notes[i], "/sys/fs/cgroup/cpuset/job/cpuset.cpus shares no CPU with the cpusets above it") !=
                 NULL;
    assert_true(noted);

    /* With the online CPUs known, those are the fallback. */
    put("sys/devices/system/cpu/online", "0-5\n");
    fr_detect(&opts, r);
    assert_false(r->cpu_cpuset.known);
    assert_int_equal(r->cpu_affinity, 6);
    free(r);
}

static int make_root(void **state)
{
    (void)state;
    memcpy(root + sizeof root - 7, "XXXXXX", 6); /* a fresh name for each test */
    return mkdtemp(root) ? 0 : -1;
}

static int remove_root(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parsers_on_noise),
        cmocka_unit_test_setup_teardown(test_random_sysroots, make_root, remove_root),
        cmocka_unit_test_setup_teardown(test_disjoint_cpusets, make_root, remove_root),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
