/* test_plan.c — fr_plan_make over synthetic resources: rounding, the
 * memory and pids caps, --workers, threads per worker, and that every
 * decision leaves a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fitrun/detect.h"
#include "fitrun/plan.h"

#define GiB (1024.0 * 1024 * 1024)
#define MiB (1024.0 * 1024)

static struct fr_resources *res_with(double effective, int affinity)
{
    struct fr_resources *r = calloc(1, sizeof *r);
    assert_non_null(r);
    r->cpu_online = affinity;
    r->cpu_affinity = affinity;
    snprintf(r->cpu_affinity_source, sizeof r->cpu_affinity_source, "sched_getaffinity");
    r->cpu_detected = r->cpu_effective = effective;
    r->mem_total = (uint64_t)(64 * GiB);
    return r;
}

static void set(struct fr_value *v, double value, const char *src)
{
    v->known = true;
    v->value = value;
    snprintf(v->source, sizeof v->source, "%s", src);
}

/* Does some reason contain `needle`? */
static bool has_reason(const struct fr_plan *p, const char *needle)
{
    for (int i = 0; i < p->nreasons; i++)
        if (strstr(p->reasons[i], needle))
            return true;
    return false;
}

static int workers(double eff, enum fr_rounding rounding)
{
    struct fr_resources *r = res_with(eff, 64);
    struct fr_plan_opts o = {.rounding = rounding};
    struct fr_plan p;
    fr_plan_make(r, &o, &p);
    free(r);
    assert_true(p.nreasons > 0);
    assert_int_equal(p.rounding, rounding);
    return p.workers;
}

static void test_rounding(void **state)
{
    (void)state;
    assert_int_equal(workers(1.5, FR_ROUND_FLOOR), 1);
    assert_int_equal(workers(1.5, FR_ROUND_CEIL), 2);
    assert_int_equal(workers(1.5, FR_ROUND_NEAREST), 2);
    assert_int_equal(workers(2.4, FR_ROUND_NEAREST), 2);
    assert_int_equal(workers(2.5, FR_ROUND_NEAREST), 3);
    assert_int_equal(workers(0.5, FR_ROUND_FLOOR), 1); /* never fewer than one */
    assert_int_equal(workers(0.5, FR_ROUND_CEIL), 1);
    assert_int_equal(workers(0.25, FR_ROUND_NEAREST), 1);
    assert_int_equal(workers(4, FR_ROUND_FLOOR), 4);
    assert_int_equal(workers(4, FR_ROUND_CEIL), 4);
    /* Floating error from quota / period must not lose or add a worker. */
    assert_int_equal(workers(1.9999999999, FR_ROUND_FLOOR), 2);
    assert_int_equal(workers(2.0000000001, FR_ROUND_CEIL), 2);
    assert_int_equal(workers(256, FR_ROUND_FLOOR), 256);
}

static void test_never_fewer_than_one_is_explained(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(0.5, 8);
    set(&r->cpu_quota, 0.5, "/sys/fs/cgroup/cpu.max");
    struct fr_plan p;
    fr_plan_make(r, NULL, &p); /* NULL opts = defaults: floor */
    assert_int_equal(p.workers, 1);
    assert_int_equal(p.threads_per_worker, 1);
    assert_int_equal(p.rounding, FR_ROUND_FLOOR);
    assert_true(has_reason(&p, "never fewer than one"));
    assert_true(has_reason(&p, "quota from /sys/fs/cgroup/cpu.max"));
    free(r);
}

static void test_memory_cap(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(8, 8);
    set(&r->mem_limit, 2 * GiB, "/sys/fs/cgroup/memory.max");
    struct fr_plan_opts o = {.rounding = FR_ROUND_FLOOR, .memory_per_worker = (uint64_t)(512 * MiB)};
    struct fr_plan p;
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.workers, 4);
    assert_int_equal(p.threads_per_worker, 2); /* the CPUs left go to threads */
    assert_true(
        has_reason(&p, "memory: 2.0 GiB [/sys/fs/cgroup/memory.max] / 512.0 MiB per worker = 4: 8 -> 4 workers"));

    /* Plenty of memory: no cap, but still a reason. */
    o.memory_per_worker = (uint64_t)(128 * MiB);
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.workers, 8);
    assert_true(has_reason(&p, "no cap"));

    /* Less than one worker fits: 1 anyway, said so. */
    o.memory_per_worker = (uint64_t)(4 * GiB);
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.workers, 1);
    assert_int_equal(p.threads_per_worker, 8);
    assert_true(has_reason(&p, "less than one worker"));

    /* A limit of 0 (memory.max "0") is a limit, not an unknown one. */
    set(&r->mem_limit, 0, "/sys/fs/cgroup/memory.max");
    o.memory_per_worker = (uint64_t)(128 * MiB);
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.workers, 1);
    assert_true(has_reason(&p, "less than one worker"));

    /* No cgroup limit: MemTotal bounds it. */
    r->mem_limit.known = false;
    r->mem_total = (uint64_t)(3 * GiB);
    o.memory_per_worker = (uint64_t)(1 * GiB);
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.workers, 3);
    assert_true(has_reason(&p, "MemTotal"));

    /* Nothing known: no cap, explained. */
    r->mem_total = 0;
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.workers, 8);
    assert_true(has_reason(&p, "no memory cap"));
    free(r);
}

