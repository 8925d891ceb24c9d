/* test_detect_bound.c — fr_cpu_binding, the one rule for which CPU limit
 * binds: the tightest wins; on a tie the limit someone set (quota,
 * scheduler) is named rather than the affinity, the scheduler rather than
 * the quota, the outer fitrun's copy never; an override wins over all of
 * them unless only the detected bound is asked for. And detection's
 * cpu_detected / cpu_effective are exactly its values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fitrun/detect.h"

#define NONE -1.0
#define FIXTURES FITRUN_SRC "/tests/fixtures"

static void set(struct fr_value *v, double value, const char *src)
{
    v->known = value != NONE;
    v->value = value != NONE ? value : 0;
    snprintf(v->source, sizeof v->source, "%s", v->known ? src : "");
}

static void test_binding_table(void **state)
{
    (void)state;
    static const struct {
        int affinity;
        double quota, scheduler, outer, override;
        const char *detected; /* name of the detected bound */
        double detected_value;
        const char *effective; /* name of what sets cpu_effective */
    } cases[] = {
        {4, NONE, NONE, NONE, NONE, "affinity", 4, "affinity"},
        {0, NONE, NONE, NONE, NONE, "affinity", 1, "affinity"}, /* unknown affinity: 1 */
        {4, 1.5, NONE, NONE, NONE, "quota", 1.5, "quota"},
        {4, 8, NONE, NONE, NONE, "affinity", 4, "affinity"}, /* a looser quota does not bind */
        {4, 4, NONE, NONE, NONE, "quota", 4, "quota"},       /* tie: the quota is named */
        {4, 2, 2, NONE, NONE, "scheduler", 2, "scheduler"},  /* tie: the scheduler over the quota */
        {4, 2, 3, NONE, NONE, "quota", 2, "quota"},
        {4, 3, 2, NONE, NONE, "scheduler", 2, "scheduler"},
        {4, NONE, NONE, 1, NONE, "outer", 1, "outer"},       /* the outer bound binds when tightest */
        {4, NONE, NONE, 4, NONE, "affinity", 4, "affinity"}, /* ... and is never named on a tie */
        {4, 2, NONE, 2, NONE, "quota", 2, "quota"},
        {4, 2, 1, 0.5, NONE, "outer", 0.5, "outer"},
        {4, 0.5, NONE, NONE, 3, "quota", 0.5, "override"}, /* an override wins, above too */
        {4, NONE, NONE, 1, 2, "outer", 1, "override"},
    };
    struct fr_resources *r = malloc(sizeof *r);
    assert_non_null(r);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(r, 0, sizeof *r);
        r->cpu_affinity = cases[i].affinity;
        snprintf(r->cpu_affinity_source, sizeof r->cpu_affinity_source, "sched_getaffinity");
        set(&r->cpu_quota, cases[i].quota, "/q");
        set(&r->cpu_scheduler, cases[i].scheduler, "SLURM_CPUS_PER_TASK=2");
        set(&r->cpu_outer, cases[i].outer, "FITRUN_CPUS=1 (exported by an outer fitrun)");
        set(&r->cpu_override, cases[i].override, "--cpus");
        struct fr_cpu_limit d, e;
        fr_cpu_binding(r, true, &d);
        fr_cpu_binding(r, false, &e);
        if (strcmp(d.name, cases[i].detected) || d.value != cases[i].detected_value ||
            strcmp(e.name, cases[i].effective))
            fail_msg("case %zu: detected %s %g, effective %s; want %s %g, %s", i, d.name, d.value, e.name,
                     cases[i].detected, cases[i].detected_value, cases[i].effective);
        /* Every bound carries its words and its source. */
        assert_true(d.what && d.what[0] && e.what && e.what[0]);
        assert_non_null(d.source);
        if (!strcmp(d.name, "quota"))
            assert_string_equal(d.source, "/q");
        if (!strcmp(e.name, "override")) {
            assert_string_equal(e.source, "--cpus");
            assert_true(e.value == cases[i].override);
        } else {
            assert_true(e.value == d.value);
        }
    }
    free(r);
}

/* Detection's numbers are the binding's, on a fixture with a 0.5 CPU
 * quota: cpu_detected is the detected bound, cpu_effective the
 * effective one (an override included). */
static void test_detection_uses_the_binding(void **state)
{
    (void)state;
    struct fr_resources *r = malloc(sizeof *r);
    assert_non_null(r);
    char *none[] = {NULL};
    struct fr_detect_opts o = {.sysroot = FIXTURES "/docker-v2-cgroupns-cpus-0.5", .envp = none};
    for (int round = 0; round < 3; round++) {
        o.cpus_override = round == 1 ? 3 : 0;
        o.cpus_outer = round == 2 ? "0.25" : NULL;
        assert_int_equal(fr_detect(&o, r), 0);
        struct fr_cpu_limit d, e;
        fr_cpu_binding(r, true, &d);
        fr_cpu_binding(r, false, &e);
        assert_true(r->cpu_detected == d.value);
        assert_true(r->cpu_effective == e.value);
        assert_string_equal(d.name, round == 2 ? "outer" : "quota");
        assert_string_equal(e.name, round == 1 ? "override" : d.name);
    }
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binding_table),
        cmocka_unit_test(test_detection_uses_the_binding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