static void test_pids_cap(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(8, 8);
    set(&r->pids_limit, 64, "/sys/fs/cgroup/pids.max");
    set(&r->pids_current, 34, "/sys/fs/cgroup/pids.current");
    set(&r->pids_available, 30, "/sys/fs/cgroup/pids.max - pids.current");
    struct fr_plan p;
    fr_plan_make(r, NULL, &p);
    /* (30 left - 16 headroom) / (1 thread + 1) = 7 */
    assert_int_equal(p.workers, 7);
    assert_int_equal(p.threads_per_worker, 1);
    assert_true(has_reason(&p, "pids: (30 left"));
    assert_true(has_reason(&p, "16 headroom"));

    /* Without pids_available: limit - current. */
    r->pids_available.known = false;
    set(&r->pids_current, 40, "x");
    fr_plan_make(r, NULL, &p);
    assert_int_equal(p.workers, 4); /* (24 - 16) / 2 */

    /* Almost nothing left: one worker, said so. */
    set(&r->pids_available, 10, "y");
    fr_plan_make(r, NULL, &p);
    assert_int_equal(p.workers, 1);
    assert_true(has_reason(&p, "less than one worker"));

    /* Plenty: no cap. */
    set(&r->pids_available, 10000, "z");
    fr_plan_make(r, NULL, &p);
    assert_int_equal(p.workers, 8);
    free(r);
}

static void test_memory_and_pids_together(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(16, 16);
    set(&r->mem_limit, 6 * GiB, "m");
    set(&r->pids_available, 26, "p");
    struct fr_plan_opts o = {.rounding = FR_ROUND_FLOOR, .memory_per_worker = (uint64_t)GiB};
    struct fr_plan p;
    fr_plan_make(r, &o, &p);
    /* memory: 6 workers, 2 threads each -> pids: (26 - 16) / 3 = 3 workers */
    assert_int_equal(p.workers, 3);
    assert_int_equal(p.threads_per_worker, 5);
    free(r);
}

static void test_workers_override(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(2, 2);
    set(&r->mem_limit, 1 * GiB, "/m");
    set(&r->pids_available, 20, "/p");
    struct fr_plan_opts o = {
        .rounding = FR_ROUND_CEIL, .memory_per_worker = (uint64_t)(512 * MiB), .workers_override = 8};
    struct fr_plan p;
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.workers, 8); /* wins over every cap ... */
    assert_int_equal(p.threads_per_worker, 1);
    assert_true(has_reason(&p, "--workers 8 overrides the computed 2")); /* ... and is reported, */
    assert_true(has_reason(&p, "oversubscribed"));                       /* with what it breaks */
    assert_true(has_reason(&p, "exceed the memory limit"));
    assert_true(has_reason(&p, "exhaust"));

    /* An override below every cap: no warnings. */
    o.workers_override = 1;
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.workers, 1);
    assert_int_equal(p.threads_per_worker, 2);
    assert_false(has_reason(&p, "warning"));
    free(r);
}

static void test_shares_reported_not_used(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(256, 256);
    set(&r->cpu_shares, 800, "/sys/fs/cgroup/x/cpu.weight");
    struct fr_plan p;
    fr_plan_make(r, NULL, &p);
    assert_int_equal(p.workers, 256);
    assert_true(has_reason(&p, "shares/weight 800 ignored"));
    free(r);
}

static void test_scheduler_named(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(8, 256);
    set(&r->cpu_scheduler, 8, "_CONDOR_MACHINE_AD=/x (Cpus)");
    struct fr_plan p;
    fr_plan_make(r, NULL, &p);
    assert_int_equal(p.workers, 8);
    assert_true(has_reason(&p, "scheduler from _CONDOR_MACHINE_AD=/x (Cpus)"));
    free(r);
}

static void test_zero_effective_is_one(void **state)
{
    (void)state;
    struct fr_resources *r = calloc(1, sizeof *r); /* as a caller that never ran fr_detect */
    assert_non_null(r);
    struct fr_plan p;
    fr_plan_make(r, NULL, &p);
    assert_int_equal(p.workers, 1);
    assert_int_equal(p.threads_per_worker, 1);
    free(r);
}

static void test_rounding_names(void **state)
{
    (void)state;
    enum fr_rounding r;
    assert_int_equal(fr_rounding_parse("floor", &r), 0);
    assert_int_equal(r, FR_ROUND_FLOOR);
    assert_int_equal(fr_rounding_parse("ceil", &r), 0);
    assert_int_equal(r, FR_ROUND_CEIL);
    assert_int_equal(fr_rounding_parse("nearest", &r), 0);
    assert_int_equal(r, FR_ROUND_NEAREST);
    assert_int_equal(fr_rounding_parse("up", &r), -1);
    assert_int_equal(fr_rounding_parse("", &r), -1);
    assert_int_equal(fr_rounding_parse("Floor", &r), -1);
    assert_int_equal(fr_rounding_parse(NULL, &r), -1);
    assert_string_equal(fr_rounding_name(FR_ROUND_FLOOR), "floor");
    assert_string_equal(fr_rounding_name(FR_ROUND_CEIL), "ceil");
    assert_string_equal(fr_rounding_name(FR_ROUND_NEAREST), "nearest");
}

static void test_summary(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(1.5, 4);
    set(&r->cpu_quota, 1.5, "/q");
    set(&r->mem_limit, 512 * MiB, "/m");
    struct fr_plan p;
    fr_plan_make(r, NULL, &p);
    char buf[256];
    assert_string_equal(
        fr_plan_summary(r, &p, buf, sizeof buf),
        "plan: 1 worker x 1 thread (effective 1.5 CPUs: affinity 4; quota 1.5; memory limit 512.0 MiB)");
    /* A small buffer truncates, never overflows. */
    char tiny[16];
    fr_plan_summary(r, &p, tiny, sizeof tiny);
    assert_int_equal((int)strlen(tiny), 15);
    free(r);
}

/* An override replaces the detected CPUs (above them too); the reason
 * names it and what it replaced. */
static void test_cpu_override_reason(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(8, 2);
    r->cpu_detected = 0.5;
    set(&r->cpu_quota, 0.5, "/sys/fs/cgroup/cpu.max");
    set(&r->cpu_override, 8, "--cpus");
    struct fr_plan p;
    fr_plan_make(r, NULL, &p);
    assert_int_equal(p.workers, 8);
    assert_string_equal(p.reasons[0], "effective 8 CPUs: override from --cpus, replacing the detected 0.5 = "
                                      "min(affinity 2, quota 0.5, scheduler none): quota from /sys/fs/cgroup/cpu.max");
    char buf[256];
    assert_string_equal(
        fr_plan_summary(r, &p, buf, sizeof buf),
        "plan: 8 workers x 1 thread (effective 8 CPUs: affinity 2; quota 0.5; override 8; memory limit none)");
    free(r);
}

/* An outer fitrun's FITRUN_CPUS binds only when it is the tightest, and a
 * kernel limit it equals is named instead. */
static void test_outer_bound_named_last(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(1, 4);
    set(&r->cpu_outer, 1, "FITRUN_CPUS=1 (exported by an outer fitrun)");
    struct fr_plan p;
    fr_plan_make(r, NULL, &p);
    assert_int_equal(p.workers, 1);
    assert_true(
        has_reason(&p, "min(affinity 4, quota none, scheduler none, outer fitrun 1): outer from FITRUN_CPUS=1"));
    set(&r->cpu_quota, 1, "/q");
    fr_plan_make(r, NULL, &p);
    assert_true(has_reason(&p, "): quota from /q"));
    free(r);
}

/* Threads per job: the per-worker share, capped by what a job's sandbox
 * lets it run (the python preset: 1), with the reason said. */
static void test_threads_per_job(void **state)
{
    (void)state;
    struct fr_resources *r = res_with(4, 64);
    struct fr_plan p;
    struct fr_plan_opts o = {.rounding = FR_ROUND_FLOOR, .workers_override = 1};
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.threads_per_worker, 4);
    assert_int_equal(p.threads_per_job, 4); /* no cap: the share */
    o.job_threads_max = 1;
    o.job_threads_why = "the python preset refuses thread creation";
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.threads_per_worker, 4);
    assert_int_equal(p.threads_per_job, 1);
    assert_true(has_reason(&p, "1 thread per job, not 4: the python preset refuses thread creation"));
    char line[512];
    assert_non_null(strstr(fr_plan_summary(r, &p, line, sizeof line), "plan: 1 worker x 1 thread ("));
    /* a cap above the share changes nothing */
    o.job_threads_max = 8;
    fr_plan_make(r, &o, &p);
    assert_int_equal(p.threads_per_job, 4);
    assert_false(has_reason(&p, "per job"));
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding),
        cmocka_unit_test(test_never_fewer_than_one_is_explained),
        cmocka_unit_test(test_memory_cap),
        cmocka_unit_test(test_pids_cap),
        cmocka_unit_test(test_memory_and_pids_together),
        cmocka_unit_test(test_workers_override),
        cmocka_unit_test(test_shares_reported_not_used),
        cmocka_unit_test(test_scheduler_named),
        cmocka_unit_test(test_zero_effective_is_one),
        cmocka_unit_test(test_rounding_names),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_cpu_override_reason),
        cmocka_unit_test(test_outer_bound_named_last),
        cmocka_unit_test(test_threads_per_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
